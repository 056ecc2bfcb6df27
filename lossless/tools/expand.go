package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Describe returns summary id of conv (the conversation that holds it,
// which the caller located): its content, sources and lineage
// (dag.Describe). A message id is refused (DescribeMessage describes it).
func Describe(ctx context.Context, conv Conv, id string) (dag.Description, error) {
	if err := CheckSummaryID(id); err != nil {
		return dag.Description{}, err
	}
	return dag.Describe(ctx, conv, id)
}

// CheckSummaryID refuses a message id where a summary id is wanted (an
// error wrapping ErrBadArgs).
func CheckSummaryID(id string) error {
	if _, _, ok := ParseMessageID(id); ok {
		return fmt.Errorf("%w: %q is a message id, not a summary id", ErrBadArgs, id)
	}
	return nil
}

// Holds reports whether conversation c of st holds summary id (a record
// that does not decode included: the reads then report it).
func Holds(ctx context.Context, st store.Store, c store.ConvID, id string) (bool, error) {
	found := false
	err := st.View(ctx, func(r store.Reader) error {
		_, err := r.Summary(c, id)
		switch {
		case err == nil, errors.Is(err, store.ErrCorrupt):
			found = true
		case !errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("lossless: summary %q: %w", id, err)
		}
		return nil
	})
	return found, err
}

// AgentHolding returns the conversation of agent in st that holds summary
// id; found is false when none does. It reads the conversation records and
// one summary key of each of agent's.
func AgentHolding(ctx context.Context, st store.Store, agent, id string) (holder store.ConvID, found bool, err error) {
	err = st.View(ctx, func(r store.Reader) error {
		for cr, err := range r.Conversations() {
			if err != nil {
				return fmt.Errorf("lossless: summary %q: %w", id, records.FromStore(err))
			}
			if cr.Agent != agent {
				continue
			}
			_, err := r.Summary(cr.ID, id)
			switch {
			case err == nil, errors.Is(err, store.ErrCorrupt):
				holder, found = cr.ID, true
				return nil
			case !errors.Is(err, store.ErrNotFound):
				return fmt.Errorf("lossless: summary %q: %w", id, err)
			}
		}
		return nil
	})
	if err != nil {
		return store.ConvID{}, false, err
	}
	return holder, found, nil
}

// DescribeTextBytes is the most bytes of a message's text DescribeMessage
// gives (lcm_expand gives the whole message).
const DescribeTextBytes = 4000

// MessageDescription is a stored message and where it sits in its
// conversation's history: lcm_describe's answer for a message id.
type MessageDescription struct {
	// ID is the message's id ("<conv>:<seq>", MessageID).
	ID           string `json:"id"`
	Conversation string `json:"conversation"`
	Seq          uint64 `json:"seq"`
	Role         string `json:"role,omitempty"`
	Timestamp    int64  `json:"timestamp"`
	Tokens       int    `json:"tokens"`
	// Active is true when the message itself is a context item (not
	// summarised yet, as in the fresh tail), at Pos.
	Active bool   `json:"active"`
	Pos    uint64 `json:"pos,omitempty"`
	// CoveredBy is the leaf summary covering the message (the smallest,
	// should several), "" when none does.
	CoveredBy string `json:"coveredBy,omitempty"`
	// Ancestors are the summaries above CoveredBy, from the context item
	// down to its parent (dag.Description's); empty when CoveredBy is
	// itself a context item.
	Ancestors []string `json:"ancestors,omitempty"`
	// Text is the message as grep matches it (records.PlainText; stored large
	// content as its reference), cut at DescribeTextBytes ("…" at the
	// cut, Truncated set).
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"`
}

// CheckMessageID returns the conversation and sequence number message id
// id names; one that is not a message id is an error wrapping ErrBadArgs.
func CheckMessageID(id string) (store.ConvID, uint64, error) {
	c, seq, ok := ParseMessageID(id)
	if !ok {
		return c, 0, fmt.Errorf("%w: %q is not a message id (want <conversation>:<seq>, as lcm_grep gives)", ErrBadArgs, id)
	}
	return c, seq, nil
}

// DescribeMessage returns message id ("<conv>:<seq>", MessageID: message
// seq of conversation conv.ID, which the caller checked the call may read)
// and where it sits: in the active context, or under the leaf summary that
// covers it and that summary's ancestors.
func DescribeMessage(ctx context.Context, conv Conv, id string, seq uint64) (MessageDescription, error) {
	c := conv.ID
	d := MessageDescription{ID: id, Conversation: c.String(), Seq: seq}
	coverSize := 0
	err := conv.St.View(ctx, func(r store.Reader) error {
		rec, raw, err := records.GetMsgText(r, c, seq)
		if err != nil {
			return err
		}
		m, err := core.ParseMessage(raw)
		if err != nil {
			return fmt.Errorf("lossless: stored message %s: %w", id, err)
		}
		d.Role, d.Timestamp, d.Tokens = rec.Role, rec.Timestamp, rec.Tokens
		d.Text = records.PlainText(m)
		if len(d.Text) > DescribeTextBytes {
			cut := DescribeTextBytes
			for cut > 0 && !utf8.RuneStart(d.Text[cut]) {
				cut--
			}
			d.Text, d.Truncated = d.Text[:cut]+"…", true
		}
		for s, err := range r.Summaries(c) {
			if err != nil {
				return fmt.Errorf("lossless: describe %s: %w", id, records.FromStore(err))
			}
			if s.Depth != 0 || (d.CoveredBy != "" && len(s.Sources) >= coverSize) {
				continue
			}
			if slices.Contains(s.Sources, dag.MessageRef(seq)) {
				d.CoveredBy, coverSize = s.ID, len(s.Sources)
			}
		}
		if d.CoveredBy != "" {
			return nil
		}
		for it, err := range r.Items(c, 0, math.MaxUint64, false) {
			if err != nil {
				return fmt.Errorf("lossless: describe %s: %w", id, records.FromStore(err))
			}
			if it.Ref == dag.MessageRef(seq) {
				d.Active, d.Pos = true, it.Pos
				break
			}
		}
		return nil
	})
	if err != nil {
		return MessageDescription{}, err
	}
	if d.CoveredBy != "" {
		sd, err := dag.Describe(ctx, conv, d.CoveredBy)
		if err != nil {
			return MessageDescription{}, err
		}
		d.Ancestors = sd.Ancestors
	}
	return d, nil
}

// ExpandParams are the arguments of Expand.
type ExpandParams struct {
	AgentID    string `json:"agentId,omitempty"`
	SessionID  string `json:"sessionId,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
	// ID is a summary id, a message id ("<conv>:<seq>", MessageID) or a
	// large-content reference ("lcm-large:<key>").
	ID string `json:"id"`
	// MaxTokens caps one page (default 8000, DefaultExpandTokens; around a
	// message 2000, DefaultMessageExpandTokens; a page holds at least one
	// message).
	MaxTokens int `json:"maxTokens,omitempty"`
	// Cursor continues a previous page ("" for the first).
	Cursor string `json:"cursor,omitempty"`
}

// ExpandedMessage is one raw message of an expansion, bytes exactly as
// stored.
type ExpandedMessage struct {
	Seq     uint64       `json:"seq"`
	Message core.Message `json:"message"`
}

// ExpandPage is one page of Expand. Offset is the index of Messages[0]
// among all the summary's messages, and Total their number; for a message
// id, among all the conversation's messages (Offset is then the first
// message's seq - 1).
type ExpandPage struct {
	ID         string            `json:"id"`
	Messages   []ExpandedMessage `json:"messages"`
	Tokens     int               `json:"tokens"`
	Offset     int               `json:"offset"`
	Total      int               `json:"total"`
	NextCursor string            `json:"nextCursor,omitempty"`
}

// ExpandParams.MaxTokens's defaults: for a summary and around a message.
const (
	DefaultExpandTokens        = 8000
	DefaultMessageExpandTokens = 2000
)

// Expand returns, from conv (the conversation that holds p.ID, which the
// caller located), the raw messages summary p.ID covers, in order, byte for
// byte as ingested, one page of at most p.MaxTokens tokens at a time. A
// large-content reference returns its one message. A message id returns
// the message with its neighbours in the conversation (one before, one
// after, in turn, while they fit), then, from its nextCursor, the
// messages after them.
func Expand(ctx context.Context, conv Conv, p ExpandParams) (ExpandPage, error) {
	if _, seq, ok := ParseMessageID(p.ID); ok {
		return expandMessage(ctx, conv, p, seq)
	}
	if IsLargeRef(p.ID) {
		seq, m, err := conv.MessageByKey(ctx, p.ID)
		if err != nil {
			return ExpandPage{}, err
		}
		meta, err := conv.MessageMeta(ctx, seq)
		if err != nil {
			return ExpandPage{}, err
		}
		return ExpandPage{ID: p.ID, Messages: []ExpandedMessage{{Seq: seq, Message: m}}, Tokens: meta.Tokens, Total: 1}, nil
	}
	max := p.MaxTokens
	if max <= 0 {
		max = DefaultExpandTokens
	}
	page, err := dag.Expand(ctx, conv, p.ID, max, p.Cursor)
	if err != nil {
		return ExpandPage{}, err
	}
	out := ExpandPage{ID: p.ID, Tokens: page.Tokens, Offset: page.Offset, Total: page.Total, NextCursor: page.NextCursor}
	for _, seq := range page.Messages {
		m, err := conv.Message(ctx, seq)
		if err != nil {
			return ExpandPage{}, err
		}
		out.Messages = append(out.Messages, ExpandedMessage{Seq: seq, Message: m})
	}
	return out, nil
}

// expandMessage is Expand of message seq of conversation conv (p.ID its id):
// without a cursor, the message and its neighbours within p.MaxTokens;
// from a cursor, the messages from its offset on.
func expandMessage(ctx context.Context, conv Conv, p ExpandParams, seq uint64) (ExpandPage, error) {
	max := p.MaxTokens
	if max <= 0 {
		max = DefaultMessageExpandTokens
	}
	c := conv.ID
	out := ExpandPage{ID: p.ID}
	err := conv.St.View(ctx, func(r store.Reader) error {
		rec, err := r.Conversation(c)
		if err != nil {
			return fmt.Errorf("lossless: expand %s: %w", p.ID, records.FromStore(err))
		}
		last := rec.NextSeq - 1 // sequence numbers run from 1 without a gap
		if seq > last {
			return fmt.Errorf("lossless: message %s: %w", p.ID, dag.ErrNotFound)
		}
		tokens := func(s uint64) (int, error) {
			h, err := records.GetMsgHeader(r, c, s)
			return h.Tokens, err
		}
		lo, hi := seq, seq
		if p.Cursor != "" {
			off, err := dag.ParseCursor(p.Cursor, p.ID)
			if err != nil {
				return err
			}
			if uint64(off) >= last {
				return fmt.Errorf("%w: offset %d: the conversation has %d messages", dag.ErrBadCursor, off, last)
			}
			lo, hi = uint64(off)+1, uint64(off)+1
		}
		used, err := tokens(lo)
		if err != nil {
			return err
		}
		// grow adds message s to the page when it fits.
		grow := func(s uint64) (bool, error) {
			n, err := tokens(s)
			if err != nil || used+n > max {
				return false, err
			}
			used += n
			return true, nil
		}
		before, after := p.Cursor == "" && lo > 1, hi < last
		for before || after {
			if before {
				ok, err := grow(lo - 1)
				if err != nil {
					return err
				}
				if ok {
					lo--
				}
				before = ok && lo > 1
			}
			if after {
				ok, err := grow(hi + 1)
				if err != nil {
					return err
				}
				if ok {
					hi++
				}
				after = ok && hi < last
			}
		}
		for s := lo; s <= hi; s++ {
			m, err := records.ReadMessage(r, c, s)
			if err != nil {
				return err
			}
			out.Messages = append(out.Messages, ExpandedMessage{Seq: s, Message: m})
		}
		out.Tokens, out.Offset, out.Total = used, int(lo-1), int(last)
		if hi < last {
			out.NextCursor = dag.FormatCursor(p.ID, int(hi))
		}
		return nil
	})
	if err != nil {
		return ExpandPage{}, err
	}
	return out, nil
}

// JSON renders the page as the lcm_expand tool's output. Each message is
// written byte for byte as stored (encoding/json would re-compact and
// re-escape it).
func (p ExpandPage) JSON() string {
	var sb strings.Builder
	id, _ := json.Marshal(p.ID)
	fmt.Fprintf(&sb, `{"id":%s,"messages":[`, id)
	for i, m := range p.Messages {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"seq":%d,"message":`, m.Seq)
		sb.Write(m.Message.Raw())
		sb.WriteByte('}')
	}
	fmt.Fprintf(&sb, `],"tokens":%d,"offset":%d,"total":%d`, p.Tokens, p.Offset, p.Total)
	if p.NextCursor != "" {
		c, _ := json.Marshal(p.NextCursor)
		fmt.Fprintf(&sb, `,"nextCursor":%s`, c)
	}
	sb.WriteByte('}')
	return sb.String()
}
