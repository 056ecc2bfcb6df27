package bleveindex

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/lossless-engine/contextengine/internal/retry"
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
//
// Scorch calls the callback in the failing goroutine, just before it
// retries, so the callback is also where the retries are paced: without a
// pause the persister and the merger each rewrote their segments in a
// loop, a core busy for as long as the disk stayed full (a `lossless
// serve` whose recall index met a full disk spent 5 s of CPU in every
// 10 s until shutdown). Each of the two waits retryDelay(n) before its
// n-th consecutive retry: from retryMin, doubling, up to retryMax, so that
// it writes again within retryMax of space being freed. The wait ends at
// once when the index is closed (closeBleve), so Close is never held by it.

// asyncErrorCallback is the name the callback is registered under in
// scorch.RegistryAsyncErrorCallbacks (scorchConfig names it).
const asyncErrorCallback = "lossless-index"

// The pause before a failed persist or merge is retried (retryDelay).
const (
	retryMin = 50 * time.Millisecond
	retryMax = 4 * time.Second
)

func init() {
	scorch.RegistryAsyncErrorCallbacks[asyncErrorCallback] = onAsyncError
}

// failure is the first persist error of one index directory, and the
// pacing of scorch's retries there.
type failure struct {
	once sync.Once
	ch   chan struct{} // closed at the first error
	err  error

	closeOnce sync.Once
	closing   chan struct{} // closed when the index is closed: no more pauses

	mu      sync.Mutex
	retries map[string]*retryState // by scorch goroutine (persister, merger)
}

// retryState counts one scorch goroutine's consecutive failures.
type retryState struct {
	n       int           // consecutive failures
	last    time.Time     // of the last one
	pausing time.Duration // the pause being waited (0: none)
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
		f = &failure{ch: make(chan struct{}), closing: make(chan struct{}), retries: map[string]*retryState{}}
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

// closeBleve closes bi, the bleve index at p: a retry pause of its scorch
// goroutines ends first, and no later failure pauses, so that scorch's
// Close, which waits for them, does not wait for a pause.
func closeBleve(bi bleve.Index, p string) error {
	f := failureOf(scorchPath(p))
	f.closeOnce.Do(func() { close(f.closing) })
	return bi.Close()
}

func onAsyncError(err error, path string) {
	if !errors.Is(err, scorch.ErrPersist) && !errors.Is(err, scorch.ErrAsyncPanic) {
		return // a cleanup error (an old file not removed) loses nothing
	}
	f := failureOf(filepath.Clean(path))
	f.once.Do(func() {
		f.err = err
		if strings.Contains(err.Error(), syscall.ENOSPC.Error()) {
			// Scorch's error holds the cause as text only: put it back
			// in the chain, and say it plainly.
			f.err = fmt.Errorf("disk full (%w): %w", syscall.ENOSPC, err)
		}
		close(f.ch)
		slog.Error("index: the recall index cannot be written (it is rebuilt when the engine next opens it; writes are retried, less and less often)", "dir", path, "err", f.err)
	})
	if !errors.Is(err, scorch.ErrPersist) {
		return // a panic: the goroutine ends, nothing is retried
	}
	source := ""
	var se *scorch.ScorchError
	if errors.As(err, &se) {
		source = se.Source
	}
	f.pause(source)
}

// pause waits before source's next retry (retryDelay), or until the index
// is closed.
func (f *failure) pause(source string) {
	now := time.Now()
	f.mu.Lock()
	st := f.retries[source]
	if st == nil {
		st = &retryState{}
		f.retries[source] = st
	}
	if !st.last.IsZero() && now.Sub(st.last) > 2*retryMax {
		st.n = 0 // it succeeded in between: a new run of failures
	}
	d := retryDelay(st.n)
	st.n++
	st.pausing = d
	f.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-f.closing:
	}
	f.mu.Lock()
	st.last, st.pausing = time.Now(), 0
	f.mu.Unlock()
}

// pausing returns the longest retry pause being waited (0: none).
func (f *failure) pausing() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var d time.Duration
	for _, st := range f.retries {
		d = max(d, st.pausing)
	}
	return d
}

// retryDelay is the pause before the retry that follows n earlier
// consecutive failures: retryMin doubled n times, at most retryMax (the
// module's one backoff, internal/retry).
func retryDelay(n int) time.Duration {
	return retry.Backoff{First: retryMin, Max: retryMax}.Delay(n)
}
