//go:build unix

package diskspace

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// freeBytes returns the bytes available to an unprivileged writer on the
// filesystem holding dir.
func freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("diskspace: statfs %s: %w", dir, err)
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}

// sizeBytes returns the size of the filesystem holding dir.
func sizeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("diskspace: statfs %s: %w", dir, err)
	}
	return uint64(st.Blocks) * uint64(st.Bsize), nil
}
