package lossless

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/assemble"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/store"
)

// The engine's side of Assemble (package lossless/assemble): the door,
// assemblePort (the engine as assemble.Port), and the names the other
// files of the package use, kept as thin wrappers.

// Recall tools the system prompt addition may mention.
const (
	ToolGrep     = assemble.ToolGrep
	ToolDescribe = assemble.ToolDescribe
	ToolExpand   = assemble.ToolExpand
)

// Keys a host may set in runtimeContext to ask for a projection mode.
const (
	// RuntimeContextProjection: "thread_bootstrap" or "per_turn".
	RuntimeContextProjection = assemble.RuntimeContextProjection
	// RuntimeContextThreadBootstrap: true for a thread-bootstrap host.
	RuntimeContextThreadBootstrap = assemble.RuntimeContextThreadBootstrap
)

// Assemble returns the conversation's active context that fits the token
// budget (p.TokenBudget, else runtimeContext.tokenBudget, else
// Config.DefaultTokenBudget). It reads the context items backwards from the
// tail with a reverse iterator and stops at the budget, using the token
// counts stored at ingest: its cost is proportional to the budget, not to
// the history. The result is a contiguous suffix of the active context
// (fresh tail first, then older items newest-first, returned in order): no
// item is skipped to fit a smaller older one. A tool result whose call fell
// outside the budget is dropped at the cut (never a dangling call);
// thinking-only or empty assistant turns, messages excluded from context
// and heartbeat messages are left out. Summaries appear as user messages
// (RenderSummary). A session never ingested gets the host's messages,
// trimmed to the budget.
//
// Between compactions, while everything fits, the output of turn N+1 starts
// with exactly the messages of turn N (append-only, prompt-cache stable).
// When the history exceeds the budget and has not been compacted, the
// oldest items slide out of the window each turn; the engine's compaction
// (at contextThreshold) replaces them by summaries before that happens.
//
// The budget is the one the call really has (lossless/assemble's budget.go): OpenClaw's
// per-model-call budgets, net only of the turn's pending messages, lose
// the host's system prompt and reserve, learned from the turn's first
// assemble. Under OpenClaw the result also fits the host's own chars/4
// count of it; a context cut to fit says so in AssembleResult.Cut.
func (e *Engine) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	return assemble.Assemble(ctx, assemblePort{e}, p)
}

// assembleCall is one Assemble call resolved at its door (assemble.Call).
type assembleCall = assemble.Call

// assembleWindow assembles call's conversation within p.TokenBudget,
// without recall (assemble.Inner).
func (e *Engine) assembleWindow(ctx context.Context, call *assembleCall, p core.AssembleParams) (core.AssembleResult, error) {
	return assemble.Inner(ctx, assemblePort{e}, call, p)
}

// RenderSummary renders a summary as the user-role message the model sees:
// the summary wrapped with its id, kind, depth, time range and what can be
// expanded, marked as untrusted data. It is deterministic: the same summary
// always renders the same bytes (prompt-cache stability).
func RenderSummary(s dag.Summary) core.Message { return assemble.RenderSummary(s) }

// SystemPromptAddition returns the text telling the model how to recall
// history with the recall tools among available ("" when none is there;
// assemble.SystemPromptAddition).
func SystemPromptAddition(available []string) string {
	return assemble.SystemPromptAddition(available)
}

// ProjectionMode returns the projection mode of an Assemble call:
// core.ProjectionThreadBootstrap when the runtime context asks for it
// (contextProjection "thread_bootstrap" or threadBootstrap true), or the
// runtime settings name a Codex app-server host (runtime.host, harnessId
// or executionHost.id containing "codex" or "app-server"), or def (the
// engine's Config.ContextProjection) is "thread_bootstrap"; else
// core.ProjectionPerTurn. A runtime context saying "per_turn" wins.
func ProjectionMode(rs *core.RuntimeSettings, rc *core.RuntimeContext, def string) string {
	return assemble.ProjectionMode(rs, rc, def)
}

// Fingerprint returns the hash of an assembled payload: every message's
// bytes (length-prefixed) and the system prompt addition; 32 hex digits.
func Fingerprint(msgs []core.Message, addition string) string {
	return assemble.Fingerprint(msgs, addition)
}

// Epoch returns the context projection epoch of a session (see
// ProjectionMode): it changes exactly when a compaction or a rotation
// changed the assembled prefix.
func (e *Engine) Epoch(ctx context.Context, sessionID, sessionKey string) (string, error) {
	return assemble.SessionEpoch(ctx, assemblePort{e}, sessionID, sessionKey)
}

// budgetTable is each session's host budgets (assemble.BudgetTable), with
// the names compaction and commit use.
type budgetTable struct{ t *assemble.BudgetTable }

// newBudgetTable returns an empty table whose requests are as hr says.
func newBudgetTable(hr config.HostRequestConfig) *budgetTable {
	return &budgetTable{assemble.NewBudgetTable(assemble.Request{OutputTokens: hr.OutputTokens, ToolTokens: hr.ToolTokens})}
}

// of returns the budgets of (agent, sessionID, sessionKey), made if new.
func (t *budgetTable) of(agent, sessionID, sessionKey string) hostBudgets {
	return hostBudgets{t.t.Of(agent, sessionID, sessionKey)}
}

// hostBudgets is a session's assemble.HostBudgets.
type hostBudgets struct{ *assemble.HostBudgets }

func (b hostBudgets) noteWindow(w int)                 { b.NoteWindow(w) }
func (b hostBudgets) turnBudget() int                  { return b.TurnBudget() }
func (b hostBudgets) compactBudget(tb int) (int, bool) { return b.CompactBudget(tb) }

// lookupCached is lookup from the resolution cache when it holds the
// session (assemble.Cache.Lookup: bounded, dropped with the conversation's
// state and when the conversation is deleted).
func (e *Engine) lookupCached(ctx context.Context, agent, sessionID, sessionKey string) (convID, error) {
	return e.lru.Lookup(ctx, agent, sessionID, sessionKey, e.lookup)
}

// assemblePort is the engine as lossless/assemble's Port.
type assemblePort struct{ e *Engine }

var _ assemble.Port = assemblePort{}

// Enter is the engine's enter.
func (p assemblePort) Enter() (func(), error) { return p.e.enter() }

// Store is the engine's store.
func (p assemblePort) Store() store.Store { return p.e.st }

// Counter is the engine's token counter.
func (p assemblePort) Counter() core.TokenCounter { return p.e.tc }

// Shared reports whether the store is shared by several processes.
func (p assemblePort) Shared() bool { return p.e.locker != nil }

// DefaultTokenBudget is Config.DefaultTokenBudget.
func (p assemblePort) DefaultTokenBudget() int { return p.e.cfg.DefaultTokenBudget }

// DefaultProjection is Config.ContextProjection.
func (p assemblePort) DefaultProjection() string { return p.e.cfg.ContextProjection }

// Budget is budgetFor.
func (p assemblePort) Budget(explicit int, rc *core.RuntimeContext) int {
	return p.e.budgetFor(explicit, rc)
}

// Agent is agentFor with no explicit agent.
func (p assemblePort) Agent(sessionKey string) string { return p.e.agentFor("", sessionKey) }

// Budgets is the engine's budget table.
func (p assemblePort) Budgets() *assemble.BudgetTable { return p.e.budgets.t }

// LookupCached is lookupCached.
func (p assemblePort) LookupCached(ctx context.Context, agent, sessionID, sessionKey string) (convID, error) {
	return p.e.lookupCached(ctx, agent, sessionID, sessionKey)
}

// Lookup is lookup.
func (p assemblePort) Lookup(ctx context.Context, agent, sessionID, sessionKey string) (convID, error) {
	return p.e.lookup(ctx, agent, sessionID, sessionKey)
}

// ForgetResolved is forgetResolved.
func (p assemblePort) ForgetResolved(c convID) { p.e.forgetResolved(c) }

// LockWindow locks c's state's window (lockWindow); put stores the next
// one with its size (bounded by Config.AssembleCacheBytes: asmcache.go) and
// unlocks.
func (p assemblePort) LockWindow(c convID) (assemble.Cached, func(*assemble.Cached, int64)) {
	s, unlock := p.e.lockWindow(c)
	prev := assemble.Cached{Msgs: s.asmMsgs, Sums: s.asmSums, Created: s.asmCreated}
	return prev, func(next *assemble.Cached, size int64) {
		defer unlock()
		if next != nil {
			s.asmMsgs, s.asmSums, s.asmCreated = next.Msgs, next.Sums, next.Created
			p.e.lru.Touch(c, s, size)
		}
	}
}

// LargeReference is largeReference.
func (p assemblePort) LargeReference(m core.Message, tokens int) []byte {
	return largeReference(m, tokens)
}

// Recall is assembleWithRecall (recall.go).
func (p assemblePort) Recall(ctx context.Context, call *assembleCall) (core.AssembleResult, bool, error) {
	return p.e.assembleWithRecall(ctx, call)
}

// SweepOnce is sweepOnce (subagent.go).
func (p assemblePort) SweepOnce(ctx context.Context) { p.e.sweepOnce(ctx) }
