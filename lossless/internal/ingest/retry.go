package ingest

import (
	"context"
	"errors"
	"time"

	"github.com/lossless-engine/contextengine/internal/retry"
	"github.com/lossless-engine/contextengine/store"
)

// maxConflictRetries bounds how often a write is run again after another
// process's write made it fail: ErrConcurrentWrite (the conversation
// changed between the read under its lock and the commit) or
// store.ErrConflict (the database rolled the transaction back). Nothing
// of a failed attempt was written, so running it again is safe; the host
// never sees such a conflict unless it persists.
const maxConflictRetries = 4

// conflictBackoff is the first pause between attempts; it doubles.
const conflictBackoff = 5 * time.Millisecond

// isWriteConflict reports whether err is a write conflict worth a retry.
func isWriteConflict(err error) bool {
	return errors.Is(err, ErrConcurrentWrite) || errors.Is(err, store.ErrConflict)
}

// Retry runs fn, and again (at most maxConflictRetries times, with a
// doubling pause from conflictBackoff that ctx ends: internal/retry, the
// module's one retry loop) while it fails with a conflict.
func Retry[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	return retry.Do(ctx, retry.Backoff{First: conflictBackoff}, maxConflictRetries, isWriteConflict, fn)
}
