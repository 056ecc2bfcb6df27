package orchestrate

import (
	"context"
	"fmt"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/summarize"
)

// Outcome is one compaction of a conversation.
type Outcome struct {
	// Result is the compactor's.
	Result dag.Result
	// WindowBefore and WindowAfter are what Assemble would show of the
	// context under the target's budget before and after the run.
	WindowBefore int
	WindowAfter  int
	// After is the context after the run.
	After []dag.Item
	// Summarizer is the summarizer's name.
	Summarizer string
	// Tally is how the summarizer's requests were answered (a model's
	// Guard counts them; other summarizers leave it zero).
	Tally summarize.TallyCounts
}

// Run runs comp on conv to tgt and measures what the model sees before
// and after. The caller holds conv's compaction locks (the engine's and, on
// a shared store, the store's) and fills Outcome.Summarizer.
func Run(ctx context.Context, comp *dag.Compactor, conv dag.Store, tgt dag.Target) (Outcome, error) {
	var out Outcome
	before, err := conv.Items(ctx)
	if err != nil {
		return out, err
	}
	out.WindowBefore = WindowTokens(before, tgt.Budget)
	tally := &summarize.Tally{}
	out.Result, err = comp.Run(summarize.WithTally(ctx, tally), conv, tgt)
	out.Tally = tally.Counts()
	if err != nil {
		return out, fmt.Errorf("lossless: compact: %w", err)
	}
	// Unchanged when the run made no summary: not read again.
	out.After = before
	if len(out.Result.NewSummaryIDs) > 0 {
		if out.After, err = conv.Items(ctx); err != nil {
			return out, err
		}
	}
	out.WindowAfter = WindowTokens(out.After, tgt.Budget)
	return out, nil
}

// WindowTokens is what Assemble would show of items under budget: the
// tokens of the longest suffix that fits.
func WindowTokens(items []dag.Item, budget int) int {
	used := 0
	for i := len(items) - 1; i >= 0; i-- {
		if used+items[i].Tokens > budget {
			break
		}
		used += items[i].Tokens
	}
	return used
}

// OverThreshold reports whether items hold more than threshold × budget
// tokens: the decision to compact after a turn (in the background, or in
// Maintain for a host-model summarizer).
func OverThreshold(items []dag.Item, threshold float64, budget int) bool {
	return float64(dag.SumTokens(items)) > threshold*float64(budget)
}
