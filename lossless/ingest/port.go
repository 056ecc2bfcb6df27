package ingest

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/store"
)

// Port is what the write path needs from the engine (package lossless
// implements it over its *Engine). Its methods are called with the engine
// entered.
type Port interface {
	// Store is the engine's store: every read, and the writes made after
	// CheckSpace.
	Store() store.Store
	// CheckSpace returns the engine's error when its store's filesystem is
	// too full to write (ErrDiskFull), nil otherwise.
	CheckSpace() error
	// Limits returns the engine's limits on messages.
	Limits() Limits
	// Counter is the engine's token counter.
	Counter() core.TokenCounter
	// CachedTokens returns the token count cached for the message of key
	// h, if any.
	CachedTokens(h store.Hash) (int, bool)
	// CacheTokens caches n as the token count of the message of key h.
	CacheTokens(h store.Hash, n int)
	// Hash returns the key of a parsed message's bytes (SHA-256 over its
	// compacted JSON, first 16 bytes).
	Hash(raw []byte) store.Hash
	// LockConv locks conversation c for writing and returns its record,
	// read and written through the pointer while the lock is held; unlock
	// releases it.
	LockConv(ctx context.Context, c store.ConvID) (rec *store.Conversation, unlock func(), err error)
	// CheckBase refuses, on a shared store, a write to c based on record
	// base when the stored record is no longer base (ErrConcurrentWrite).
	CheckBase(tx store.Tx, c store.ConvID, base store.Conversation) error
	// IndexMessages hands messages just committed to c (of agent) to the
	// recall index.
	IndexMessages(c store.ConvID, agent string, ps []*Pending)
	// Resolved returns the conversation a resolution key was resolved to,
	// if cached.
	Resolved(key string) (store.ConvID, bool)
	// RememberResolved caches that key resolves to c.
	RememberResolved(key string, c store.ConvID)
	// ForgetResolved drops every cached resolution to c.
	ForgetResolved(c store.ConvID)
	// LockNames serialises the creation and mapping of agent's
	// conversations, in this process and, on a shared store, across
	// processes; the func releases the lock.
	LockNames(ctx context.Context, agent string) (func(), error)
	// NewConvID derives a conversation id from its agent and first name.
	NewConvID(agent, name string) store.ConvID
	// AddSessionID records sessionID (and sessionKey, when the record has
	// none) on conversation c's record, under its lock.
	AddSessionID(ctx context.Context, c store.ConvID, sessionID, sessionKey string) error
}

// Limits are the engine's limits on the messages it stores.
type Limits struct {
	// MaxMessageBytes refuses a message over it (core.ErrTooLarge).
	MaxMessageBytes int
	// LargeContentTokens: a message over it is represented in the context
	// by a reference message (store.FlagLarge).
	LargeContentTokens int
}
