// Package diskusage measures the bytes files take on disk: the blocks the
// filesystem allocated to them, as du(1) counts them, not their apparent
// sizes. A file Badger maps for writing is sized ahead (its value log at
// twice valueLogFileSize) but only what is allocated takes space: the
// patched Badger (third_party/badger) allocates its logs as it writes them,
// at most a 256 KiB step ahead, so the allocation is what the filesystem no
// longer has free. The store's figures in `lossless
// stats`, `lossless doctor` and the memory explorer's health page all come
// from here, so they agree with each other and with du.
package diskusage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// File returns the bytes allocated to the file info describes (its
// apparent size where the platform does not report blocks).
func File(info fs.FileInfo) int64 { return allocated(info) }

// Dir returns the bytes allocated to the regular files under dir, every
// level down (0 when dir does not exist). Files removed while it walks
// are skipped.
func Dir(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		n += allocated(info)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	return n, err
}

// Stat returns the bytes allocated to the file at p.
func Stat(p string) (int64, error) {
	info, err := os.Stat(p)
	if err != nil {
		return 0, err
	}
	return allocated(info), nil
}
