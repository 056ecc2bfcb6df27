package dag_test

import (
	"context"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
)

// Compact a conversation over its goal, check the invariants, and expand a
// summary back to its raw messages.
func Example() {
	ctx := context.Background()
	m := dag.NewMemory()
	for i := 1; i <= 40; i++ {
		role := []string{"user", "assistant"}[i%2]
		text := fmt.Sprintf("%s message %d: the build failed in step %d; retry with the cache cleared and compare the logs.", role, i, i)
		m.Append(role, text, core.Chars4{}.CountText(text), 1_700_000_000_000+int64(i)*60_000)
	}
	n := 0
	c, err := dag.NewCompactor(dag.Config{
		FreshTailMessages: 8,
		LeafChunkTokens:   250,
		LeafTargetTokens:  40,
		NewID:             func() string { n++; return fmt.Sprintf("sum_%d", n) },
	}, nil /* nil summarizer: deterministic truncation */, core.Chars4{})
	if err != nil {
		panic(err)
	}
	res, err := c.Run(ctx, m, dag.Target{Budget: 1200})
	if err != nil {
		panic(err)
	}
	fmt.Println("compacted:", res.Compacted(), "under goal:", res.TokensAfter <= res.Goal)
	fmt.Println("summaries:", res.NewSummaryIDs)
	fmt.Println("check:", dag.Check(ctx, m, m.MessageSeqs()))
	p, err := dag.Expand(ctx, m, "sum_1", 0, "")
	if err != nil {
		panic(err)
	}
	fmt.Println("sum_1 covers messages", p.Messages)
	// Output:
	// compacted: true under goal: true
	// summaries: [sum_1]
	// check: <nil>
	// sum_1 covers messages [1 2 3 4 5 6 7 8 9 10]
}
