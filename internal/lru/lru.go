// Package lru is a least-recently-used cache bounded in bytes, safe for
// concurrent use: the one cache of the engine's hot paths (token counts by
// content hash, the fast counter's byte-pair merges, the recall index's
// document frequencies).
//
// It is github.com/hashicorp/golang-lru/v2's simplelru with byte
// accounting: each entry costs what the cost function given to New says,
// and adding past the budget evicts the least recently used entries until
// the cache fits. The keys are spread over shards, each with its own lock
// and an equal part of the budget, so that counters running on every core
// do not queue on one lock.
//
// A cache is a cache: Get may miss for any key at any time (evicted, or
// never kept because it alone costs more than a shard's budget), and
// callers must compute the value on a miss.
package lru

import (
	"hash/maphash"
	"math"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// EntryOverhead is about what one entry costs the cache besides its key's
// and value's own bytes (the list element, the map slot): a cost function
// adds it to what it counts.
const EntryOverhead = 96

// Cache is a byte-bounded LRU cache from K to V. The zero value is not
// usable: make one with New.
type Cache[K comparable, V any] struct {
	seed     maphash.Seed
	cost     func(K, V) int
	shardMax int
	mask     uint64
	shards   []shard[K, V]
}

type shard[K comparable, V any] struct {
	mu    sync.Mutex
	l     *simplelru.LRU[K, V]
	bytes int
	_     [32]byte // keeps two shards' locks off one cache line
}

// New returns a cache of at most maxBytes, as cost counts them (cost must
// be positive, and the same for the same key and value), spread over
// shards shards (rounded up to a power of two; at least 1). It panics on a
// non-positive maxBytes or a nil cost: both are programming errors.
func New[K comparable, V any](maxBytes, shards int, cost func(K, V) int) *Cache[K, V] {
	if maxBytes <= 0 || cost == nil {
		panic("lru: New needs a positive byte budget and a cost function")
	}
	n := 1
	for n < shards {
		n <<= 1
	}
	c := &Cache[K, V]{
		seed:     maphash.MakeSeed(),
		cost:     cost,
		shardMax: max(maxBytes/n, 1),
		mask:     uint64(n - 1),
		shards:   make([]shard[K, V], n),
	}
	for i := range c.shards {
		s := &c.shards[i]
		// The entry count is not the bound (the bytes are): MaxInt never
		// evicts by count.
		l, err := simplelru.NewLRU[K, V](math.MaxInt, func(k K, v V) { s.bytes -= c.cost(k, v) })
		if err != nil {
			panic(err) // only for a non-positive size
		}
		s.l = l
	}
	return c
}

func (c *Cache[K, V]) shard(k K) *shard[K, V] {
	if c.mask == 0 {
		return &c.shards[0]
	}
	return &c.shards[maphash.Comparable(c.seed, k)&c.mask]
}

// Get returns the value cached for k, and whether there was one (making
// it the most recently used). It does not keep k: a caller may pass a key
// that aliases a buffer it reuses.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	s := c.shard(k)
	s.mu.Lock()
	v, ok := s.l.Get(k)
	s.mu.Unlock()
	return v, ok
}

// Add caches v for k (replacing what k had), then evicts the least
// recently used entries of k's shard until it fits its budget. An entry
// that alone costs more than a shard's budget is not kept.
func (c *Cache[K, V]) Add(k K, v V) {
	n := c.cost(k, v)
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > c.shardMax {
		s.l.Remove(k) // an older value of k must not outlive this one
		return
	}
	if old, ok := s.l.Peek(k); ok {
		s.bytes -= c.cost(k, old)
	}
	s.l.Add(k, v)
	s.bytes += n
	for s.bytes > c.shardMax {
		if _, _, ok := s.l.RemoveOldest(); !ok {
			break
		}
	}
}

// Purge empties the cache.
func (c *Cache[K, V]) Purge() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.l.Purge()
		s.bytes = 0
		s.mu.Unlock()
	}
}

// Len returns the number of entries cached.
func (c *Cache[K, V]) Len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.l.Len()
		s.mu.Unlock()
	}
	return n
}

// Bytes returns what the entries cached cost, as the cost function counts
// it (at most the budget given to New).
func (c *Cache[K, V]) Bytes() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.bytes
		s.mu.Unlock()
	}
	return n
}

// NewStrings returns a cache keyed by strings of at most maxBytes, where an
// entry costs its key's bytes, the value's size (valueBytes) and
// EntryOverhead, over 16 shards: the cache of values computed from pieces
// of text (the fast o200k counter's byte-pair merges).
func NewStrings[V any](maxBytes, valueBytes int) *Cache[string, V] {
	return New(maxBytes, 16, func(k string, _ V) int { return len(k) + valueBytes + EntryOverhead })
}
