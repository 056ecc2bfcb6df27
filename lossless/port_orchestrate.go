package lossless

import (
	"context"
	"encoding/json"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/lossless/transcript"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/summarize"
)

// Compaction wiring: Engine.Compact, proactive compaction after a turn (in
// the background, one run at a time per conversation), Maintain and the
// summarizer. The runs and their state are lossless/orchestrate's (its
// package doc describes them), reached through orchestratePort below. The
// engine's own files need only the hooks: Compact calls compact, AfterTurn
// calls afterTurnCompact, CommitTurn startCompaction, Close
// compaction.stop.

// DefaultMaintainMinTokens is Config.MaintainMinTokens's default.
const DefaultMaintainMinTokens = orchestrate.DefaultMaintainMinTokens

// Reasons Maintain gives when it changes nothing.
const (
	MaintainNoRewriter     = orchestrate.MaintainNoRewriter
	MaintainNoSessionFile  = orchestrate.MaintainNoSessionFile
	MaintainUnknownSession = orchestrate.MaintainUnknownSession
	MaintainNothingToDo    = orchestrate.MaintainNothingToDo
	// MaintainRewriteDeferred starts the reason when the host's rewrite
	// failed: nothing changed, a later maintain asks again.
	MaintainRewriteDeferred = orchestrate.MaintainRewriteDeferred
)

// MaintainHostNoReader is Maintain's reason when the host keeps the
// transcript but offers no way to read it (no entry ids to rewrite).
const MaintainHostNoReader = orchestrate.MaintainHostNoReader

// RuntimeContextRotate is the runtime-context key that asks Compact to
// rotate the transcript whatever its size ("rotateTranscript": true).
const RuntimeContextRotate = orchestrate.RuntimeContextRotate

// CompactDetails is the JSON of CompactResult.result.details.
type CompactDetails = orchestrate.CompactDetails

// BackgroundResult is the outcome of a conversation's last background
// compaction.
type BackgroundResult = orchestrate.BackgroundResult

// RotateResult names the successor session.
type RotateResult = orchestrate.RotateResult

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
	last *lru.Cache[convID, BackgroundResult]
}

// newCompactionState returns the compaction state of an engine opened with
// cfg (Open calls it).
func newCompactionState(cfg Config) *compactionState {
	n := cfg.CompactionConcurrency
	if n <= 0 {
		n = DefaultCompactionConcurrency
	}
	runs := orchestrate.NewState(n)
	return &compactionState{runs: runs, last: runs.Results()}
}

// stop cancels background compactions and waits for them; no run starts
// after it (a turn that ends after Close starts none). Close calls it
// first. It is idempotent.
func (x *compactionState) stop() { x.runs.Stop() }

// orchestratePort is the engine as lossless/orchestrate's Port.
type orchestratePort struct{ e *Engine }

var _ orchestrate.Port[*Conversation] = orchestratePort{}

func (p orchestratePort) State() *orchestrate.State { return p.e.compaction.runs }

func (p orchestratePort) Config() orchestrate.Config {
	c := &p.e.cfg
	return orchestrate.Config{Engine: EngineID, ContextThreshold: c.ContextThreshold, FreshTailMessages: c.FreshTailMessages,
		MaintainMinTokens: c.MaintainMinTokens, RotateBytes: c.RotateBytes}
}

func (p orchestratePort) Enter() (func(), error) { return p.e.enter() }

func (p orchestratePort) SummarizerConfig() (summarize.Config, error) {
	return p.e.cfg.summarizerConfig()
}

func (p orchestratePort) Counter() core.TokenCounter { return p.e.tc }

func (p orchestratePort) Compactor() (*dag.Compactor, error) { return p.e.Compactor() }

func (p orchestratePort) Identity(explicitAgent, sessionID, sessionKey string, target json.RawMessage) (string, string, string) {
	return p.e.sessionIdentity(explicitAgent, sessionID, sessionKey, target)
}

func (p orchestratePort) Conversation(ctx context.Context, agent, sessionID, sessionKey string) (*Conversation, error) {
	return p.e.ConversationFor(ctx, agent, sessionID, sessionKey)
}

func (p orchestratePort) Lookup(ctx context.Context, agent, sessionID, sessionKey string) (store.ConvID, error) {
	return p.e.lookup(ctx, agent, sessionID, sessionKey)
}

func (p orchestratePort) ID(c *Conversation) store.ConvID { return c.id }

func (p orchestratePort) Get(ctx context.Context, c *Conversation, refs []store.Ref) ([]store.Got, error) {
	return c.get(ctx, refs)
}

func (p orchestratePort) LockCompaction(ctx context.Context, c store.ConvID) (func(), error) {
	return p.e.compaction.convMus.lock(ctx, c)
}

func (p orchestratePort) SharedLock(ctx context.Context, c store.ConvID, wait bool) (func(), bool, error) {
	l := p.e.locker
	if l == nil {
		return func() {}, true, nil
	}
	if wait {
		release, err := l.Lock(ctx, compactLockName(c))
		return release, err == nil, err
	}
	return l.TryLock(ctx, compactLockName(c))
}

func (p orchestratePort) RunHook(c store.ConvID) func() {
	if hook := p.e.cfg.hooks.compactRun; hook != nil {
		return hook(p.e, c)
	}
	return nil
}

func (p orchestratePort) BootstrapHost(ctx context.Context, bp core.BootstrapParams, agent, sessionID, sessionKey string) error {
	_, err := p.e.bootstrapHost(ctx, bp, agent, sessionID, sessionKey)
	return err
}

func (p orchestratePort) ImportFile(ctx context.Context, agent, sessionID, sessionKey, path string) error {
	_, err := p.e.importFile(ctx, agent, sessionID, sessionKey, path)
	return err
}

func (p orchestratePort) RawMessage(ctx context.Context, c *Conversation, seq uint64) ([]byte, error) {
	m, err := c.Message(ctx, seq)
	if err != nil {
		return nil, err
	}
	return m.Raw(), nil
}

func (p orchestratePort) MapSession(ctx context.Context, c *Conversation, agent, newID, cpPath string, cp transcript.Checkpoint) error {
	return p.e.mapSession(ctx, c, agent, newID, cpPath, cp)
}

func (p orchestratePort) Budget(explicit int, rc *core.RuntimeContext) int {
	return p.e.budgetFor(explicit, rc)
}

func (p orchestratePort) CompactBudget(agent, sessionID, sessionKey string, budget int) (int, bool) {
	return p.e.budgets.of(agent, sessionID, sessionKey).compactBudget(budget)
}

func (p orchestratePort) TurnBudget(agent, sessionID, sessionKey string, rc *core.RuntimeContext) int {
	return p.e.turnBudget(agent, sessionID, sessionKey, rc)
}

func (p orchestratePort) View(ctx context.Context, fn func(store.Reader) error) error {
	return p.e.st.View(ctx, fn)
}

func (p orchestratePort) Sync(ctx context.Context) error { return p.e.st.Sync(ctx) }

func (p orchestratePort) UpdateConv(ctx context.Context, c store.ConvID, fn func(store.Tx) error) error {
	s, err := p.e.lockConv(ctx, c)
	if err != nil {
		return err
	}
	defer s.unlock()
	return p.e.storeUpdate(ctx, fn)
}

func (p orchestratePort) Hash(raw []byte) store.Hash { return hashRaw(raw) }

func (p orchestratePort) Reference(m core.Message, tokens int) []byte {
	return largeReference(m, tokens)
}

func (p orchestratePort) MessageHeader(r store.Reader, c store.ConvID, seq uint64) (store.Message, error) {
	return getMsgHeader(r, c, seq)
}

func (p orchestratePort) Message(r store.Reader, c store.ConvID, seq uint64) (store.Message, error) {
	return getMsg(r, c, seq)
}

func (p orchestratePort) SyncHost(ctx context.Context, agent string, c store.ConvID, read core.HostTranscriptReader) (transcript.HostSyncResult, error) {
	return transcript.SyncHost(ctx, importPort(p), agent, c, read)
}

func (p orchestratePort) HostEntries(ctx context.Context, c store.ConvID) ([]store.HostEntry, error) {
	return transcript.HostEntries(ctx, p.e.st, c)
}

func (p orchestratePort) DropHostMap(ctx context.Context, agent string, c store.ConvID) error {
	return transcript.DropHostMap(ctx, importPort(p), agent, c)
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
	return orchestrate.Summarizer[*Conversation](orchestratePort{e})
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

// compact implements Engine.Compact (orchestrate.Compact).
func (e *Engine) compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	return orchestrate.Compact[*Conversation](ctx, orchestratePort{e}, p)
}

// afterTurnCompact starts a background compaction of the turn's
// conversation when none runs (orchestrate.AfterTurn).
func (e *Engine) afterTurnCompact(p core.AfterTurnParams) {
	orchestrate.AfterTurn[*Conversation](orchestratePort{e}, p)
}

// startCompaction starts a background compaction of conv against budget
// when none runs (orchestrate.Start).
func (e *Engine) startCompaction(conv *Conversation, budget int) {
	orchestrate.Start[*Conversation](orchestratePort{e}, conv, budget)
}

// WaitCompactions waits until no background compaction runs (those that
// AfterTurn and CommitTurn start), or until ctx is done. A benchmark that
// replays a conversation turn by turn calls it after each turn, so that
// the context is where it would be when the model's reply takes longer
// than the compaction, whatever the machine's load: the replay is then
// deterministic. Call it when no turn is in flight.
func (e *Engine) WaitCompactions(ctx context.Context) error { return e.compaction.runs.Wait(ctx) }

// Maintain shrinks the host's transcript without loss. When the host offers
// runtimeContext.rewriteTranscriptEntries, every tool result in the
// transcript that is larger than Config.MaintainMinTokens, older than the
// fresh tail (the newest Config.FreshTailMessages message entries of the
// window, never touched), has an entry id, and is stored by the engine
// byte for byte, is replaced by a reference message (same role, tool call
// id, tool name, error flag and timestamp; its text names the stored
// original's id "lcm-large:<key>", which lcm_expand and
// Conversation.MessageByKey return in full). The reference's own key is
// recorded as an alias of the original, so re-reading the rewritten
// transcript (bootstrap, import) stores nothing new. The result is the
// host's report (changed, bytesFreed, rewrittenEntries). A second Maintain
// rewrites nothing. Without the helper, or without a session file or a
// stored session, it changes nothing and says why in Reason. When the host
// keeps the transcript (OpenClaw's SQLite store), the entries come from the
// host's reader instead of a file. A summarizer that is the host's model
// compacts here, after the turn (orchestrate.Maintain).
func (e *Engine) Maintain(ctx context.Context, p core.MaintainParams) (core.MaintainResult, error) {
	return orchestrate.Maintain[*Conversation](ctx, orchestratePort{e}, p)
}
