package recall

import (
	"context"
	"fmt"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/recalled"
)

// TestQuestionSplitByIntent: a question about the past whose turns need
// more than the base share gets a second, smaller window and a block
// larger than the base reserve; an instruction, or the same question in
// the middle of a tool flow, keeps the base split (one window, the block
// within the reserve); recall.questionShare -1 keeps it for every prompt.
// (Package lossless's TestRecallSplitAdapts checks the same through
// Assemble, with the engine's windows.)
func TestQuestionSplitByIntent(t *testing.T) {
	const budget = 2000
	question := "When did the council set the zebra crossing project deadline?"
	task := "Change the zebra crossing project deadline to March 9"
	toolFlow := []core.Message{core.AssistantToolCall("c1", "read", map[string]string{"path": "a.go"}, 1), core.ToolResult("c1", "read", "package a", false, 2)}
	for _, qs := range []float64{0, -1} {
		t.Run(fmt.Sprint("questionShare=", qs), func(t *testing.T) {
			d := indexed(t, history(60)...)
			d.Config.QuestionShare = qs
			ctx := context.Background()
			for _, tc := range []struct {
				prompt string
				msgs   []core.Message
				grows  bool
			}{
				{question, nil, qs >= 0},
				{task, nil, false},
				{question, toolFlow, false},
			} {
				call := &Call{Params: core.AssembleParams{Prompt: tc.prompt, Messages: tc.msgs}, Budget: budget, Agent: "main", Conv: here, Known: true}
				a, p, ok := Begin(ctx, d, call)
				if !ok {
					t.Fatal("recall off")
				}
				reserve := budget - p.TokenBudget
				windows := 0
				for more := true; more; {
					windows++
					p, more = a.Window(ctx, Window{Result: window(p.TokenBudget)})
				}
				res, err := a.Result()
				if err != nil {
					t.Fatal(err)
				}
				n := 0 // the block's tokens
				if k := len(res.Messages); k == 2 && recalled.IsMessage(res.Messages[1]) {
					n = core.CountMessage(d.Counter, res.Messages[1])
				} else if tc.prompt == question {
					t.Fatalf("%q (%d msgs): no recall block", tc.prompt, len(tc.msgs))
				}
				if grew := n > reserve; grew != tc.grows || (windows == 2) != tc.grows {
					t.Errorf("%q (%d msgs): block of %d tokens (base reserve %d) over %d windows, want it larger: %v", tc.prompt, len(tc.msgs), n, reserve, windows, tc.grows)
				}
				if res.EstimatedTokens > budget {
					t.Errorf("%q: %d tokens over the budget %d", tc.prompt, res.EstimatedTokens, budget)
				}
			}
		})
	}
}
