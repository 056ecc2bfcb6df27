package retention

import (
	"context"

	"github.com/lossless-engine/contextengine/store"
)

// Limits are the engine's retention limits (lossless.RetentionConfig):
// zero values mean no limit.
type Limits struct {
	// MaxAgeDays deletes conversations whose last message is older than
	// this many days.
	MaxAgeDays int
	// MaxBytesPerAgent deletes an agent's conversations with the oldest
	// last message while its stored bytes exceed this.
	MaxBytesPerAgent int64
	// IntervalMinutes is how often the periodic pass runs (0: the
	// default; -1: no periodic pass).
	IntervalMinutes int
}

// Port is what retention needs from the engine (package lossless
// implements it over its *Engine).
type Port interface {
	// Limits are the engine's retention limits, read at each pass.
	Limits() Limits
	// Enter marks a call in progress (Close waits for it); done ends it.
	// It fails after Close.
	Enter() (done func(), err error)
	// View runs fn on a read-only snapshot of the engine's store.
	View(ctx context.Context, fn func(store.Reader) error) error
	// Update runs fn in a write transaction of the engine's store (its
	// errors mapped to the engine's).
	Update(ctx context.Context, fn func(store.Tx) error) error
	// Batch starts a write batch of the engine's store.
	Batch(ctx context.Context) (store.Batch, error)
	// MessageTimes returns the timestamps of c's first and last messages
	// (0 when unknown).
	MessageTimes(r store.Reader, c store.ConvID, rec store.Conversation) (first, last int64, err error)
	// BeforeDelete runs between a retention decision and the deletion (a
	// test's seam; nothing in production).
	BeforeDelete()
	// Lock takes conversation c's lock (and the store's, when shared).
	Lock(ctx context.Context, c store.ConvID) (Held, error)
	// LockNames takes the engine's session names lock and agent's names
	// lock in the store (when shared); release lets both go.
	LockNames(ctx context.Context, agent string) (release func(), err error)
	// Unindex removes c's docs from the recall index.
	Unindex(ctx context.Context, c store.ConvID) error
}

// Held is a conversation locked by Port.Lock.
type Held interface {
	// Unlock lets the conversation's locks go.
	Unlock()
	// MarkRetiring marks the engine's cached record (when it has one)
	// Retiring, as the stored one now is.
	MarkRetiring()
	// Forget drops what the engine caches of the deleted conversation of
	// record rec: its recall index entry, its sessions' resolutions, its
	// record and its assembled window.
	Forget(rec store.Conversation)
}
