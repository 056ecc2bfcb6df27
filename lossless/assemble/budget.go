package assemble

import (
	"fmt"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/recall"
)

// Budgets as the host gives them, and the budget each call really has.
//
// OpenClaw 2026.9.6 gives a turn's assembles two kinds of budget
// (OPENCLAW-RUNTIME.md §3, read from its code):
//
//   - the turn's first assemble (before the prompt): the model's window
//     minus the output reserve, the system prompt and the prompt, by the
//     host's own estimate; its runtimeSettings.limits say
//     {promptTokenBudget: that budget, maxOutputTokens: the reserve};
//   - the assemble before each model call of the tool loop: the window
//     minus the turn's pending messages only (the user message, tool calls
//     and results), NOT minus the system prompt or the reserve; its limits
//     say {promptTokenBudget: the window, maxOutputTokens: null}.
//
// Filling the second kind overflows the model by the system prompt (the
// request is system prompt + assembled + pending). So the engine learns
// the host's own share from the first kind — window − first budget −
// prompt is the system prompt and reserve — and takes it off every later
// budget of the host's window figure: the per-call assembles, and compact,
// which OpenClaw calls with the window itself as tokenBudget. The
// compaction decision after a committed turn measures against the turn's
// first budget (the most context a request of the next turn can hold
// before its own pending messages), not against the larger figures.
//
// Hosts that say nothing of their limits (a Go host, the CLI) get their
// budget as given; the turn's compaction budget is then the smallest of
// its assembles.

// BudgetKind classifies an assemble's budget.
type BudgetKind int

const (
	// BudgetPlain: the host says nothing of its limits; the budget is the
	// call's own.
	BudgetPlain BudgetKind = iota
	// BudgetTurnFirst: OpenClaw's first assemble of a turn, net of the
	// host's prompt and output reserve.
	BudgetTurnFirst
	// BudgetPerCall: OpenClaw's assemble before a model call, net of the
	// pending messages only; limits.promptTokenBudget is the window.
	BudgetPerCall
)

// ClassifyBudget returns the kind of an assemble's budget tb and, for
// BudgetPerCall, the host's window figure.
func ClassifyBudget(tb int, rs *core.RuntimeSettings) (BudgetKind, int) {
	if rs == nil || rs.Limits == nil || rs.Limits.PromptTokenBudget == nil || tb <= 0 {
		return BudgetPlain, 0
	}
	ptb := *rs.Limits.PromptTokenBudget
	switch {
	case rs.Limits.MaxOutputTokens != nil || ptb == tb:
		return BudgetTurnFirst, 0
	case ptb > tb:
		return BudgetPerCall, ptb
	}
	return BudgetPlain, 0
}

// hostCounts reports whether the call comes from OpenClaw, whose budgets
// are counted with its own chars/4 estimate (core.Chars4): the assembled
// context must fit that count as well as the engine's.
func hostCounts(rs *core.RuntimeSettings) bool {
	return rs != nil && rs.Runtime != nil && rs.Runtime.Host != nil && *rs.Runtime.Host == "openclaw"
}

// unknownOverheadShare is the share of the host's window kept for the
// host's own prompt and reserve on a per-call budget when the engine has
// not seen the turn's first assemble (a restarted engine process).
const unknownOverheadShare = 0.5

// HostBudgets is what a session's assembles told of the host's budgets.
// Its own lock: assembles, commits and compactions of the session read and
// write it concurrently.
type HostBudgets struct {
	mu sync.Mutex
	// open is true from a turn's first assemble to its commit.
	open bool
	// first is the budget of the latest turn-first assemble (0: none
	// seen), prompt the host's estimate of that turn's prompt.
	first, prompt int
	// window is the host's window figure, last seen (0: unknown).
	window int
	// smallest is the smallest budget of the open turn's assembles, for
	// hosts that say nothing of their limits (0: none).
	smallest int
}

// hostShare returns the tokens the host adds besides the context and the
// turn's pending messages (system prompt, tools, output reserve), learned
// from a turn-first assemble and the host's window; ok is false when the
// engine has not seen both.
func (b *HostBudgets) hostShare() (int, bool) {
	if b.first <= 0 || b.window <= 0 {
		return 0, false
	}
	share := b.window - b.first - b.prompt
	if share < 0 {
		share = 0
	}
	return share, true
}

// AssembleBudget notes an assemble's budget and returns the budget the
// call really has: tb itself, except on a per-call budget, where it is the
// host's window minus its pending messages (what tb is) minus the host's
// share (system prompt and reserve, learned from the turn's first
// assemble). A result under 1 is 1: a budget that holds nothing.
func (b *HostBudgets) AssembleBudget(tb int, rs *core.RuntimeSettings, prompt string) int {
	kind, window := ClassifyBudget(tb, rs)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		b.open, b.smallest = true, 0
	}
	if b.smallest <= 0 || tb < b.smallest {
		b.smallest = tb
	}
	switch kind {
	case BudgetTurnFirst:
		b.first, b.prompt = tb, core.Chars4{}.CountText(prompt)
		return tb
	case BudgetPerCall:
		b.window = window
		share, ok := b.hostShare()
		if !ok {
			share = int(unknownOverheadShare * float64(window))
		}
		return max(1, tb-share)
	}
	return tb
}

// NoteWindow records the host's window figure from a call that carries it
// (commitTurn's runtimeContext.tokenBudget, a compact's tokenBudget when its
// limits name it as the prompt budget).
func (b *HostBudgets) NoteWindow(w int) {
	if w <= 0 {
		return
	}
	b.mu.Lock()
	b.window = w
	b.mu.Unlock()
}

// TurnBudget closes the turn (the next assemble starts a new one) and
// returns the budget its compaction decision measures against: the turn's
// first budget (OpenClaw), else the smallest budget of its assembles, else
// 0 (unknown: the caller falls back to the runtime context's).
func (b *HostBudgets) TurnBudget() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open = false
	if b.first > 0 {
		return b.first
	}
	return b.smallest
}

// CompactBudget returns the budget a compact call really has: tb minus the
// host's share when tb is the host's window figure (OpenClaw passes the
// window itself) and the share is known; ok is false when it is not (the
// caller then estimates the host's share from currentTokenCount).
func (b *HostBudgets) CompactBudget(tb int) (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	share, ok := b.hostShare()
	if !ok || tb < b.window {
		return tb, false
	}
	return max(1, tb-share), true
}

// maxBudgetSessions bounds the sessions whose budgets the engine keeps (a
// few hundred bytes each); the least recently used are forgotten, and then
// act as a restarted engine's (unknownOverheadShare).
const maxBudgetSessions = 4096

// BudgetTable keeps each session's HostBudgets, by agent and session key
// (else session id): a session's first turn has its budgets noted before
// its conversation exists, and they outlive the conversation's cached
// state.
type BudgetTable struct {
	mu    sync.Mutex
	cache *lru.Cache[string, *HostBudgets]
}

// NewBudgetTable returns an empty table, bounded to maxBudgetSessions.
func NewBudgetTable() *BudgetTable {
	c, _ := lru.New[string, *HostBudgets](maxBudgetSessions) // errors only on a size < 1
	return &BudgetTable{cache: c}
}

// Of returns the budgets of (agent, sessionID, sessionKey), made if new.
func (t *BudgetTable) Of(agent, sessionID, sessionKey string) *HostBudgets {
	k := agent + "\x00k:" + sessionKey
	if sessionKey == "" {
		k = agent + "\x00s:" + sessionID
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.cache.Get(k)
	if !ok {
		b = &HostBudgets{}
		t.cache.Add(k, b)
	}
	return b
}

// fitHostCount removes messages from the oldest end of res, after its
// leading summaries, until the host's own estimate (core.Chars4, as
// OpenClaw counts) of the messages and the system prompt addition fits
// budget, then any tool results left leading (their calls are gone); the
// summaries go too only when they alone do not fit. It records what it
// removed in res.Cut.
func fitHostCount(tc core.TokenCounter, res *core.AssembleResult, budget int) {
	counts := make([]int, len(res.Messages))
	total := core.Chars4{}.CountText(res.SystemPromptAddition)
	for i, m := range res.Messages {
		counts[i] = core.CountMessage(core.Chars4{}, m)
		total += counts[i]
	}
	if total <= budget {
		return
	}
	// The leading summaries stand for everything older: the messages after
	// them go first, unless the summaries alone are over half the budget.
	lead, ltok := 0, 0
	for lead < len(res.Messages) {
		if _, ok := recall.SummaryID(res.Messages[lead]); !ok {
			break
		}
		ltok += counts[lead]
		lead++
	}
	if ltok > budget/2 {
		lead = 0
	}
	i := lead
	for i < len(res.Messages) && total > budget {
		total -= counts[i]
		i++
	}
	for i < len(res.Messages) && res.Messages[i].Role() == core.RoleToolResult {
		total -= counts[i]
		i++
	}
	if total > budget { // the summaries too
		for lead > 0 && total > budget {
			lead--
			total -= counts[lead]
		}
	}
	res.EstimatedTokens -= min(res.EstimatedTokens, core.CountMessages(tc, res.Messages[lead:i]))
	kept := append(append(make([]core.Message, 0, len(res.Messages)-(i-lead)), res.Messages[:lead]...), res.Messages[i:]...)
	i -= lead
	res.Messages = kept
	if res.Cut == nil {
		res.Cut = &core.AssembleCut{Budget: budget}
	}
	res.Cut.HostTrimmed = i
	res.Cut.Reason = fmt.Sprintf("the host's own estimate of the window was over the budget of %d tokens: the %d oldest messages were left out (they stay stored)", budget, i)
}
