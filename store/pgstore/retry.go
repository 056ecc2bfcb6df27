package pgstore

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// retryable reports whether err may pass by itself, so that running the
// same statements again may succeed: a serialization failure (40001) or a
// deadlock (40P01); a server shutting down, starting or out of
// connections (57P01-57P03, 53300); a lost, refused or failed connection
// (class 08, network errors, a connection closed before anything was
// sent); a timeout. An error the server gave for the statements
// themselves (a constraint, a type, a value out of range, ...) is not:
// the same statements fail the same way. Cancellation is not either.
func retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01", "57P01", "57P02", "57P03", "53300":
			return true
		}
		return len(pe.Code) == 5 && pe.Code[:2] == "08"
	}
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return true
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	return errors.As(err, &ne) || errors.As(err, &ce) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}
