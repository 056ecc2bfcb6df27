package assemble

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Per-conversation state is a cache, bounded in bytes. Each conversation
// the engine serves has a state: its record, the parsed
// messages and rendered summaries of its last assembled window (about one
// token budget of text, which make the next Assemble cheap), the session
// names resolved to it and its display name. An engine serving many
// sessions keeps the most recently used states within its byte budget
// (Config.AssembleCacheBytes) and forgets the others: the next use of a
// forgotten conversation reads its record again and parses its window
// again.
//
// The cache holds no lock of a conversation: the engine keeps them apart
// (lossless's Engine.convLocks), so evicting a state, even one whose
// conversation is locked, only forgets what it caches.
//
// The recency order is golang-lru's simplelru (the module's one LRU),
// under the cache's lock; the bound is the bytes counted, not the entries.

// DefaultCacheBytes is the cache's default budget in bytes.
const DefaultCacheBytes = 32 << 20

// Cost estimates of the cached state, in bytes.
const (
	// stateBaseBytes is a state with its map entries and list element.
	stateBaseBytes = 512
	// entryOverheadBytes is a string's header and map entry.
	entryOverheadBytes = 64
)

// Cache is the engine's per-conversation state S by conversation K,
// bounded in bytes, with the cached resolutions of session names to
// conversations and the conversations' display names. It is safe for
// concurrent use.
type Cache[K comparable, S comparable] struct {
	mu       sync.Mutex
	max      int64
	newState func(K) S
	states   map[K]S
	// ents is the states' bookkeeping in recency order (never bounded by
	// count: evictLocked removes the oldest while over max bytes).
	ents  *simplelru.LRU[K, *entry[K]]
	bytes int64 // sum of the states' cost
	// resolved caches conversation resolution: a session's key -> K
	// (each key also listed in its entry's keys, and dropped with it).
	resolved map[string]K
}

// entry is a state's bookkeeping: its estimated cost in bytes and the parts of it from the window and the record, the
// resolution keys cached to it, and its display name.
type entry[K comparable] struct {
	id       K
	cost     int64
	winBytes int64
	recBytes int64
	keys     []string
	name     string
}

// NewCache returns a cache of states kept in states (the caller's map,
// which the cache fills and empties under its lock), within max bytes
// (DefaultCacheBytes when max <= 0); newState makes the state of a
// conversation not cached.
func NewCache[K comparable, S comparable](states map[K]S, max int64, newState func(k K) S) *Cache[K, S] {
	if max <= 0 {
		max = DefaultCacheBytes
	}
	c := &Cache[K, S]{max: max, newState: newState, states: states, resolved: map[string]K{}}
	ents, err := simplelru.NewLRU[K, *entry[K]](math.MaxInt, c.evicted)
	if err != nil {
		panic(err) // only for a non-positive size
	}
	c.ents = ents
	return c
}

// evicted forgets en, k's bookkeeping just removed from ents, with its
// state and resolutions (mu held: every call into ents is under it).
func (c *Cache[K, S]) evicted(k K, en *entry[K]) {
	for _, key := range en.keys {
		delete(c.resolved, key)
	}
	delete(c.states, k)
	c.bytes -= en.cost
}

// stateLocked returns k's state, creating it, and marks it most recently
// used. The caller holds mu.
func (c *Cache[K, S]) stateLocked(k K) (S, *entry[K]) {
	if en, ok := c.ents.Get(k); ok {
		return c.states[k], en
	}
	s := c.newState(k)
	en := &entry[K]{id: k}
	c.ents.Add(k, en)
	c.states[k] = s
	c.chargeLocked(en, stateBaseBytes)
	return s, en
}

// chargeLocked adds delta bytes to en's cost (mu held).
func (c *Cache[K, S]) chargeLocked(en *entry[K], delta int64) {
	en.cost += delta
	c.bytes += delta
}

// live returns the entry of s, the state of k, when s is still cached (mu
// held).
func (c *Cache[K, S]) live(k K, s S) (*entry[K], bool) {
	if cur, ok := c.states[k]; !ok || cur != s {
		return nil, false
	}
	return c.ents.Peek(k)
}

// State returns conversation k's state, marked most recently used. It may
// be evicted as soon as State returns (its holder keeps it, the cache
// forgets it).
func (c *Cache[K, S]) State(k K) S {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, _ := c.stateLocked(k)
	c.evictLocked()
	return s
}

// evictLocked forgets the least recently used states while the cache is
// over its budget (mu held); the most recent one stays.
func (c *Cache[K, S]) evictLocked() {
	for c.bytes > c.max && c.ents.Len() > 1 {
		c.ents.RemoveOldest() // evicted forgets it
	}
}

// Touch records that the cached window of s, k's state, is now size bytes
// and was just used, and evicts beyond the budget; nothing when s is no
// longer cached. The caller holds k's window lock.
func (c *Cache[K, S]) Touch(k K, s S, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	en, ok := c.live(k, s)
	if !ok {
		return
	}
	c.chargeLocked(en, size-en.winBytes)
	en.winBytes = size
	c.ents.Get(k) // most recently used
	c.evictLocked()
}

// ForgetWindow drops the window of s, k's state, from the accounting (the
// caller dropped the window under k's window lock).
func (c *Cache[K, S]) ForgetWindow(k K, s S) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if en, ok := c.live(k, s); ok {
		c.chargeLocked(en, -en.winBytes)
		en.winBytes = 0
	}
}

// NoteRecord accounts n bytes for the record of s, k's state, just loaded
// or changed (the caller holds k's write lock), nothing when s is no
// longer cached; its display name is dropped (named again from the
// record).
func (c *Cache[K, S]) NoteRecord(k K, s S, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	en, ok := c.live(k, s)
	if !ok {
		return
	}
	c.chargeLocked(en, n-en.recBytes-int64(len(en.name)))
	en.recBytes = n
	en.name = ""
	c.evictLocked()
}

// Resolved returns the conversation key was resolved to, if cached.
func (c *Cache[K, S]) Resolved(key string) (K, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.resolved[key]
	if ok {
		c.ents.Get(k) // most recently used
	}
	return k, ok
}

// Resolve caches that key resolves to k, with k's state.
func (c *Cache[K, S]) Resolve(key string, k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, en := c.stateLocked(k)
	if old, ok := c.resolved[key]; ok {
		if old == k {
			return
		}
		oldEn, _ := c.ents.Peek(old) // cached: its resolutions go with it
		c.dropKeyLocked(oldEn, key)
	}
	c.resolved[key] = k
	en.keys = append(en.keys, key)
	c.chargeLocked(en, int64(len(key))+entryOverheadBytes)
	c.evictLocked()
}

func (c *Cache[K, S]) dropKeyLocked(en *entry[K], key string) {
	delete(c.resolved, key)
	for i, k := range en.keys {
		if k == key {
			en.keys = append(en.keys[:i], en.keys[i+1:]...)
			c.chargeLocked(en, -int64(len(key))-entryOverheadBytes)
			return
		}
	}
}

// Forget drops every cached resolution to k (k was deleted).
func (c *Cache[K, S]) Forget(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	en, ok := c.ents.Peek(k)
	if !ok {
		return
	}
	for len(en.keys) > 0 {
		c.dropKeyLocked(en, en.keys[0])
	}
}

// Name returns k's display name if cached.
func (c *Cache[K, S]) Name(k K) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if en, ok := c.ents.Peek(k); ok && en.name != "" {
		return en.name, true
	}
	return "", false
}

// SetName caches k's display name with its state.
func (c *Cache[K, S]) SetName(k K, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, en := c.stateLocked(k)
	c.chargeLocked(en, int64(len(name)-len(en.name)))
	en.name = name
	c.evictLocked()
}

// Bytes returns the bytes the cached state is counted at.
func (c *Cache[K, S]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Len returns how many conversations have state in memory.
func (c *Cache[K, S]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.states)
}

// CacheEntry is one cached state's bookkeeping, as Inspect shows it.
type CacheEntry[K comparable] struct {
	ID       K
	Cost     int64
	WinBytes int64
	Keys     []string
}

// CacheView is the cache's bookkeeping at one moment (Inspect).
type CacheView[K comparable] struct {
	// Entries are the states' bookkeeping, States how many states the map
	// holds, Listed how many the recency list holds.
	Entries        []CacheEntry[K]
	States, Listed int
	// Bytes is the cost counted; Resolved the cached resolutions.
	Bytes    int64
	Resolved map[string]K
}

// Inspect returns the cache's bookkeeping without touching it (a touch may
// evict), for tests of its accounting.
func (c *Cache[K, S]) Inspect() CacheView[K] {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := CacheView[K]{States: len(c.states), Listed: c.ents.Len(), Bytes: c.bytes, Resolved: make(map[string]K, len(c.resolved))}
	for k, r := range c.resolved {
		v.Resolved[k] = r
	}
	for _, k := range c.ents.Keys() {
		en, _ := c.ents.Peek(k)
		v.Entries = append(v.Entries, CacheEntry[K]{ID: k, Cost: en.cost, WinBytes: en.winBytes, Keys: append([]string(nil), en.keys...)})
	}
	return v
}

// lookupKey is the resolution cache's key of a look-up (Lookup): apart
// from the engine's resolve's, which may create.
func lookupKey(agent, sessionID, sessionKey string) string {
	return "L\x00" + agent + "\x00" + sessionID + "\x00" + sessionKey
}

// Lookup is lookup of a session from the resolution cache when it holds
// it (bounded, dropped with the conversation's state and when the
// conversation is deleted: Forget), else through lookup, whose success is
// cached. On a shared store another process may have deleted the
// conversation since: the caller then finds its record gone and calls
// Forget (the window's read does).
func (c *Cache[K, S]) Lookup(ctx context.Context, agent, sessionID, sessionKey string,
	lookup func(ctx context.Context, agent, sessionID, sessionKey string) (K, error)) (K, error) {
	key := lookupKey(agent, sessionID, sessionKey)
	if k, ok := c.Resolved(key); ok {
		// Only a look-up that passed lookup's checks was cached.
		if err := ctx.Err(); err != nil {
			var zero K
			return zero, fmt.Errorf("lossless: %w", err)
		}
		return k, nil
	}
	k, err := lookup(ctx, agent, sessionID, sessionKey)
	if err == nil {
		c.Resolve(key, k)
	}
	return k, err
}
