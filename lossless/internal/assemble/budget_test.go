package assemble

import (
	"math"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

// openclawLimits is the runtimeSettings OpenClaw 2026.9.6 sends with an
// assemble (limits as its buildContextEngineRuntimeSettings makes them).
func openclawLimits(promptBudget int, maxOutput *int) *core.RuntimeSettings {
	host := "openclaw"
	return &core.RuntimeSettings{SchemaVersion: 1, Runtime: &core.RuntimeInfo{Host: &host},
		Limits: &core.RuntimeLimits{PromptTokenBudget: &promptBudget, MaxOutputTokens: maxOutput}}
}

// Budgets recorded from a gateway run of OpenClaw 2026.9.6 (model
// contextWindow 24000; see lossless/budget_test.go): the window, the
// turn's first assemble's budget and the assemble's before the model call.
const (
	recWindow  = 24000
	recFirst   = 13639
	recPerCall = 23974
)

// TestClassifyBudget: the two kinds of OpenClaw budget, told apart by the
// limits the runtime sends with them.
func TestClassifyBudget(t *testing.T) {
	reserve := 6000
	for _, tc := range []struct {
		name   string
		tb     int
		rs     *core.RuntimeSettings
		kind   BudgetKind
		window int
	}{
		{"no settings", 5000, nil, BudgetPlain, 0},
		{"first", recFirst, openclawLimits(recFirst, &reserve), BudgetTurnFirst, 0},
		{"first, no reserve", 366, openclawLimits(366, nil), BudgetTurnFirst, 0},
		{"per call", recPerCall, openclawLimits(recWindow, nil), BudgetPerCall, recWindow},
		{"limits under the budget", 9000, openclawLimits(8000, nil), BudgetPlain, 0},
	} {
		kind, w := ClassifyBudget(tc.tb, tc.rs)
		if kind != tc.kind || w != tc.window {
			t.Errorf("%s: kind %d window %d, want %d %d", tc.name, kind, w, tc.kind, tc.window)
		}
	}
}

// The host's arithmetic, as OpenClaw 2026.9.6 does it (OPENCLAW-RUNTIME.md
// §3b), in chars/4 tokens: the turn's first budget and the output cap its
// OpenAI-completions transport sends.
func hostFirstBudget(window, reserve, system, prompt int) int {
	return max(1, window-reserve-int(math.Ceil(1.2*float64(12+system+12+prompt))))
}

func transportCap(window, maxTokens int, parts ...int) int {
	sum := 0
	for _, p := range parts {
		sum += p
	}
	est := int(math.Ceil(float64(sum) * 1.25)) // ceil(chars/4 × 1.25), parts in chars/4 tokens
	return max(1, min(maxTokens, window-est-1))
}

// defaultTools is availableTools of a default OpenClaw 2026.9.6 agent with
// the plugin (tool search on: tool_search and tool_call among them), as
// e2e/openclaw/tools.test.mjs recorded it: 59 names, of which the request
// carries 15 schemas (3,003 chars/4 tokens) and the catalog the rest.
var defaultTools = strings.Fields(`ls read edit write apply_patch exec process openclaw sessions_yield lcm_grep lcm_describe lcm_expand tool_search tool_describe tool_call dashboard nodes mobile_ui automations sessions
	theme terminal portal message tts github_identity_status transcripts gateway plugins agents_list get_goal create_goal update_goal skill_workshop progress_card ask_user secrets sessions_list sessions_history sessions_search
	conversations_list conversations_send conversations_turn sessions_send sessions_spawn agents_wait subagents session_status web_search web_fetch browser canvas file_fetch dir_list dir_fetch file_write node_inference talk_voice tool_search_code`)

// TestRequestKeepsOutputCap replays the request the issue logged (window
// 24,000; system 7,626, tools 3,003 and context 8,883 chars/4 tokens:
// OpenClaw's transport sent max_completion_tokens 1) through the engine's
// budgets: the context the engine now allows leaves the model its whole
// output cap (1,024), with the tools' size configured and estimated; the
// old per-call budget would not.
func TestRequestKeepsOutputCap(t *testing.T) {
	const (
		window, reserve, maxTokens = 24000, 6000, 1024
		system, tools              = 7626, 3003
	)
	if got := transportCap(window, maxTokens, system, tools, 8883); got != 1 {
		t.Fatalf("the host model gives cap %d for the logged request, want 1", got)
	}
	prompt := strings.Repeat("note text ", 600) // 6,000 chars: 1,500 tokens
	p4 := core.Chars4{}.CountText(prompt)
	addition := SystemPromptAddition(defaultTools)
	a4 := core.Chars4{}.CountText(addition)
	first := hostFirstBudget(window, reserve, system, p4)
	for _, tc := range []struct {
		name    string
		cfg     Request
		cap     int // the hint (0: none)
		wantCap int
	}{
		{"tools configured", Request{ToolTokens: tools}, maxTokens, maxTokens},
		{"tools estimated", Request{}, maxTokens, maxTokens},
		{"cap configured", Request{OutputTokens: maxTokens}, 0, maxTokens},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBudgetTable(tc.cfg).Of("main", "s", "agent:main:s")
			// A turn before, so that the window is known at the first assemble.
			b.AssembleBudget(first, openclawLimits(first, ptr(reserve)), prompt, RequestHints{Available: defaultTools, Addition: a4})
			b.AssembleBudget(window-p4, openclawLimits(window, nil), prompt, RequestHints{})
			b.TurnBudget()
			got := b.AssembleBudget(first, openclawLimits(first, ptr(reserve)), prompt, RequestHints{OutputCap: tc.cap, Available: defaultTools, Addition: a4})
			if c := transportCap(window, maxTokens, system, a4, tools, got, p4); c != tc.wantCap {
				t.Errorf("first assemble: budget %d leaves the answer %d tokens, want %d", got, c, tc.wantCap)
			}
			pending := p4 + 40 // the prompt and a tool call's overhead
			perCall := b.AssembleBudget(window-pending, openclawLimits(window, nil), prompt, RequestHints{OutputCap: tc.cap})
			if c := transportCap(window, maxTokens, system, a4, tools, perCall, pending); c != tc.wantCap {
				t.Errorf("per-call assemble: budget %d leaves the answer %d tokens, want %d", perCall, c, tc.wantCap)
			}
			// Before #36 the per-call budget was the first budget and the
			// prompt again (the window less the host's learned share).
			old := (window - pending) - (window - first - p4)
			if c := transportCap(window, maxTokens, system, a4, tools, old, pending); c >= maxTokens {
				t.Errorf("the old budget %d would leave the cap whole (%d): the test proves nothing", old, c)
			}
			if perCall >= old {
				t.Errorf("per-call budget %d not under the old %d", perCall, old)
			}
		})
	}
}

// TestRequestFloor: where OpenClaw's own system prompt, tools and pending
// messages alone leave less than the output cap, the engine's context is
// at its floor (nothing beyond what the host appends itself).
func TestRequestFloor(t *testing.T) {
	const window, reserve, system = 16000, 4000, 9500
	b := NewBudgetTable(Request{ToolTokens: 3003}).Of("main", "s", "")
	prompt := "what did we decide?"
	p4 := core.Chars4{}.CountText(prompt)
	first := hostFirstBudget(window, reserve, system, p4)
	b.AssembleBudget(first, openclawLimits(first, ptr(reserve)), prompt, RequestHints{Available: defaultTools})
	got := b.AssembleBudget(window-p4, openclawLimits(window, nil), prompt, RequestHints{OutputCap: 1024})
	if got != 1 {
		t.Fatalf("per-call budget %d, want the floor 1 (system %d + tools 3,003 leave less than the cap in %d)", got, system, window)
	}
	if tb := b.TurnBudget(); tb != 1 {
		t.Fatalf("the turn's compaction budget %d, want 1", tb)
	}
	// A Go host (no OpenClaw limits) gets its budget as given.
	plain := NewBudgetTable(Request{}).Of("main", "g", "")
	if got := plain.AssembleBudget(5000, nil, prompt, RequestHints{OutputCap: 1024}); got != 5000 {
		t.Fatalf("plain budget %d, want 5000", got)
	}
}

func ptr(n int) *int { return &n }

// TestTurnBudgetIsTheTurnsSmallest: a host that says nothing of its limits
// (a Go host) gets its budgets as given; the turn's budget (what the
// compaction decision after the commit measures against) is the turn's
// smallest, and the next turn starts afresh; sessions are kept apart.
// Moved from package lossless, where the budgets came through Assemble.
func TestTurnBudgetIsTheTurnsSmallest(t *testing.T) {
	table := NewBudgetTable(Request{})
	b := table.Of("main", "sess-1", "")
	if got := b.TurnBudget(); got != 0 {
		t.Fatalf("turn budget %d before any assemble, want 0 (unknown)", got)
	}
	for _, tb := range []int{9000, 7000, 8000} {
		if got := table.Of("main", "sess-1", "").AssembleBudget(tb, nil, "a prompt", RequestHints{}); got != tb {
			t.Fatalf("a Go host's budget %d came back as %d", tb, got)
		}
	}
	table.Of("main", "sess-2", "").AssembleBudget(5000, nil, "", RequestHints{})
	if got := b.TurnBudget(); got != 7000 {
		t.Fatalf("turn budget %d, want the turn's smallest 7000", got)
	}
	table.Of("main", "sess-1", "").AssembleBudget(9500, nil, "", RequestHints{})
	if got := table.Of("main", "sess-1", "").TurnBudget(); got != 9500 {
		t.Fatalf("next turn's budget %d, want 9500", got)
	}
}
