package lossless

// The engine's read API for read-only tools outside the package (package
// lossless/explore, the explorer's queries): a snapshot of the store, the
// engine's error mapping, and the descriptions the engine itself gives.
// Nothing here writes.

import (
	"context"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/inspect"
	"github.com/lossless-engine/contextengine/lossless/tools"
	"github.com/lossless-engine/contextengine/store"
)

// View runs fn on a consistent read-only snapshot of the engine's store,
// as one store.Store.View: every record fn reads is of the same moment.
// It returns an error wrapping core.ErrClosed after Close, else fn's error
// (or the store's) as it is; StoreError maps the store's sentinels to the
// engine's. fn must not keep r past its return.
func (e *Engine) View(ctx context.Context, fn func(r store.Reader) error) error {
	done, err := e.enter()
	if err != nil {
		return err
	}
	defer done()
	return e.st.View(ctx, fn)
}

// StoreError maps an error of a store.Reader to the engine's sentinels, as
// the engine's own reads do: a missing record wraps core.ErrNotFound, a
// corrupt one ErrCorrupt, a full disk ErrDiskFull; the store's error stays
// in the chain. nil stays nil.
func StoreError(err error) error { return fromStore(err) }

// StoreID returns the conversation's id in the store (the id ID prints).
func (c *Conversation) StoreID() store.ConvID { return c.id }

// DescribeConversation returns the SessionInfo of the conversation of
// record cr (as Sessions gives it), reading the times of its first and
// last messages from r.
func DescribeConversation(r store.Reader, cr store.ConvRecord) (inspect.SessionInfo, error) {
	return inspect.Describe(r, cr.ID, cr.Conversation)
}

// ReadMessageText returns the header of stored message seq of conversation
// c and the bytes that stand for it in text: its large-content reference
// (a short message describing the content stored aside; the body is then
// not read) when it has one, else its raw bytes. A missing message is an
// error wrapping core.ErrNotFound.
func ReadMessageText(r store.Reader, c store.ConvID, seq uint64) (store.Message, []byte, error) {
	return getMsgText(r, c, seq)
}

// The lcm_grep tool's bounds on GrepParams.Limit: the default and the most.
const (
	DefaultGrepLimit = defaultGrepLimit
	MaxGrepLimit     = maxGrepLimit
)

// GrepMatcher is the lcm_grep tool's matcher (Grep's): the words of a
// query, all of which must occur, or a regular expression, matched against
// a message's text or a summary's.
type GrepMatcher struct{ m *matcher }

// NewGrepMatcher returns the matcher of p.Query (p.Regex: a regular
// expression); a bad query is an error wrapping ErrBadToolArgs.
func NewGrepMatcher(p tools.GrepParams) (*GrepMatcher, error) {
	m, err := newMatcher(p)
	if err != nil {
		return nil, err
	}
	return &GrepMatcher{m: m}, nil
}

// MessageHit returns the hit of stored message rec (read with its body)
// of conversation c, as Grep gives it, when it matches.
func (g *GrepMatcher) MessageHit(c store.ConvID, rec store.Message) (tools.GrepHit, bool) {
	return g.m.messageHit(c, rec)
}

// SummaryHit returns the hit of summary s of conversation c, as Grep gives
// it, when it matches.
func (g *GrepMatcher) SummaryHit(c store.ConvID, s dag.Summary) (tools.GrepHit, bool) {
	return g.m.summaryHit(c, s)
}

// AgentFor returns the agent a call's session belongs to: the agent of a
// sessionKey "agent:<id>:...", else explicit, else Config.AgentID, else
// DefaultAgentID (as every call of the engine resolves it).
func (e *Engine) AgentFor(explicit, sessionKey string) string {
	return e.agentFor(explicit, sessionKey)
}

// LinkedChildren returns the conversations of the ended subagents linked
// to c, whose histories join c's for grep, expand and recall.
func (c *Conversation) LinkedChildren(ctx context.Context) ([]store.ConvID, error) {
	done, err := c.e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	return c.e.linkedChildren(ctx, c.id)
}
