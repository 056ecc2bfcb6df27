package lossless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/tools"
	"github.com/lossless-engine/contextengine/store"
)

// The agent tools: Grep, DescribeSummary and ExpandSummary as Engine
// methods, and the same as model tools (Tools: lcm_grep, lcm_describe,
// lcm_expand). What they compute over the store is lossless/tools'; the
// doors below resolve the call's conversations (the session's, its
// agent's, the one holding an id: locate), enter the engine and hand
// lossless/tools the store and those conversations. The types are
// re-exported.

// WithToolSession returns ctx carrying the session tool handlers use when
// their arguments do not name one.
func WithToolSession(ctx context.Context, s tools.ToolSession) context.Context {
	return tools.WithToolSession(ctx, s)
}

// DecodeGrepArgs decodes lcm_grep's arguments.
func DecodeGrepArgs(raw json.RawMessage) (tools.GrepParams, error) { return tools.DecodeGrepArgs(raw) }

// DecodeExpandArgs decodes lcm_expand's arguments.
func DecodeExpandArgs(raw json.RawMessage) (tools.ExpandParams, error) {
	return tools.DecodeExpandArgs(raw)
}

// Grep searches stored messages and summaries (full text or regex) of the
// session's conversation, or of every conversation of its agent, with time
// filters, sorted by relevance or recency. It scans the store; messages are
// matched on their plain text (MessagePlainText), summaries on their text.
func (e *Engine) Grep(ctx context.Context, p tools.GrepParams) ([]tools.GrepHit, error) {
	m, err := tools.NewMatcher(p)
	if err != nil {
		return nil, err
	}
	agentScope, err := tools.AgentScope(p.Scope)
	if err != nil {
		return nil, err
	}
	var convs []convID
	if agentScope {
		infos, err := e.Sessions(ctx, e.agentFor(p.AgentID, p.SessionKey))
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(infos))
		for i, in := range infos {
			ids[i] = in.ID
		}
		convs = tools.ParseConvIDs(ids)
	} else {
		conv, err := e.ConversationFor(ctx, p.AgentID, p.SessionID, p.SessionKey)
		if err != nil {
			return nil, err
		}
		kids, err := e.linkedChildren(ctx, conv.id) // ended subagents
		if err != nil {
			return nil, err
		}
		convs = append([]convID{conv.id}, kids...)
	}
	if err := tools.CheckSort(p.Sort); err != nil {
		return nil, err
	}
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	return tools.Grep(ctx, e.st, m, p, convs)
}

// DescribeSummary returns summary id of the session's conversation (or of
// the agent's conversation holding it): its content, sources and lineage
// (dag.Describe). A message id is refused: DescribeMessage describes it.
func (e *Engine) DescribeSummary(ctx context.Context, agentID, sessionID, sessionKey, id string) (dag.Description, error) {
	if err := tools.CheckSummaryID(id); err != nil {
		return dag.Description{}, err
	}
	c, err := e.locate(ctx, agentID, sessionID, sessionKey, id)
	if err != nil {
		return dag.Description{}, err
	}
	done, err := e.enter()
	if err != nil {
		return dag.Description{}, err
	}
	defer done()
	return tools.Describe(ctx, tools.NewConv(e.st, c), id)
}

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
func (e *Engine) DescribeMessage(ctx context.Context, agentID, sessionID, sessionKey, id string) (tools.MessageDescription, error) {
	_, seq, err := tools.CheckMessageID(id)
	if err != nil {
		return tools.MessageDescription{}, err
	}
	c, err := e.locate(ctx, agentID, sessionID, sessionKey, id)
	if err != nil {
		return tools.MessageDescription{}, err
	}
	done, err := e.enter()
	if err != nil {
		return tools.MessageDescription{}, err
	}
	defer done()
	return tools.DescribeMessage(ctx, tools.NewConv(e.st, c), id, seq)
}

// ExpandSummary returns the raw messages summary p.ID covers, in order,
// byte for byte as ingested, one page of at most p.MaxTokens tokens at a
// time. A large-content reference returns its one message; a message id
// ("<conv>:<seq>") the message with its neighbours, then, from the page's
// NextCursor, the messages after them.
func (e *Engine) ExpandSummary(ctx context.Context, p tools.ExpandParams) (tools.ExpandPage, error) {
	c, err := e.locate(ctx, p.AgentID, p.SessionID, p.SessionKey, p.ID)
	if err != nil {
		return tools.ExpandPage{}, err
	}
	done, err := e.enter()
	if err != nil {
		return tools.ExpandPage{}, err
	}
	defer done()
	return tools.Expand(ctx, tools.NewConv(e.st, c), p)
}

// Tools returns the recall tools lcm_grep, lcm_describe and lcm_expand
// (their handlers: grepTool, describeTool, expandTool).
func (e *Engine) Tools() []tools.Tool {
	ts := tools.Tools()
	for i := range ts {
		switch ts[i].Name {
		case tools.NameGrep:
			ts[i].Handler = e.grepTool
		case tools.NameDescribe:
			ts[i].Handler = e.describeTool
		case tools.NameExpand:
			ts[i].Handler = e.expandTool
		}
	}
	return ts
}

// grepTool is lcm_grep's handler.
func (e *Engine) grepTool(ctx context.Context, args json.RawMessage) (string, error) {
	p, err := tools.GrepArgs(ctx, args)
	if err != nil {
		return "", err
	}
	hits, err := e.Grep(ctx, p)
	if err != nil {
		return "", err
	}
	return tools.GrepOutput(hits)
}

// describeTool is lcm_describe's handler: DescribeMessage for a message
// id, else DescribeSummary.
func (e *Engine) describeTool(ctx context.Context, args json.RawMessage) (string, error) {
	a, err := tools.DescribeToolArgs(ctx, args)
	if err != nil {
		return "", err
	}
	if _, _, ok := tools.ParseMessageID(a.ID); ok {
		d, err := e.DescribeMessage(ctx, a.AgentID, a.SessionID, a.SessionKey, a.ID)
		if err != nil {
			return "", err
		}
		return tools.Output(d)
	}
	d, err := e.DescribeSummary(ctx, a.AgentID, a.SessionID, a.SessionKey, a.ID)
	if err != nil {
		return "", err
	}
	return tools.Output(d)
}

// expandTool is lcm_expand's handler.
func (e *Engine) expandTool(ctx context.Context, args json.RawMessage) (string, error) {
	p, err := tools.ExpandArgs(ctx, args)
	if err != nil {
		return "", err
	}
	page, err := e.ExpandSummary(ctx, p)
	if err != nil {
		return "", err
	}
	return page.JSON(), nil
}

var _ core.ToolCaller = (*Engine)(nil)

// ToolDefs returns the definitions of Tools (name, description, JSON
// Schema), for a host to offer them to its model (core.ToolCaller).
func (e *Engine) ToolDefs() []core.ToolDef { return tools.Defs(e.Tools()) }

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
		ctx = tools.WithToolSession(ctx, tools.ToolSession{AgentID: agent, SessionID: p.SessionID, SessionKey: p.SessionKey})
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

// locate returns the conversation that holds id for a call made in the
// session (agentID, sessionID, sessionKey):
//   - a message id ("<conv>:<seq>", MessageID): the conversation it names,
//     when the call may read it (named);
//   - a summary id or a large-content reference: the session's
//     conversation or the one convHolding finds (a forked child's parent,
//     an ended subagent's); a summary id none of those holds is looked for
//     in the agent's other conversations (tools.AgentHolding: where grep's
//     scope "agent" finds it).
//
// When no conversation holds a summary id, the session's is returned: the
// caller's read of it fails naming the id.
func (e *Engine) locate(ctx context.Context, agentID, sessionID, sessionKey, id string) (convID, error) {
	agent := e.agentFor(agentID, sessionKey)
	if c, _, ok := tools.ParseMessageID(id); ok {
		return e.named(ctx, agentID, sessionID, sessionKey, agent, c, id)
	}
	conv, convErr := e.ConversationFor(ctx, agentID, sessionID, sessionKey)
	switch {
	case convErr != nil && !errors.Is(convErr, core.ErrUnknownSession):
		return convID{}, convErr
	case convErr == nil:
		if conv, convErr = e.convHolding(ctx, conv, id); convErr != nil { // fork parent, ended subagents
			return convID{}, convErr
		}
		if tools.IsLargeRef(id) {
			return conv.id, nil
		}
		held, err := tools.Holds(ctx, e.st, conv.id, id)
		if err != nil || held {
			return conv.id, err
		}
	case tools.IsLargeRef(id):
		return convID{}, convErr
	}
	other, found, err := tools.AgentHolding(ctx, e.st, agent, id)
	if err != nil {
		return convID{}, err
	}
	if found {
		return other, nil
	}
	if convErr != nil {
		return convID{}, convErr
	}
	return conv.id, nil
}

// named returns conversation c, named by message id id, when a call of
// agent in the session may read it: the session's own, one of agent's, or
// an ended subagent's linked to the session's. Any other is reported as
// not found (dag.ErrNotFound), as a conversation that is not stored.
func (e *Engine) named(ctx context.Context, agentID, sessionID, sessionKey, agent string, c convID, id string) (convID, error) {
	own, ownErr := e.ConversationFor(ctx, agentID, sessionID, sessionKey)
	switch {
	case ownErr == nil && own.id == c:
		return c, nil
	case ownErr != nil && !errors.Is(ownErr, core.ErrUnknownSession):
		return convID{}, ownErr
	}
	notFound := fmt.Errorf("lossless: message %s: no conversation %s in this agent's history: %w", id, c, dag.ErrNotFound)
	owner, err := records.Agent(ctx, e.st, c)
	if errors.Is(err, core.ErrNotFound) {
		return convID{}, notFound
	}
	if err != nil {
		return convID{}, err
	}
	if owner == agent {
		return c, nil
	}
	if ownErr == nil {
		kids, err := e.linkedChildren(ctx, own.id)
		if err != nil {
			return convID{}, err
		}
		if slices.Contains(kids, c) {
			return c, nil
		}
	}
	return convID{}, notFound
}

// The tools' wrappers for the other files of lossless (read.go's
// GrepMatcher, lossless/explain's snippets).

const (
	defaultGrepLimit = tools.DefaultGrepLimit
	maxGrepLimit     = tools.MaxGrepLimit
)

// matcher is tools.Matcher, matching messages on MessagePlainText
// (records.PlainText).
type matcher struct{ m *tools.Matcher }

func newMatcher(p tools.GrepParams) (*matcher, error) {
	m, err := tools.NewMatcher(p)
	if err != nil {
		return nil, err
	}
	return &matcher{m: m}, nil
}

func (m *matcher) messageHit(c convID, rec msgRecord) (tools.GrepHit, bool) {
	return m.m.MessageHit(c, rec)
}

func (m *matcher) summaryHit(c convID, s dag.Summary) (tools.GrepHit, bool) {
	return m.m.SummaryHit(c, s)
}

// snippet is tools.Snippet.
func snippet(text string, at int) string { return tools.Snippet(text, at) }
