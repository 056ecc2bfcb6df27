package tools

import (
	"strconv"
	"strings"

	"github.com/lossless-engine/contextengine/store"
)

// MessageID returns the id the tools give message seq of conversation c:
// "<conv>:<seq>", the conversation's 16 hex digits and the message's
// sequence number (from 1). It is the id the recall block cites a turn by
// (lossless/internal/recall's MessageDocID), and lcm_describe and lcm_expand take it.
func MessageID(c store.ConvID, seq uint64) string {
	return c.String() + ":" + strconv.FormatUint(seq, 10)
}

// ParseMessageID returns the conversation and sequence number message id
// id (MessageID's form) names; ok is false when id is not of that form (a
// summary id, a large-content reference, a range "<conv>:4-6").
func ParseMessageID(id string) (c store.ConvID, seq uint64, ok bool) {
	conv, num, found := strings.Cut(id, ":")
	if !found {
		return c, 0, false
	}
	if c, ok = store.ParseConvID(conv); !ok {
		return c, 0, false
	}
	seq, err := strconv.ParseUint(num, 10, 64)
	if err != nil || seq == 0 || strconv.FormatUint(seq, 10) != num {
		return c, 0, false
	}
	return c, seq, true
}
