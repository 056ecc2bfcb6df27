package orchestrate

import (
	"context"
	"fmt"
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

// Details returns the details of a compaction of engine's out
// (CompactResult.result.details).
func Details(engine string, out Outcome) CompactDetails {
	r := out.Result
	d := CompactDetails{Engine: engine, NewSummaryIDs: r.NewSummaryIDs, ContextTokensBefore: r.TokensBefore,
		ContextTokensAfter: r.TokensAfter, Goal: r.Goal, TailTokens: r.TailTokens, Rounds: r.Rounds,
		Summarizer: out.Summarizer, SummarizerCalls: r.Calls, Aggressive: r.Aggressive, Truncated: r.Truncated,
		TailTooLarge: r.TailTooLarge, SummarizerFallbacks: out.Tally.Fallback, SummarizerFallbackReason: out.Tally.Reason,
		SummarizerRefused: r.Refused}
	if d.NewSummaryIDs == nil {
		d.NewSummaryIDs = []string{}
	}
	return d
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

// ContextSummaryText joins the texts of the summaries among items
// (conversation c's context in st), oldest first, capped at 16,000
// characters (OpenClaw's cap of CompactOutcome.Summary); the summaries are
// read in batches (one read for a context of up to 64 summaries).
func ContextSummaryText(ctx context.Context, st store.Store, c store.ConvID, items []dag.Item) (string, error) {
	var refs []store.Ref
	for _, it := range items {
		if it.IsSummary() {
			refs = append(refs, store.Ref{Kind: store.RefSummary, Conv: c, ID: it.Ref.ID})
		}
	}
	var sb strings.Builder
	for len(refs) > 0 && sb.Len() < maxResultSummaryChars {
		batch := refs[:min(len(refs), summaryBatch)]
		refs = refs[len(batch):]
		var got []store.Got
		err := st.View(ctx, func(r store.Reader) error {
			var err error
			got, err = r.Get(batch)
			return err
		})
		if err != nil {
			return "", fmt.Errorf("lossless: read: %w", records.FromStore(err))
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
