package lossless

import (
	"container/list"
	"sync"
)

// The parsed messages and rendered summaries of each conversation's last
// assembled window (convState.asmMsgs/asmSums) make the next Assemble of
// that conversation cheap. They are about one token budget of text each,
// so an engine serving many sessions bounds them: asmLRU keeps the most
// recently assembled conversations' windows within Config.AssembleCacheBytes
// and forgets the others' (their next Assemble parses its window again).

// DefaultAssembleCacheBytes is Config.AssembleCacheBytes's default.
const DefaultAssembleCacheBytes = 64 << 20

type asmLRU struct {
	mu     sync.Mutex
	ll     *list.List // of *asmEntry, most recent first
	byConv map[convID]*list.Element
	bytes  int64
}

type asmEntry struct {
	s    *convState
	size int64
}

// asmTouch records that s's cached window (size bytes) was just used, and
// evicts the least recently used windows while the total is over the
// bound. The caller holds s.asmMu; victims whose lock is busy are skipped
// (they are in use right now).
func (e *Engine) asmTouch(s *convState, size int64) {
	max := e.cfg.AssembleCacheBytes
	if max <= 0 {
		max = DefaultAssembleCacheBytes
	}
	l := &e.asmCache
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ll == nil {
		l.ll, l.byConv = list.New(), map[convID]*list.Element{}
	}
	if el, ok := l.byConv[s.id]; ok {
		ent := el.Value.(*asmEntry)
		l.bytes += size - ent.size
		ent.size = size
		l.ll.MoveToFront(el)
	} else {
		l.byConv[s.id] = l.ll.PushFront(&asmEntry{s: s, size: size})
		l.bytes += size
	}
	for el := l.ll.Back(); l.bytes > max && el != nil && el != l.ll.Front(); {
		prev := el.Prev()
		ent := el.Value.(*asmEntry)
		if ent.s.asmMu.TryLock() {
			ent.s.asmMsgs, ent.s.asmSums = nil, nil
			ent.s.asmMu.Unlock()
			l.bytes -= ent.size
			l.ll.Remove(el)
			delete(l.byConv, ent.s.id)
		}
		el = prev
	}
}

// asmForget drops s from the cache accounting (its windows are gone).
func (e *Engine) asmForget(s *convState) {
	l := &e.asmCache
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.byConv[s.id]; ok {
		l.bytes -= el.Value.(*asmEntry).size
		l.ll.Remove(el)
		delete(l.byConv, s.id)
	}
}

// asmCacheBytes returns the bytes the cached windows are counted at.
func (e *Engine) asmCacheBytes() int64 {
	l := &e.asmCache
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}
