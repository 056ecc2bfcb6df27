package badgerstore

import (
	"fmt"
	"sync"
	"time"

	"github.com/lossless-engine/contextengine/store"
)

// The disk-space guard. store.ErrDiskFull is wrapped by the error of an
// Update or NewBatch refused because the store's filesystem has less free
// space than the store keeps in reserve. Nothing is written; what is stored
// stays readable (View works), and writes succeed again once space is
// freed.
//
// Badger writes its memtables and value log through memory maps: a write
// into a mapped page of a full filesystem is a SIGBUS that kills the
// process, not an error. So the store looks before it writes: a write
// needs at least the space Badger may map for the next memtables and value
// log files (lossless/space.go's guard, moved here).

// freeSpace reports a directory's free bytes (freeBytes; tests replace it).
var freeSpace = freeBytes

// spaceGuard caches the filesystem's free space for a second.
type spaceGuard struct {
	dir     string
	reserve uint64

	mu      sync.Mutex
	checked time.Time
	free    uint64
	err     error
}

func newSpaceGuard(o Options) *spaceGuard {
	// Two memtables, two value log files (Badger maps a new one at twice
	// its size) and a margin.
	return &spaceGuard{dir: o.Dir, reserve: uint64(2*o.MemTableSize+2*o.ValueLogFileSize) + 16<<20}
}

// check returns an error wrapping store.ErrDiskFull when the filesystem
// has less than the reserve free (looked up at most once a second; a
// filesystem whose free space cannot be read is not refused).
func (g *spaceGuard) check() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if time.Since(g.checked) > time.Second {
		g.free, g.err = freeSpace(g.dir)
		g.checked = time.Now()
	}
	if g.err != nil {
		return nil
	}
	if g.free < g.reserve {
		return fmt.Errorf("badgerstore: %w: %s has %d MiB free, writes need %d MiB (free some space; everything stored stays readable)",
			store.ErrDiskFull, g.dir, g.free>>20, g.reserve>>20)
	}
	return nil
}
