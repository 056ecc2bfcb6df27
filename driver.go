package contextengine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"

	"github.com/lossless-engine/contextengine/core"
)

// MaxOverflowCompactions is how many recovery compactions one turn may run
// (CONTRACT §6).
const MaxOverflowCompactions = 3

// PrecheckFactor multiplies token estimates in the overflow precheck.
const PrecheckFactor = 1.2

// ModelRequest is what the driver sends to the model on each attempt.
type ModelRequest struct {
	// System is the host's system prompt with the engine's
	// systemPromptAddition prepended (separated by a blank line).
	System string
	// Messages are the assembled messages, the new user prompt last (unless
	// the engine placed it elsewhere).
	Messages []core.Message
	// Model is DriverOptions.Model's name.
	Model string
	// MaxOutputTokens is the output reserve.
	MaxOutputTokens int
	// EstimatedTokens is the driver's estimate of the prompt (unscaled).
	EstimatedTokens int
}

// ModelFunc runs one model call for the driver. It returns the messages the
// turn adds after the user prompt, in order: typically assistant messages
// and the toolResult messages of the tools the host ran between them
// (a whole agent loop), never the prompt itself. It must honour ctx. When
// the provider rejects the prompt as too long it returns an error wrapping
// ErrContextOverflow, and the driver compacts and retries; any other error
// fails the turn (afterTurn and maintain are skipped, nothing is recorded).
type ModelFunc func(ctx context.Context, req ModelRequest) ([]core.Message, error)

// DriverOptions configures a Driver.
type DriverOptions struct {
	// Engine serves the turns; usually the *Guarded from Open. Required.
	Engine core.Engine
	// Model calls the model. Required.
	Model ModelFunc
	// Host is the host's capability set (EmbeddedRuntime when zero).
	Host Host
	// SessionID names the session. Required.
	SessionID string
	// SessionKey, AgentID and ModelName are passed through to the engine.
	SessionKey, AgentID, ModelName string
	// SessionFile is the session's JSONL transcript. When set, the driver
	// loads the session view from it (its model window) on first use,
	// reloads it after each compaction, and appends the prompt and the
	// turn's messages to it after a successful model call. When empty the
	// driver keeps the view in memory only.
	SessionFile string
	// SystemPrompt is the host's system prompt.
	SystemPrompt string
	// ContextWindow is the model's window in tokens. Required.
	ContextWindow int
	// ReserveTokens is kept free for output; the token budget is
	// ContextWindow - ReserveTokens. 0 means DefaultReserveTokens.
	ReserveTokens int
	// HistoryLimit is the pipeline's limit in user turns (0: none).
	HistoryLimit int
	// MergeConsecutiveUser merges consecutive user turns (see Validate).
	MergeConsecutiveUser bool
	// Estimator estimates tokens for the precheck (core.Chars4 when nil).
	Estimator core.TokenCounter
	// AvailableTools, CitationsMode, RuntimeSettings and RuntimeContext are
	// passed to the engine.
	AvailableTools  []string
	CitationsMode   string
	RuntimeSettings *core.RuntimeSettings
	RuntimeContext  *core.RuntimeContext
	// Cwd is written in a new session file's header.
	Cwd string
}

// DefaultReserveTokens returns the output reserve for a window: 16384,
// raised to at least 20000 but at most a quarter of the window.
func DefaultReserveTokens(window int) int {
	r := max(16384, 20000)
	return min(r, window/4)
}

// TurnResult is what a turn produced.
type TurnResult struct {
	// NewMessages are the prompt followed by the model's messages.
	NewMessages []core.Message
	// Assembled is the engine's assemble result of the successful attempt.
	Assembled core.AssembleResult
	// Compactions counts overflow-recovery compactions run this turn.
	Compactions int
	// SessionID and SessionFile are the session after the turn (they change
	// when a compaction rotated the transcript).
	SessionID, SessionFile string
}

// Driver runs turns on an engine in the contract's order (CONTRACT §1):
// bootstrap, then maintain(bootstrap) when a transcript exists, once per
// session; then per turn the pipeline (Sanitize, Validate, Limit), assemble,
// the precheck and the model call with overflow recovery, then afterTurn
// (or ingestBatch, or one ingest per message) and maintain(turn). A Driver
// keeps the session view (every message so far) and serialises its turns.
type Driver struct {
	mu        sync.Mutex
	opts      DriverOptions
	host      Host
	est       core.TokenCounter
	budget    int
	sessionID string
	file      string
	target    []byte
	view      []core.Message
	booted    bool
	lastEntry string
	// noIDs is set for old transcripts whose entries have no ids: appended
	// entries then carry none either, so the file stays one linear branch.
	noIDs bool
}

// NewDriver validates opts and returns a driver.
func NewDriver(opts DriverOptions) (*Driver, error) {
	switch {
	case opts.Engine == nil:
		return nil, errors.New("contextengine: driver needs an Engine")
	case opts.Model == nil:
		return nil, errors.New("contextengine: driver needs a Model")
	case opts.SessionID == "":
		return nil, fmt.Errorf("contextengine: driver: %w", core.ErrEmptySessionID)
	case opts.ContextWindow <= 0:
		return nil, errors.New("contextengine: driver needs a positive ContextWindow")
	}
	d := &Driver{opts: opts, host: opts.Host, est: opts.Estimator, sessionID: opts.SessionID, file: opts.SessionFile}
	if d.host.Label == "" {
		d.host = EmbeddedRuntime
	}
	if d.est == nil {
		d.est = core.Chars4{}
	}
	reserve := opts.ReserveTokens
	if reserve <= 0 {
		reserve = DefaultReserveTokens(opts.ContextWindow)
	}
	d.budget = opts.ContextWindow - reserve
	if d.budget <= 0 {
		return nil, fmt.Errorf("contextengine: reserve %d leaves no budget in a %d-token window", reserve, opts.ContextWindow)
	}
	return d, nil
}

// TokenBudget returns the prompt budget: the window minus the output reserve.
func (d *Driver) TokenBudget() int { return d.budget }

// SessionID returns the current session id (the successor after a rotation).
func (d *Driver) SessionID() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sessionID
}

// SessionFile returns the current session file (the successor after a
// rotation).
func (d *Driver) SessionFile() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.file
}

// Messages returns a copy of the session view.
func (d *Driver) Messages() []core.Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.view)
}

// Bootstrap initialises the session if it has not been: it loads the view
// from the session file, calls bootstrap, and maintain(reason bootstrap)
// when a transcript exists. Turn calls it on first use.
func (d *Driver) Bootstrap(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.bootstrap(ctx)
}

func (d *Driver) bootstrap(ctx context.Context) error {
	if d.booted {
		return nil
	}
	exists, err := d.reload()
	if err != nil {
		return err
	}
	e := d.opts.Engine
	proj := ProjectionFor(e.Info())
	if b, ok := e.(core.Bootstrapper); ok && Implements(e, OpBootstrap) {
		p := proj.Bootstrap(core.BootstrapParams{SessionID: d.sessionID, SessionKey: d.opts.SessionKey,
			SessionTarget: d.target, SessionFile: d.file, RuntimeSettings: d.opts.RuntimeSettings,
			RuntimeContext: d.opts.RuntimeContext})
		if _, err := b.Bootstrap(proj.Context(ctx, OpBootstrap), p); err != nil {
			return fmt.Errorf("contextengine: bootstrap: %w", err)
		}
	}
	if exists {
		if err := d.maintain(ctx, proj, core.MaintainReasonBootstrap); err != nil {
			return err
		}
	}
	d.booted = true
	return nil
}

// reload replaces the view with the session file's model window. It reports
// whether a transcript exists.
func (d *Driver) reload() (bool, error) {
	if d.file == "" {
		return false, nil
	}
	t, err := core.ReadTranscript(d.file)
	if errors.Is(err, os.ErrNotExist) {
		d.view, d.lastEntry, d.noIDs = nil, "", false
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("contextengine: load session: %w", err)
	}
	d.view = t.Window().Messages()
	d.lastEntry, d.noIDs = "", false
	if n := len(t.Entries); n > 0 {
		d.lastEntry = t.Entries[n-1].ID
		d.noIDs = d.lastEntry == ""
	}
	return len(t.Entries) > 0 || t.Header != nil, nil
}

func (d *Driver) maintain(ctx context.Context, proj Projection, reason string) error {
	e := d.opts.Engine
	m, ok := e.(core.Maintainer)
	if !ok || !Implements(e, OpMaintain) {
		return nil
	}
	p := proj.Maintain(core.MaintainParams{SessionID: d.sessionID, SessionKey: d.opts.SessionKey,
		SessionTarget: d.target, SessionFile: d.file, Reason: reason,
		RuntimeSettings: d.opts.RuntimeSettings, RuntimeContext: d.opts.RuntimeContext})
	if _, err := m.Maintain(proj.Context(ctx, OpMaintain), p); err != nil {
		return fmt.Errorf("contextengine: maintain(%s): %w", reason, err)
	}
	return nil
}

// pipeline runs Sanitize, Validate and Limit.
func (d *Driver) pipeline(msgs []core.Message) []core.Message {
	out, _ := Sanitize(msgs)
	out = Validate(out, ValidateOptions{MergeConsecutiveUser: d.opts.MergeConsecutiveUser})
	return Limit(out, d.opts.HistoryLimit)
}

// precheck returns the prompt estimate and whether the host's overflow
// precheck applies (CONTRACT §6).
func (d *Driver) precheck(info core.Info, asm core.AssembleResult, piped []core.Message, system string) (int, bool) {
	est := asm.EstimatedTokens
	if est <= 0 {
		est = core.CountMessages(d.est, asm.Messages)
	}
	mayOverflow := asm.PromptAuthority == core.PromptAuthorityPreassemblyMayOverflow
	if mayOverflow {
		est = max(est, core.CountMessages(d.est, piped))
	}
	est += d.est.CountText(system)
	return est, !info.OwnsCompaction || mayOverflow
}

func joinSystem(addition, system string) string {
	switch {
	case addition == "":
		return system
	case system == "":
		return addition
	}
	return addition + "\n\n" + system
}

// Turn runs one turn with prompt (a user message). It fails closed with a
// *HostRequirementsError before anything runs when the host lacks a
// capability the engine requires for agent-run. When the model call fails
// or ctx is cancelled, the error is returned and afterTurn and maintain are
// skipped; nothing is added to the session view.
func (d *Driver) Turn(ctx context.Context, prompt core.Message) (TurnResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.opts.Engine
	if err := CheckHostRequirements(e.Info(), core.OpAgentRun, d.host); err != nil {
		return TurnResult{}, err
	}
	if err := d.bootstrap(ctx); err != nil {
		return TurnResult{}, err
	}
	var res TurnResult
	// As in OpenClaw, assemble gets the session history in Messages and the
	// incoming prompt separately (Prompt); the prompt message is appended
	// after the assembled context. An engine that keeps its own store (and
	// ignores Messages) therefore never drops the prompt.
	pending := slices.Clone(d.view)
	var out []core.Message
	for attempt := 0; ; attempt++ {
		piped := d.pipeline(pending)
		info := e.Info()
		proj := ProjectionFor(info)
		ap := proj.Assemble(core.AssembleParams{SessionID: d.sessionID, SessionKey: d.opts.SessionKey,
			Messages: piped, TokenBudget: d.budget, AvailableTools: d.opts.AvailableTools,
			CitationsMode: d.opts.CitationsMode, Model: d.opts.ModelName, Prompt: prompt.Text(),
			RuntimeSettings: d.opts.RuntimeSettings, RuntimeContext: d.opts.RuntimeContext})
		asm, err := e.Assemble(proj.Context(ctx, OpAssemble), ap)
		if err != nil {
			return res, fmt.Errorf("contextengine: assemble: %w", err)
		}
		system := joinSystem(asm.SystemPromptAddition, d.opts.SystemPrompt)
		est, check := d.precheck(info, asm, piped, system)
		est += core.CountMessage(d.est, prompt)
		toModel := append(slices.Clone(asm.Messages), prompt)
		if !check || int(math.Ceil(float64(est)*PrecheckFactor)) <= d.budget {
			out, err = d.opts.Model(ctx, ModelRequest{System: system, Messages: toModel,
				Model: d.opts.ModelName, MaxOutputTokens: d.opts.ContextWindow - d.budget, EstimatedTokens: est})
			if err == nil {
				res.Assembled = asm
				break
			}
			if ctx.Err() != nil || !errors.Is(err, ErrContextOverflow) {
				return res, fmt.Errorf("%w: %w", ErrPromptFailed, err)
			}
		}
		if attempt >= MaxOverflowCompactions {
			return res, fmt.Errorf("%w: %d compactions, estimate %d tokens, budget %d", ErrOverflowUnrecovered,
				attempt, est, d.budget)
		}
		if _, err := d.compact(ctx, core.CompactParams{Force: true, CompactionTarget: core.CompactionTargetBudget,
			TokenBudget: d.budget, CurrentTokenCount: est}); err != nil {
			return res, err
		}
		res.Compactions++
		if d.file != "" {
			if _, err := d.reload(); err != nil {
				return res, err
			}
			pending = slices.Clone(d.view)
		}
	}
	pre := len(pending)
	pending = append(pending, prompt)
	newMsgs := append([]core.Message{prompt}, out...)
	if err := d.record(newMsgs); err != nil {
		return res, err
	}
	d.view = append(pending, out...)
	res.NewMessages, res.SessionID, res.SessionFile = newMsgs, d.sessionID, d.file
	proj := ProjectionFor(e.Info())
	if err := d.afterTurn(ctx, proj, pre, newMsgs); err != nil {
		return res, err
	}
	return res, d.maintain(ctx, proj, core.MaintainReasonTurn)
}

// afterTurn runs afterTurn, else ingestBatch, else one ingest per message.
func (d *Driver) afterTurn(ctx context.Context, proj Projection, pre int, newMsgs []core.Message) error {
	e := d.opts.Engine
	if a, ok := e.(core.AfterTurner); ok && Implements(e, OpAfterTurn) {
		p := proj.AfterTurn(core.AfterTurnParams{SessionID: d.sessionID, SessionKey: d.opts.SessionKey,
			SessionTarget: d.target, SessionFile: d.file, Messages: slices.Clone(d.view),
			PrePromptMessageCount: pre, TokenBudget: d.budget, RuntimeSettings: d.opts.RuntimeSettings,
			RuntimeContext: d.opts.RuntimeContext})
		if err := a.AfterTurn(proj.Context(ctx, OpAfterTurn), p); err != nil {
			return fmt.Errorf("contextengine: afterTurn: %w", err)
		}
		return nil
	}
	if b, ok := e.(core.BatchIngester); ok && Implements(e, OpIngestBatch) {
		p := proj.IngestBatch(core.IngestBatchParams{SessionID: d.sessionID, SessionKey: d.opts.SessionKey,
			Messages: newMsgs})
		if _, err := b.IngestBatch(proj.Context(ctx, OpIngestBatch), p); err != nil {
			return fmt.Errorf("contextengine: ingestBatch: %w", err)
		}
		return nil
	}
	for _, m := range newMsgs {
		p := proj.Ingest(core.IngestParams{SessionID: d.sessionID, SessionKey: d.opts.SessionKey, Message: m})
		if _, err := e.Ingest(proj.Context(ctx, OpIngest), p); err != nil {
			return fmt.Errorf("contextengine: ingest: %w", err)
		}
	}
	return nil
}

// Compact runs a manual /compact with the user's focus text (force, target
// threshold). It fails closed when the host lacks a capability the engine
// requires for manual-compact. A rotated session is adopted.
func (d *Driver) Compact(ctx context.Context, instructions string) (core.CompactResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := CheckHostRequirements(d.opts.Engine.Info(), core.OpManualCompact, d.host); err != nil {
		return core.CompactResult{}, err
	}
	if err := d.bootstrap(ctx); err != nil {
		return core.CompactResult{}, err
	}
	r, err := d.compact(ctx, core.CompactParams{Force: true, CompactionTarget: core.CompactionTargetThreshold,
		CustomInstructions: instructions, TokenBudget: d.budget,
		CurrentTokenCount: core.CountMessages(d.est, d.view)})
	if err != nil {
		return r, err
	}
	if d.file != "" {
		if _, err := d.reload(); err != nil {
			return r, err
		}
	}
	return r, nil
}

// compact calls the engine's compact and adopts a rotated session.
func (d *Driver) compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	e := d.opts.Engine
	proj := ProjectionFor(e.Info())
	p.SessionID, p.SessionKey, p.AgentID = d.sessionID, d.opts.SessionKey, d.opts.AgentID
	p.SessionTarget, p.SessionFile = d.target, d.file
	p.RuntimeSettings, p.RuntimeContext = d.opts.RuntimeSettings, d.opts.RuntimeContext
	r, err := e.Compact(proj.Context(ctx, OpCompact), proj.Compact(p))
	if err != nil {
		return r, fmt.Errorf("contextengine: compact: %w", err)
	}
	if o := r.Result; o != nil {
		if o.SessionID != "" {
			d.sessionID = o.SessionID
		}
		if o.SessionFile != "" {
			d.file = o.SessionFile
		}
		if len(o.SessionTarget) > 0 {
			d.target = slices.Clone([]byte(o.SessionTarget))
		}
	}
	return r, nil
}

// sessionHeader is the first line the driver writes to a new session file.
type sessionHeader struct {
	Type      string `json:"type"`
	Version   int    `json:"version"`
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Cwd       string `json:"cwd"`
}

// messageEntry is a message line the driver appends.
type messageEntry struct {
	Type      string       `json:"type"`
	ID        string       `json:"id"`
	ParentID  *string      `json:"parentId"`
	Timestamp string       `json:"timestamp"`
	Message   core.Message `json:"message"`
}

// oldMessageEntry is a message line for an old transcript without ids.
type oldMessageEntry struct {
	Type      string       `json:"type"`
	Timestamp string       `json:"timestamp"`
	Message   core.Message `json:"message"`
}

// record appends msgs to the session file (creating it with a header).
func (d *Driver) record(msgs []core.Message) error {
	if d.file == "" {
		return nil
	}
	var lines []any
	if _, err := os.Stat(d.file); errors.Is(err, os.ErrNotExist) {
		if err := core.WriteTranscriptFile(d.file, sessionHeader{Type: core.EntrySession,
			Version: core.CurrentTranscriptVersion, ID: d.sessionID, Timestamp: core.NowTimestamp(),
			Cwd: d.opts.Cwd}); err != nil {
			return fmt.Errorf("contextengine: create session file: %w", err)
		}
	}
	for _, m := range msgs {
		if d.noIDs {
			lines = append(lines, oldMessageEntry{Type: core.EntryMessage, Timestamp: core.NowTimestamp(), Message: m})
			continue
		}
		id := core.NewEntryID()
		var parent *string
		if d.lastEntry != "" {
			p := d.lastEntry
			parent = &p
		}
		lines = append(lines, messageEntry{Type: core.EntryMessage, ID: id, ParentID: parent,
			Timestamp: core.NowTimestamp(), Message: m})
		d.lastEntry = id
	}
	if err := core.AppendTranscript(d.file, lines...); err != nil {
		return fmt.Errorf("contextengine: record turn: %w", err)
	}
	return nil
}
