package tokens

import (
	"unsafe"

	"github.com/lossless-engine/contextengine/internal/lru"
)

// pieceCache caches the token counts of pieces that needed merging, on
// the module's one LRU bounded in bytes (internal/lru): at most
// pieceCacheBytes, and pieces over pieceCacheLongest bytes are never
// cached. A miss only costs a merge again.
type pieceCache struct {
	c *lru.Cache[string, int]
}

const (
	pieceCacheBytes   = 4 << 20
	pieceCacheLongest = 1024
)

func newPieceCache() pieceCache {
	return pieceCache{c: lru.NewStrings[int](pieceCacheBytes, 8)}
}

func (c pieceCache) get(p []byte) (int, bool) {
	return c.c.Get(unsafe.String(&p[0], len(p))) // Get keeps no key
}

func (c pieceCache) put(p string, n int) { c.c.Add(p, n) }
