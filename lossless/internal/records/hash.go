package records

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"

	"github.com/lossless-engine/contextengine/store"
)

// HashRaw is a message's stable key within its conversation: the first 16
// bytes of SHA-256 over its compacted JSON. The same message delivered
// again (replay, restart, transcript re-read, afterTurn's whole-session
// view) has the same bytes, hence the same key, and is stored once.
func HashRaw(raw []byte) store.Hash {
	var buf bytes.Buffer
	src := raw
	if json.Compact(&buf, raw) == nil {
		src = buf.Bytes()
	}
	s := sha256.Sum256(src)
	var h store.Hash
	copy(h[:], s[:16])
	return h
}

// HashMessageRaw is HashRaw for the raw bytes of a parsed message (valid
// JSON): when they hold no whitespace outside strings, json.Compact would
// return them unchanged, so they are hashed as they are without it.
func HashMessageRaw(raw []byte) store.Hash {
	if !compactJSON(raw) {
		return HashRaw(raw)
	}
	s := sha256.Sum256(raw)
	var h store.Hash
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
