package lossless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	lru "github.com/hashicorp/golang-lru/v2"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/summarize"
)

// Compaction wiring: Engine.Compact, proactive compaction after a turn (in
// the background, one run at a time per conversation), and the summarizer.
//
// The state is the engine's compaction field, set up by Open
// (newCompactionState); the engine's own files need only the hooks:
// Compact calls compact, AfterTurn calls afterTurnCompact, Close calls
// compaction.stop.

// compactionState is the compaction state of one Engine.
type compactionState struct {
	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopped bool
	// running marks conversations with a background run; again asks the
	// run to go once more (a turn arrived while it ran).
	running map[convID]bool
	again   map[convID]bool
	// convMus serialise compactions of one conversation (waiting honours
	// the context; only conversations compacting are held).
	convMus keyLocks[convID]
	// sem bounds the conversations compacting in the background at once.
	sem chan struct{}
	// last is the last background result of the most recent
	// conversations (bounded: tests and diagnostics read it).
	last *lru.Cache[convID, BackgroundResult]

	sumOnce  sync.Once
	sum      core.Summarizer
	sumErr   error
	override core.Summarizer
}

// newCompactionState returns the compaction state of an engine opened with
// cfg (Open calls it).
func newCompactionState(cfg Config) *compactionState {
	ctx, cancel := context.WithCancel(context.Background())
	n := cfg.CompactionConcurrency
	if n <= 0 {
		n = DefaultCompactionConcurrency
	}
	return &compactionState{ctx: ctx, cancel: cancel, running: map[convID]bool{}, again: map[convID]bool{},
		sem: make(chan struct{}, n), last: must(lru.New[convID, BackgroundResult](maxBackgroundResults))}
}

// stop cancels background compactions and waits for them; no run starts
// after it (a turn that ends after Close starts none). Close calls it
// first. It is idempotent.
func (x *compactionState) stop() {
	x.mu.Lock()
	x.stopped = true
	x.mu.Unlock()
	x.cancel()
	x.wg.Wait()
}

// SetSummarizer makes the engine summarize with s instead of the one
// Config.Summarizer describes (for embedding applications and tests). Call
// it before the first compaction.
func (e *Engine) SetSummarizer(s core.Summarizer) {
	x := e.compaction
	x.mu.Lock()
	x.override = s
	x.mu.Unlock()
}

// Summarizer returns the summarizer compactions use: the one set with
// SetSummarizer, else summarize.FromConfig(Config.Summarizer): by default
// the extractive summarizer, or under OpenClaw (Config.Host) the host's
// model in a Guard that falls back to it.
func (e *Engine) Summarizer() (core.Summarizer, error) {
	x := e.compaction
	x.mu.Lock()
	o := x.override
	x.mu.Unlock()
	if o != nil {
		return o, nil
	}
	x.sumOnce.Do(func() {
		sc, err := e.cfg.summarizerConfig()
		if err != nil {
			x.sumErr = err
			return
		}
		x.sum, x.sumErr = summarize.FromConfig(sc, e.tc)
	})
	return x.sum, x.sumErr
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

// windowTokens is what Assemble would show of items under budget: the
// tokens of the longest suffix that fits.
func windowTokens(items []dag.Item, budget int) int {
	used := 0
	for i := len(items) - 1; i >= 0; i-- {
		if used+items[i].Tokens > budget {
			break
		}
		used += items[i].Tokens
	}
	return used
}

func itemTokens(items []dag.Item) int {
	n := 0
	for _, it := range items {
		n += it.Tokens
	}
	return n
}

// maxBackgroundResults bounds the background results kept.
const maxBackgroundResults = 1024

// must returns v, panicking on err (a constant argument's error).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// runOutcome is one compaction of a conversation.
type runOutcome struct {
	res          dag.Result
	windowBefore int
	windowAfter  int
	// after is the context after the run.
	after      []dag.Item
	summarizer string
	// tally is how the summarizer's requests were answered (a model's
	// Guard counts them; other summarizers leave it zero).
	tally summarize.TallyCounts
}

// runCompaction runs the DAG compactor on conv under its compaction lock:
// the engine's and, on a shared store, the store's, so that one process at
// a time compacts a conversation. wait false (background and Maintain
// compactions) skips with errCompacting when another process holds it;
// wait true (Compact) waits for it.
func (e *Engine) runCompaction(ctx context.Context, conv *Conversation, tgt dag.Target, wait bool) (runOutcome, error) {
	var out runOutcome
	comp, err := e.Compactor()
	if err != nil {
		return out, err
	}
	if sum, _ := e.Summarizer(); sum != nil {
		out.summarizer = sum.Name()
	}
	unlock, err := e.compaction.convMus.lock(ctx, conv.id)
	if err != nil {
		return out, fmt.Errorf("lossless: compact: waiting for a running compaction: %w", err)
	}
	defer unlock()
	if e.locker != nil {
		var release func()
		if wait {
			release, err = e.locker.Lock(ctx, compactLockName(conv.id))
		} else {
			var ok bool
			release, ok, err = e.locker.TryLock(ctx, compactLockName(conv.id))
			if err == nil && !ok {
				return out, errCompacting
			}
		}
		if err != nil {
			return out, fmt.Errorf("lossless: compact: take the compaction lock in the shared store: %w", err)
		}
		defer release()
	}
	if hook := e.cfg.hooks.compactRun; hook != nil {
		defer hook(e, conv.id)()
	}
	before, err := conv.Items(ctx)
	if err != nil {
		return out, err
	}
	out.windowBefore = windowTokens(before, tgt.Budget)
	tally := &summarize.Tally{}
	out.res, err = comp.Run(summarize.WithTally(ctx, tally), conv, tgt)
	out.tally = tally.Counts()
	if err != nil {
		return out, fmt.Errorf("lossless: compact: %w", err)
	}
	// Unchanged when the run made no summary: not read again.
	out.after = before
	if len(out.res.NewSummaryIDs) > 0 {
		if out.after, err = conv.Items(ctx); err != nil {
			return out, err
		}
	}
	out.windowAfter = windowTokens(out.after, tgt.Budget)
	return out, nil
}

// CompactDetails is the JSON of CompactResult.result.details.
type CompactDetails struct {
	Engine string `json:"engine"`
	// NewSummaryIDs are the summaries this compaction made.
	NewSummaryIDs []string `json:"newSummaryIds"`
	// ContextTokensBefore/After are the stored context's tokens (all
	// items); tokensBefore/tokensAfter of the result are what the model
	// sees within the budget.
	ContextTokensBefore int    `json:"contextTokensBefore"`
	ContextTokensAfter  int    `json:"contextTokensAfter"`
	Goal                int    `json:"goal"`
	TailTokens          int    `json:"tailTokens"`
	Rounds              int    `json:"rounds"`
	Summarizer          string `json:"summarizer,omitempty"`
	SummarizerCalls     int    `json:"summarizerCalls"`
	// SummarizerFallbacks counts the summaries of this compaction that a
	// model summarizer's fallback (the extractive summarizer) wrote, and
	// SummarizerFallbackReason says why the last one did: the host
	// offered no model in the call, the spend cap (maxCallsPerHour,
	// maxTokensPerHour, maxCallsPerWindow) was reached, the breaker was
	// open, or the model failed.
	SummarizerFallbacks      int    `json:"summarizerFallbacks,omitempty"`
	SummarizerFallbackReason string `json:"summarizerFallbackReason,omitempty"`
	Aggressive               int    `json:"aggressive"`
	Truncated                int    `json:"truncated"`
	TailTooLarge             bool   `json:"tailTooLarge,omitempty"`
	Rotated                  bool   `json:"rotated,omitempty"`
	PreviousSessionFile      string `json:"previousSessionFile,omitempty"`
}

// maxResultSummaryChars caps CompactOutcome.Summary (OpenClaw's cap).
const maxResultSummaryChars = 16000

// compact implements Engine.Compact. The budget is the call's, else the
// runtime context's tokenBudget, else Config.DefaultTokenBudget, less what
// the host's currentTokenCount shows beyond the assembled context (at most
// a quarter of the budget);
// compactionTarget "budget" (the default) gets the context under the
// budget, "threshold" under contextThreshold × budget; force compacts
// everything outside the fresh tail even under the target. compacted is
// true only when the tokens the model sees went down; a fresh tail too
// large for the target gives ok:false with the reason. When the session's
// transcript (sessionFile) has passed Config.RotateBytes, or the runtime
// context asks for it ("rotateTranscript": true), the transcript is
// rotated and result.sessionId/sessionFile/sessionTarget name the
// successor.
func (e *Engine) compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	done, err := e.enter()
	if err != nil {
		return core.CompactResult{}, err
	}
	done() // the store calls below enter on their own
	// The "host" summarizer's model (host.go).
	ctx = withHostLLM(ctx, p.RuntimeContext)
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
		return core.CompactResult{OK: false, Reason: "nothing stored for this session"}, nil
	}
	if err != nil {
		return core.CompactResult{}, err
	}
	// A conversation read through the host is the host's, whatever this
	// call's sessionFile looks like (transcriptStorage is not sent on every
	// call).
	if !host {
		if host, err = e.hostKept(ctx, agent, conv.id); err != nil {
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
	rotating := !host && p.SessionFile != "" && e.shouldRotate(p)
	// OpenClaw passes its window as the budget: the engine takes off the
	// host's own share (system prompt, reserve) when its assembles told it
	// (budget.go), else estimates it from the host's currentTokenCount.
	eff, known := e.budgets.of(agent, p.SessionID, p.SessionKey).compactBudget(budget)
	if known && p.CurrentTokenCount > budget {
		// Overflow recovery: the host's count of the request that failed
		// is over its window; whatever the estimates missed, the context
		// must lose at least that much more.
		eff = max(1, eff-(p.CurrentTokenCount-budget))
	}
	tgt := dag.Target{Budget: eff, Force: p.Force || rotating, Mode: mode, Focus: p.CustomInstructions}
	if !known {
		tgt.Reserved = e.reserved(ctx, conv, p.CurrentTokenCount, budget)
	}
	out, err := e.runCompaction(ctx, conv, tgt, true)
	if err != nil {
		return core.CompactResult{}, err
	}
	r := out.res
	d := CompactDetails{Engine: EngineID, NewSummaryIDs: r.NewSummaryIDs, ContextTokensBefore: r.TokensBefore,
		ContextTokensAfter: r.TokensAfter, Goal: r.Goal, TailTokens: r.TailTokens, Rounds: r.Rounds,
		Summarizer: out.summarizer, SummarizerCalls: r.Calls, Aggressive: r.Aggressive, Truncated: r.Truncated,
		TailTooLarge: r.TailTooLarge, SummarizerFallbacks: out.tally.Fallback, SummarizerFallbackReason: out.tally.Reason}
	if d.NewSummaryIDs == nil {
		d.NewSummaryIDs = []string{}
	}
	outcome := &core.CompactOutcome{TokensBefore: out.windowBefore, TokensAfter: out.windowAfter}
	if text, err := e.contextSummaryText(ctx, conv, out.after); err == nil {
		outcome.Summary = text
	}
	if rotating {
		rot, err := e.rotate(ctx, conv, agent, p.SessionID, p.SessionKey, p.SessionFile, out.windowBefore, out.windowAfter)
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
	res := core.CompactResult{OK: true, Compacted: out.windowAfter < out.windowBefore, Reason: r.Reason, Result: outcome}
	return res, nil
}

// maxReservedShare caps the tokens Compact reserves for what the host adds
// around the context (system prompt, tools), as a share of the budget.
const maxReservedShare = 0.5

// reserved returns the tokens the host's prompt holds besides the context
// the engine assembles: the host's currentTokenCount minus what Assemble
// would show now, capped at maxReservedShare of the budget (the host counts
// with another estimate, so the difference is only a hint).
func (e *Engine) reserved(ctx context.Context, conv *Conversation, current, budget int) int {
	if current <= 0 {
		return 0
	}
	items, err := conv.Items(ctx)
	if err != nil {
		return 0
	}
	r := current - windowTokens(items, budget)
	if max := int(maxReservedShare * float64(budget)); r > max {
		r = max
	}
	if r < 0 {
		r = 0
	}
	return r
}

// contextSummaryText joins the texts of the summaries in conv's context,
// oldest first, capped at maxResultSummaryChars.
// items is the context when the caller holds it (nil: read here); the
// summaries are read in batches (store.Reader.Get: one read for a
// context of up to summaryBatch summaries).
func (e *Engine) contextSummaryText(ctx context.Context, conv *Conversation, items []dag.Item) (string, error) {
	if items == nil {
		var err error
		if items, err = conv.Items(ctx); err != nil {
			return "", err
		}
	}
	var refs []store.Ref
	for _, it := range items {
		if it.IsSummary() {
			refs = append(refs, store.Ref{Kind: store.RefSummary, Conv: conv.id, ID: it.Ref.ID})
		}
	}
	var sb strings.Builder
	for len(refs) > 0 && sb.Len() < maxResultSummaryChars {
		batch := refs[:min(len(refs), summaryBatch)]
		refs = refs[len(batch):]
		got, err := conv.get(ctx, batch)
		if err != nil {
			return "", err
		}
		for i, g := range got {
			if g.Err != nil {
				return "", fmt.Errorf("lossless: summary %q: %w", batch[i].ID, fromStore(g.Err))
			}
			if sb.Len() > 0 {
				sb.WriteString("\n\n")
			}
			sb.WriteString(g.Summary.Text)
			if sb.Len() >= maxResultSummaryChars {
				break
			}
		}
	}
	out := sb.String()
	if len(out) > maxResultSummaryChars {
		out = core.Truncate(core.Chars4{}, out, maxResultSummaryChars/4)
	}
	return out, nil
}

// summaryBatch is how many summaries contextSummaryText reads at once.
const summaryBatch = 64

// BackgroundResult is the outcome of a conversation's last background
// compaction.
type BackgroundResult struct {
	Result dag.Result
	Err    error
}

// afterTurnCompact starts a background compaction of the turn's
// conversation when none runs (or asks the running one to go again). The
// run compacts to contextThreshold × budget when the context is over it;
// it never blocks the turn, Assemble or Ingest.
func (e *Engine) afterTurnCompact(p core.AfterTurnParams) {
	agent, sessionID, sessionKey := e.sessionIdentity("", p.SessionID, p.SessionKey, p.SessionTarget)
	conv, err := e.ConversationFor(e.compaction.ctx, agent, sessionID, sessionKey)
	if err != nil {
		return
	}
	e.startCompaction(conv, e.budgetFor(p.TokenBudget, p.RuntimeContext))
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

// startCompaction starts a background compaction of conv against budget
// when none runs (or asks the running one to go again). A summarizer that
// needs the host's model (summarizer kind "host") cannot run in the
// background: Maintain, which the host calls after the commit with its
// model, compacts instead (maintainCompact).
func (e *Engine) startCompaction(conv *Conversation, budget int) {
	if e.hostSummarizer() {
		return
	}
	x := e.compaction
	x.mu.Lock()
	if x.stopped {
		x.mu.Unlock()
		return
	}
	if x.running[conv.id] {
		x.again[conv.id] = true
		x.mu.Unlock()
		return
	}
	x.running[conv.id] = true
	x.wg.Add(1)
	x.mu.Unlock()
	go func() {
		defer x.wg.Done()
		for {
			e.backgroundRun(x, conv, budget)
			x.mu.Lock()
			if !x.again[conv.id] || x.stopped {
				delete(x.running, conv.id)
				delete(x.again, conv.id)
				x.mu.Unlock()
				return
			}
			delete(x.again, conv.id)
			x.mu.Unlock()
		}
	}()
}

func (e *Engine) backgroundRun(x *compactionState, conv *Conversation, budget int) {
	select {
	case x.sem <- struct{}{}:
	case <-x.ctx.Done():
		return
	}
	defer func() { <-x.sem }()
	items, err := conv.Items(x.ctx)
	if err != nil {
		return
	}
	if float64(itemTokens(items)) <= e.cfg.ContextThreshold*float64(budget) {
		return
	}
	out, err := e.runCompaction(x.ctx, conv, dag.Target{Budget: budget, Mode: dag.ModeThreshold}, false)
	if errors.Is(err, errCompacting) {
		return // another process compacts it now
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, core.ErrClosed) {
		slog.Warn("lossless: background compaction failed", "conversation", conv.ID(), "err", err)
	}
	x.mu.Lock()
	x.last.Add(conv.id, BackgroundResult{Result: out.res, Err: err})
	x.mu.Unlock()
}

// waitBackground waits until no background compaction runs (tests).
func (e *Engine) waitBackground() {
	x := e.compaction
	x.wg.Wait()
}

// WaitCompactions waits until no background compaction runs (those that
// AfterTurn and CommitTurn start), or until ctx is done. A benchmark that
// replays a conversation turn by turn calls it after each turn, so that
// the context is where it would be when the model's reply takes longer
// than the compaction, whatever the machine's load: the replay is then
// deterministic. Call it when no turn is in flight.
func (e *Engine) WaitCompactions(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		e.compaction.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("lossless: wait for compactions: %w", ctx.Err())
	}
}

// lastBackground returns the last background result of conv (tests).
func (e *Engine) lastBackground(conv *Conversation) (BackgroundResult, bool) {
	x := e.compaction
	x.mu.Lock()
	defer x.mu.Unlock()
	r, ok := x.last.Get(conv.id)
	return r, ok
}
