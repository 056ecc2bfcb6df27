package lossless

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

// checkPairs fails when a tool result's call is not before it in msgs.
func checkPairs(t *testing.T, msgs []core.Message) {
	t.Helper()
	calls := map[string]bool{}
	for i, m := range msgs {
		for _, b := range m.ToolCalls() {
			calls[b.ID] = true
		}
		if m.Role() == core.RoleToolResult && !calls[m.ToolCallID()] {
			t.Fatalf("message %d: tool result %q without its call", i, m.ToolCallID())
		}
	}
}

func TestAssembleBudget(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := testutil.PiMono(t)[1]
	res, err := e.Import(ctx, "", path)
	if err != nil {
		t.Fatal(err)
	}
	stored := storedMessages(t, e, "", res.SessionID)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 15; i++ {
		budget := 1 + rng.Intn(60000)
		out, err := e.Assemble(ctx, core.AssembleParams{SessionID: res.SessionID, TokenBudget: budget})
		if err != nil {
			t.Fatal(err)
		}
		sum := core.CountMessages(e.tc, out.Messages)
		if sum > budget || out.EstimatedTokens > budget || sum != out.EstimatedTokens {
			t.Fatalf("budget %d: counted %d, estimated %d", budget, sum, out.EstimatedTokens)
		}
		checkPairs(t, out.Messages)
		for _, m := range out.Messages {
			if !m.HasVisibleContent() {
				t.Fatalf("thinking-only or empty message assembled: %.200s", m.Raw())
			}
		}
		// A contiguous suffix of the stored conversation.
		if len(out.Messages) > 0 {
			last := out.Messages[len(out.Messages)-1]
			if !bytes.Equal(last.Raw(), stored[len(stored)-1]) && last.HasVisibleContent() {
				// the stored last may be hidden; find it
				found := false
				for j := len(stored) - 1; j >= 0; j-- {
					if bytes.Equal(stored[j], last.Raw()) {
						found = true
						break
					}
				}
				if !found {
					t.Fatal("last assembled message is not stored")
				}
			}
		}
	}
	// The budget from the runtime context is used when params give none.
	rc := &core.RuntimeContext{Values: map[string]json.RawMessage{"tokenBudget": json.RawMessage("500")}}
	out, err := e.Assemble(ctx, core.AssembleParams{SessionID: res.SessionID, RuntimeContext: rc})
	if err != nil {
		t.Fatal(err)
	}
	if out.EstimatedTokens > 500 || len(out.Messages) == 0 {
		t.Fatalf("runtime budget: %d tokens, %d messages", out.EstimatedTokens, len(out.Messages))
	}
}

func TestAssembleToolPairsAtTheCut(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	// One assistant turn with two calls and their two results, then a reply.
	ts := int64(1000)
	call2 := core.MustParseMessage(`{"role":"assistant","content":[{"type":"toolCall","id":"a","name":"ls","arguments":{}},{"type":"toolCall","id":"b","name":"ls","arguments":{"p":"x"}}],"stopReason":"toolUse","timestamp":1001}`)
	msgs := []core.Message{
		core.UserText("list", ts),
		call2,
		core.ToolResult("a", "ls", strings.Repeat("file ", 40), false, ts+2),
		core.ToolResult("b", "ls", strings.Repeat("dir ", 40), false, ts+3),
		core.AssistantText("two listings", ts+4),
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	counts := make([]int, len(msgs))
	for i, m := range msgs {
		counts[i] = core.CountMessage(e.tc, m)
	}
	// Budgets that cut after each result: the orphaned results are dropped.
	for _, b := range []int{counts[4], counts[4] + counts[3], counts[4] + counts[3] + counts[2]} {
		out, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", TokenBudget: b})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) != 1 || out.Messages[0].Text() != "two listings" {
			t.Fatalf("budget %d: %d messages", b, len(out.Messages))
		}
		if out.EstimatedTokens != counts[4] {
			t.Fatalf("budget %d: estimated %d", b, out.EstimatedTokens)
		}
	}
	out, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", TokenBudget: counts[4] + counts[3] + counts[2] + counts[1]})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 4 {
		t.Fatalf("with the call: %d messages", len(out.Messages))
	}
	checkPairs(t, out.Messages)
}

func TestAssembleDropsThinkingOnly(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	msgs := []core.Message{
		core.UserText("hi", 1),
		core.MustParseMessage(`{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"}],"timestamp":2}`),
		core.MustParseMessage(`{"role":"assistant","content":[],"timestamp":3}`),
		core.MustParseMessage(`{"role":"bashExecution","command":"ls","output":"x","exitCode":0,"excludeFromContext":true,"timestamp":4}`),
		core.AssistantText("hello", 5),
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	out, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 2 || out.Messages[0].Text() != "hi" || out.Messages[1].Text() != "hello" {
		t.Fatalf("assembled %d messages", len(out.Messages))
	}
	if n := len(storedMessages(t, e, "", "s")); n != 5 {
		t.Fatalf("stored %d", n)
	}
}

func TestAssemblePassThrough(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	var host []core.Message
	for i := 0; i < 10; i++ {
		host = append(host, turn(i)...)
	}
	out, err := e.Assemble(ctx, core.AssembleParams{SessionID: "never", Messages: host})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != len(host) {
		t.Fatalf("pass-through %d of %d", len(out.Messages), len(host))
	}
	budget := core.CountMessages(e.tc, host[len(host)-5:])
	out, err = e.Assemble(ctx, core.AssembleParams{SessionID: "never", Messages: host, TokenBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	if out.EstimatedTokens > budget || len(out.Messages) == 0 || len(out.Messages) > 5 {
		t.Fatalf("trimmed: %d messages, %d tokens (budget %d)", len(out.Messages), out.EstimatedTokens, budget)
	}
	checkPairs(t, out.Messages)
	if !bytes.Equal(out.Messages[len(out.Messages)-1].Raw(), host[len(host)-1].Raw()) {
		t.Fatal("pass-through did not keep the newest message")
	}
}

func TestAssembleAppendOnlyBetweenCompactions(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	var prev []core.Message
	var host []core.Message
	for i := 0; i < 60; i++ {
		tr := turn(i)
		host = append(host, tr...)
		if err := e.AfterTurn(ctx, core.AfterTurnParams{SessionID: "s", Messages: host, PrePromptMessageCount: len(host) - len(tr)}); err != nil {
			t.Fatal(err)
		}
		out, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", Messages: host, TokenBudget: 100000})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) != len(prev)+len(tr) {
			t.Fatalf("turn %d: %d messages, want %d", i, len(out.Messages), len(prev)+len(tr))
		}
		for j := range prev {
			if !bytes.Equal(out.Messages[j].Raw(), prev[j].Raw()) {
				t.Fatalf("turn %d: message %d of the prefix changed", i, j)
			}
		}
		prev = out.Messages
	}
	// A summary replacing a range is a compaction: the prefix changes once,
	// then grows append-only again.
	conv, err := e.Conversation(ctx, "", "s")
	if err != nil {
		t.Fatal(err)
	}
	items, _ := conv.Items(ctx)
	s := dag.Summary{ID: "sum-1", Kind: dag.KindLeaf, Text: "turns 0-4", Earliest: items[0].Timestamp, Latest: items[19].Timestamp, DescendantCount: 20}
	for _, it := range items[:20] {
		s.Sources = append(s.Sources, it.Ref)
	}
	s.Tokens = core.CountMessage(e.tc, RenderSummary(s))
	if err := conv.Replace(ctx, items[:20], s, dag.Item{Tokens: s.Tokens, Depth: 0, Timestamp: s.Latest}); err != nil {
		t.Fatal(err)
	}
	out, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", TokenBudget: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Messages[0].Raw(), RenderSummary(s).Raw()) || len(out.Messages) != len(prev)-19 {
		t.Fatalf("after replace: %d messages, first %.100s", len(out.Messages), out.Messages[0].Raw())
	}
}

func TestSystemPromptAddition(t *testing.T) {
	if got := SystemPromptAddition(nil); got != "" {
		t.Fatalf("no tools: %q", got)
	}
	got := SystemPromptAddition([]string{"read", ToolGrep})
	if !strings.Contains(got, ToolGrep) || strings.Contains(got, ToolExpand) || strings.Contains(got, ToolDescribe) {
		t.Fatalf("grep only: %q", got)
	}
	all := SystemPromptAddition([]string{ToolExpand, ToolDescribe, ToolGrep})
	for _, tool := range []string{ToolGrep, ToolDescribe, ToolExpand} {
		if !strings.Contains(all, tool) {
			t.Fatalf("all tools: %q lacks %s", all, tool)
		}
	}
	// Without tool search the text names no control the model does not have.
	for _, control := range []string{"tool_call", "tool_search", "deferred"} {
		if strings.Contains(all, control) {
			t.Fatalf("direct tools: %q mentions %s", all, control)
		}
	}
	e := openTest(t)
	ctx := context.Background()
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: turn(1)}); err != nil {
		t.Fatal(err)
	}
	out, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", AvailableTools: []string{ToolGrep}, TokenBudget: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if out.SystemPromptAddition != got {
		t.Fatalf("assemble addition %q", out.SystemPromptAddition)
	}
	if out.EstimatedTokens != core.CountMessages(e.tc, out.Messages)+e.tc.CountText(got) {
		t.Fatalf("estimate %d excludes the addition", out.EstimatedTokens)
	}
}

func TestReplaceConflict(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: turn(1)}); err != nil {
		t.Fatal(err)
	}
	conv, err := e.Conversation(ctx, "", "s")
	if err != nil {
		t.Fatal(err)
	}
	items, _ := conv.Items(ctx)
	s := dag.Summary{ID: "one", Kind: dag.KindLeaf, Text: "x", Sources: []dag.Ref{items[0].Ref, items[1].Ref}}
	if err := conv.Replace(ctx, items[:2], s, dag.Item{Tokens: 1}); err != nil {
		t.Fatal(err)
	}
	// The same range again: the items changed.
	s.ID = "two"
	if err := conv.Replace(ctx, items[:2], s, dag.Item{Tokens: 1}); !isConflict(err) {
		t.Fatalf("stale replace: %v", err)
	}
	// A non-contiguous range (an item skipped) is a conflict too.
	s.ID = "three"
	s.Sources = []dag.Ref{items[2].Ref}
	if err := conv.Replace(ctx, []dag.Item{items[2]}, s, dag.Item{Tokens: 1}); err != nil {
		t.Fatal(err)
	}
	now, _ := conv.Items(ctx)
	if len(now) != 3 || now[0].Ref.ID != "one" || now[1].Ref.ID != "three" || now[0].Pos != items[0].Pos || now[2].Pos != items[3].Pos {
		t.Fatalf("items after replace: %+v", now)
	}
	if _, err := conv.Summary(ctx, "missing"); !isNotFound(err) {
		t.Fatalf("missing summary: %v", err)
	}
	if txt, err := conv.MessageText(ctx, items[1].Ref.Seq); err != nil || !strings.HasPrefix(txt, "assistant: \n[tool call read(") {
		t.Fatalf("message text %q %v", txt, err)
	}
}
