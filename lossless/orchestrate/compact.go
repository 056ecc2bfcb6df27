package orchestrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/summarize"
)

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
	// SummarizerRefused counts the summaries of this compaction that the
	// fallback wrote because the model's answer was refused, again at the
	// stricter retry (empty, a canned reply, not shorter than its sources,
	// their identifiers lost): stored with method "refused".
	SummarizerRefused   int    `json:"summarizerRefused,omitempty"`
	Aggressive          int    `json:"aggressive"`
	Truncated           int    `json:"truncated"`
	TailTooLarge        bool   `json:"tailTooLarge,omitempty"`
	Rotated             bool   `json:"rotated,omitempty"`
	PreviousSessionFile string `json:"previousSessionFile,omitempty"`
}

// maxResultSummaryChars caps CompactOutcome.Summary (OpenClaw's cap).
const maxResultSummaryChars = 16000

// Compact is Engine.Compact. The budget is the call's, else the
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
func Compact[C dag.Store](ctx context.Context, e Port[C], p core.CompactParams) (core.CompactResult, error) {
	done, err := e.Enter()
	if err != nil {
		return core.CompactResult{}, err
	}
	done() // the store calls below enter on their own
	// The "host" summarizer's model.
	ctx = WithHostLLM(ctx, p.RuntimeContext)
	agent, sessionID, sessionKey := e.Identity(p.AgentID, p.SessionID, p.SessionKey, p.SessionTarget)
	p.SessionID, p.SessionKey, p.AgentID = sessionID, sessionKey, agent
	if p.SessionID == "" && p.SessionKey == "" {
		return core.CompactResult{}, fmt.Errorf("lossless: compact: %w", core.ErrEmptySessionID)
	}
	// A host that keeps the transcript (OpenClaw's SQLite store) gets no
	// rotation: it cannot make a successor transcript, so the engine
	// compacts in its own store and returns the session unchanged.
	host := core.HostKeepsTranscript(p.SessionFile, p.RuntimeContext)
	conv, err := e.Conversation(ctx, p.AgentID, p.SessionID, p.SessionKey)
	if errors.Is(err, core.ErrUnknownSession) && host && p.SessionID != "" && p.RuntimeContext != nil && p.RuntimeContext.ReadTranscript != nil {
		if berr := e.BootstrapHost(ctx, core.BootstrapParams{SessionID: p.SessionID, SessionKey: p.SessionKey,
			RuntimeContext: p.RuntimeContext}, agent, p.SessionID, p.SessionKey); berr != nil {
			return core.CompactResult{}, berr
		}
		conv, err = e.Conversation(ctx, p.AgentID, p.SessionID, p.SessionKey)
	}
	if errors.Is(err, core.ErrUnknownSession) && !host && p.SessionFile != "" && p.SessionID != "" {
		if ierr := e.ImportFile(ctx, agent, p.SessionID, p.SessionKey, p.SessionFile); ierr != nil && !errors.Is(ierr, os.ErrNotExist) {
			return core.CompactResult{}, ierr
		}
		conv, err = e.Conversation(ctx, p.AgentID, p.SessionID, p.SessionKey)
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
		if host, err = hostKept(ctx, e, agent, e.ID(conv)); err != nil {
			return core.CompactResult{}, err
		}
	}
	if !host && p.SessionFile != "" && p.SessionID != "" {
		// The transcript may hold messages the store does not (an afterTurn
		// that failed): import what is new first, so that the compaction
		// covers them and a rotation's successor, checkpointed as fully
		// imported, hides none of them.
		if ierr := e.ImportFile(ctx, agent, p.SessionID, p.SessionKey, p.SessionFile); ierr != nil && !errors.Is(ierr, os.ErrNotExist) {
			return core.CompactResult{}, fmt.Errorf("lossless: compact: import the transcript first: %w", ierr)
		}
	}
	budget := e.Budget(p.TokenBudget, p.RuntimeContext)
	mode := dag.ModeBudget
	if p.CompactionTarget == core.CompactionTargetThreshold {
		mode = dag.ModeThreshold
	}
	// A rotation starts the successor from summaries and the fresh tail, so
	// everything outside the tail is compacted first.
	rotating := !host && p.SessionFile != "" && ShouldRotate(p, e.Config().RotateBytes)
	// OpenClaw passes its window as the budget: the engine takes off the
	// host's own share (system prompt, reserve) when its assembles told it,
	// else estimates it from the host's currentTokenCount.
	eff, known := e.CompactBudget(agent, p.SessionID, p.SessionKey, budget)
	if known && p.CurrentTokenCount > budget {
		// Overflow recovery: the host's count of the request that failed
		// is over its window; whatever the estimates missed, the context
		// must lose at least that much more.
		eff = max(1, eff-(p.CurrentTokenCount-budget))
	}
	tgt := dag.Target{Budget: eff, Force: p.Force || rotating, Mode: mode, Focus: p.CustomInstructions}
	if !known {
		tgt.Reserved = Reserved(ctx, conv, p.CurrentTokenCount, budget)
	}
	out, err := Run(ctx, e, conv, tgt, true)
	if err != nil {
		return core.CompactResult{}, err
	}
	r := out.Result
	d := CompactDetails{Engine: e.Config().Engine, NewSummaryIDs: r.NewSummaryIDs, ContextTokensBefore: r.TokensBefore,
		ContextTokensAfter: r.TokensAfter, Goal: r.Goal, TailTokens: r.TailTokens, Rounds: r.Rounds,
		Summarizer: out.Summarizer, SummarizerCalls: r.Calls, Aggressive: r.Aggressive, Truncated: r.Truncated,
		TailTooLarge: r.TailTooLarge, SummarizerFallbacks: out.Tally.Fallback, SummarizerFallbackReason: out.Tally.Reason,
		SummarizerRefused: r.Refused}
	if d.NewSummaryIDs == nil {
		d.NewSummaryIDs = []string{}
	}
	outcome := &core.CompactOutcome{TokensBefore: out.WindowBefore, TokensAfter: out.WindowAfter}
	if text, err := ContextSummaryText(ctx, e, conv, out.After); err == nil {
		outcome.Summary = text
	}
	if rotating {
		rot, err := rotate(ctx, e, conv, agent, p.SessionID, p.SessionFile, out.WindowBefore, out.WindowAfter)
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
	res := core.CompactResult{OK: true, Compacted: out.WindowAfter < out.WindowBefore, Reason: r.Reason, Result: outcome}
	return res, nil
}

// maxReservedShare caps the tokens Compact reserves for what the host adds
// around the context (system prompt, tools), as a share of the budget.
const maxReservedShare = 0.5

// Reserved returns the tokens the host's prompt holds besides the context
// the engine assembles: the host's currentTokenCount minus what Assemble
// would show now, capped at half the budget (the host counts with another
// estimate, so the difference is only a hint).
func Reserved(ctx context.Context, conv dag.Store, current, budget int) int {
	if current <= 0 {
		return 0
	}
	items, err := conv.Items(ctx)
	if err != nil {
		return 0
	}
	r := current - WindowTokens(items, budget)
	if max := int(maxReservedShare * float64(budget)); r > max {
		r = max
	}
	if r < 0 {
		r = 0
	}
	return r
}

// ContextSummaryText joins the texts of the summaries in conv's context,
// oldest first, capped at 16,000 characters (OpenClaw's cap of
// CompactOutcome.Summary). items is the context when the caller holds it
// (nil: read here); the summaries are read in batches (one read for a
// context of up to 64 summaries).
func ContextSummaryText[C dag.Store](ctx context.Context, e Port[C], conv C, items []dag.Item) (string, error) {
	if items == nil {
		var err error
		if items, err = conv.Items(ctx); err != nil {
			return "", err
		}
	}
	id := e.ID(conv)
	var refs []store.Ref
	for _, it := range items {
		if it.IsSummary() {
			refs = append(refs, store.Ref{Kind: store.RefSummary, Conv: id, ID: it.Ref.ID})
		}
	}
	var sb strings.Builder
	for len(refs) > 0 && sb.Len() < maxResultSummaryChars {
		batch := refs[:min(len(refs), summaryBatch)]
		refs = refs[len(batch):]
		got, err := e.Get(ctx, conv, batch)
		if err != nil {
			return "", err
		}
		for i, g := range got {
			if g.Err != nil {
				return "", fmt.Errorf("lossless: summary %q: %w", batch[i].ID, records.FromStore(g.Err))
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

// summaryBatch is how many summaries ContextSummaryText reads at once.
const summaryBatch = 64

// WithHostLLM returns ctx carrying the host's model (rc's llm.complete) for
// the "host" summarizer.
func WithHostLLM(ctx context.Context, rc *core.RuntimeContext) context.Context {
	if rc == nil || rc.LLMComplete == nil {
		return ctx
	}
	llm := rc.LLMComplete
	return summarize.WithHostLLM(ctx, func(ctx context.Context, system, user string, maxTokens int) (string, error) {
		res, err := llm(ctx, core.LLMRequest{System: system, MaxTokens: maxTokens,
			Messages: []core.Message{core.UserText(user, time.Now().UnixMilli())}})
		if err != nil {
			return "", err
		}
		if u := res.Usage; u != nil {
			// The host's count of the call, for the spend cap (the prompt's
			// cached tokens included: the cap counts tokens, not prices).
			summarize.ReportUsage(ctx, u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens, u.OutputTokens)
		}
		return res.Text, nil
	})
}
