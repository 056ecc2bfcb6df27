package lossless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
)

// Compaction's doors: Engine.Compact, proactive compaction after a turn (in
// the background, one run at a time per conversation) and the summarizer;
// Maintain's is maintain.go, Rotate's rotate.go. The engine resolves the
// conversation, takes the locks and enters itself here; the decisions and
// the runs over concrete values are lossless/orchestrate's (its package
// doc describes them). The engine's own files need only the hooks: Compact
// calls compact, AfterTurn calls afterTurnCompact, CommitTurn
// startCompaction, Close compaction.stop.

var _ core.Maintainer = (*Engine)(nil)

// compactionState is the compaction state of one Engine: the runs'
// (orchestrate.State) and the engine's compaction locks by conversation.
type compactionState struct {
	runs *orchestrate.State
	// convMus serialise compactions of one conversation (waiting honours
	// the context; only conversations compacting are held).
	convMus keyLocks[convID]
	// last is runs' cache of the last background results (tests and
	// diagnostics read it).
	last *lru.Cache[convID, orchestrate.BackgroundResult]
}

// newCompactionState returns the compaction state of an engine opened with
// cfg (Open calls it).
func newCompactionState(cfg config.Config) *compactionState {
	n := cfg.CompactionConcurrency
	if n <= 0 {
		n = config.DefaultCompactionConcurrency
	}
	runs := orchestrate.NewState(n)
	return &compactionState{runs: runs, last: runs.Results()}
}

// stop cancels background compactions and waits for them; no run starts
// after it (a turn that ends after Close starts none). Close calls it
// first. It is idempotent.
func (x *compactionState) stop() { x.runs.Stop() }

// orchestrateConfig is the engine's configuration of the runs.
func (e *Engine) orchestrateConfig() orchestrate.Config {
	c := &e.cfg
	return orchestrate.Config{Engine: EngineID, ContextThreshold: c.ContextThreshold, FreshTailMessages: c.FreshTailMessages,
		MaintainMinTokens: c.MaintainMinTokens, RotateBytes: c.RotateBytes}
}

// SetSummarizer makes the engine summarize with s instead of the one
// Config.Summarizer describes (for embedding applications and tests). Call
// it before the first compaction.
func (e *Engine) SetSummarizer(s core.Summarizer) { e.compaction.runs.SetSummarizer(s) }

// Summarizer returns the summarizer compactions use: the one set with
// SetSummarizer, else summarize.FromConfig(Config.Summarizer): by default
// the extractive summarizer, or under OpenClaw (Config.Host) the host's
// model in a Guard that falls back to it.
func (e *Engine) Summarizer() (core.Summarizer, error) {
	runs := e.compaction.runs
	if o := runs.Override(); o != nil {
		return o, nil
	}
	sc, err := e.cfg.summarizerConfig()
	if err != nil {
		return nil, err
	}
	return runs.Summarizer(sc, e.tc)
}

// hostSummarizer reports whether compactions summarize with the host's
// model (orchestrate.State.HostSummarizer of the configured summarizer).
func (e *Engine) hostSummarizer() bool {
	sc, err := e.cfg.summarizerConfig()
	return err == nil && e.compaction.runs.HostSummarizer(sc)
}

// summaryText is what a summary's Tokens are counted on: the text of the
// user message RenderSummary makes (the model sees exactly that).
func summaryText(s dag.Summary) string { return RenderSummary(s).Text() }

// Compactor returns a dag.Compactor configured from the engine's Config,
// counting rendered summaries as Assemble shows them.
func (e *Engine) Compactor() (*dag.Compactor, error) {
	sum, err := e.Summarizer()
	if err != nil {
		return nil, err
	}
	c := e.cfg
	return dag.NewCompactor(dag.Config{
		ContextThreshold:      c.ContextThreshold,
		FreshTailMessages:     c.FreshTailMessages,
		FreshTailMaxTokens:    c.FreshTailMaxTokens,
		LeafChunkTokens:       c.LeafChunkTokens,
		LeafTargetTokens:      c.LeafTargetTokens,
		CondensedTargetTokens: c.CondensedTargetTokens,
		MinFanIn:              c.MinFanIn,
		Concurrency:           c.SummarizerConcurrency, // 0: dag's default (4)
		Render:                summaryText,
		NewID:                 c.NewSummaryID, // nil: dag's default
	}, sum, e.tc)
}

// budgetFor returns the token budget of a call: explicit, else the runtime
// context's tokenBudget, else Config.DefaultTokenBudget.
func (e *Engine) budgetFor(explicit int, rc *core.RuntimeContext) int {
	if explicit > 0 {
		return explicit
	}
	if b, ok := rc.Int("tokenBudget"); ok && b > 0 {
		return b
	}
	return e.cfg.DefaultTokenBudget
}

// turnBudget is the budget a committed turn's compaction decision measures
// against: the turn's first assemble budget (OpenClaw's, net of its system
// prompt and reserve: the most context the next turn's requests can hold
// besides their pending messages), else the smallest budget of the turn's
// assembles, else the runtime context's tokenBudget, else
// Config.DefaultTokenBudget. It closes the turn: the next assemble opens
// the next one. rc's tokenBudget, OpenClaw's window figure, is noted.
func (e *Engine) turnBudget(agent, sessionID, sessionKey string, rc *core.RuntimeContext) int {
	b := e.budgets.of(agent, sessionID, sessionKey)
	if w, ok := rc.Int("tokenBudget"); ok {
		b.noteWindow(w)
	}
	if t := b.turnBudget(); t > 0 {
		return t
	}
	return e.budgetFor(0, rc)
}

// compact implements Engine.Compact: it resolves the session (importing
// the transcript first, or bootstrapping a host-kept one), decides the
// budget and the rotation, runs the compaction under the conversation's
// locks (runCompaction) and rotates the transcript (rotate.go).
func (e *Engine) compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	done, err := e.enter()
	if err != nil {
		return core.CompactResult{}, err
	}
	done() // the store calls below enter on their own
	// The "host" summarizer's model.
	ctx = orchestrate.WithHostLLM(ctx, p.RuntimeContext)
	agent, sessionID, sessionKey := e.sessionIdentity(p.AgentID, p.SessionID, p.SessionKey, p.SessionTarget)
	p.SessionID, p.SessionKey, p.AgentID = sessionID, sessionKey, agent
	if p.SessionID == "" && p.SessionKey == "" {
		return core.CompactResult{}, fmt.Errorf("lossless: compact: %w", core.ErrEmptySessionID)
	}
	// A host that keeps the transcript (OpenClaw's SQLite store) gets no
	// rotation: it cannot make a successor transcript, so the engine
	// compacts in its own store and returns the session unchanged.
	host := core.HostKeepsTranscript(p.SessionFile, p.RuntimeContext)
	conv, err := e.ConversationFor(ctx, p.AgentID, p.SessionID, p.SessionKey)
	if errors.Is(err, core.ErrUnknownSession) && host && p.SessionID != "" && p.RuntimeContext != nil && p.RuntimeContext.ReadTranscript != nil {
		if _, berr := e.bootstrapHost(ctx, core.BootstrapParams{SessionID: p.SessionID, SessionKey: p.SessionKey,
			RuntimeContext: p.RuntimeContext}, agent, p.SessionID, p.SessionKey); berr != nil {
			return core.CompactResult{}, berr
		}
		conv, err = e.ConversationFor(ctx, p.AgentID, p.SessionID, p.SessionKey)
	}
	if errors.Is(err, core.ErrUnknownSession) && !host && p.SessionFile != "" && p.SessionID != "" {
		if _, ierr := e.importFile(ctx, agent, p.SessionID, p.SessionKey, p.SessionFile); ierr != nil && !errors.Is(ierr, os.ErrNotExist) {
			return core.CompactResult{}, ierr
		}
		conv, err = e.ConversationFor(ctx, p.AgentID, p.SessionID, p.SessionKey)
	}
	if errors.Is(err, core.ErrUnknownSession) {
		// Nothing to compact: the host's own messages are the context
		// (assemble passes them through). Its count is handed back as the
		// finite tokensAfter a host records (OpenClaw's preflight and
		// overflow recovery).
		after := max(0, p.CurrentTokenCount)
		out := &core.CompactOutcome{TokensBefore: after, TokensAfter: after}
		if host && len(p.SessionTarget) > 0 && p.SessionTarget[0] == '{' {
			out.SessionTarget = p.SessionTarget
		}
		return core.CompactResult{OK: false, Reason: "nothing stored for this session", Result: out}, nil
	}
	if err != nil {
		return core.CompactResult{}, err
	}
	// A conversation read through the host is the host's, whatever this
	// call's sessionFile looks like (transcriptStorage is not sent on every
	// call).
	if !host {
		if host, err = orchestrate.HostKept(ctx, e.st, agent, conv.id); err != nil {
			return core.CompactResult{}, err
		}
	}
	if !host && p.SessionFile != "" && p.SessionID != "" {
		// The transcript may hold messages the store does not (an afterTurn
		// that failed): import what is new first, so that the compaction
		// covers them and a rotation's successor, checkpointed as fully
		// imported, hides none of them.
		if _, ierr := e.importFile(ctx, agent, p.SessionID, p.SessionKey, p.SessionFile); ierr != nil && !errors.Is(ierr, os.ErrNotExist) {
			return core.CompactResult{}, fmt.Errorf("lossless: compact: import the transcript first: %w", ierr)
		}
	}
	budget := e.budgetFor(p.TokenBudget, p.RuntimeContext)
	mode := dag.ModeBudget
	if p.CompactionTarget == core.CompactionTargetThreshold {
		mode = dag.ModeThreshold
	}
	// A rotation starts the successor from summaries and the fresh tail, so
	// everything outside the tail is compacted first.
	rotating := !host && p.SessionFile != "" && orchestrate.ShouldRotate(p, e.cfg.RotateBytes)
	// OpenClaw passes its window as the budget: the engine takes off the
	// host's own share (system prompt, reserve) when its assembles told it,
	// else estimates it from the host's currentTokenCount.
	eff, known := e.budgets.of(agent, p.SessionID, p.SessionKey).compactBudget(budget)
	if known && p.CurrentTokenCount > budget {
		// Overflow recovery: the host's count of the request that failed
		// is over its window; whatever the estimates missed, the context
		// must lose at least that much more.
		eff = max(1, eff-(p.CurrentTokenCount-budget))
	}
	tgt := dag.Target{Budget: eff, Force: p.Force || rotating, Mode: mode, Focus: p.CustomInstructions}
	if !known {
		tgt.Reserved = orchestrate.Reserved(ctx, conv, p.CurrentTokenCount, budget)
	}
	out, err := e.runCompaction(ctx, conv, tgt, true)
	if err != nil {
		return core.CompactResult{}, err
	}
	d := orchestrate.Details(EngineID, out)
	outcome := &core.CompactOutcome{TokensBefore: out.WindowBefore, TokensAfter: out.WindowAfter}
	if text, err := orchestrate.ContextSummaryText(ctx, e.st, conv.id, out.After); err == nil {
		outcome.Summary = text
	}
	if rotating {
		rot, err := e.rotate(ctx, conv, agent, p.SessionID, p.SessionFile, out.WindowBefore, out.WindowAfter)
		if err != nil {
			return core.CompactResult{}, err
		}
		d.Rotated, d.PreviousSessionFile = true, p.SessionFile
		outcome.SessionID, outcome.SessionFile, outcome.FirstKeptEntryID = rot.SessionID, rot.SessionFile, rot.FirstKeptEntryID
		outcome.SessionTarget = rot.SessionTarget
	}
	if host && len(p.SessionTarget) > 0 && p.SessionTarget[0] == '{' {
		outcome.SessionTarget = p.SessionTarget // unchanged: no successor
	}
	outcome.Details, _ = json.Marshal(d)
	// At its floor the context cannot shrink further by compaction; that is
	// no failure (assemble still fits each request's budget: it cuts the
	// window and shows the turn's large tool results by reference), and the
	// reason says "nothing to compact" and why (a host such as OpenClaw
	// treats that as a benign no-op, not a failed preflight).
	return core.CompactResult{OK: true, Compacted: out.WindowAfter < out.WindowBefore, Reason: out.Result.Reason, Result: outcome}, nil
}

// runCompaction runs the DAG compactor on conv (orchestrate.Run) under its
// compaction lock: the engine's and, on a shared store, the store's, so
// that one process at a time compacts a conversation. wait false
// (background and Maintain compactions) skips with
// orchestrate.ErrCompacting when another process holds it; wait true
// (Compact) waits for it.
func (e *Engine) runCompaction(ctx context.Context, conv *Conversation, tgt dag.Target, wait bool) (orchestrate.Outcome, error) {
	comp, err := e.Compactor()
	if err != nil {
		return orchestrate.Outcome{}, err
	}
	name := ""
	if sum, _ := e.Summarizer(); sum != nil {
		name = sum.Name()
	}
	out := orchestrate.Outcome{Summarizer: name}
	unlock, err := e.compaction.convMus.lock(ctx, conv.id)
	if err != nil {
		return out, fmt.Errorf("lossless: compact: waiting for a running compaction: %w", err)
	}
	defer unlock()
	release, ok, err := e.sharedCompactLock(ctx, conv.id, wait)
	if err == nil && !ok {
		return out, orchestrate.ErrCompacting
	}
	if err != nil {
		return out, fmt.Errorf("lossless: compact: take the compaction lock in the shared store: %w", err)
	}
	defer release()
	if hook := e.cfg.hooks.compactRun; hook != nil {
		if end := hook(e, conv.id); end != nil {
			defer end()
		}
	}
	out, err = orchestrate.Run(ctx, comp, conv, tgt)
	out.Summarizer = name
	return out, err
}

// sharedCompactLock takes c's compaction lock in a shared store: waiting
// for it when wait, else ok false when another process holds it. Without a
// shared store it returns a no-op release and ok.
func (e *Engine) sharedCompactLock(ctx context.Context, c convID, wait bool) (release func(), ok bool, err error) {
	l := e.locker
	if l == nil {
		return func() {}, true, nil
	}
	if wait {
		release, err := l.Lock(ctx, compactLockName(c))
		return release, err == nil, err
	}
	return l.TryLock(ctx, compactLockName(c))
}

// afterTurnCompact starts a background compaction of the turn's
// conversation when none runs (or asks the running one to go again). The
// run compacts to contextThreshold × budget when the context is over it;
// it never blocks the turn, Assemble or Ingest.
func (e *Engine) afterTurnCompact(p core.AfterTurnParams) {
	agent, sessionID, sessionKey := e.sessionIdentity("", p.SessionID, p.SessionKey, p.SessionTarget)
	conv, err := e.ConversationFor(e.compaction.runs.Context(), agent, sessionID, sessionKey)
	if err != nil {
		return
	}
	e.startCompaction(conv, e.budgetFor(p.TokenBudget, p.RuntimeContext))
}

// startCompaction starts a background compaction of conv against budget
// when none runs (or asks the running one to go again). A summarizer that
// needs the host's model (summarizer kind "host") cannot run in the
// background: Maintain, which the host calls after the commit with its
// model, compacts instead.
func (e *Engine) startCompaction(conv *Conversation, budget int) {
	if e.hostSummarizer() {
		return
	}
	runs := e.compaction.runs
	if !runs.Begin(conv.id) {
		return
	}
	go func() {
		for {
			e.backgroundCompaction(conv, budget)
			if !runs.Again(conv.id) {
				return
			}
		}
	}()
}

// backgroundCompaction is one pass of a background run: it compacts conv
// to contextThreshold × budget when its context is over it, and keeps the
// result (not when another process compacts it now).
func (e *Engine) backgroundCompaction(conv *Conversation, budget int) {
	runs := e.compaction.runs
	if !runs.Acquire() {
		return
	}
	defer runs.Release()
	ctx := runs.Context()
	items, err := conv.Items(ctx)
	if err != nil || !orchestrate.OverThreshold(items, e.cfg.ContextThreshold, budget) {
		return
	}
	out, err := e.runCompaction(ctx, conv, dag.Target{Budget: budget, Mode: dag.ModeThreshold}, false)
	if errors.Is(err, orchestrate.ErrCompacting) {
		return // another process compacts it now
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, core.ErrClosed) {
		slog.Warn("lossless: background compaction failed", "conversation", conv.id.String(), "err", err)
	}
	runs.Record(conv.id, orchestrate.BackgroundResult{Result: out.Result, Err: err})
}

// WaitCompactions waits until no background compaction runs (those that
// AfterTurn and CommitTurn start), or until ctx is done. A benchmark that
// replays a conversation turn by turn calls it after each turn, so that
// the context is where it would be when the model's reply takes longer
// than the compaction, whatever the machine's load: the replay is then
// deterministic. Call it when no turn is in flight.
func (e *Engine) WaitCompactions(ctx context.Context) error { return e.compaction.runs.Wait(ctx) }
