// Package retry is the one retry policy of the module: a doubling pause
// with a ceiling (Backoff), a wait that the caller's context ends (Wait),
// and a loop that runs a call again while its error may pass by itself
// (Do). The write path's conflict retries (lossless/ingest), the
// PostgreSQL recall writer (store/pgstore) and the Bleve index's persist
// and merge retries (index/bleveindex) all pause through it.
package retry

import (
	"context"
	"time"
)

// Backoff is a doubling pause: First before the first retry, twice the
// previous pause before each next one, never more than Max (0: no
// ceiling).
type Backoff struct {
	// First is the pause before the first retry.
	First time.Duration
	// Max caps every pause (0: uncapped).
	Max time.Duration
}

// Delay is the pause before the retry that follows n earlier consecutive
// failures (n = 0: First), doubled n times, at most Max.
func (b Backoff) Delay(n int) time.Duration {
	d := b.First
	for i := 0; i < n; i++ {
		if b.Max > 0 && d >= b.Max {
			break
		}
		d *= 2
	}
	if b.Max > 0 {
		d = min(d, b.Max)
	}
	return d
}

// Wait pauses for d, or until ctx is done: it reports whether the whole
// pause passed (false: ctx ended it).
func Wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Do runs fn, and again while its error passes again (retryable reports
// true), at most retries more times, pausing b.Delay(i) before the i-th
// retry. It returns fn's last result: the success, an error retryable
// rejects, the error of the last allowed attempt, or the error of the
// attempt whose pause ctx ended (ctx's error is not substituted: the
// caller sees why the call failed).
func Do[T any](ctx context.Context, b Backoff, retries int, retryable func(error) bool, fn func() (T, error)) (T, error) {
	for i := 0; ; i++ {
		v, err := fn()
		if err == nil || i >= retries || !retryable(err) {
			return v, err
		}
		if !Wait(ctx, b.Delay(i)) {
			return v, err
		}
	}
}
