package lossless

import (
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// msgHash is a message's stable key within its conversation: the first 16
// bytes of SHA-256 over its compacted JSON. The same message delivered again
// (replay, restart, transcript re-read, afterTurn's whole-session view) has
// the same bytes, hence the same key, and is stored once.
type msgHash = store.Hash

func hashRaw(raw []byte) msgHash { return records.HashRaw(raw) }

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
