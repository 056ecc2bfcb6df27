package dag

import "errors"

// The errors of package dag, for errors.Is.
var (
	// ErrConflict is returned by Store.Replace when the items to replace
	// changed since they were read (a concurrent compaction).
	ErrConflict = errors.New("dag: context items changed concurrently")
	// ErrNotFound is returned for an unknown summary or message.
	ErrNotFound = errors.New("dag: not found")
	// ErrInvariant is wrapped by every error Check reports.
	ErrInvariant = errors.New("dag: invariant violated")
)

// ErrBadCursor is returned by Expand for a cursor it did not issue for that
// summary.
var ErrBadCursor = errors.New("dag: bad expand cursor")
