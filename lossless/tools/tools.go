package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
)

// Tool is a recall tool as offered to the model: a name, a description, a
// JSON Schema of its arguments and a handler returning the tool's output
// (JSON text).
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage
	Handler     func(ctx context.Context, args json.RawMessage) (string, error)
}

type toolSessionKey struct{}

// ToolSession is the session a tool call runs in, when its arguments do
// not name one.
type ToolSession struct {
	AgentID, SessionID, SessionKey string
}

// WithToolSession returns ctx carrying the session tool handlers use when
// their arguments do not name one.
func WithToolSession(ctx context.Context, s ToolSession) context.Context {
	return context.WithValue(ctx, toolSessionKey{}, s)
}

// sessionFrom fills a call's session from ctx's ToolSession when its
// arguments name none, and refuses another agent's (records.AgentOfKey:
// the agent a session key names).
func sessionFrom(ctx context.Context, agent, id, key *string) error {
	if s, ok := ctx.Value(toolSessionKey{}).(ToolSession); ok {
		if s.AgentID != "" && *agent != "" && *agent != s.AgentID {
			return fmt.Errorf("%w: this session's tools read agent %q only, not %q", ErrBadArgs, s.AgentID, *agent)
		}
		// A session key names its agent ("agent:<id>:…"), which would win
		// over the bound one: refuse another agent's key too.
		if a := records.AgentOfKey(*key); s.AgentID != "" && a != "" && a != s.AgentID {
			return fmt.Errorf("%w: this session's tools read agent %q only, not %q (session key %q)", ErrBadArgs, s.AgentID, a, *key)
		}
		if *id == "" && *key == "" {
			*id, *key = s.SessionID, s.SessionKey
		}
		if *agent == "" {
			*agent = s.AgentID
		}
	}
	if *id == "" && *key == "" {
		return fmt.Errorf("%w: no sessionId (and no session in the context)", ErrBadArgs)
	}
	return nil
}

func decodeArgs(raw json.RawMessage, v any) error {
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadArgs, err)
	}
	return nil
}

// DecodeGrepArgs decodes lcm_grep's arguments.
func DecodeGrepArgs(raw json.RawMessage) (GrepParams, error) {
	var p GrepParams
	if err := decodeArgs(raw, &p); err != nil {
		return p, err
	}
	if strings.TrimSpace(p.Query) == "" {
		return p, fmt.Errorf("%w: query is required", ErrBadArgs)
	}
	return p, nil
}

// DescribeArgs are lcm_describe's arguments.
type DescribeArgs struct {
	AgentID    string `json:"agentId,omitempty"`
	SessionID  string `json:"sessionId,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
	ID         string `json:"id"`
}

// DecodeExpandArgs decodes lcm_expand's arguments.
func DecodeExpandArgs(raw json.RawMessage) (ExpandParams, error) {
	var p ExpandParams
	if err := decodeArgs(raw, &p); err != nil {
		return p, err
	}
	if p.ID == "" {
		return p, fmt.Errorf("%w: id is required", ErrBadArgs)
	}
	if p.MaxTokens < 0 {
		return p, fmt.Errorf("%w: maxTokens %d is negative", ErrBadArgs, p.MaxTokens)
	}
	return p, nil
}

const sessionProps = `"sessionId":{"type":"string","description":"Session id (default: the current session)."},"sessionKey":{"type":"string"},"agentId":{"type":"string"}`

// Tools returns the recall tools lcm_grep, lcm_describe and lcm_expand:
// their names, descriptions and schemas. Their handlers are the engine's
// (package lossless sets them: GrepArgs, DescribeToolArgs and ExpandArgs
// read a call's arguments, GrepOutput and Output write its result).
func Tools() []Tool {
	return []Tool{
		{
			Name:        NameGrep,
			Description: "Search the full stored history of this conversation (or of every conversation of this agent) — raw messages and summaries — by words or a regular expression, with optional time bounds. Returns matches with ids to pass to lcm_describe / lcm_expand: a message hit's id (\"<conversation>:<seq>\") and coveredBy (the summary that holds it, once summarised); a summary hit's summaryId.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"Words that must all occur, or a regular expression when regex is true."},"regex":{"type":"boolean"},"scope":{"type":"string","enum":["conversation","agent"]},"since":{"type":"integer","description":"Unix ms lower bound."},"until":{"type":"integer","description":"Unix ms upper bound."},"sort":{"type":"string","enum":["relevance","recency"]},"limit":{"type":"integer","minimum":1,"maximum":200},"kind":{"type":"string","enum":["message","summary"]},` + sessionProps + `},"required":["query"],"additionalProperties":false}`),
		},
		{
			Name:        NameDescribe,
			Description: "Show a summary of the conversation's history (its text, kind, depth, time range, the summaries or messages it covers, the summaries above it), or a message by its id \"<conversation>:<seq>\" (its text, and the summary covering it or its place in the current context).",
			Schema:      json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"Summary id (as shown in an <lcm_summary> block, or lcm_grep's summaryId or coveredBy), or message id \"<conversation>:<seq>\" (lcm_grep's id)."},` + sessionProps + `},"required":["id"],"additionalProperties":false}`),
		},
		{
			Name:        NameExpand,
			Description: "Return the original messages behind a summary (or a stored large content id), verbatim, in order; or a message (by its id \"<conversation>:<seq>\") with the messages around it. Paged by tokens: pass nextCursor back as cursor for the next page.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"Summary id, message id \"<conversation>:<seq>\", or lcm-large:<key>."},"maxTokens":{"type":"integer","minimum":1,"description":"Most tokens a page holds (default 8000; 2000 around a message)."},"cursor":{"type":"string"},` + sessionProps + `},"required":["id"],"additionalProperties":false}`),
		},
	}
}

// GrepArgs decodes lcm_grep's arguments and fills their session from
// ctx's ToolSession when they name none (another agent's is refused).
func GrepArgs(ctx context.Context, raw json.RawMessage) (GrepParams, error) {
	p, err := DecodeGrepArgs(raw)
	if err != nil {
		return p, err
	}
	return p, sessionFrom(ctx, &p.AgentID, &p.SessionID, &p.SessionKey)
}

// DescribeToolArgs decodes lcm_describe's arguments and fills their
// session as GrepArgs does.
func DescribeToolArgs(ctx context.Context, raw json.RawMessage) (DescribeArgs, error) {
	var a DescribeArgs
	if err := decodeArgs(raw, &a); err != nil {
		return a, err
	}
	if a.ID == "" {
		return a, fmt.Errorf("%w: id is required", ErrBadArgs)
	}
	return a, sessionFrom(ctx, &a.AgentID, &a.SessionID, &a.SessionKey)
}

// ExpandArgs decodes lcm_expand's arguments and fills their session as
// GrepArgs does.
func ExpandArgs(ctx context.Context, raw json.RawMessage) (ExpandParams, error) {
	p, err := DecodeExpandArgs(raw)
	if err != nil {
		return p, err
	}
	return p, sessionFrom(ctx, &p.AgentID, &p.SessionID, &p.SessionKey)
}

// GrepOutput is lcm_grep's output of hits.
func GrepOutput(hits []GrepHit) (string, error) {
	out := make([]modelHit, len(hits))
	for i, h := range hits {
		out[i] = toModelHit(h)
	}
	return Output(map[string]any{"hits": out})
}

// modelHit is a GrepHit as lcm_grep gives it to the model: a message
// hit's id stands for its conversation and seq, and the score is rounded
// (the hits are already in order).
type modelHit struct {
	Kind         string  `json:"kind"`
	ID           string  `json:"id,omitempty"`
	Conversation string  `json:"conversation,omitempty"`
	SummaryID    string  `json:"summaryId,omitempty"`
	CoveredBy    string  `json:"coveredBy,omitempty"`
	Role         string  `json:"role,omitempty"`
	Timestamp    int64   `json:"timestamp"`
	Score        float64 `json:"score"`
	Snippet      string  `json:"snippet"`
}

func toModelHit(h GrepHit) modelHit {
	m := modelHit{Kind: h.Kind, ID: h.ID, SummaryID: h.SummaryID, CoveredBy: h.CoveredBy, Role: h.Role,
		Timestamp: h.Timestamp, Score: math.Round(h.Score*100) / 100, Snippet: h.Snippet}
	if m.ID == "" {
		m.Conversation = h.Conversation
	}
	return m
}

// Output encodes a tool result for the model without HTML escaping, so
// "<", ">" and "&" in snippets and summaries reach it as written.
func Output(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("lossless: encode tool result: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// Defs returns the definitions of tools (name, description, JSON Schema),
// for a host to offer them to its model (core.ToolCaller).
func Defs(tools []Tool) []core.ToolDef {
	out := make([]core.ToolDef, len(tools))
	for i, t := range tools {
		out[i] = core.ToolDef{Name: t.Name, Description: t.Description, Parameters: t.Schema}
	}
	return out
}

// The tools' names as offered to the model (lossless.ToolGrep,
// ToolDescribe and ToolExpand).
const (
	NameGrep     = "lcm_grep"
	NameDescribe = "lcm_describe"
	NameExpand   = "lcm_expand"
)
