package lossless

import (
	"github.com/lossless-engine/contextengine/lossless/config"
	"testing"
	"time"
)

// TestConvLockOutlivesEviction: a conversation's write lock and window lock
// held while its cached state is evicted still exclude a second locker,
// who waits for the holder and then gets a state of its own (the cache
// forgot the holder's); and the lock tables keep nothing once released.
// With a lock that lived in the evicted state, the second locker would make
// a new state with a free lock and get in beside the holder.
func TestConvLockOutlivesEviction(t *testing.T) {
	e := openTest(t, func(c *config.Config) { c.AssembleCacheBytes = 1; off := false; c.Recall.Enabled = &off })
	a, b := convID{1}, convID{2}
	cached := func(c convID) bool {
		for _, en := range e.lru.Inspect().Entries {
			if en.ID == c {
				return true
			}
		}
		return false
	}
	// waitFor runs lock in a goroutine; the returned channel is closed
	// once lock has returned.
	waitFor := func(lock func()) chan struct{} {
		got := make(chan struct{})
		go func() { lock(); close(got) }()
		return got
	}

	for _, tc := range []struct {
		name string
		lock func(convID) (*convState, func())
	}{
		{"write", func(c convID) (*convState, func()) { s := e.lockLive(c); return s, s.unlock }},
		{"window", func(c convID) (*convState, func()) { return e.lockWindow(c) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held, unlock := tc.lock(a)
			// Another conversation's state evicts a's (a one-byte cache
			// keeps only the most recent state).
			_, unlockB := tc.lock(b)
			unlockB()
			if cached(a) {
				t.Fatal("a's state was not evicted")
			}
			var second *convState
			var unlockSecond func()
			got := waitFor(func() { second, unlockSecond = tc.lock(a) })
			select {
			case <-got:
				t.Fatal("a second locker took a's lock while it was held across an eviction")
			case <-time.After(100 * time.Millisecond):
			}
			unlock()
			select {
			case <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("the second locker did not get a's lock once released")
			}
			if second == held {
				t.Fatal("the second locker got the evicted state")
			}
			unlockSecond()
		})
	}
	if n, m := e.convLocks.size(), e.winLocks.size(); n != 0 || m != 0 {
		t.Fatalf("%d write locks and %d window locks left after every holder let go", n, m)
	}
}
