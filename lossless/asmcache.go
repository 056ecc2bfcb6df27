package lossless

import (
	"github.com/lossless-engine/contextengine/lossless/assemble"
)

// Per-conversation state is a cache, bounded in bytes (assemble.Cache):
// each conversation the engine serves has a convState (store.go) in
// Engine.convs, kept within Config.AssembleCacheBytes. The next use of a
// forgotten conversation reads its record again and parses its window
// again. The budget a turn's first Assemble noted goes with its state, so
// a turn whose conversation was forgotten between Assemble and the commit
// measures compaction against the runtime context's budget instead.
//
// Eviction happens only to a state whose locks (mu, asmMu) are free: it
// takes both with TryLock and marks the state dead. A goroutine that got a
// state from Engine.state and locks it afterwards checks dead under the
// lock and, when set, looks the conversation up again (lockLive,
// lockWindow).

// DefaultAssembleCacheBytes is Config.AssembleCacheBytes's default.
const DefaultAssembleCacheBytes = assemble.DefaultCacheBytes

// stateCache is the engine's per-conversation state cache.
type stateCache = assemble.Cache[convID, *convState]

// newStateCache returns e's state cache over e.convs.
func newStateCache(e *Engine) *stateCache {
	return assemble.NewCache(e.convs, e.cfg.AssembleCacheBytes, assemble.CacheHooks[convID, *convState]{
		New: func(c convID) *convState { return &convState{id: c} },
		TryEvict: func(s *convState) (bool, bool) {
			if !s.mu.TryLock() {
				return false, false
			}
			defer s.mu.Unlock()
			if !s.asmMu.TryLock() {
				return false, true
			}
			s.dead = true
			s.asmMsgs, s.asmSums = nil, nil
			s.asmMu.Unlock()
			return true, true
		},
		TryDropWindow: func(s *convState) bool {
			if !s.asmMu.TryLock() {
				return false
			}
			s.asmMsgs, s.asmSums = nil, nil
			s.asmMu.Unlock()
			return true
		},
	})
}

// state returns conversation c's state, marked most recently used. It may
// be evicted as soon as it returns: a caller that locks it uses lockLive
// or lockWindow, which check; a caller that only touches its atomics (the
// noted budget) may lose what it sets.
func (e *Engine) state(c convID) *convState { return e.lru.State(c) }

// lockLive returns c's state with its write lock (mu) held, never a state
// evicted meanwhile. The caller unlocks s.mu.
func (e *Engine) lockLive(c convID) *convState {
	for {
		s := e.state(c)
		s.mu.Lock()
		if !s.dead {
			return s
		}
		s.mu.Unlock()
	}
}

// lockWindow returns c's state with its window lock (asmMu) held, never a
// state evicted meanwhile. The caller unlocks s.asmMu.
func (e *Engine) lockWindow(c convID) *convState {
	for {
		s := e.state(c)
		s.asmMu.Lock()
		if !s.dead {
			return s
		}
		s.asmMu.Unlock()
	}
}

// asmForget drops s's window from the accounting (the caller dropped the
// window under s.asmMu).
func (e *Engine) asmForget(s *convState) { e.lru.ForgetWindow(s.id, s) }

// noteRecord accounts the bytes of s's record, just loaded or changed
// (the caller holds s.mu, so s is live).
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

// cachedName returns c's display name if cached (sessionName).
func (e *Engine) cachedName(c convID) (string, bool) { return e.lru.Name(c) }

// cacheName caches c's display name with its state.
func (e *Engine) cacheName(c convID, name string) { e.lru.SetName(c, name) }
