package lossless

import (
	"container/list"
)

// Per-conversation state is a cache, bounded in bytes. Each conversation
// the engine serves has a convState: its write lock, its record, the parsed
// messages and rendered summaries of its last assembled window (about one
// token budget of text, which make the next Assemble cheap), the session
// names resolved to it and its display name. An engine serving many
// sessions keeps the most recently used states within
// Config.AssembleCacheBytes and forgets the others: the next use of a
// forgotten conversation reads its record again and parses its window
// again. The budget a turn's first Assemble noted (convState.lastBudget)
// goes with its state, so a turn whose conversation was forgotten between
// Assemble and the commit measures compaction against the runtime
// context's budget instead.
//
// Eviction happens under Engine.convMu and only to a state whose locks
// (mu, asmMu) are free: it takes both with TryLock, marks the state dead
// and removes it from Engine.convs. A goroutine that got a state from
// Engine.state and locks it afterwards checks dead under the lock and,
// when set, looks the conversation up again (lockLive, lockWindow): two
// goroutines never hold two different locks for the same conversation. A
// state whose write lock is held but whose window is idle loses only its
// window.

// DefaultAssembleCacheBytes is Config.AssembleCacheBytes's default.
const DefaultAssembleCacheBytes = 32 << 20

// Cost estimates of the cached state, in bytes.
const (
	// stateBaseBytes is a convState with its map entry and list element.
	stateBaseBytes = 512
	// entryOverheadBytes is a string's header and map entry.
	entryOverheadBytes = 64
)

// stateLRU orders the cached states (guarded by Engine.convMu).
type stateLRU struct {
	ll    *list.List // of *convState, most recent first
	bytes int64      // sum of the states' cost
	// resolved caches conversation resolution: agent/session/key -> convID
	// (each key also listed in its state's keys, and dropped with it).
	resolved map[string]convID
}

// cacheMax returns the byte budget of the per-conversation state.
func (e *Engine) cacheMax() int64 {
	if e.cfg.AssembleCacheBytes > 0 {
		return e.cfg.AssembleCacheBytes
	}
	return DefaultAssembleCacheBytes
}

// stateLocked returns c's state, creating it, and marks it most recently
// used. The caller holds convMu.
func (e *Engine) stateLocked(c convID) *convState {
	l := &e.lru
	if l.ll == nil {
		l.ll, l.resolved = list.New(), map[string]convID{}
	}
	if e.convs == nil {
		e.convs = map[convID]*convState{}
	}
	if s, ok := e.convs[c]; ok {
		l.ll.MoveToFront(s.el)
		return s
	}
	s := &convState{id: c}
	s.el = l.ll.PushFront(s)
	e.convs[c] = s
	e.chargeLocked(s, stateBaseBytes)
	return s
}

// chargeLocked adds delta bytes to s's cost (convMu held).
func (e *Engine) chargeLocked(s *convState, delta int64) {
	s.cost += delta
	e.lru.bytes += delta
}

// state returns conversation c's state, marked most recently used. It may
// be evicted as soon as convMu is released: a caller that locks it uses
// lockLive or lockWindow, which check; a caller that only touches its
// atomics (the noted budget) may lose what it sets.
func (e *Engine) state(c convID) *convState {
	e.convMu.Lock()
	defer e.convMu.Unlock()
	s := e.stateLocked(c)
	e.evictLocked()
	return s
}

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

// evictLocked forgets the least recently used states while the cache is
// over its budget (convMu held); the most recent one stays. A state in use
// is skipped (its window is dropped when only its write lock is held).
func (e *Engine) evictLocked() {
	l := &e.lru
	max := e.cacheMax()
	for el := l.ll.Back(); l.bytes > max && el != nil && el != l.ll.Front(); {
		prev := el.Prev()
		s := el.Value.(*convState)
		switch {
		case s.mu.TryLock():
			if s.asmMu.TryLock() {
				s.dead = true
				s.asmMsgs, s.asmSums = nil, nil
				s.asmMu.Unlock()
				s.mu.Unlock()
				for _, k := range s.keys {
					delete(l.resolved, k)
				}
				l.ll.Remove(el)
				delete(e.convs, s.id)
				l.bytes -= s.cost
			} else {
				s.mu.Unlock()
			}
		case s.winBytes > 0 && s.asmMu.TryLock():
			s.asmMsgs, s.asmSums = nil, nil
			s.asmMu.Unlock()
			e.chargeLocked(s, -s.winBytes)
			s.winBytes = 0
		}
		el = prev
	}
}

// asmTouch records that s's cached window is now size bytes and was just
// used, and evicts beyond the budget. The caller holds s.asmMu (so s is
// live).
func (e *Engine) asmTouch(s *convState, size int64) {
	e.convMu.Lock()
	defer e.convMu.Unlock()
	e.chargeLocked(s, size-s.winBytes)
	s.winBytes = size
	e.lru.ll.MoveToFront(s.el)
	e.evictLocked()
}

// asmForget drops s's window from the accounting (the caller dropped the
// window under s.asmMu).
func (e *Engine) asmForget(s *convState) {
	e.convMu.Lock()
	defer e.convMu.Unlock()
	if !s.dead {
		e.chargeLocked(s, -s.winBytes)
	}
	s.winBytes = 0
}

// noteRecord accounts the bytes of s's record, just loaded or changed
// (the caller holds s.mu, so s is live).
func (e *Engine) noteRecord(s *convState) {
	n := int64(len(s.rec.Agent) + len(s.rec.Key))
	for _, id := range s.rec.SessionIDs {
		n += int64(len(id)) + 16
	}
	e.convMu.Lock()
	defer e.convMu.Unlock()
	e.chargeLocked(s, n-s.recBytes-int64(len(s.name)))
	s.recBytes = n
	s.name = "" // named from the record (sessionName): named again
	e.evictLocked()
}

// resolvedGet returns the conversation key was resolved to, if cached.
func (e *Engine) resolvedGet(key string) (convID, bool) {
	e.convMu.Lock()
	defer e.convMu.Unlock()
	c, ok := e.lru.resolved[key]
	if ok {
		e.lru.ll.MoveToFront(e.convs[c].el)
	}
	return c, ok
}

// resolvedPut caches that key resolves to c, with c's state.
func (e *Engine) resolvedPut(key string, c convID) {
	e.convMu.Lock()
	defer e.convMu.Unlock()
	s := e.stateLocked(c)
	l := &e.lru
	if old, ok := l.resolved[key]; ok {
		if old == c {
			return
		}
		e.dropKeyLocked(e.convs[old], key)
	}
	l.resolved[key] = c
	s.keys = append(s.keys, key)
	e.chargeLocked(s, int64(len(key))+entryOverheadBytes)
	e.evictLocked()
}

func (e *Engine) dropKeyLocked(s *convState, key string) {
	delete(e.lru.resolved, key)
	for i, k := range s.keys {
		if k == key {
			s.keys = append(s.keys[:i], s.keys[i+1:]...)
			e.chargeLocked(s, -int64(len(key))-entryOverheadBytes)
			return
		}
	}
}

// forgetResolved drops every cached resolution to c (c was deleted).
func (e *Engine) forgetResolved(c convID) {
	e.convMu.Lock()
	defer e.convMu.Unlock()
	s, ok := e.convs[c]
	if !ok {
		return
	}
	for len(s.keys) > 0 {
		e.dropKeyLocked(s, s.keys[0])
	}
}

// cachedName returns c's display name if cached (sessionName).
func (e *Engine) cachedName(c convID) (string, bool) {
	e.convMu.Lock()
	defer e.convMu.Unlock()
	if s, ok := e.convs[c]; ok && s.name != "" {
		return s.name, true
	}
	return "", false
}

// cacheName caches c's display name with its state.
func (e *Engine) cacheName(c convID, name string) {
	e.convMu.Lock()
	defer e.convMu.Unlock()
	s := e.stateLocked(c)
	e.chargeLocked(s, int64(len(name)-len(s.name)))
	s.name = name
	e.evictLocked()
}

// asmCacheBytes returns the bytes the cached per-conversation state is
// counted at.
func (e *Engine) asmCacheBytes() int64 {
	e.convMu.Lock()
	defer e.convMu.Unlock()
	return e.lru.bytes
}

// cachedStates returns how many conversations have state in memory.
func (e *Engine) cachedStates() int {
	e.convMu.Lock()
	defer e.convMu.Unlock()
	return len(e.convs)
}
