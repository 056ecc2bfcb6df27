package records

import (
	"errors"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

// TestCheckName: invalid UTF-8 and NUL bytes are refused with the byte
// they are at.
func TestCheckName(t *testing.T) {
	for _, c := range []struct{ v, want string }{
		{"ok", ""},
		{"a\xffb", "sessionId is not valid UTF-8 (byte 1 of 3)"},
		{"ab\x00", "sessionId holds a NUL byte (byte 2 of 3)"},
	} {
		err := CheckName("sessionId", c.v)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.v, err)
		case c.want != "" && (err == nil || !errors.Is(err, core.ErrInvalidSessionID) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: %v, want %q", c.v, err, c.want)
		}
	}
}
