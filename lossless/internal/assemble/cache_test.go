package assemble

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// cstate is a test's per-conversation state (a pointer: two states of one
// key are told apart).
type cstate struct{ k int }

func newTestCache(max int64) *Cache[int, *cstate] {
	return NewCache(map[int]*cstate{}, max, func(k int) *cstate { return &cstate{k: k} })
}

// checkAccounting: the cache's accounting adds up: every state's cost
// sums to its bytes, every resolution key is listed by the state it
// resolves to, the list and the map hold the same states.
func checkAccounting(t *testing.T, c *Cache[int, *cstate]) {
	t.Helper()
	view := c.Inspect()
	var sum int64
	keys := 0
	for _, s := range view.Entries {
		sum += s.Cost
		keys += len(s.Keys)
		for _, k := range s.Keys {
			if view.Resolved[k] != s.ID {
				t.Errorf("key %q of %d resolves to %d", k, s.ID, view.Resolved[k])
			}
		}
	}
	if sum != view.Bytes || keys != len(view.Resolved) || view.Listed != view.States || len(view.Entries) != view.States {
		t.Errorf("cache accounting: %d bytes counted, states sum %d; %d keys listed, %d cached; %d in the list, %d in the map",
			view.Bytes, sum, keys, len(view.Resolved), view.Listed, view.States)
	}
}

// TestCacheBounded: windows of many conversations stay within the byte
// budget (the most recent one stays, whatever its size), some are kept
// and the oldest forgotten with their resolutions; a forgotten
// conversation gets a fresh state; a touch of a state no longer cached
// charges nothing; the accounting adds up after random use.
func TestCacheBounded(t *testing.T) {
	const max, win = 64 << 10, 6 << 10
	c := newTestCache(max)
	first := map[int]*cstate{}
	for k := 0; k < 40; k++ {
		s := c.State(k)
		first[k] = s
		c.Resolve(fmt.Sprint("session-", k), k)
		c.SetName(k, fmt.Sprint("agent:main:", k))
		c.Touch(k, s, win)
		if got := c.Bytes(); got > max+win {
			t.Fatalf("after %d conversations the cache holds %d bytes, bound %d", k+1, got, max)
		}
	}
	cached := 0
	for _, e := range c.Inspect().Entries {
		if e.WinBytes > 0 {
			cached++
		}
	}
	if cached == 0 || cached == 40 {
		t.Fatalf("%d of 40 windows cached under a %d-byte bound", cached, max)
	}
	if _, ok := c.Resolved("session-0"); ok {
		t.Fatal("the oldest conversation's resolution outlived its state")
	}
	if _, ok := c.Resolved("session-39"); !ok {
		t.Fatal("the newest conversation's resolution is gone")
	}
	if name, ok := c.Name(39); !ok || name != "agent:main:39" {
		t.Fatalf("the newest conversation's name: %q %v", name, ok)
	}
	before := c.Bytes()
	c.Touch(39, first[39], win) // the same window again: charged once
	if c.Bytes() != before {
		t.Fatalf("touching a window of the same size again moved the count from %d to %d", before, c.Bytes())
	}
	c.Touch(0, first[0], 1<<20) // a state the cache forgot: nothing charged
	if c.Bytes() != before {
		t.Fatalf("a forgotten state's touch charged %d bytes", c.Bytes()-before)
	}
	if s := c.State(0); s == first[0] {
		t.Fatal("a forgotten conversation got its old state back")
	}
	// One window larger than the whole budget: it stays, alone.
	big := c.State(99)
	c.Touch(99, big, 2*max)
	if c.Len() != 1 || c.State(99) != big {
		t.Fatalf("a window over the budget: %d states cached", c.Len())
	}
	checkAccounting(t, c)

	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		k := r.IntN(60)
		switch r.IntN(6) {
		case 0:
			c.Touch(k, c.State(k), int64(r.IntN(8<<10)))
		case 1:
			c.Resolve(fmt.Sprint("session-", r.IntN(80)), k)
		case 2:
			c.SetName(k, fmt.Sprint("name-", r.IntN(1000)))
		case 3:
			c.ForgetWindow(k, c.State(k))
		case 4:
			c.NoteRecord(k, c.State(k), int64(r.IntN(2000)))
		case 5:
			c.Forget(k)
		}
		if c.Bytes() > max+8<<10+2000+4096 {
			t.Fatalf("step %d: %d bytes over the bound %d", i, c.Bytes(), max)
		}
	}
	checkAccounting(t, c)
}
