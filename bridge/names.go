package bridge

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lossless-engine/contextengine/internal/jsonstr"
)

// nameDepth is how deep in a request's params checkNames looks for names:
// they sit at the top (sessionId, childSessionKey) or one object down
// (sessionTarget.sessionKey, config.agentId).
const nameDepth = 3

// isNameKey reports whether a params key holds a name the engine keys on:
// a session id, a session key or an agent id, its own or another
// session's (childSessionKey, parentSessionId, ...).
func isNameKey(k string) bool {
	switch k {
	case "sessionId", "sessionKey", "agentId":
		return true
	}
	return strings.HasSuffix(k, "SessionId") || strings.HasSuffix(k, "SessionKey") || strings.HasSuffix(k, "AgentId")
}

// checkNames refuses params (a JSON object) holding a name (isNameKey)
// that decoding would change: encoding/json replaces invalid UTF-8 and an
// unpaired surrogate escape (\ud800) with U+FFFD, so the engine, which
// refuses such a name (core.ErrInvalidSessionID), would be given another,
// valid one and store under it. It looks in objects down to nameDepth,
// not in arrays, and not in a "message" (stored as it is, byte for byte).
// The error names the key and the byte.
func checkNames(params json.RawMessage, depth int) error {
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) != nil {
		return nil // not an object: decoding reports it
	}
	for k, v := range obj {
		switch firstByte(v) {
		case '"':
			if !isNameKey(k) {
				continue
			}
			if i, why := jsonstr.Altered(v); i >= 0 {
				return fmt.Errorf("%s is not valid UTF-8 (%s at byte %d of its JSON string): refused, as decoding would replace it with U+FFFD", k, why, i)
			}
		case '{':
			if k != "message" && depth > 1 {
				if err := checkNames(v, depth-1); err != nil {
					return fmt.Errorf("%s.%w", k, err)
				}
			}
		}
	}
	return nil
}
