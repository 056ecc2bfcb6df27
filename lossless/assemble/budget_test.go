package assemble

import (
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
