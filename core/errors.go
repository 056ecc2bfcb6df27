package core

import "errors"

// Sentinel errors of the contract. Engines and hosts wrap them with %w, so
// callers check them with errors.Is.
var (
	// ErrClosed is returned by an engine or store used after Close.
	ErrClosed = errors.New("core: closed")

	// ErrInvalidMessage is returned when a message is not a JSON object with
	// a non-empty string "role", or is not valid UTF-8.
	ErrInvalidMessage = errors.New("core: invalid message")

	// ErrUnknownRole is returned by engines that refuse a role outside the
	// contract's list (see KnownRole).
	ErrUnknownRole = errors.New("core: unknown message role")

	// ErrEmptySessionID is returned when a call that needs a session has none.
	ErrEmptySessionID = errors.New("core: empty session id")

	// ErrInvalidSessionID is returned when a session id, session key or
	// agent id cannot be stored as given (not valid UTF-8, or holding a
	// NUL byte).
	ErrInvalidSessionID = errors.New("core: invalid session id")

	// ErrUnknownSession is returned when a session id names nothing stored.
	ErrUnknownSession = errors.New("core: unknown session")

	// ErrNotFound is returned when a summary, message or other record is absent.
	ErrNotFound = errors.New("core: not found")

	// ErrMalformedLine marks a transcript line that is not a JSON object.
	ErrMalformedLine = errors.New("core: malformed transcript line")

	// ErrInvalidEngine is returned when an engine's info or methods break the
	// contract (empty id or name, missing required method).
	ErrInvalidEngine = errors.New("core: invalid engine")

	// ErrHostRequirements is returned when the host lacks a capability that an
	// engine requires for an operation (the run fails closed).
	ErrHostRequirements = errors.New("core: host requirements not met")

	// ErrSummarizerFailed is returned by a summarizer that produced nothing
	// usable: an error, empty or thinking-only output, or output not shorter
	// than its input.
	ErrSummarizerFailed = errors.New("core: summarizer failed")

	// ErrFormatTooNew is returned when a store was written by a newer format
	// than this build understands.
	ErrFormatTooNew = errors.New("core: store format too new")

	// ErrTooLarge is returned when an input exceeds a configured limit.
	ErrTooLarge = errors.New("core: too large")
)
