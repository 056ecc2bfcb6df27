package lossless

import (
	"fmt"

	"github.com/lossless-engine/contextengine/internal/diskspace"
)

// newSpaceGuard returns the free-space guard of an engine opened with cfg
// (package internal/diskspace's, as the store's): nil, refusing nothing,
// for a store without a directory (one opened with OpenStore guards
// itself). Its lookup is the tests' hooks.freeSpace when cfg.hooks sets it
// at the time of the look, the filesystem's otherwise.
func newSpaceGuard(cfg *engineConfig) *diskspace.Guard {
	if cfg.StoreDir == "" {
		return nil
	}
	b := cfg.Badger
	return diskspace.NewGuard(cfg.StoreDir, diskspace.Reserve(b.MemTableSize, b.ValueLogFileSize), func(dir string) (uint64, error) {
		if hook := cfg.hooks.freeSpace; hook != nil {
			return hook(dir)
		}
		return diskspace.Free(dir)
	})
}

// CheckSpace returns an error wrapping ErrDiskFull when the store's
// filesystem has too little free space for a write (what an open for
// writing or a write would be refused with), nil otherwise, and always for
// a store without a directory (one opened with OpenStore guards itself). A
// read-only engine answers it too: cmd/lossless's read commands say so
// beside their answer.
func (e *Engine) CheckSpace() error { return e.checkSpace() }

// checkSpace returns an error wrapping ErrDiskFull when the store's
// filesystem has less than the reserve free (looked up at most once a
// second; a filesystem whose free space cannot be read is not refused).
func (e *Engine) checkSpace() error {
	if err := e.space.Check(); err != nil {
		return fmt.Errorf("lossless: %w: %w", ErrDiskFull, err)
	}
	return nil
}
