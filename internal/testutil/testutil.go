// Package testutil holds helpers shared by the project's tests: locating the
// shared data set beside the repository, and the repository root.
package testutil

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// RepoRoot returns the repository's root directory (where go.mod is).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// SharedDir returns the shared data directory: $LOSSLESS_SHARED when set,
// else ../shared beside the repository. ok is false when it does not exist.
func SharedDir() (string, bool) {
	dir := os.Getenv("LOSSLESS_SHARED")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "..", "shared")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return dir, false
	}
	return dir, true
}

// SharedFile returns the path of rel (e.g. "data/pi-mono/large-session.jsonl")
// under the shared directory, or skips the test with a clear message when it
// is absent.
func SharedFile(tb testing.TB, rel string) string {
	tb.Helper()
	dir, _ := SharedDir()
	p := filepath.Join(dir, rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared data %s not found (expected ../shared beside the repository, or $LOSSLESS_SHARED): %v", p, err)
	}
	return p
}

// PiMono returns the paths of the real pi-mono transcripts, or skips.
func PiMono(tb testing.TB) []string {
	tb.Helper()
	return []string{
		SharedFile(tb, "data/pi-mono/before-compaction.jsonl"),
		SharedFile(tb, "data/pi-mono/large-session.jsonl"),
	}
}
