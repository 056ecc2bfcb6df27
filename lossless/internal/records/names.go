package records

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lossless-engine/contextengine/core"
)

// LargeRefPrefix starts the id of stored large content in reference
// messages: "lcm-large:" + the hex message key. The full message is
// retrievable with lossless's Engine.MessageByKey.
const LargeRefPrefix = "lcm-large:"

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

// AgentOfKey returns <id> of a session key "agent:<id>:...", or "" (the
// engine exports it as lossless.AgentFromSessionKey).
func AgentOfKey(key string) string {
	rest, ok := strings.CutPrefix(key, "agent:")
	if !ok {
		return ""
	}
	id, _, ok := strings.Cut(rest, ":")
	if !ok {
		return ""
	}
	return id
}
