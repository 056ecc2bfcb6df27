package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of sizeMiB on a new temporary directory, unmounted
// when the test ends, and returns the directory. It needs root: elsewhere
// the test skips, unless LOSSLESS_TEST_TMPFS_REQUIRED=1 (.ci/run sets it
// when it runs as root), which makes a failed mount fail the test.
func Tmpfs(t testing.TB, sizeMiB int) string {
	t.Helper()
	mnt := t.TempDir()
	TmpfsAt(t, mnt, sizeMiB)
	return mnt
}

// TmpfsAt is Tmpfs on the existing directory mnt.
func TmpfsAt(t testing.TB, mnt string, sizeMiB int) {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("LOSSLESS_TEST_TMPFS_REQUIRED") == "1" {
		fail = t.Fatalf
	}
	if os.Geteuid() != 0 {
		fail("needs root to mount a small tmpfs (CI runs as root; LOSSLESS_TEST_TMPFS_REQUIRED=1 makes this a failure)")
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", sizeMiB), "tmpfs", mnt).CombinedOutput(); err != nil {
		fail("cannot mount a tmpfs on %s: %v %s", mnt, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
}

// FillDisk writes the file path until its filesystem is full (to the last
// 4 KiB). A filesystem already full leaves no file.
func FillDisk(t testing.TB, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return
		}
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte{'x'}, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", path, err)
			}
			break
		}
	}
	// The last bytes: a smaller write fills what a whole chunk did not.
	small := chunk[:4096]
	for {
		if _, err := f.Write(small); err != nil {
			break
		}
	}
}
