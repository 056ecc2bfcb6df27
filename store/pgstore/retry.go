package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lossless-engine/contextengine/store"
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

// conflict wraps err with store.ErrConflict when the server rolled the
// transaction back for a conflict with a concurrent one (serialization
// failure 40001, deadlock 40P01): nothing of it was written, and the
// caller may run it again. Any other error is returned as it is (a lost
// connection is not: the commit may have happened).
func conflict(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01") && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("%w: %w", store.ErrConflict, err)
	}
	return err
}
