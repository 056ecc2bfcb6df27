package bleveindex

import (
	"errors"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/blevesearch/bleve/v2/index/scorch"
)

// Bleve's scorch persists and merges segments in goroutines of its own.
// When one fails (a full disk: ENOSPC), scorch retries at once, for ever,
// and calls the batch's persisted callback only once a later attempt
// succeeds: persist (index.go) would wait for good, and with it Close
// (the recall index's Close ran 12 minutes in #27, ignoring SIGTERM). So
// the package registers an async-error callback with scorch: the first
// persist or merge error of an index directory ends every persist waiting
// on it, and later ones, with that error. An index whose persist failed is
// not trusted: what reached its disk is the last snapshot persisted
// before, and a generation mark not persisted leaves it to be rebuilt.

// asyncErrorCallback is the name the callback is registered under in
// scorch.RegistryAsyncErrorCallbacks (scorchConfig names it).
const asyncErrorCallback = "lossless-index"

func init() {
	scorch.RegistryAsyncErrorCallbacks[asyncErrorCallback] = onAsyncError
}

// failure is the first persist error of one index directory.
type failure struct {
	once sync.Once
	ch   chan struct{} // closed at the first error
	err  error
}

var failures = struct {
	mu sync.Mutex
	m  map[string]*failure // by scorch store path
}{m: map[string]*failure{}}

// scorchPath is the directory scorch reports errors under for the bleve
// index at p (bleve keeps scorch's files in p/store).
func scorchPath(p string) string { return filepath.Clean(filepath.Join(p, "store")) }

// failureOf returns the failure record of the scorch directory sp.
func failureOf(sp string) *failure {
	failures.mu.Lock()
	defer failures.mu.Unlock()
	f := failures.m[sp]
	if f == nil {
		f = &failure{ch: make(chan struct{})}
		failures.m[sp] = f
	}
	return f
}

// forgetFailure drops the record of the bleve index at p (opened anew).
func forgetFailure(p string) {
	failures.mu.Lock()
	delete(failures.m, scorchPath(p))
	failures.mu.Unlock()
}

func onAsyncError(err error, path string) {
	if !errors.Is(err, scorch.ErrPersist) && !errors.Is(err, scorch.ErrAsyncPanic) {
		return // a cleanup error (an old file not removed) loses nothing
	}
	f := failureOf(filepath.Clean(path))
	f.once.Do(func() {
		f.err = err
		close(f.ch)
		slog.Error("index: the recall index cannot be written (it is rebuilt when the engine next opens it)", "dir", path, "err", err)
	})
}
