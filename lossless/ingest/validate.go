package ingest

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lossless-engine/contextengine/core"
)

// CheckName refuses a session id, session key or agent id (field names it
// as the contract does: "sessionId", "sessionKey", "agentId") that no
// store keeps as given: one that is not valid UTF-8, or holds a NUL byte
// (PostgreSQL's text refuses both; Badger would store it, and a terminal
// show it as something else). The error wraps core.ErrInvalidSessionID
// and is returned before anything is written. An empty value is the
// caller's to check.
func CheckName(field, v string) error {
	if !utf8.ValidString(v) {
		i := 0
		for i < len(v) {
			r, n := utf8.DecodeRuneInString(v[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return fmt.Errorf("lossless: %s is not valid UTF-8 (byte %d of %d): %w", field, i, len(v), core.ErrInvalidSessionID)
	}
	if i := strings.IndexByte(v, 0); i >= 0 {
		return fmt.Errorf("lossless: %s holds a NUL byte (byte %d of %d): %w", field, i, len(v), core.ErrInvalidSessionID)
	}
	return nil
}

// CheckSession checks a call's agent id, session id and session key
// (CheckName).
func CheckSession(agent, sessionID, sessionKey string) error {
	for _, f := range [...]struct{ field, v string }{{"sessionId", sessionID}, {"sessionKey", sessionKey}, {"agentId", agent}} {
		if err := CheckName(f.field, f.v); err != nil {
			return err
		}
	}
	return nil
}

// ValidateAll refuses msgs when one of them is refused by Validate: a
// batch is stored whole or not at all.
func ValidateAll(msgs []core.Message, max int) error {
	for i, m := range msgs {
		if err := Validate(m, max); err != nil {
			return fmt.Errorf("lossless: message %d: %w", i, err)
		}
	}
	return nil
}

// Validate returns why the engine would not store m: it is empty
// (core.ErrInvalidMessage) or over max bytes (core.ErrTooLarge).
func Validate(m core.Message, max int) error {
	switch {
	case m.IsZero():
		return fmt.Errorf("empty message: %w", core.ErrInvalidMessage)
	case len(m.Raw()) > max:
		return fmt.Errorf("%d bytes over the %d-byte limit: %w", len(m.Raw()), max, core.ErrTooLarge)
	}
	return nil
}
