package store

import "errors"

// Errors of every backend.
var (
	// ErrNotFound: the record does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrCorrupt: a stored record does not decode (a damaged store).
	ErrCorrupt = errors.New("store: corrupt record")
	// ErrTooBig: the transaction exceeds what the backend commits at once.
	ErrTooBig = errors.New("store: transaction too big")
	// ErrReadOnly: a write on a store opened read-only.
	ErrReadOnly = errors.New("store: opened read-only")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
	// ErrDiskFull: a write refused before anything was written because the
	// store's disk is (about) full. What is stored stays readable, and
	// writes succeed again once space is freed. A backend that can detect
	// it returns it wrapped, from Update or NewBatch (a backend that
	// cannot, such as memstore, never does).
	ErrDiskFull = errors.New("store: disk full")
	// ErrConflict: an Update was rolled back because a concurrent
	// transaction conflicted with it (PostgreSQL's serialization failure
	// or deadlock); nothing of it was written, and running it again may
	// succeed.
	ErrConflict = errors.New("store: conflict with a concurrent transaction")
)
