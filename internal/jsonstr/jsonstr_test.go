package jsonstr

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAltered: Altered points at exactly what encoding/json replaces with
// U+FFFD, and finds nothing in a string it decodes as sent.
func TestAltered(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		at   int
		what string
	}{
		{`"plain"`, -1, ""},
		{`"é 🙂 \u00e9 \ud83d\ude42 \" \\ \n"`, -1, ""},
		{`"\ufffd is a real one"`, -1, ""},
		{"\"\xef\xbf\xbd literal\"", -1, ""},
		{"\"s\xff\"", 2, "an invalid byte"},
		{"\"ab\xc3\"", 3, "an invalid byte"},
		{`"s\ud800x"`, 2, "an unpaired surrogate escape"},
		{`"\udc00\ud800"`, 1, "an unpaired surrogate escape"},
		{`"\ud83d"`, 1, "an unpaired surrogate escape"},
		{`"\ud83d\u0041"`, 1, "an unpaired surrogate escape"},
	} {
		at, what := Altered([]byte(tc.raw))
		if at != tc.at || what != tc.what {
			t.Errorf("Altered(%q) = %d %q, want %d %q", tc.raw, at, what, tc.at, tc.what)
		}
		// Cross-check with the decoder: a string it changes has a U+FFFD
		// the raw bytes do not account for.
		var s string
		if err := json.Unmarshal([]byte(tc.raw), &s); err != nil {
			t.Fatalf("%q: %v", tc.raw, err)
		}
		literal := strings.Count(tc.raw, "\ufffd") + strings.Count(tc.raw, `\ufffd`)
		if changed := strings.Count(s, "\ufffd") > literal; changed != (tc.at >= 0) {
			t.Errorf("%q: the decoder changed it: %v, Altered found %d", tc.raw, changed, tc.at)
		}
	}
}
