package bridge

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
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
			if i, why := rawStringAltered(v); i >= 0 {
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

// rawStringAltered returns the offset in raw (a JSON string, quotes
// included) of what decoding it would replace with U+FFFD, and what it is;
// -1 when nothing.
func rawStringAltered(raw []byte) (int, string) {
	for i := 1; i < len(raw)-1; {
		c := raw[i]
		switch {
		case c == '\\' && i+1 < len(raw) && raw[i+1] == 'u' && i+6 <= len(raw):
			r, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
			if err != nil {
				return -1, "" // not valid JSON: decoding reports it
			}
			if utf16.IsSurrogate(rune(r)) {
				// A high surrogate followed by a low one is one rune.
				if r < 0xdc00 && i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
					if lo, err := strconv.ParseUint(string(raw[i+8:i+12]), 16, 16); err == nil && lo >= 0xdc00 && lo <= 0xdfff {
						i += 12
						continue
					}
				}
				return i, "an unpaired surrogate escape"
			}
			i += 6
		case c == '\\':
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n <= 1 {
				return i, "an invalid byte"
			}
			i += n
		}
	}
	return -1, ""
}
