package lossless

import (
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/assemble"
)

// Names the tests of this package use for what moved to lossless/assemble.

type budgetKind = assemble.BudgetKind

const (
	budgetPlain     = assemble.BudgetPlain
	budgetTurnFirst = assemble.BudgetTurnFirst
	budgetPerCall   = assemble.BudgetPerCall
)

func classifyBudget(tb int, rs *core.RuntimeSettings) (budgetKind, int) {
	return assemble.ClassifyBudget(tb, rs)
}

func dropLeadingToolResults(msgs []core.Message) ([]core.Message, []core.Message) {
	return assemble.DropLeadingToolResults(msgs)
}
