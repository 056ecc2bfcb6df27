package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
)

// Describe returns summary id of the session's conversation (or of the
// conversation holding it: Port.Holding): its content, sources and
// lineage (dag.Describe).
func Describe[C Conversation](ctx context.Context, pt Port[C], agentID, sessionID, sessionKey, id string) (dag.Description, error) {
	conv, err := pt.Conversation(ctx, agentID, sessionID, sessionKey)
	if err != nil {
		return dag.Description{}, err
	}
	conv = pt.Holding(ctx, conv, id) // fork parent, ended subagents
	return dag.Describe(ctx, conv, id)
}

// ExpandParams are the arguments of Expand.
type ExpandParams struct {
	AgentID    string `json:"agentId,omitempty"`
	SessionID  string `json:"sessionId,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
	// ID is a summary id, or a large-content reference ("lcm-large:<key>").
	ID string `json:"id"`
	// MaxTokens caps one page (default 8000; a page holds at least one
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

// ExpandPage is one page of Expand.
type ExpandPage struct {
	ID         string            `json:"id"`
	Messages   []ExpandedMessage `json:"messages"`
	Tokens     int               `json:"tokens"`
	Offset     int               `json:"offset"`
	Total      int               `json:"total"`
	NextCursor string            `json:"nextCursor,omitempty"`
}

// DefaultExpandTokens is ExpandParams.MaxTokens's default.
const DefaultExpandTokens = 8000

// Expand returns the raw messages summary p.ID covers, in order, byte for
// byte as ingested, one page of at most p.MaxTokens tokens at a time. A
// large-content reference returns its one message.
func Expand[C Conversation](ctx context.Context, pt Port[C], p ExpandParams) (ExpandPage, error) {
	conv, err := pt.Conversation(ctx, p.AgentID, p.SessionID, p.SessionKey)
	if err != nil {
		return ExpandPage{}, err
	}
	conv = pt.Holding(ctx, conv, p.ID) // fork parent, ended subagents
	if pt.IsLargeRef(p.ID) {
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
