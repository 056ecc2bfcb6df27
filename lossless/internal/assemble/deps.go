package assemble

import (
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/store"
)

// Deps are what assembling a window reads, handed over by the engine's
// Assemble door.
type Deps struct {
	// Store is the engine's store.
	Store store.Store
	// Counter is the engine's token counter.
	Counter core.TokenCounter
	// Shared: several processes share the store (the conversation's
	// record is read with the window, it may have been deleted and made
	// again by another process).
	Shared bool
	// DefaultTokenBudget is the configured budget of a call that names
	// none.
	DefaultTokenBudget int
}

// Cached is a conversation's cached window: the messages and summaries the
// last assemble parsed, by sequence number and summary id, and the
// record's Created time it was assembled from (on a shared store another
// process may delete the conversation and create it again with the same
// id, whose sequence numbers then name other messages).
type Cached struct {
	Msgs    map[uint64]core.Message
	Sums    map[string]core.Message
	Created int64
}

// Assembled is a window Inner assembled and what the engine keeps of it.
type Assembled struct {
	// Result is the window.
	Result core.AssembleResult
	// Next is the window's parsed messages and summaries, for the engine's
	// window cache (nil: nothing to keep); Size their bytes in memory.
	Next *Cached
	Size int64
	// Gone is set when the conversation was deleted since its session was
	// resolved (retention; on a shared store, another process): the
	// engine forgets the resolution, and Result is the host's messages.
	Gone bool
}
