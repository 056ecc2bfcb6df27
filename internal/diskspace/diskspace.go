// Package diskspace is the free-space guard of a store kept in a
// directory: the lookup of a filesystem's free space and size, the reserve
// a Badger store needs before it writes, and Guard, which compares the two
// (looking at the filesystem at most once a second). Package lossless and
// store/badgerstore both guard their writes with it.
//
// Badger writes its memtables and value log through memory maps: a write
// into a mapped page of a full filesystem is a SIGBUS that kills the
// process, not an error. So a writer looks before it writes: a write needs
// at least the space Badger may map for the next memtables and value log
// files (Reserve).
package diskspace

import (
	"fmt"
	"sync"
	"time"
)

// FreeFunc reports the bytes available to an unprivileged writer on the
// filesystem holding dir. Free is the filesystem's; tests pass their own
// to a Guard.
type FreeFunc func(dir string) (uint64, error)

// Free returns the bytes available to an unprivileged writer on the
// filesystem holding dir (an error on a platform that does not say).
func Free(dir string) (uint64, error) { return freeBytes(dir) }

// Size returns the size of the filesystem holding dir (an error on a
// platform that does not say).
func Size(dir string) (uint64, error) { return sizeBytes(dir) }

// Reserve is the free space a Badger store needs for a write, given its
// memtable and value log file sizes: two memtables, two value log files
// (Badger maps a new one at twice its size) and a 16 MiB margin.
func Reserve(memTableSize, valueLogFileSize int64) uint64 {
	return uint64(2*memTableSize+2*valueLogFileSize) + 16<<20
}

// lookEvery is how long a Guard answers from its last look.
const lookEvery = time.Second

// ShortError is the error of Guard.Check when the filesystem has less free
// space than the reserve. Callers wrap it with their sentinel (the store's
// ErrDiskFull).
type ShortError struct {
	// Dir is the directory guarded.
	Dir string
	// Free is the free space found, Need the reserve (bytes).
	Free, Need uint64
}

// Error says how much is free and how much writes need, in MiB.
func (e *ShortError) Error() string {
	return fmt.Sprintf("%s has %d MiB free, writes need %d MiB (free some space; everything stored stays readable)",
		e.Dir, e.Free>>20, e.Need>>20)
}

// Guard refuses writes to a directory whose filesystem has less free space
// than a reserve. It caches the free space it found for a second. It is
// safe for concurrent use; a nil *Guard refuses nothing (a store without a
// directory).
type Guard struct {
	dir     string
	reserve uint64
	free    FreeFunc

	mu      sync.Mutex
	checked time.Time
	avail   uint64
	err     error
}

// NewGuard returns a Guard of dir that keeps reserve bytes free, looking
// the free space up with free (nil: Free).
func NewGuard(dir string, reserve uint64, free FreeFunc) *Guard {
	if free == nil {
		free = Free
	}
	return &Guard{dir: dir, reserve: reserve, free: free}
}

// Dir is the directory guarded.
func (g *Guard) Dir() string { return g.dir }

// Reserve is the free space a write needs.
func (g *Guard) Reserve() uint64 { return g.reserve }

// Check returns a *ShortError when the filesystem has less than the
// reserve free, nil otherwise. The free space is looked up at most once a
// second (Expire makes the next Check look again); a filesystem whose free
// space cannot be read is not refused.
func (g *Guard) Check() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.checked.IsZero() || time.Since(g.checked) > lookEvery {
		g.avail, g.err = g.free(g.dir)
		g.checked = time.Now()
	}
	if g.err != nil {
		return nil
	}
	if g.avail < g.reserve {
		return &ShortError{Dir: g.dir, Free: g.avail, Need: g.reserve}
	}
	return nil
}

// Expire makes the next Check look the free space up again rather than
// answer from the last second's look.
func (g *Guard) Expire() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.checked = time.Time{}
	g.mu.Unlock()
}
