package badgerstore

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"

	"github.com/lossless-engine/contextengine/internal/diskspace"
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
// log files (package internal/diskspace's Guard, which package lossless's
// engine keeps in front of the store too). Badger allocates
// those files' blocks before it writes into them, in 256 KiB steps (the
// patch in third_party/badger; tables and the rest allocated whole when
// created, the patch in third_party/ristretto), so a write into their
// mappings never meets a full disk: it is an error first. The reserve
// keeps the room Badger needs for the next steps and files.
//
// When the disk fills anyway (another process took the space between two
// looks), Badger's allocation fails with ENOSPC: the write that met it
// fails with store.ErrDiskFull, and so does every later write of this
// Store (the guard is tripped), since Badger, after a failed allocation,
// can be left without a value log or memtable to write into. Reads go on;
// the store accepts writes again once reopened with space freed.

// spaceGuard is the store's diskspace.Guard (the free space, looked up at
// most once a second, against the reserve) and the trip of a write or of
// Badger that met a full disk anyway.
type spaceGuard struct {
	look *diskspace.Guard

	// tripped is closed when a write or Badger itself met a full disk;
	// why says what.
	tripOnce sync.Once
	tripped  chan struct{}
	mu       sync.Mutex
	why      string
}

func newSpaceGuard(o Options) *spaceGuard {
	return &spaceGuard{look: diskspace.NewGuard(o.Dir, diskspace.Reserve(o.MemTableSize, o.ValueLogFileSize), o.FreeSpace),
		tripped: make(chan struct{})}
}

// trip records that the disk filled (why: the error that said so).
func (g *spaceGuard) trip(why string) {
	g.tripOnce.Do(func() {
		g.mu.Lock()
		g.why = why
		g.mu.Unlock()
		close(g.tripped)
	})
}

// reason is the error that tripped the guard.
func (g *spaceGuard) reason() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.why
}

// noted trips the guard when err says the disk is full, and returns err.
func (g *spaceGuard) noted(err error) error {
	if err != nil && errors.Is(err, store.ErrDiskFull) {
		g.trip(err.Error())
	}
	return err
}

// noSpace reports whether err (from Badger) is a full disk: ENOSPC in its
// chain, or in its text where Badger's wrapping lost the chain.
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || noSpaceText(err.Error())
}

func noSpaceText(s string) bool {
	return strings.Contains(s, syscall.ENOSPC.Error())
}

// check returns an error wrapping store.ErrDiskFull when a write met a
// full disk (the guard is tripped) or the filesystem has less than the
// reserve free (diskspace.Guard.Check).
func (g *spaceGuard) check() error {
	select {
	case <-g.tripped:
		return fmt.Errorf("badgerstore: %w: a write on %s met a full disk (%s); writes are refused until the store is opened again with space freed (everything stored stays readable)",
			store.ErrDiskFull, g.look.Dir(), g.reason())
	default:
	}
	if err := g.look.Check(); err != nil {
		return fmt.Errorf("badgerstore: %w: %w", store.ErrDiskFull, err)
	}
	return nil
}
