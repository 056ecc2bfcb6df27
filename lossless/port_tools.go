package lossless

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/tools"
	"github.com/lossless-engine/contextengine/store"
)

// The agent tools: Grep, DescribeSummary and ExpandSummary as Engine
// methods, and the same as model tools (Tools: lcm_grep, lcm_describe,
// lcm_expand), are lossless/tools', reached through toolsPort below; the
// types are re-exported.

// Grep scopes and sorts.
const (
	ScopeConversation = tools.ScopeConversation
	ScopeAgent        = tools.ScopeAgent
	SortRelevance     = tools.SortRelevance
	SortRecency       = tools.SortRecency
)

// GrepParams are the arguments of Grep (tools.GrepParams).
type GrepParams = tools.GrepParams

// GrepHit is one match (tools.GrepHit).
type GrepHit = tools.GrepHit

// ExpandParams are the arguments of ExpandSummary (tools.ExpandParams).
type ExpandParams = tools.ExpandParams

// ExpandedMessage is one raw message of an expansion, bytes exactly as
// stored (tools.ExpandedMessage).
type ExpandedMessage = tools.ExpandedMessage

// ExpandPage is one page of ExpandSummary (tools.ExpandPage).
type ExpandPage = tools.ExpandPage

// DefaultExpandTokens is ExpandParams.MaxTokens's default.
const DefaultExpandTokens = tools.DefaultExpandTokens

// Tool is a recall tool as offered to the model (tools.Tool).
type Tool = tools.Tool

// ToolSession is the session a tool call runs in, when its arguments do
// not name one (tools.ToolSession).
type ToolSession = tools.ToolSession

// WithToolSession returns ctx carrying the session tool handlers use when
// their arguments do not name one.
func WithToolSession(ctx context.Context, s ToolSession) context.Context {
	return tools.WithToolSession(ctx, s)
}

// DecodeGrepArgs decodes lcm_grep's arguments.
func DecodeGrepArgs(raw json.RawMessage) (GrepParams, error) { return tools.DecodeGrepArgs(raw) }

// DecodeExpandArgs decodes lcm_expand's arguments.
func DecodeExpandArgs(raw json.RawMessage) (ExpandParams, error) { return tools.DecodeExpandArgs(raw) }

// Grep searches stored messages and summaries (full text or regex) of the
// session's conversation, or of every conversation of its agent, with time
// filters, sorted by relevance or recency. It scans the store; messages are
// matched on their plain text (MessagePlainText), summaries on their text.
func (e *Engine) Grep(ctx context.Context, p GrepParams) ([]GrepHit, error) {
	return tools.Grep(ctx, toolsPort{e}, p)
}

// DescribeSummary returns summary id of the session's conversation (or of
// the agent's conversation holding it): its content, sources and lineage
// (dag.Describe). A message id is refused: DescribeMessage describes it.
func (e *Engine) DescribeSummary(ctx context.Context, agentID, sessionID, sessionKey, id string) (dag.Description, error) {
	return tools.Describe(ctx, toolsPort{e}, agentID, sessionID, sessionKey, id)
}

// MessageDescription is a stored message and where it sits in its
// conversation's history (tools.MessageDescription).
type MessageDescription = tools.MessageDescription

// MessageID returns the id the tools give message seq of conversation c
// ("<conv>:<seq>", tools.MessageID): DescribeMessage and ExpandSummary take
// it, Grep's message hits carry it.
func MessageID(c store.ConvID, seq uint64) string { return tools.MessageID(c, seq) }

// ParseMessageID returns the conversation and sequence number a message id
// names; ok is false when id is not one (tools.ParseMessageID).
func ParseMessageID(id string) (c store.ConvID, seq uint64, ok bool) {
	return tools.ParseMessageID(id)
}

// DescribeMessage returns message id ("<conv>:<seq>", as Grep's message
// hits carry it) of a conversation the session's agent may read: its text
// (cut at tools.DescribeTextBytes), and whether it is in the active context
// or which leaf summary covers it, with that summary's ancestors.
func (e *Engine) DescribeMessage(ctx context.Context, agentID, sessionID, sessionKey, id string) (MessageDescription, error) {
	return tools.DescribeMessage(ctx, toolsPort{e}, agentID, sessionID, sessionKey, id)
}

// DefaultMessageExpandTokens is ExpandParams.MaxTokens's default around a
// message id.
const DefaultMessageExpandTokens = tools.DefaultMessageExpandTokens

// ExpandSummary returns the raw messages summary p.ID covers, in order,
// byte for byte as ingested, one page of at most p.MaxTokens tokens at a
// time. A large-content reference returns its one message; a message id
// ("<conv>:<seq>") the message with its neighbours, then, from the page's
// NextCursor, the messages after them.
func (e *Engine) ExpandSummary(ctx context.Context, p ExpandParams) (ExpandPage, error) {
	return tools.Expand(ctx, toolsPort{e}, p)
}

// Tools returns the recall tools lcm_grep, lcm_describe and lcm_expand.
func (e *Engine) Tools() []Tool { return tools.Tools(toolsPort{e}) }

var _ core.ToolCaller = (*Engine)(nil)

// ToolDefs returns the definitions of Tools (name, description, JSON
// Schema), for a host to offer them to its model (core.ToolCaller).
func (e *Engine) ToolDefs() []core.ToolDef { return tools.Defs(e.Tools()) }

// CallTool runs tool p.Name with p.Arguments in the session p names (the
// session the model runs in: arguments naming another session win), and
// returns its output (core.ToolCaller). An unknown tool or bad arguments
// give an error wrapping ErrBadToolArgs.
func (e *Engine) CallTool(ctx context.Context, p core.ToolCallParams) (core.ToolCallResult, error) {
	return tools.Call(ctx, toolsPort{e}, p)
}

// ToolDefinitions returns the tool definitions without an open engine (the
// plugin's tools.json is checked against it: lossless tools --json).
func ToolDefinitions() []core.ToolDef { return (*Engine)(nil).ToolDefs() }

// toolsPort is the engine as lossless/tools' Port (e is nil for
// ToolDefinitions: only the handlers call it).
type toolsPort struct{ e *Engine }

var _ tools.Port[*Conversation] = toolsPort{}

func (p toolsPort) Conversation(ctx context.Context, agentID, sessionID, sessionKey string) (*Conversation, error) {
	return p.e.ConversationFor(ctx, agentID, sessionID, sessionKey)
}

func (p toolsPort) ConversationByID(ctx context.Context, c store.ConvID) (*Conversation, string, error) {
	agent, err := records.Agent(ctx, p.e.st, c)
	if err != nil {
		return nil, "", err
	}
	return &Conversation{e: p.e, id: c, Agent: agent}, agent, nil
}

func (p toolsPort) Holding(ctx context.Context, c *Conversation, id string) (*Conversation, error) {
	return p.e.convHolding(ctx, c, id) // subagent.go
}

func (p toolsPort) LinkedChildren(ctx context.Context, c store.ConvID) ([]store.ConvID, error) {
	return p.e.linkedChildren(ctx, c) // subagent.go
}

func (p toolsPort) AgentConversations(ctx context.Context, agent string) ([]string, error) {
	infos, err := p.e.Sessions(ctx, agent)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(infos))
	for i, in := range infos {
		ids[i] = in.ID
	}
	return ids, nil
}

func (p toolsPort) AgentFor(explicit, sessionKey string) string {
	return p.e.agentFor(explicit, sessionKey)
}

func (toolsPort) AgentOfKey(sessionKey string) string { return AgentFromSessionKey(sessionKey) }

func (p toolsPort) Enter() (func(), error) { return p.e.enter() }

func (p toolsPort) View(ctx context.Context, fn func(store.Reader) error) error {
	return p.e.st.View(ctx, fn)
}

func (toolsPort) ReadMessage(r store.Reader, c store.ConvID, seq uint64) (store.Message, error) {
	return getMsg(r, c, seq)
}

func (toolsPort) Missing(c store.ConvID, from, to uint64) error { return missingErr(c, "", from, to) }

func (toolsPort) PlainText(m core.Message) string { return MessagePlainText(m) }

func (toolsPort) IsLargeRef(id string) bool { return strings.HasPrefix(id, LargeRefPrefix) }

// The tools' wrappers for the other files of lossless (read.go's
// GrepMatcher, lossless/explain's snippets).

const (
	defaultGrepLimit = tools.DefaultGrepLimit
	maxGrepLimit     = tools.MaxGrepLimit
)

// matcher is tools.Matcher, matching messages on MessagePlainText.
type matcher struct{ m *tools.Matcher }

func newMatcher(p GrepParams) (*matcher, error) {
	m, err := tools.NewMatcher(p, MessagePlainText)
	if err != nil {
		return nil, err
	}
	return &matcher{m: m}, nil
}

func (m *matcher) messageHit(c convID, rec msgRecord) (GrepHit, bool) { return m.m.MessageHit(c, rec) }

func (m *matcher) summaryHit(c convID, s dag.Summary) (GrepHit, bool) { return m.m.SummaryHit(c, s) }

// snippet is tools.Snippet.
func snippet(text string, at int) string { return tools.Snippet(text, at) }
