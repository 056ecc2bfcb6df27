package recall

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
)

// countingRecall counts the rankings asked of a recall index.
type countingRecall struct {
	ix
	n atomic.Int64
}

type ix = index.Recall

func (c *countingRecall) Recall(ctx context.Context, q index.RecallQuery) ([]index.Hit, error) {
	c.n.Add(1)
	return c.ix.Recall(ctx, q)
}

// TestQuestionRankedOnce: a question's probe ranks for the room the
// question may take, so that one ranking serves the probe and the block
// when the context leaves room enough, and a second is asked only when the
// context is assembled again in less (against that window). (The probe
// and the block's sizing were two rankings, three with the smaller
// window: on PostgreSQL three queries.) Moved from package lossless, where
// it ran through Assemble.
func TestQuestionRankedOnce(t *testing.T) {
	d := indexed(t, history(60)...)
	rec := &countingRecall{ix: d.Index.ix} // the rebuild is over (indexed waits): nothing else reads ix
	d.Index.ix = rec
	ctx := context.Background()
	const budget = 2000
	question := "When did the council set the zebra crossing project deadline?"
	for _, tc := range []struct {
		name     string
		prompt   string
		full     bool // the probe's window fills its budget
		rankings int64
		windows  int
		fact     string
	}{
		// A short session's context leaves room for the block.
		{"short context", question, false, 1, 1, "zebra crossing project deadline"},
		// A full one is assembled again in less.
		{"full context", question, true, 2, 2, "zebra crossing project deadline"},
		// A task keeps the base split.
		{"task", "Change the zebra crossing project deadline to March 9", true, 1, 1, ""},
	} {
		call := &Call{Params: core.AssembleParams{Prompt: tc.prompt}, Budget: budget, Agent: "main", Conv: here, Known: true}
		before := rec.n.Load()
		a, p, ok := Begin(ctx, d, call)
		if !ok {
			t.Fatalf("%s: recall off", tc.name)
		}
		windows := 0
		for more := true; more; {
			size := 100
			if tc.full {
				size = p.TokenBudget
			}
			windows++
			p, more = a.Window(ctx, Window{Result: window(size)})
		}
		res, err := a.Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.n.Load() - before; got != tc.rankings || windows != tc.windows {
			t.Errorf("%s: %d rankings over %d windows, want %d over %d", tc.name, got, windows, tc.rankings, tc.windows)
		}
		block := ""
		if n := len(res.Messages); n > 1 {
			block = res.Messages[n-1].Text()
		}
		if !strings.Contains(block, tc.fact) {
			t.Errorf("%s: the recall block does not hold %q: %q", tc.name, tc.fact, block)
		}
	}
}
