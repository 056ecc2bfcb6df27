// Package jsonstr looks at JSON strings as they are on the wire, before
// encoding/json decodes them: the decoder replaces invalid UTF-8 and
// unpaired surrogate escapes with U+FFFD without an error, so a name the
// engine keys on would silently become another.
package jsonstr

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Altered returns the offset in raw (a JSON string, quotes included) of
// what decoding it with encoding/json would replace with U+FFFD (an
// invalid byte, an unpaired surrogate escape such as \ud800), and what it
// is; -1 when nothing. raw is assumed valid JSON: a malformed escape is
// left to the decoder to report.
func Altered(raw []byte) (int, string) {
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
