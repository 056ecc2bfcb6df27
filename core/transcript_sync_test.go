package core

import (
	"path/filepath"
	"runtime"
	"testing"
)

// TestSyncDirReturnsErrors: the directory fsync that makes a rewritten
// transcript's new name durable reports a failure instead of dropping it.
func TestSyncDirReturnsErrors(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no directory fsync")
	}
	dir := t.TempDir()
	if err := syncDir(dir); err != nil {
		t.Fatalf("syncDir of a directory: %v", err)
	}
	if err := syncDir(filepath.Join(dir, "gone")); err == nil {
		t.Fatal("syncDir of a directory that is not there returned no error")
	}
}
