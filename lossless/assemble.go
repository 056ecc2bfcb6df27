package lossless

import (
	"context"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/internal/assemble"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/internal/subagent"
	"github.com/lossless-engine/contextengine/store"
)

// The engine's side of Assemble (package lossless/assemble): the door,
// which resolves the call (the engine's life, the session through the
// resolution cache, the budgets, the subagent records), takes the window
// lock around each window package assemble reads, composes the window
// with recall's block (recall.go) and a forked subagent's parent context,
// and the names the other files of the package use, kept as thin
// wrappers.

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
// The budget is the one the call really has (lossless/internal/assemble's budget.go): OpenClaw's
// per-model-call budgets, net only of the turn's pending messages, lose
// the host's system prompt and reserve, learned from the turn's first
// assemble. Under OpenClaw the result also fits the host's own chars/4
// count of it; a context cut to fit says so in AssembleResult.Cut.
func (e *Engine) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	call, res, err := e.assembleCall(ctx, p)
	if err != nil {
		return core.AssembleResult{}, err
	}
	// Fork prefix of a subagent, the host's count, contextProjection (it
	// enters on its own, after the sweep of expired subagent
	// preparations, which does too).
	if err := e.afterAssemble(ctx, call, &res); err != nil {
		return core.AssembleResult{}, err
	}
	return res, nil
}

// assembleCall is one Assemble call resolved at its door (assemble.Call).
type assembleCall = assemble.Call

// assembleCall resolves the call once (resolveAssemble: everything after
// takes it) and assembles its window, with recall when it applies.
func (e *Engine) assembleCall(ctx context.Context, p core.AssembleParams) (*assembleCall, core.AssembleResult, error) {
	done, err := e.enter()
	if err != nil {
		return nil, core.AssembleResult{}, err
	}
	defer done()
	call, err := e.resolveAssemble(ctx, p)
	if err != nil {
		return nil, core.AssembleResult{}, err
	}
	res, ok, err := e.assembleWithRecall(ctx, call)
	if !ok {
		res, err = e.assembleWindow(ctx, call, call.Params)
	}
	return call, res, err
}

// resolveAssemble resolves an Assemble call at its door: its agent, its
// budget (assemble.NewCall), its conversation through the resolution
// cache (once: everything after takes the call; a shared store's cached
// resolution is checked by the window's read). An unknown session gets
// the same budget rules without a conversation.
func (e *Engine) resolveAssemble(ctx context.Context, p core.AssembleParams) (*assembleCall, error) {
	agent := e.agentFor("", p.SessionKey)
	tb := e.budgetFor(p.TokenBudget, p.RuntimeContext)
	call := assemble.NewCall(p, agent, tb, e.budgets.t.Of(agent, p.SessionID, p.SessionKey), e.cfg.ContextProjection,
		subagent.Refs(agent, p.SessionID, p.SessionKey))
	c, err := e.lookupCached(ctx, agent, p.SessionID, p.SessionKey)
	switch {
	case err == nil:
		call.Conv, call.Known = c, true
	case !errors.Is(err, core.ErrUnknownSession):
		return nil, err
	}
	return call, nil
}

// assembleDeps are what package assemble reads of the engine.
func (e *Engine) assembleDeps() assemble.Deps {
	return assemble.Deps{Store: e.st, Counter: e.tc, Shared: e.locker != nil,
		DefaultTokenBudget: e.cfg.DefaultTokenBudget}
}

// assembleWindow assembles call's conversation within p.TokenBudget,
// without recall (assemble.Inner), under its window lock: the window
// cached by the last assemble goes in, the new one is kept (bounded by
// Config.AssembleCacheBytes: asmcache.go).
func (e *Engine) assembleWindow(ctx context.Context, call *assembleCall, p core.AssembleParams) (core.AssembleResult, error) {
	if !call.Known {
		out, err := assemble.Inner(ctx, e.assembleDeps(), call, p, assemble.Cached{})
		return out.Result, err
	}
	c := call.Conv
	s, unlock := e.lockWindow(c)
	out, err := assemble.Inner(ctx, e.assembleDeps(), call, p,
		assemble.Cached{Msgs: s.asmMsgs, Sums: s.asmSums, Created: s.asmCreated})
	if err == nil && out.Next != nil {
		s.asmMsgs, s.asmSums, s.asmCreated = out.Next.Msgs, out.Next.Sums, out.Next.Created
		e.lru.Touch(c, s, out.Size)
	}
	if out.Gone {
		// Deleted since it was resolved: resolved afresh next time.
		e.forgetResolved(c)
	}
	unlock()
	return out.Result, err
}

// afterAssemble post-processes a successful Assemble: it sweeps expired
// subagent preparations once per engine, prepends a forked subagent's
// parent context (forkPrefix), and fits the host's count and sets
// ContextProjection (assemble.Finish). It takes what the call's window
// read: the subagent records, the record the epoch is counted from.
func (e *Engine) afterAssemble(ctx context.Context, call *assembleCall, res *core.AssembleResult) error {
	e.sweepOnce(ctx)
	done, err := e.enter()
	if err != nil {
		return err
	}
	defer done()
	p := call.Params
	budget := e.budgetFor(p.TokenBudget, p.RuntimeContext)
	if err := e.forkPrefix(ctx, call, budget, res); err != nil {
		return err
	}
	epoch := ""
	if call.Mode == core.ProjectionThreadBootstrap && !call.HaveRec {
		epoch = e.epoch(ctx, call.Agent, p.SessionID, p.SessionKey)
	}
	assemble.Finish(e.tc, call, budget, epoch, res)
	return nil
}

// forkPrefix prepends a forked child's parent snapshot to res, newest
// first within what res leaves of budget, starting at a whole turn (never
// a tool result whose call is cut off). The child's record is the one
// call's window read, else read here; a prepared child is marked active
// (subagent.Started). The parsed parent messages are kept in the fork's
// cache (subagent.Forks) for its next assemble.
func (e *Engine) forkPrefix(ctx context.Context, call *assembleCall, budget int, res *core.AssembleResult) error {
	sp := e.subagentLifecycle()
	var l subagent.Lookup
	if call.SubRead {
		l = subagent.Found(call.Agent, call.Params.SessionKey, call.SubGot)
	}
	sub, rec, ok, err := sp.Started(ctx, l, call.Agent, call.Params.SessionID, call.Params.SessionKey)
	if err != nil || !ok || rec.Mode != core.ContextModeFork || rec.SnapshotItems == 0 {
		return err
	}
	parent, okp := records.ParseConvID(rec.ParentConv)
	if !okp {
		return nil
	}
	avail := budget - res.EstimatedTokens
	if avail <= 0 {
		return nil
	}
	// The messages of the last assembly of this fork, reused (the
	// snapshot never changes; only the budget's cut moves).
	cache := sp.Forks.Get(sub)
	cache.Mu.Lock()
	defer cache.Mu.Unlock()
	if cache.Token != rec.Token {
		// Another preparation of the child (by another process of a
		// shared store, or before a removal this one missed).
		cache.Msgs, cache.Sums, cache.Token = nil, nil, rec.Token
	}
	nextMsgs := make(map[uint64]core.Message, len(cache.Msgs))
	nextSums := make(map[string]core.Message, len(cache.Sums))
	var win assemble.Window
	err = e.st.View(ctx, func(r store.Reader) (err error) {
		// The store scans a snapshot forward only: its items (small
		// records, references) are read first, then walked newest first.
		var items []store.Item
		for it, err := range r.ForkItems(sub) {
			if err != nil {
				return records.FromStore(err)
			}
			items = append(items, it)
		}
		win, err = assemble.Walk(ctx, subagent.Reversed(items), avail, "assemble fork",
			func(_ int, item dag.Item, flags byte) (core.Message, error) {
				var m core.Message
				var err error
				if item.IsSummary() {
					m, err = assemble.SummaryMessage(r, parent, item.Ref.ID, cache.Sums)
					nextSums[item.Ref.ID] = m
				} else {
					m, err = assemble.ItemMessage(r, parent, item.Ref.Seq, flags, cache.Msgs)
					nextMsgs[item.Ref.Seq] = m
				}
				if err != nil {
					return m, fmt.Errorf("lossless: assemble fork of %s: %w", rec.ChildSessionKey, err)
				}
				return m, nil
			}, nil)
		return err
	})
	if err != nil || len(win.Rev) == 0 {
		return err
	}
	cache.Msgs, cache.Sums = nextMsgs, nextSums
	prefix, used := win.Chronological()
	res.Messages = append(prefix, res.Messages...)
	res.EstimatedTokens += used
	return nil
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
// An error only when the engine is closed or the look-up fails for another
// reason than an unknown session ("0").
func (e *Engine) Epoch(ctx context.Context, sessionID, sessionKey string) (string, error) {
	done, err := e.enter()
	if err != nil {
		return "", err
	}
	defer done()
	agent := e.agentFor("", sessionKey)
	if _, err := e.lookup(ctx, agent, sessionID, sessionKey); err != nil && !errors.Is(err, core.ErrUnknownSession) {
		return "", err
	}
	return e.epoch(ctx, agent, sessionID, sessionKey), nil
}

// epoch returns the conversation's epoch ("0" for a session the engine
// never stored): the number of summaries written plus the number of
// session ids mapped to it, both kept in the conversation record
// (assemble.EpochOf).
func (e *Engine) epoch(ctx context.Context, agent, sessionID, sessionKey string) string {
	c, err := e.lookup(ctx, agent, sessionID, sessionKey)
	if err != nil {
		return "0"
	}
	var rec store.Conversation
	err = e.st.View(ctx, func(r store.Reader) error {
		var err error
		rec, err = r.Conversation(c)
		return err
	})
	if err != nil {
		return "0"
	}
	return assemble.EpochOf(rec)
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
