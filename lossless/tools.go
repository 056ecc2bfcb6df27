package lossless

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// Recall tools: Grep, DescribeSummary and ExpandSummary as Engine methods,
// and the same as model tools (Tools: lcm_grep, lcm_describe, lcm_expand).

// Grep scopes and sorts.
const (
	ScopeConversation = "conversation"
	ScopeAgent        = "agent"
	SortRelevance     = "relevance"
	SortRecency       = "recency"
)

// GrepParams are the arguments of Grep.
type GrepParams struct {
	AgentID    string `json:"agentId,omitempty"`
	SessionID  string `json:"sessionId,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
	// Query is the text to find: every word must occur (case-insensitive),
	// or a regular expression when Regex is set.
	Query string `json:"query"`
	Regex bool   `json:"regex,omitempty"`
	// Scope is ScopeConversation (default: the session's conversation) or
	// ScopeAgent (every conversation of the agent).
	Scope string `json:"scope,omitempty"`
	// Since and Until bound the timestamps (Unix ms; 0: open).
	Since int64 `json:"since,omitempty"`
	Until int64 `json:"until,omitempty"`
	// Sort is SortRelevance (default) or SortRecency.
	Sort string `json:"sort,omitempty"`
	// Limit is the most hits returned (default 20, at most 200).
	Limit int `json:"limit,omitempty"`
	// Kind restricts the hits to "message" or "summary" ("": both).
	Kind string `json:"kind,omitempty"`
}

// GrepHit is one match.
type GrepHit struct {
	Kind         string  `json:"kind"` // "message" or "summary"
	Conversation string  `json:"conversation"`
	Seq          uint64  `json:"seq,omitempty"`
	SummaryID    string  `json:"summaryId,omitempty"`
	Role         string  `json:"role,omitempty"`
	Timestamp    int64   `json:"timestamp"`
	Score        float64 `json:"score"`
	Snippet      string  `json:"snippet"`
}

const (
	defaultGrepLimit = 20
	maxGrepLimit     = 200
	snippetRadius    = 100
)

// matcher finds a query in text.
type matcher struct {
	re    *regexp.Regexp
	words []string
	// rawParts are the ASCII letter-and-digit runs of the words: a
	// message's raw JSON holds each of them whenever its plain text holds
	// the word (JSON escapes no ASCII letter or digit, and the plain
	// text's own additions — role, tool name, "tool call", "error" — are
	// in the raw JSON too). A message whose raw bytes lack one is not
	// parsed (rawMayMatch).
	rawParts [][]byte
}

func newMatcher(p GrepParams) (*matcher, error) {
	q := strings.TrimSpace(p.Query)
	if q == "" {
		return nil, fmt.Errorf("%w: empty query", ErrBadToolArgs)
	}
	if p.Regex {
		re, err := regexp.Compile("(?i)" + q)
		if err != nil {
			return nil, fmt.Errorf("%w: regex: %v", ErrBadToolArgs, err)
		}
		return &matcher{re: re}, nil
	}
	m := &matcher{words: strings.Fields(strings.ToLower(q))}
	for _, w := range m.words {
		for _, part := range strings.FieldsFunc(w, func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
			m.rawParts = append(m.rawParts, []byte(part))
		}
	}
	return m, nil
}

// rawMayMatch reports whether a message of raw JSON may match: false when
// a part of a word (rawParts) is missing from its lower-cased bytes. (A
// text that spells a letter with a \u-escape of a character that
// lower-cases to ASCII, such as the Kelvin sign, is the one it misses.)
func (m *matcher) rawMayMatch(raw []byte) bool {
	if len(m.rawParts) == 0 {
		return true
	}
	low := bytes.ToLower(raw)
	for _, w := range m.rawParts {
		if !bytes.Contains(low, w) {
			return false
		}
	}
	return true
}

// match returns the score of text (0: no match) and the byte offset of the
// first match.
func (m *matcher) match(text string) (float64, int) {
	if m.re != nil {
		locs := m.re.FindAllStringIndex(text, 100)
		if len(locs) == 0 {
			return 0, -1
		}
		return float64(len(locs)) / math.Sqrt(1+float64(len(text))/400), locs[0][0]
	}
	low := strings.ToLower(text)
	score, first := 0.0, -1
	for _, w := range m.words {
		n := strings.Count(low, w)
		if n == 0 {
			return 0, -1
		}
		if i := strings.Index(low, w); first < 0 || i < first {
			first = i
		}
		score += 1 + math.Log(float64(n))
	}
	return score / math.Sqrt(1+float64(len(text))/400), first
}

// messageHit matches stored message rec of c on its plain text
// (MessagePlainText); a message that does not parse never matches.
func (m *matcher) messageHit(c convID, rec msgRecord) (GrepHit, bool) {
	if !m.rawMayMatch(rec.Raw) {
		return GrepHit{}, false
	}
	msg, err := core.ParseMessage(rec.Raw)
	if err != nil {
		return GrepHit{}, false
	}
	text := MessagePlainText(msg)
	score, at := m.match(text)
	if score <= 0 {
		return GrepHit{}, false
	}
	return GrepHit{Kind: "message", Conversation: c.String(), Seq: rec.Seq, Role: rec.Role,
		Timestamp: rec.Timestamp, Score: score, Snippet: snippet(text, at)}, true
}

// summaryHit matches summary s of c on its text.
func (m *matcher) summaryHit(c convID, s dag.Summary) (GrepHit, bool) {
	score, at := m.match(s.Text)
	if score <= 0 {
		return GrepHit{}, false
	}
	return GrepHit{Kind: "summary", Conversation: c.String(), SummaryID: s.ID,
		Timestamp: s.Latest, Score: score, Snippet: snippet(s.Text, at)}, true
}

func snippet(text string, at int) string {
	if at < 0 {
		at = 0
	}
	// ToLower may change byte lengths; clamp to text.
	if at > len(text) {
		at = len(text)
	}
	from, to := at-snippetRadius, at+snippetRadius
	if from < 0 {
		from = 0
	}
	if to > len(text) {
		to = len(text)
	}
	for from > 0 && !utf8.RuneStart(text[from]) {
		from--
	}
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to++
	}
	s := strings.Join(strings.Fields(text[from:to]), " ")
	if from > 0 {
		s = "…" + s
	}
	if to < len(text) {
		s += "…"
	}
	return s
}

// Grep searches stored messages and summaries (full text or regex) of the
// session's conversation, or of every conversation of its agent, with time
// filters, sorted by relevance or recency. It scans the store; messages are
// matched on their plain text (MessagePlainText), summaries on their text.
func (e *Engine) Grep(ctx context.Context, p GrepParams) ([]GrepHit, error) {
	m, err := newMatcher(p)
	if err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = defaultGrepLimit
	}
	if limit > maxGrepLimit {
		limit = maxGrepLimit
	}
	var convs []convID
	switch p.Scope {
	case "", ScopeConversation:
		conv, err := e.ConversationFor(ctx, p.AgentID, p.SessionID, p.SessionKey)
		if err != nil {
			return nil, err
		}
		convs = append(convs, conv.id)
		kids, err := e.linkedChildren(ctx, conv.id) // ended subagents (subagent.go)
		if err != nil {
			return nil, err
		}
		convs = append(convs, kids...)
	case ScopeAgent:
		infos, err := e.Sessions(ctx, e.agentFor(p.AgentID, p.SessionKey))
		if err != nil {
			return nil, err
		}
		for _, in := range infos {
			b, err := hex.DecodeString(in.ID)
			if err != nil || len(b) != 8 {
				continue
			}
			var c convID
			copy(c[:], b)
			convs = append(convs, c)
		}
	default:
		return nil, fmt.Errorf("%w: scope %q (want conversation or agent)", ErrBadToolArgs, p.Scope)
	}
	switch p.Sort {
	case "", SortRelevance, SortRecency:
	default:
		return nil, fmt.Errorf("%w: sort %q (want relevance or recency)", ErrBadToolArgs, p.Sort)
	}
	inTime := func(ts int64) bool {
		return (p.Since == 0 || ts >= p.Since) && (p.Until == 0 || ts <= p.Until)
	}
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	// Without time bounds every message's body is read: the scan reads
	// them with the headers. With bounds only those in time are: the scan
	// reads headers, then the bodies of those.
	bounded := p.Since != 0 || p.Until != 0
	var hits []GrepHit
	for _, c := range convs {
		err := e.st.View(ctx, func(r store.Reader) error {
			if p.Kind == "" || p.Kind == "message" {
				conv, err := r.Conversation(c)
				if err != nil {
					return fmt.Errorf("lossless: grep: conversation %s: %w", c, fromStore(err))
				}
				if conv.Retiring {
					return nil // being deleted by retention: not searched
				}
				// Sequence numbers run from 1 to NextSeq-1 without a gap:
				// a missing message fails the search (ErrCorrupt, with
				// the range), never a short answer.
				n, want := 0, uint64(1)
				for rec, err := range r.Messages(c, 0, !bounded) {
					if n++; n%256 == 0 {
						if err := ctx.Err(); err != nil {
							return fmt.Errorf("lossless: grep: %w", err)
						}
					}
					if err != nil {
						return fmt.Errorf("lossless: grep: %w", err)
					}
					if rec.Seq != want {
						return fmt.Errorf("lossless: grep: %w", missingErr(c, "", want, rec.Seq-1))
					}
					want++
					if !inTime(rec.Timestamp) {
						continue
					}
					if bounded {
						if rec, err = getMsg(r, c, rec.Seq); err != nil {
							return err
						}
					}
					if h, ok := m.messageHit(c, rec); ok {
						hits = append(hits, h)
					}
				}
				if conv.NextSeq > want {
					return fmt.Errorf("lossless: grep: %w", missingErr(c, "", want, conv.NextSeq-1))
				}
			}
			if p.Kind == "" || p.Kind == "summary" {
				for s, err := range r.Summaries(c) {
					if err != nil {
						// A summary that does not decode (ErrCorrupt,
						// naming it) fails the search: never fewer hits
						// as if they were all.
						return fmt.Errorf("lossless: grep: %w", fromStore(err))
					}
					if !inTime(s.Latest) {
						continue
					}
					if h, ok := m.summaryHit(c, s); ok {
						hits = append(hits, h)
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if p.Sort == SortRecency || hits[i].Score == hits[j].Score {
			return hits[i].Timestamp > hits[j].Timestamp
		}
		return hits[i].Score > hits[j].Score
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// DescribeSummary returns summary id of the session's conversation: its
// content, sources and lineage (dag.Describe).
func (e *Engine) DescribeSummary(ctx context.Context, agentID, sessionID, sessionKey, id string) (dag.Description, error) {
	conv, err := e.ConversationFor(ctx, agentID, sessionID, sessionKey)
	if err != nil {
		return dag.Description{}, err
	}
	conv = e.convHolding(ctx, conv, id) // fork parent, ended subagents (subagent.go)
	return dag.Describe(ctx, conv, id)
}

// ExpandParams are the arguments of ExpandSummary.
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

// ExpandPage is one page of ExpandSummary.
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

// ExpandSummary returns the raw messages summary p.ID covers, in order,
// byte for byte as ingested, one page of at most p.MaxTokens tokens at a
// time. A large-content reference returns its one message.
func (e *Engine) ExpandSummary(ctx context.Context, p ExpandParams) (ExpandPage, error) {
	conv, err := e.ConversationFor(ctx, p.AgentID, p.SessionID, p.SessionKey)
	if err != nil {
		return ExpandPage{}, err
	}
	conv = e.convHolding(ctx, conv, p.ID) // fork parent, ended subagents (subagent.go)
	if strings.HasPrefix(p.ID, LargeRefPrefix) {
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

func sessionFrom(ctx context.Context, agent, id, key *string) error {
	if s, ok := ctx.Value(toolSessionKey{}).(ToolSession); ok {
		if s.AgentID != "" && *agent != "" && *agent != s.AgentID {
			return fmt.Errorf("%w: this session's tools read agent %q only, not %q", ErrBadToolArgs, s.AgentID, *agent)
		}
		// A session key names its agent ("agent:<id>:…"), which would win
		// over the bound one: refuse another agent's key too.
		if a := AgentFromSessionKey(*key); s.AgentID != "" && a != "" && a != s.AgentID {
			return fmt.Errorf("%w: this session's tools read agent %q only, not %q (session key %q)", ErrBadToolArgs, s.AgentID, a, *key)
		}
		if *id == "" && *key == "" {
			*id, *key = s.SessionID, s.SessionKey
		}
		if *agent == "" {
			*agent = s.AgentID
		}
	}
	if *id == "" && *key == "" {
		return fmt.Errorf("%w: no sessionId (and no session in the context)", ErrBadToolArgs)
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
		return fmt.Errorf("%w: %v", ErrBadToolArgs, err)
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
		return p, fmt.Errorf("%w: query is required", ErrBadToolArgs)
	}
	return p, nil
}

type describeArgs struct {
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
		return p, fmt.Errorf("%w: id is required", ErrBadToolArgs)
	}
	if p.MaxTokens < 0 {
		return p, fmt.Errorf("%w: maxTokens %d is negative", ErrBadToolArgs, p.MaxTokens)
	}
	return p, nil
}

const sessionProps = `"sessionId":{"type":"string","description":"Session id (default: the current session)."},"sessionKey":{"type":"string"},"agentId":{"type":"string"}`

// Tools returns the recall tools lcm_grep, lcm_describe and lcm_expand.
func (e *Engine) Tools() []Tool {
	return []Tool{
		{
			Name:        ToolGrep,
			Description: "Search the full stored history of this conversation (or of every conversation of this agent) — raw messages and summaries — by words or a regular expression, with optional time bounds. Returns matches with ids to pass to lcm_describe / lcm_expand.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"Words that must all occur, or a regular expression when regex is true."},"regex":{"type":"boolean"},"scope":{"type":"string","enum":["conversation","agent"]},"since":{"type":"integer","description":"Unix ms lower bound."},"until":{"type":"integer","description":"Unix ms upper bound."},"sort":{"type":"string","enum":["relevance","recency"]},"limit":{"type":"integer","minimum":1,"maximum":200},"kind":{"type":"string","enum":["message","summary"]},` + sessionProps + `},"required":["query"],"additionalProperties":false}`),
			Handler: func(ctx context.Context, args json.RawMessage) (string, error) {
				p, err := DecodeGrepArgs(args)
				if err != nil {
					return "", err
				}
				if err := sessionFrom(ctx, &p.AgentID, &p.SessionID, &p.SessionKey); err != nil {
					return "", err
				}
				hits, err := e.Grep(ctx, p)
				if err != nil {
					return "", err
				}
				if hits == nil {
					hits = []GrepHit{}
				}
				return marshalForModel(map[string]any{"hits": hits})
			},
		},
		{
			Name:        ToolDescribe,
			Description: "Show a summary of the conversation's history: its text, kind, depth, time range, the summaries or messages it covers, and the summaries above it.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"Summary id, as shown in an <lcm_summary> block."},` + sessionProps + `},"required":["id"],"additionalProperties":false}`),
			Handler: func(ctx context.Context, args json.RawMessage) (string, error) {
				var a describeArgs
				if err := decodeArgs(args, &a); err != nil {
					return "", err
				}
				if a.ID == "" {
					return "", fmt.Errorf("%w: id is required", ErrBadToolArgs)
				}
				if err := sessionFrom(ctx, &a.AgentID, &a.SessionID, &a.SessionKey); err != nil {
					return "", err
				}
				d, err := e.DescribeSummary(ctx, a.AgentID, a.SessionID, a.SessionKey, a.ID)
				if err != nil {
					return "", err
				}
				return marshalForModel(d)
			},
		},
		{
			Name:        ToolExpand,
			Description: "Return the original messages behind a summary (or a stored large content id), verbatim, in order, paged by tokens: pass nextCursor back as cursor for the next page.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"Summary id or lcm-large:<key>."},"maxTokens":{"type":"integer","minimum":1},"cursor":{"type":"string"},` + sessionProps + `},"required":["id"],"additionalProperties":false}`),
			Handler: func(ctx context.Context, args json.RawMessage) (string, error) {
				p, err := DecodeExpandArgs(args)
				if err != nil {
					return "", err
				}
				if err := sessionFrom(ctx, &p.AgentID, &p.SessionID, &p.SessionKey); err != nil {
					return "", err
				}
				page, err := e.ExpandSummary(ctx, p)
				if err != nil {
					return "", err
				}
				return page.JSON(), nil
			},
		},
	}
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

// marshalForModel encodes a tool result for the model without HTML escaping,
// so "<", ">" and "&" in snippets and summaries reach it as written.
func marshalForModel(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("lossless: encode tool result: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

var _ core.ToolCaller = (*Engine)(nil)

// ToolDefs returns the definitions of Tools (name, description, JSON
// Schema), for a host to offer them to its model (core.ToolCaller).
func (e *Engine) ToolDefs() []core.ToolDef {
	tools := e.Tools()
	out := make([]core.ToolDef, len(tools))
	for i, t := range tools {
		out[i] = core.ToolDef{Name: t.Name, Description: t.Description, Parameters: t.Schema}
	}
	return out
}

// CallTool runs tool p.Name with p.Arguments in the session p names (the
// session the model runs in: arguments naming another session win), and
// returns its output (core.ToolCaller). An unknown tool or bad arguments
// give an error wrapping ErrBadToolArgs.
func (e *Engine) CallTool(ctx context.Context, p core.ToolCallParams) (core.ToolCallResult, error) {
	for _, t := range e.Tools() {
		if t.Name != p.Name {
			continue
		}
		agent := p.AgentID
		if agent == "" {
			agent = e.agentFor("", p.SessionKey)
		}
		ctx = WithToolSession(ctx, ToolSession{AgentID: agent, SessionID: p.SessionID, SessionKey: p.SessionKey})
		text, err := t.Handler(ctx, p.Arguments)
		if err != nil {
			return core.ToolCallResult{}, fmt.Errorf("lossless: %s: %w", p.Name, err)
		}
		return core.ToolCallResult{Text: text}, nil
	}
	return core.ToolCallResult{}, fmt.Errorf("lossless: unknown tool %q: %w", p.Name, ErrBadToolArgs)
}

// ToolDefinitions returns the tool definitions without an open engine (the
// plugin's tools.json is checked against it: lossless tools --json).
func ToolDefinitions() []core.ToolDef { return (*Engine)(nil).ToolDefs() }
