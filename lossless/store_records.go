package lossless

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"

	"github.com/lossless-engine/contextengine/store"
)

// msgHash is a message's stable key within its conversation: the first 16
// bytes of SHA-256 over its compacted JSON. The same message delivered again
// (replay, restart, transcript re-read, afterTurn's whole-session view) has
// the same bytes, hence the same key, and is stored once.
type msgHash = store.Hash

func hashRaw(raw []byte) msgHash {
	var buf bytes.Buffer
	src := raw
	if json.Compact(&buf, raw) == nil {
		src = buf.Bytes()
	}
	s := sha256.Sum256(src)
	var h msgHash
	copy(h[:], s[:16])
	return h
}

// hashMessageRaw is hashRaw for the raw bytes of a parsed message (valid
// JSON): when they hold no whitespace outside strings, json.Compact would
// return them unchanged, so they are hashed as they are without it.
func hashMessageRaw(raw []byte) msgHash {
	if !compactJSON(raw) {
		return hashRaw(raw)
	}
	s := sha256.Sum256(raw)
	var h msgHash
	copy(h[:], s[:16])
	return h
}

// compactJSON reports whether valid JSON b has no whitespace outside its
// strings (so that json.Compact leaves it unchanged).
func compactJSON(b []byte) bool {
	in, esc := false, false
	for _, c := range b {
		if in {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				in = false
			}
			continue
		}
		switch c {
		case '"':
			in = true
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return true
}

// Record flags.
const (
	flagHeartbeat = store.FlagHeartbeat // the message was delivered with isHeartbeat
	flagLarge     = store.FlagLarge     // represented in the context by a reference (store.Reader.Large)
	flagHidden    = store.FlagHidden    // never shown: thinking-only/empty assistant turn, excludeFromContext
	// flagSuperseded (items only): the transcript no longer holds the
	// message (the old version of an edit, a deleted entry: lossless/transcript's reconcile.go);
	// left out of the context until a later read finds it again.
	flagSuperseded = store.FlagSuperseded
)

// msgRecord is a stored message (store.Message).
type msgRecord = store.Message
