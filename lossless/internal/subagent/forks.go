package subagent

import (
	"iter"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/store"
)

// MaxForkCaches bounds the fork caches Forks keeps (each holds at most one
// budget's window of parsed parent messages).
const MaxForkCaches = 64

// ForkCache holds the parent messages of a fork's last assembly (the
// snapshot never changes; only the budget's cut moves). Mu guards the
// other fields.
type ForkCache struct {
	Mu sync.Mutex
	// Token is the preparation's (store.Subagent.Token) whose parent the
	// messages are of.
	Token string
	// Msgs are the parent's raw messages by sequence number.
	Msgs map[uint64]core.Message
	// Sums are the parent's summaries by summary id.
	Sums map[string]core.Message
}

// Forks holds the fork caches of the most recently assembled forks
// (MaxForkCaches; a forgotten one is parsed again at its next assemble).
// The zero value is ready; it is safe for concurrent use.
type Forks struct {
	mu    sync.Mutex
	cache *lru.Cache[store.SubID, *ForkCache]
}

// Get returns sub's cache, a new empty one when it has none.
func (f *Forks) Get(sub store.SubID) *ForkCache {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cache == nil {
		c, err := lru.New[store.SubID, *ForkCache](MaxForkCaches)
		if err != nil {
			panic(err) // MaxForkCaches is positive
		}
		f.cache = c
	}
	c, ok := f.cache.Get(sub)
	if !ok {
		c = new(ForkCache)
		f.cache.Add(sub, c)
	}
	return c
}

// Drop forgets sub's cache (its preparation was removed or its child
// ended).
func (f *Forks) Drop(sub store.SubID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cache != nil {
		f.cache.Remove(sub)
	}
}

// Len returns how many caches are kept.
func (f *Forks) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cache == nil {
		return 0
	}
	return f.cache.Len()
}

// Contains reports whether sub's cache is kept.
func (f *Forks) Contains(sub store.SubID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cache != nil && f.cache.Contains(sub)
}

// Reversed yields items from the last to the first.
func Reversed(items []store.Item) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		for i := len(items) - 1; i >= 0; i-- {
			if !yield(items[i], nil) {
				return
			}
		}
	}
}
