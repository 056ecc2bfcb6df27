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

// Run runs the DAG compactor on conv under its compaction lock: the
// engine's and, on a shared store, the store's, so that one process at a
// time compacts a conversation. wait false (background and Maintain
// compactions) skips with ErrCompacting when another process holds it;
// wait true (Compact) waits for it.
func Run[C dag.Store](ctx context.Context, p Port[C], conv C, tgt dag.Target, wait bool) (Outcome, error) {
	var out Outcome
	comp, err := p.Compactor()
	if err != nil {
		return out, err
	}
	if sum, _ := Summarizer(p); sum != nil {
		out.Summarizer = sum.Name()
	}
	id := p.ID(conv)
	unlock, err := p.LockCompaction(ctx, id)
	if err != nil {
		return out, fmt.Errorf("lossless: compact: waiting for a running compaction: %w", err)
	}
	defer unlock()
	release, ok, err := p.SharedLock(ctx, id, wait)
	if err == nil && !ok {
		return out, ErrCompacting
	}
	if err != nil {
		return out, fmt.Errorf("lossless: compact: take the compaction lock in the shared store: %w", err)
	}
	defer release()
	if hook := p.RunHook(id); hook != nil {
		defer hook()
	}
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
