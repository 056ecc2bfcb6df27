package core

import (
	"fmt"
	"unicode/utf8"
)

// wrapf returns an error that wraps sentinel with a formatted detail.
func wrapf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}

func utf8Valid(b []byte) bool { return utf8.Valid(b) }
