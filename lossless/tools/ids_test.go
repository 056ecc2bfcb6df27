package tools

import (
	"testing"

	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// TestMessageIDRoundTrip: a message id parses back to its conversation and
// seq; what is not one (a summary id, a large-content reference, a range,
// a seq of 0 or with a leading zero, a short or non-hex conversation) is
// refused. (That it is the recall block's citation stays a test of package
// lossless, the one place that sees both parts.)
func TestMessageIDRoundTrip(t *testing.T) {
	c := store.ConvID{0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3}
	for _, seq := range []uint64{1, 42, 1 << 40} {
		id := MessageID(c, seq)
		if gc, gs, ok := ParseMessageID(id); !ok || gc != c || gs != seq {
			t.Fatalf("ParseMessageID(%q) = %v %d %v", id, gc, gs, ok)
		}
	}
	for _, bad := range []string{"", "deadbeef00010203", "deadbeef00010203:", "deadbeef00010203:0", "deadbeef00010203:01",
		"deadbeef00010203:4-6", "deadbeef0001020:4", "xxadbeef00010203:4", "sum_abc", records.LargeRefPrefix + "00"} {
		if _, _, ok := ParseMessageID(bad); ok {
			t.Errorf("ParseMessageID(%q) accepted", bad)
		}
	}
}
