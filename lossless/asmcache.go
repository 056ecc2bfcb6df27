package lossless

import (
	"github.com/lossless-engine/contextengine/lossless/internal/assemble"
)

// Per-conversation state is a cache, bounded in bytes (assemble.Cache):
// each conversation the engine serves has a convState (store.go) in
// Engine.convs, kept within Config.AssembleCacheBytes. The next use of a
// forgotten conversation reads its record again and parses its window
// again. The budget a turn's first Assemble noted goes with its state, so
// a turn whose conversation was forgotten between Assemble and the commit
// measures compaction against the runtime context's budget instead.
//
// Eviction may forget a state while its conversation is locked: the
// write lock and the window lock live outside the cache
// (Engine.convLocks, Engine.winLocks, held only while in use), so a
// holder of a forgotten state still excludes every other holder; what it
// writes to the forgotten state is lost (the next one reads the record
// again and assembles its window again).

// DefaultAssembleCacheBytes is Config.AssembleCacheBytes's default.
const DefaultAssembleCacheBytes = assemble.DefaultCacheBytes

// stateCache is the engine's per-conversation state cache.
type stateCache = assemble.Cache[convID, *convState]

// newStateCache returns e's state cache over e.convs.
func newStateCache(e *Engine) *stateCache {
	return assemble.NewCache(e.convs, e.cfg.AssembleCacheBytes, func(c convID) *convState { return &convState{id: c} })
}

// state returns conversation c's state, marked most recently used. It may
// be evicted as soon as it returns: a caller that reads or writes its
// record or window holds c's lock and gets the state under it (lockLive,
// lockWindow).
func (e *Engine) state(c convID) *convState { return e.lru.State(c) }

// lockLive takes c's write lock (Engine.convLocks) and returns c's state
// with it. The caller releases the lock with s.unlock.
func (e *Engine) lockLive(c convID) *convState {
	unlock := e.convLocks.wait(c)
	s := e.state(c)
	s.unlockConv = unlock
	return s
}

// lockWindow takes c's window lock (Engine.winLocks) and returns c's state
// with it, and the func that releases the lock.
func (e *Engine) lockWindow(c convID) (*convState, func()) {
	unlock := e.winLocks.wait(c)
	return e.state(c), unlock
}

// asmForget drops s's window from the accounting (the caller dropped the
// window under its window lock).
func (e *Engine) asmForget(s *convState) { e.lru.ForgetWindow(s.id, s) }

// noteRecord accounts the bytes of s's record, just loaded or changed
// (the caller holds the conversation's write lock; nothing is counted
// when s was evicted meanwhile).
func (e *Engine) noteRecord(s *convState) {
	n := int64(len(s.rec.Agent) + len(s.rec.Key))
	for _, id := range s.rec.SessionIDs {
		n += int64(len(id)) + 16
	}
	e.lru.NoteRecord(s.id, s, n)
}

// resolvedGet returns the conversation key was resolved to, if cached.
func (e *Engine) resolvedGet(key string) (convID, bool) { return e.lru.Resolved(key) }

// resolvedPut caches that key resolves to c, with c's state.
func (e *Engine) resolvedPut(key string, c convID) { e.lru.Resolve(key, c) }

// forgetResolved drops every cached resolution to c (c was deleted).
func (e *Engine) forgetResolved(c convID) { e.lru.Forget(c) }
