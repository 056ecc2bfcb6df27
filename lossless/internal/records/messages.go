package records

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// ReadItems returns conversation c's context items in position order.
func ReadItems(ctx context.Context, r store.Reader, c store.ConvID) ([]dag.Item, error) {
	var out []dag.Item
	for it, err := range r.Items(c, 0, math.MaxUint64, false) {
		if err != nil {
			return nil, err
		}
		if len(out)%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("lossless: %w", err)
			}
		}
		out = append(out, it.Item)
	}
	return out, nil
}

// CheckRange verifies that the items from old[0].Pos to old[len-1].Pos are
// exactly old (else an error wrapping dag.ErrConflict).
func CheckRange(r store.Reader, c store.ConvID, old []dag.Item) error {
	i := 0
	for got, err := range r.Items(c, old[0].Pos, math.MaxUint64, false) {
		if i == len(old) {
			break // the items after old are not read
		}
		if err != nil {
			return err
		}
		if got.Item != old[i] {
			return fmt.Errorf("lossless: replace: item at %d changed: %w", old[i].Pos, dag.ErrConflict)
		}
		i++
	}
	if i != len(old) {
		return fmt.Errorf("lossless: replace: %d of %d items found: %w", i, len(old), dag.ErrConflict)
	}
	return nil
}

// MsgErr returns the error of a read of message seq: a missing message
// wraps dag.ErrNotFound.
func MsgErr(seq uint64, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("lossless: message %d: %w", seq, dag.ErrNotFound)
	}
	return fmt.Errorf("lossless: message %d: %w", seq, err)
}

// GetMsg returns message seq of c with its raw bytes (dag.ErrNotFound when
// there is none).
func GetMsg(r store.Reader, c store.ConvID, seq uint64) (store.Message, error) {
	m, err := r.Message(c, seq)
	return m, MsgErr(seq, err)
}

// GetMsgHeader is GetMsg without the body (neither copied nor
// decompressed).
func GetMsgHeader(r store.Reader, c store.ConvID, seq uint64) (store.Message, error) {
	m, err := r.MessageHeader(c, seq)
	return m, MsgErr(seq, err)
}

// GetMsgText returns the bytes that stand for message seq in text: its
// large-content reference when it has one (the body is then not read),
// else its raw bytes.
func GetMsgText(r store.Reader, c store.ConvID, seq uint64) (store.Message, []byte, error) {
	m, err := GetMsgHeader(r, c, seq)
	if err != nil {
		return m, nil, err
	}
	if m.Flags&store.FlagLarge != 0 {
		if v, err := r.Large(c, seq); err == nil {
			return m, v, nil
		}
	}
	m, err = GetMsg(r, c, seq)
	return m, m.Raw, err
}

// MissingErr is the error of messages from to to of conversation c (of
// session sessionID) missing from the store: it wraps store.ErrCorrupt
// (lossless.ErrCorrupt).
func MissingErr(c store.ConvID, sessionID string, from, to uint64) error {
	return fmt.Errorf("lossless: conversation %s (session %s): messages %d-%d are missing: %w", c, sessionID, from, to, store.ErrCorrupt)
}

// PlainText renders a message as plain text: "role: text", tool calls as
// "[tool call name(args)]", a tool result as "[tool result name]".
// Thinking is left out.
func PlainText(m core.Message) string {
	var sb strings.Builder
	sb.WriteString(m.Role())
	if m.Role() == core.RoleToolResult {
		fmt.Fprintf(&sb, " (%s", m.ToolName())
		if m.IsError() {
			sb.WriteString(", error")
		}
		sb.WriteString(")")
	}
	sb.WriteString(": ")
	sb.WriteString(m.Text())
	for _, b := range m.ToolCalls() {
		fmt.Fprintf(&sb, "\n[tool call %s(%s)]", b.Name, b.Arguments)
	}
	return sb.String()
}

// MessageTimes returns the timestamps (Unix ms) of the first and the last
// stored message of c (sequence numbers 1 and rec.Messages), the earlier
// first; a message without a timestamp counts as the other one, and 0, 0
// means neither has one.
func MessageTimes(r store.Reader, c store.ConvID, rec store.Conversation) (first, last int64, err error) {
	if rec.Messages <= 0 {
		return 0, 0, nil
	}
	at := func(seq uint64) (int64, error) {
		m, err := r.MessageHeader(c, seq)
		switch {
		case err == nil:
			return m.Timestamp, nil
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrCorrupt):
			// A missing record, or one that does not decode, has no
			// time: Check reports it.
			return 0, nil
		}
		return 0, fmt.Errorf("lossless: conversation %s: read message %d: %w", c, seq, err)
	}
	if first, err = at(1); err != nil {
		return 0, 0, err
	}
	if last, err = at(uint64(rec.Messages)); err != nil {
		return 0, 0, err
	}
	switch {
	case first == 0:
		first = last
	case last == 0:
		last = first
	case last < first:
		first, last = last, first
	}
	return first, last, nil
}
