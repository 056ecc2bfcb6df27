package lossless

import (
	"fmt"
	"sync"
	"time"
)

// spaceState caches the filesystem's free space for a second.
type spaceState struct {
	mu      sync.Mutex
	checked time.Time
	free    uint64
	err     error
}

// spaceReserve is the free space a write needs: two memtables, two value
// log files (Badger maps a new one at twice its size) and a margin.
func (e *Engine) spaceReserve() uint64 {
	b := e.cfg.Badger
	return uint64(2*b.MemTableSize+2*b.ValueLogFileSize) + 16<<20
}

// CheckSpace returns an error wrapping ErrDiskFull when the store's
// filesystem has too little free space for a write (what an open for
// writing or a write would be refused with), nil otherwise, and always for
// a store without a directory (one opened with OpenStore guards itself). A
// read-only engine answers it too: cmd/lossless's read commands say so
// beside their answer.
func (e *Engine) CheckSpace() error { return e.checkSpace() }

// checkSpace returns an error wrapping ErrDiskFull when the store's
// filesystem has less than spaceReserve free (looked up at most once a
// second; a filesystem whose free space cannot be read is not refused).
func (e *Engine) checkSpace() error {
	if e.cfg.StoreDir == "" {
		return nil // a store without a directory (OpenStore) guards itself
	}
	s := &e.space
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.checked) > time.Second {
		free := freeBytes
		if hook := e.cfg.hooks.freeSpace; hook != nil {
			free = hook
		}
		s.free, s.err = free(e.cfg.StoreDir)
		s.checked = time.Now()
	}
	if s.err != nil {
		return nil
	}
	if need := e.spaceReserve(); s.free < need {
		return fmt.Errorf("lossless: %w: %s has %d MiB free, writes need %d MiB (free some space; everything stored stays readable)",
			ErrDiskFull, e.cfg.StoreDir, s.free>>20, need>>20)
	}
	return nil
}
