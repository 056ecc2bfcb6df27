package tokens

import "sync"

// The piece cache, kept apart so that it can be swapped for a shared LRU
// bounded in bytes: O200k uses only get and put.

// pieceCache caches the token counts of pieces that needed merging,
// bounded in bytes: each shard is cleared when its pieces reach
// pieceCacheShardBytes (cheap, and keeps memory flat), and pieces over
// pieceCacheLongest bytes are never cached.
type pieceCache struct {
	shards [16]struct {
		mu    sync.Mutex
		m     map[string]int
		bytes int
	}
}

const (
	pieceCacheShardBytes = 256 << 10 // 4 MiB in all, with the map's own
	pieceCacheLongest    = 1024
)

// pieceEntryBytes is a cached piece's cost besides its bytes (the string
// header, the count and the map entry).
const pieceEntryBytes = 48

func shardOf(p []byte) int {
	h := uint32(2166136261)
	for _, b := range p {
		h = (h ^ uint32(b)) * 16777619
	}
	return int(h & 15)
}

func (c *pieceCache) get(p []byte) (int, bool) {
	s := &c.shards[shardOf(p)]
	s.mu.Lock()
	n, ok := s.m[string(p)]
	s.mu.Unlock()
	return n, ok
}

func (c *pieceCache) put(p string, n int) {
	s := &c.shards[shardOf([]byte(p))]
	s.mu.Lock()
	if s.bytes+len(p)+pieceEntryBytes > pieceCacheShardBytes {
		clear(s.m)
		s.bytes = 0
	}
	s.m[p] = n
	s.bytes += len(p) + pieceEntryBytes
	s.mu.Unlock()
}
