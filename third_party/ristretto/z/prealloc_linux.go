//go:build linux

// lossless patch (not in upstream ristretto): see PATCHES.md.

package z

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Preallocate allocates the blocks of fd's range [off, off+n) (fallocate
// mode 0: the file's data is unchanged, holes become zeroed blocks). A
// filesystem that cannot (EOPNOTSUPP, ENOSYS) is left as it was. On a
// full disk the error wraps syscall.ENOSPC.
func Preallocate(fd *os.File, off, n int64) error {
	if n <= 0 {
		return nil
	}
	for {
		err := unix.Fallocate(int(fd.Fd()), 0, off, n)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
			return nil
		default:
			return &os.PathError{Op: "fallocate", Path: fd.Name(), Err: err}
		}
	}
}
