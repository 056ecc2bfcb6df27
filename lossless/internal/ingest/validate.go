package ingest

import (
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
)

// CheckSession checks a call's agent id, session id and session key
// (records.CheckName).
func CheckSession(agent, sessionID, sessionKey string) error {
	for _, f := range [...]struct{ field, v string }{{"sessionId", sessionID}, {"sessionKey", sessionKey}, {"agentId", agent}} {
		if err := records.CheckName(f.field, f.v); err != nil {
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
