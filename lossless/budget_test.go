package lossless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
)

// prose returns about n characters of English-like text (deterministic per
// seed): ~4.5 characters an o200k token, ~1.1 o200k tokens per chars/4
// token, as the notes of a real session.
func prose(n int, seed int64) string {
	words := strings.Fields("ledger pipeline gasket lattice harbor quarry mill spindle copper valve turbine " +
		"schedule inventory freight bracket furnace crate anvil rivet pallet conveyor the a of and to in " +
		"with for on by from its their this that inspects adjusts records measures stacks carefully daily")
	r := rand.New(rand.NewSource(seed))
	var sb strings.Builder
	for sb.Len() < n {
		sb.WriteString(words[r.Intn(len(words))])
		if r.Intn(12) == 0 {
			sb.WriteString(". ")
		} else {
			sb.WriteByte(' ')
		}
	}
	return sb.String()[:n]
}

// openclawLimits is the runtimeSettings OpenClaw 2026.9.6 sends with an
// assemble (limits as its buildContextEngineRuntimeSettings makes them).
func openclawLimits(promptBudget int, maxOutput *int) *core.RuntimeSettings {
	host := "openclaw"
	return &core.RuntimeSettings{SchemaVersion: 1, Runtime: &core.RuntimeInfo{Host: &host},
		Limits: &core.RuntimeLimits{PromptTokenBudget: &promptBudget, MaxOutputTokens: maxOutput}}
}

// A turn as the real runtime drives it, with the budgets recorded from a
// gateway run of OpenClaw 2026.9.6 (model contextWindow 24000, the
// e2e/openclaw gateway test's JSON-RPC log): the turn's first assemble
// gets 13,639 (the window minus the 6,000 output reserve and the system
// prompt and prompt), the assemble before the model call 23,974 (the
// window minus the pending user message only), commitTurn's runtime
// context says 24,000, and preflight compact gets 24,000 with the host's
// count 19,857, forced.
const (
	recWindow      = 24000
	recReserve     = 6000
	recFirst       = 13639
	recPerCall     = 23974
	recCompactCur  = 19857
	recPendingUser = recWindow - recPerCall
)

// heldFirst is the turn's first budget as the engine must hold it under
// OpenClaw 2026.9.6 when no model output cap is passed (the cap is then
// the turn's compaction reserve, at most 8,192) and no tools: OpenClaw
// netted first of the reserve and ceil(1.2 × (12 + system + 12 + prompt))
// in chars/4, and its transport sends the output cap
// min(cap, window − ceil(1.25 × (system + prompt + context)) − 1), so the
// context may take (window − cap − 1) / 1.25 − system − prompt, less the
// engine's 64 tokens of slack.
func heldFirst(window, reserve, first, prompt int) int {
	outCap := min(reserve, 8192)
	sys := int(math.Ceil(float64(window-reserve-first)/1.2)) - 24 - prompt
	room := int(float64(window-outCap-1)/1.25) - sys - prompt - 64
	return max(1, min(first, room))
}

// commitNote commits turn n of session: a user note of noteChars and a
// short answer.
func commitNote(t *testing.T, e *Engine, session string, n, noteChars int) {
	t.Helper()
	ts := int64(1_700_000_000_000 + n*10_000)
	p := core.CommitTurnParams{AdvancementKey: fmt.Sprintf("adv-%d", n), SessionID: session, SessionKey: "agent:main:" + session,
		Admission: core.AdmissionAnchor{EntryAnchor: core.EntryAnchor{SessionID: session, EntryID: fmt.Sprintf("u%d", n)},
			LogicalTurnID: fmt.Sprintf("turn-%d", n), Role: core.RoleUser},
		Terminal: core.EntryAnchor{SessionID: session, EntryID: fmt.Sprintf("a%d", n)},
		Messages: []core.Message{core.UserText(fmt.Sprintf("note %d: %s", n, prose(noteChars, int64(n))), ts),
			core.AssistantText(fmt.Sprintf("Noted, note %d.", n), ts+1)},
		RuntimeContext: &core.RuntimeContext{Values: map[string]json.RawMessage{
			"tokenBudget": json.RawMessage(fmt.Sprint(recWindow)), "modelContextWindow": json.RawMessage(fmt.Sprint(recWindow))}},
	}
	if _, err := e.CommitTurn(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// TestBudgetsFollowOpenClaw feeds the recorded budget sequence of a real
// turn: no assemble returns more than the budget the request really has,
// counted by the engine and by the host's chars/4 estimate; the per-call
// assemble loses the host's system prompt and reserve (learned from the
// turn's first assemble), so system prompt + context + pending stays
// within the window minus the reserve; the compaction decision after the
// commit measures against the first budget, not the window.
func TestBudgetsFollowOpenClaw(t *testing.T) {
	ctx := context.Background()
	off := false
	e := openTest(t, func(c *config.Config) { c.Tokenizer = core.EncodingO200k; c.Recall.Enabled = &off })
	// 12 turns of ~6 KB notes: ~18K o200k tokens, more than the first
	// budget, less than the window: without the learned share the per-call
	// assemble would fill the window.
	for n := 0; n < 12; n++ {
		commitNote(t, e, "s", n, 6000)
	}
	e.waitBackground()
	prompt := "What was in the third note?"
	reserve := recReserve
	first, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", SessionKey: "agent:main:s", TokenBudget: recFirst,
		Prompt: prompt, RuntimeSettings: openclawLimits(recFirst, &reserve)})
	if err != nil {
		t.Fatal(err)
	}
	if got := core.EstimateChars4(first.Messages); got > recFirst {
		t.Fatalf("first assemble: host estimate %d over its budget %d", got, recFirst)
	}
	if got := core.CountMessages(e.tc, first.Messages); got > recFirst {
		t.Fatalf("first assemble: engine count %d over its budget %d", got, recFirst)
	}
	perCall, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", SessionKey: "agent:main:s", TokenBudget: recPerCall,
		Prompt: prompt, Messages: first.Messages, RuntimeSettings: openclawLimits(recWindow, nil)})
	if err != nil {
		t.Fatal(err)
	}
	// The host's system prompt and prompt took recWindow-recReserve-recFirst
	// of the first budget's window; with the pending user message after the
	// context, the request must stay within the window minus the reserve.
	sysAndPrompt := recWindow - recReserve - recFirst
	request := sysAndPrompt + core.EstimateChars4(perCall.Messages) + recPendingUser
	if request > recWindow-recReserve+(core.Chars4{}).CountText(prompt) {
		t.Fatalf("per-call assemble: request of %d tokens (host estimate) over the window %d minus the reserve %d", request, recWindow, recReserve)
	}
	if len(perCall.Messages) == 0 {
		t.Fatal("per-call assemble returned nothing though the first budget holds a context")
	}
	// The compaction decision after the commit: 0.75 × the first budget.
	commitNote(t, e, "s", 12, 6000)
	e.waitBackground()
	conv, err := e.Conversation(ctx, "", "s")
	if err != nil {
		t.Fatal(err)
	}
	bg, ok := e.lastBackground(conv)
	if !ok || bg.Err != nil {
		t.Fatalf("no background compaction after the commit: %+v %v", bg, ok)
	}
	held := heldFirst(recWindow, recReserve, recFirst, (core.Chars4{}).CountText(prompt))
	if want := dagGoal(held); bg.Result.Goal != want || held >= recFirst {
		t.Fatalf("background compaction aimed at %d, want %d (0.75 × the turn's first budget %d held to the request's room: %d)", bg.Result.Goal, want, recFirst, held)
	}
	items, err := conv.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tok := itemTokens(items); tok > recFirst {
		t.Fatalf("after the background compaction the context holds %d tokens, over the first budget %d", tok, recFirst)
	}
	// A small budget gets small summaries: each at most a quarter of the
	// goal (plus its rendering), so summaries and the newest messages fit
	// a request side by side.
	comp, err := e.Compactor()
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.IsSummary() && it.Tokens > dagGoal(recFirst)/4+comp.Overhead()+8 {
			t.Fatalf("a summary of %d tokens for a goal of %d", it.Tokens, dagGoal(recFirst))
		}
	}
}

// TestCompactTakesOffTheHostShare: OpenClaw's preflight compact passes the
// window itself (24,000) as tokenBudget; once the engine knows the host's
// share it compacts to the turn's first budget, so that compaction is not
// "nothing to compact" while the next request would overflow.
func TestCompactTakesOffTheHostShare(t *testing.T) {
	ctx := context.Background()
	off := false
	e := openTest(t, func(c *config.Config) {
		c.Tokenizer = core.EncodingO200k
		c.Recall.Enabled = &off
		c.ContextThreshold = 0.99 // background compaction out of the way: the compact call must do it
	})
	for n := 0; n < 16; n++ {
		commitNote(t, e, "s", n, 6000)
	}
	e.waitBackground()
	reserve := recReserve
	if _, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", SessionKey: "agent:main:s", TokenBudget: recFirst,
		Prompt: "next", RuntimeSettings: openclawLimits(recFirst, &reserve)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", SessionKey: "agent:main:s", TokenBudget: recPerCall,
		Prompt: "next", RuntimeSettings: openclawLimits(recWindow, nil)}); err != nil {
		t.Fatal(err)
	}
	// Overflow recovery: not forced, and the host's count unknown.
	res, err := e.Compact(ctx, core.CompactParams{SessionID: "s", SessionKey: "agent:main:s", TokenBudget: recWindow,
		CompactionTarget: core.CompactionTargetBudget, RuntimeSettings: openclawLimits(recWindow, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || !res.OK {
		t.Fatalf("compact at the window's budget: %+v", res)
	}
	items := contextItems(t, e, "s")
	want := recFirst - (core.Chars4{}).CountText("next")
	if tok := itemTokens(items); tok > want {
		t.Fatalf("compact left %d tokens of context, over the first budget net of the prompt %d", tok, want)
	}
	// Overflow recovery after a request the model refused at 31,313 tokens
	// (the largest): the context loses at least the excess more.
	const overflowed = 31313
	if _, err := e.Compact(ctx, core.CompactParams{SessionID: "s", SessionKey: "agent:main:s", TokenBudget: recWindow,
		CurrentTokenCount: overflowed, CompactionTarget: core.CompactionTargetBudget, RuntimeSettings: openclawLimits(recWindow, nil)}); err != nil {
		t.Fatal(err)
	}
	items = contextItems(t, e, "s")
	if tok, lim := itemTokens(items), want-(overflowed-recWindow); tok > lim {
		t.Fatalf("overflow recovery left %d tokens of context, want at most %d", tok, lim)
	}
}

// TestTinyBudget: with contextWindow 16000 OpenClaw's first assemble got a
// budget of 366 tokens (system prompt and tools take the rest). The engine
// never returns more than that, by either count, and says what it cut.
func TestTinyBudget(t *testing.T) {
	ctx := context.Background()
	off := false
	e := openTest(t, func(c *config.Config) { c.Tokenizer = core.EncodingO200k; c.Recall.Enabled = &off })
	for n := 0; n < 4; n++ {
		commitNote(t, e, "s", n, 3000)
	}
	e.waitBackground()
	reserve := 6000
	res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", SessionKey: "agent:main:s", TokenBudget: 366,
		Prompt: "hello", RuntimeSettings: openclawLimits(366, &reserve)})
	if err != nil {
		t.Fatal(err)
	}
	if got := core.EstimateChars4(res.Messages) + (core.Chars4{}).CountText(res.SystemPromptAddition); got > 366 {
		t.Fatalf("host estimate %d over the budget 366", got)
	}
	if res.Cut == nil || res.Cut.Reason == "" {
		t.Fatalf("no cut reported: %+v", res)
	}
	// The per-call assemble after it: the window minus the pending user
	// message; the host's share is the whole window but 366.
	res, err = e.Assemble(ctx, core.AssembleParams{SessionID: "s", SessionKey: "agent:main:s", TokenBudget: 15990,
		Prompt: "hello", Messages: res.Messages, RuntimeSettings: openclawLimits(16000, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if got := core.EstimateChars4(res.Messages); got > 366 {
		t.Fatalf("per-call host estimate %d over the first budget 366", got)
	}
}

// dagGoal is the background compaction's goal at budget b.
func dagGoal(b int) int { th := config.DefaultContextThreshold; return int(th * float64(b)) }

// TestFloorReferencesToolResults: when the budget cannot hold the current
// turn (its user message, a tool call and a large result), the result is
// shown by its reference (the stored original's id: lcm_expand returns
// it) so that the window keeps the user message and the call/result pair;
// the cut says so.
func TestFloorReferencesToolResults(t *testing.T) {
	ctx := context.Background()
	off := false
	e := openTest(t, func(c *config.Config) { c.Tokenizer = core.EncodingO200k; c.Recall.Enabled = &off })
	commitNote(t, e, "s", 0, 3000)
	ts := int64(1_700_001_000_000)
	big := prose(24000, 7)
	p := core.CommitTurnParams{AdvancementKey: "adv-read", SessionID: "s",
		Messages: []core.Message{core.UserText("please read big.txt", ts), core.AssistantToolCall("call_1", "read", map[string]any{"path": "big.txt"}, ts+1),
			core.ToolResult("call_1", "read", big, false, ts+2)}}
	if _, err := e.CommitTurn(ctx, p); err != nil {
		t.Fatal(err)
	}
	res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", TokenBudget: 1500})
	if err != nil {
		t.Fatal(err)
	}
	n := len(res.Messages)
	if n < 3 || res.Messages[n-3].Role() != core.RoleUser || res.Messages[n-1].Role() != core.RoleToolResult {
		t.Fatalf("window of %d messages, want the user message, the call and the result's reference last", n)
	}
	ref := res.Messages[n-1]
	if !strings.Contains(ref.Text(), LargeRefPrefix) || ref.ToolCallID() != "call_1" {
		t.Fatalf("the result is not its reference: %.200s", ref.Raw())
	}
	if got := core.CountMessages(e.tc, res.Messages); got > 1500 {
		t.Fatalf("window of %d tokens over the budget 1500", got)
	}
	if res.Cut == nil || res.Cut.References != 1 {
		t.Fatalf("cut not reported: %+v", res.Cut)
	}
	// The reference's id gives back the original.
	conv, err := e.Conversation(ctx, "", "s")
	if err != nil {
		t.Fatal(err)
	}
	text := ref.Text()
	key := text[strings.Index(text, LargeRefPrefix)+len(LargeRefPrefix):][:32]
	if _, m, err := conv.MessageByKey(ctx, key); err != nil || string(m.Raw()) != string(p.Messages[2].Raw()) {
		t.Fatalf("reference %s: %v", key, err)
	}
	// With room for it, the result itself.
	res, err = e.Assemble(ctx, core.AssembleParams{SessionID: "s", TokenBudget: 20000})
	if err != nil {
		t.Fatal(err)
	}
	if last := res.Messages[len(res.Messages)-1]; strings.Contains(last.Text(), LargeRefPrefix) {
		t.Fatal("a result that fits is shown by its reference")
	}
}

// recordedCall is one call of lossless/testdata/openclaw-budgets.json: the
// budgets the engine received in a real long session under OpenClaw
// 2026.9.6 with default settings (e2e/openclaw/long-session.test.mjs with
// LOSSLESS_E2E_BUDGETS_OUT).
type recordedCall struct {
	Call              string `json:"call"`
	Turn              int    `json:"turn"`
	TokenBudget       int    `json:"tokenBudget"`
	CurrentTokenCount int    `json:"currentTokenCount"`
	Force             bool   `json:"force"`
	Limits            *struct {
		PromptTokenBudget *int `json:"promptTokenBudget"`
		MaxOutputTokens   *int `json:"maxOutputTokens"`
	} `json:"limits"`
}

// TestRecordedBudgetSequence replays the exact budget sequences of the
// 24K and 16K runs against turns like theirs (3-8 KB notes, a 6-11 KB
// read result every 5th turn): every assemble fits the budget its request
// really has, by the host's chars/4 count (the turn's first budget; before
// a model call, that budget minus the pending messages); every compact
// ends under its goal or says the context is at its floor; the background
// compaction after each commit aims at 0.75 × the turn's first budget.
func TestRecordedBudgetSequence(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "openclaw-budgets.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Runs map[string][]recordedCall `json:"runs"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	for window, calls := range rec.Runs {
		t.Run(window, func(t *testing.T) {
			ctx := context.Background()
			off := false
			e := openTest(t, func(c *config.Config) { c.Tokenizer = core.EncodingO200k; c.Recall.Enabled = &off })
			key := "agent:main:long-" + window
			first, w, reserve := 0, 0, 0
			var msgs []core.Message
			for i, c := range calls {
				where := fmt.Sprintf("call %d (%s, turn %d, budget %d)", i, c.Call, c.Turn, c.TokenBudget)
				switch c.Call {
				case "assemble":
					rs := openclawLimits(*c.Limits.PromptTokenBudget, c.Limits.MaxOutputTokens)
					allowed := c.TokenBudget
					if kind, win := classifyBudget(c.TokenBudget, rs); kind == budgetTurnFirst {
						first = c.TokenBudget
						if c.Limits.MaxOutputTokens != nil {
							reserve = *c.Limits.MaxOutputTokens
						}
					} else if kind == budgetPerCall {
						w = win
						allowed = c.TokenBudget - (w - first) // the first budget minus the pending messages
					}
					res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s-" + window, SessionKey: key, TokenBudget: c.TokenBudget,
						Messages: msgs, RuntimeSettings: rs})
					if err != nil {
						t.Fatalf("%s: %v", where, err)
					}
					got := core.EstimateChars4(res.Messages) + (core.Chars4{}).CountText(res.SystemPromptAddition)
					if got > max(1, allowed) {
						t.Fatalf("%s: the host counts %d tokens, over the %d the request has", where, got, allowed)
					}
					if c.Limits.MaxOutputTokens != nil {
						msgs = res.Messages
					}
				case "commitTurn":
					ts := int64(1_700_000_000_000 + c.Turn*100_000)
					turn := []core.Message{core.UserText(fmt.Sprintf("note %d: %s", c.Turn, prose(3000+(c.Turn*1237)%5000, int64(c.Turn))), ts)}
					if c.Turn%5 == 0 {
						id := fmt.Sprintf("call_%d", c.Turn)
						turn = append(turn, core.AssistantToolCall(id, "read", map[string]any{"path": "notes.txt"}, ts+1),
							core.ToolResult(id, "read", prose(6000+(c.Turn*977)%5000, int64(100+c.Turn)), false, ts+2))
					}
					turn = append(turn, core.AssistantText(fmt.Sprintf("Noted (%d).", c.Turn), ts+3))
					if conv, err := e.ConversationFor(ctx, "", "s-"+window, key); err == nil {
						e.compaction.last.Remove(conv.id) // this commit's own result only
					}
					p := core.CommitTurnParams{AdvancementKey: fmt.Sprintf("adv-%s-%d", window, c.Turn), SessionID: "s-" + window, SessionKey: key,
						Messages: turn, RuntimeContext: &core.RuntimeContext{Values: map[string]json.RawMessage{"tokenBudget": json.RawMessage(fmt.Sprint(c.TokenBudget))}}}
					if _, err := e.CommitTurn(ctx, p); err != nil {
						t.Fatalf("%s: %v", where, err)
					}
					e.waitBackground()
					conv, err := e.ConversationFor(ctx, "", "s-"+window, key)
					if err != nil {
						t.Fatal(err)
					}
					bg, ok := e.lastBackground(conv)
					if held := heldFirst(w, reserve, first, 0); ok && bg.Result.Goal != 0 && bg.Result.Goal != dagGoal(held) {
						t.Fatalf("%s: background compaction aimed at %d, want 0.75 × the turn's first budget %d held to the request's room (%d)", where, bg.Result.Goal, first, held)
					}
					// Its summaries are small enough to sit beside the newest
					// messages in a request: each at most a quarter of the goal.
					for _, id := range bg.Result.NewSummaryIDs {
						sum, err := conv.Summary(ctx, id)
						if err != nil {
							t.Fatal(err)
						}
						comp, err := e.Compactor()
						if err != nil {
							t.Fatal(err)
						}
						if lim := bg.Result.Goal/4 + comp.Overhead() + 16; bg.Result.Goal >= 400 && sum.Tokens > lim {
							t.Fatalf("%s: summary %s of %d tokens for a goal of %d", where, id, sum.Tokens, bg.Result.Goal)
						}
					}
				case "compact":
					res, err := e.Compact(ctx, core.CompactParams{SessionID: "s-" + window, SessionKey: key, TokenBudget: c.TokenBudget,
						CurrentTokenCount: c.CurrentTokenCount, Force: c.Force, CompactionTarget: core.CompactionTargetBudget,
						RuntimeSettings: openclawLimits(c.TokenBudget, nil)})
					if errors.Is(err, core.ErrUnknownSession) {
						continue
					}
					if err != nil {
						t.Fatalf("%s: %v", where, err)
					}
					var d orchestrate.CompactDetails
					if err := json.Unmarshal(res.Result.Details, &d); err != nil {
						t.Fatal(err)
					}
					if d.ContextTokensAfter > d.Goal && !d.TailTooLarge {
						t.Fatalf("%s: the context holds %d tokens after, over the goal %d, and it is not at its floor: %s", where, d.ContextTokensAfter, d.Goal, res.Reason)
					}
					if !res.OK && !strings.Contains(res.Reason, "floor") {
						t.Fatalf("%s: not ok without saying why: %+v", where, res)
					}
					if first > 0 && w > 0 && d.Goal > first+1 {
						t.Fatalf("%s: compact aimed at %d, more than the turn's first budget %d", where, d.Goal, first)
					}
				}
			}
		})
	}
}

// TestCutKeepsLeadingSummaries: when a request's budget cannot hold the
// whole context (OpenClaw's per-call budget minus a large pending
// message), the window keeps the context's leading summaries — they stand
// for everything older — ahead of the newest items that fit beside them,
// instead of dropping them first, by the engine's count and by the host's.
func TestCutKeepsLeadingSummaries(t *testing.T) {
	ctx := context.Background()
	e := cutTestEngine(t)
	for n := 0; n < 10; n++ {
		commitNote(t, e, "s", n, 4000)
	}
	e.waitBackground()
	if _, err := e.Compact(ctx, core.CompactParams{SessionID: "s", TokenBudget: 3000, Force: true}); err != nil {
		t.Fatal(err)
	}
	for n := 10; n < 16; n++ {
		commitNote(t, e, "s", n, 4000)
	}
	e.waitBackground()
	items := contextItems(t, e, "s")
	if !items[0].IsSummary() {
		t.Fatal("no leading summary after the compaction")
	}
	budget := itemTokens(items) / 2
	for _, rs := range []*core.RuntimeSettings{nil, openclawLimits(budget, nil)} {
		res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", SessionKey: "agent:main:s", TokenBudget: budget, RuntimeSettings: rs})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := renderedSummaryID(res.Messages[0]); !ok {
			t.Fatalf("host %v: a cut window lost the leading summary: starts with %.100s", rs != nil, res.Messages[0].Raw())
		}
		last := res.Messages[len(res.Messages)-1]
		if !strings.Contains(last.Text(), "Noted, note 15") {
			t.Fatalf("host %v: the newest message is not last: %.100s", rs != nil, last.Raw())
		}
		if got := core.CountMessages(e.tc, res.Messages); got > budget {
			t.Fatalf("host %v: %d tokens over the budget %d", rs != nil, got, budget)
		}
		if rs != nil && core.EstimateChars4(res.Messages) > budget {
			t.Fatalf("the host counts %d tokens, over the budget %d", core.EstimateChars4(res.Messages), budget)
		}
		if res.Cut == nil {
			t.Fatal("the cut is not reported")
		}
	}
}

// TestCutKeepsTheLeadingSummariesThatFit: when the context's leading
// summaries together take more than half a cut window's budget (a
// condensation not yet run, a small per-call budget: the read turn of the
// real-OpenClaw long session), the window keeps those that fit, oldest
// first, instead of dropping them all: once a summary reached the model
// every later request holds one (#8). The cut says how many it left out.
func TestCutKeepsTheLeadingSummariesThatFit(t *testing.T) {
	ctx := context.Background()
	e, n, items, lead := sessionWithLeadingSummaries(t, 2000)
	sum := 0
	for _, k := range lead {
		sum += k
	}
	// Half the budget holds all but the newest leading summary; the
	// rest of the context is far more than the budget.
	budget := 2 * (sum - lead[len(lead)-1])
	if rest := itemTokens(items) - sum; rest <= budget {
		t.Fatalf("the raw context (%d tokens) fits the budget %d: no cut to test", rest, budget)
	}
	t.Logf("leading summaries %v (%d tokens), budget %d", lead, sum, budget)
	res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", SessionKey: "agent:main:s", TokenBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	var kept int
	for _, m := range res.Messages {
		if _, ok := renderedSummaryID(m); ok {
			kept++
		}
	}
	if kept != len(lead)-1 {
		t.Fatalf("the cut window holds %d of the %d leading summaries, want the %d that fit half the budget", kept, len(lead), len(lead)-1)
	}
	if _, ok := renderedSummaryID(res.Messages[0]); !ok {
		t.Fatalf("the window does not start with a summary: %.100s", res.Messages[0].Raw())
	}
	if last := res.Messages[len(res.Messages)-1]; !strings.Contains(last.Text(), fmt.Sprintf("Noted, note %d", n-1)) {
		t.Fatalf("the newest message is not last: %.100s", last.Raw())
	}
	if got := core.CountMessages(e.tc, res.Messages); got > budget {
		t.Fatalf("%d tokens over the budget %d", got, budget)
	}
	if res.Cut == nil || !strings.Contains(res.Cut.Reason, "1 of the context's leading summaries") {
		t.Fatalf("the cut does not say a leading summary was left out: %+v", res.Cut)
	}
}

// sessionWithLeadingSummaries commits rounds of notes to session "s", each
// compacted at a budget its leaf pass meets (no condensation): leaf
// summaries side by side at the context's start, then raw notes; the last
// note has lastChars characters. It returns the engine, the notes
// committed, the context's items and the leading summaries' tokens (at
// least two).
func sessionWithLeadingSummaries(t *testing.T, lastChars int) (*Engine, int, []dag.Item, []int) {
	t.Helper()
	ctx := context.Background()
	e := cutTestEngine(t)
	n := 0
	for round := 0; round < 3; round++ {
		for k := 0; k < 6; k++ {
			commitNote(t, e, "s", n, 2000)
			n++
		}
		e.waitBackground()
		if _, err := e.Compact(ctx, core.CompactParams{SessionID: "s", TokenBudget: 6000, Force: true}); err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; k < 6; k++ {
		chars := 2000
		if k == 5 {
			chars = lastChars
		}
		commitNote(t, e, "s", n, chars)
		n++
	}
	e.waitBackground()
	items := contextItems(t, e, "s")
	var lead []int
	for _, it := range items {
		if !it.IsSummary() {
			break
		}
		lead = append(lead, it.Tokens)
	}
	if len(lead) < 2 {
		t.Fatalf("%d leading summaries after three compactions: the test sets nothing up", len(lead))
	}
	return e, n, items, lead
}

// TestCutKeepsASummaryLargerThanHalf: when no leading summary fits half a
// cut window's budget, the smallest is kept if it fits beside the current
// turn (the newest user message and its reply): a window never goes
// without a summary while one fits (#8; a condensed summary of 2,379
// tokens in a per-call budget of 3,442 under OpenClaw).
func TestCutKeepsASummaryLargerThanHalf(t *testing.T) {
	ctx := context.Background()
	e, n, items, lead := sessionWithLeadingSummaries(t, 100)
	smallest := slices.Min(lead)
	budget := 2*smallest - 2 // half of it holds none
	if rest := itemTokens(items) - smallest; rest <= budget {
		t.Fatalf("the context (%d tokens) fits the budget %d: no cut to test", rest, budget)
	}
	res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", SessionKey: "agent:main:s", TokenBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	var kept []int
	for _, m := range res.Messages {
		if _, ok := renderedSummaryID(m); ok {
			kept = append(kept, core.CountMessage(e.tc, m))
		}
	}
	if len(kept) != 1 {
		t.Fatalf("the cut window (budget %d, leading summaries %v) holds %d summaries, want the smallest alone", budget, lead, len(kept))
	}
	if last := res.Messages[len(res.Messages)-1]; !strings.Contains(last.Text(), fmt.Sprintf("Noted, note %d", n-1)) {
		t.Fatalf("the newest message is not last: %.100s", last.Raw())
	}
	if got := core.CountMessages(e.tc, res.Messages); got > budget {
		t.Fatalf("%d tokens over the budget %d", got, budget)
	}
}

// cutTestEngine opens an engine for the cut-window tests: exact o200k
// counts, recall off, compaction only when asked.
func cutTestEngine(t *testing.T) *Engine {
	t.Helper()
	off := false
	return openTest(t, func(c *config.Config) {
		c.Tokenizer = core.EncodingO200k
		c.Recall.Enabled = &off
		c.ContextThreshold = 0.99
	})
}

// contextItems returns the context items of session.
func contextItems(t *testing.T, e *Engine, session string) []dag.Item {
	t.Helper()
	ctx := context.Background()
	conv, err := e.Conversation(ctx, "", session)
	if err != nil {
		t.Fatal(err)
	}
	items, err := conv.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// TestModelMaxTokensFromHost: the model's output cap the plugin passes
// (runtimeContext.modelMaxTokens, from OpenClaw's config) is what every
// request keeps free: a larger cap leaves the context less, and each
// context leaves its cap whole as OpenClaw's transport counts the request
// (1.25 × chars/4 of system prompt, context and pending messages; no tools
// in this call).
func TestModelMaxTokensFromHost(t *testing.T) {
	ctx := context.Background()
	off := false
	e := openTest(t, func(c *config.Config) { c.Tokenizer = core.EncodingO200k; c.Recall.Enabled = &off })
	prompt := "What was in the third note?"
	p4 := (core.Chars4{}).CountText(prompt)
	system := int(math.Ceil(float64(recWindow-recReserve-recFirst)/1.2)) - 24 - p4
	sizes := map[int]int{}
	for _, outCap := range []int{1024, 5000} {
		session := fmt.Sprint("cap-", outCap)
		for n := 0; n < 12; n++ {
			commitNote(t, e, session, n, 6000)
		}
		e.waitBackground()
		rc := &core.RuntimeContext{Values: map[string]json.RawMessage{"modelMaxTokens": json.RawMessage(fmt.Sprint(outCap))}}
		reserve := recReserve
		first, err := e.Assemble(ctx, core.AssembleParams{SessionID: session, SessionKey: "agent:main:" + session, TokenBudget: recFirst,
			Prompt: prompt, RuntimeSettings: openclawLimits(recFirst, &reserve), RuntimeContext: rc})
		if err != nil {
			t.Fatal(err)
		}
		perCall, err := e.Assemble(ctx, core.AssembleParams{SessionID: session, SessionKey: "agent:main:" + session, TokenBudget: recWindow - p4,
			Prompt: prompt, Messages: first.Messages, RuntimeSettings: openclawLimits(recWindow, nil), RuntimeContext: rc})
		if err != nil {
			t.Fatal(err)
		}
		context4 := core.EstimateChars4(perCall.Messages)
		est := int(math.Ceil(1.25 * float64(system+context4+p4)))
		if left := recWindow - est - 1; left < outCap {
			t.Errorf("cap %d: context of %d tokens leaves the answer %d", outCap, context4, left)
		}
		if len(perCall.Messages) == 0 {
			t.Errorf("cap %d: no context at all", outCap)
		}
		sizes[outCap] = context4
	}
	if sizes[5000] >= sizes[1024] {
		t.Fatalf("a cap of 5,000 left the context %d tokens, a cap of 1,024 %d: the cap passed is not used", sizes[5000], sizes[1024])
	}
}
