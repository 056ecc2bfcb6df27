package lossless

import (
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/assemble"
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

// asmCacheBytes returns the bytes the cached per-conversation state is
// counted at.
func (e *Engine) asmCacheBytes() int64 { return e.lru.Bytes() }

// cachedStates returns how many conversations have state in memory.
func (e *Engine) cachedStates() int { return e.lru.Len() }
