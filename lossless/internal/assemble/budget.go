package assemble

import (
	"fmt"
	"math"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/recalled"
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
func hostCounts(rs *core.RuntimeSettings) bool { return recalled.HostCounts(rs) }

// unknownOverheadShare is the share of the host's window kept for the
// host's own prompt and reserve on a per-call budget when the engine has
// not seen the turn's first assemble (a restarted engine process).
const unknownOverheadShare = 0.5

// What OpenClaw 2026.9.6 holds back, read from its code
// (OPENCLAW-RUNTIME.md §3b). Its OpenAI-completions transport estimates a
// request as ceil(chars/4 × 1.25) over the message texts, the tool calls'
// JSON and the JSON of the tool schemas, and sends the output cap
// min(model maxTokens, window − estimate − 1): a context filled to its
// budget in plain chars/4 leaves the answer a token. The other transports
// (Anthropic messages, OpenAI responses, Google) send the model's
// maxTokens unclamped, and a provider refuses a request whose prompt and
// output cap together pass the window (Anthropic, OpenAI) or caps them
// apart (Google); the provider's tokenizer counts English text at about
// chars/4, under the completions transport's ×1.25. So the engine holds
// every request to the strictest: 1.25 × chars/4 of everything + the
// output cap + 1 within the window.
const (
	// transportMargin is @openclaw/ai's
	// OPENAI_COMPLETIONS_INPUT_TOKEN_SAFETY_MARGIN.
	transportMargin = 1.25
	// promptMargin is OpenClaw's SAFETY_MARGIN on its estimate of the
	// system prompt and the prompt, by which it nets the turn's first
	// budget (estimateRenderedLlmBoundaryTokenPressure).
	promptMargin = 1.2
	// promptOverhead is the two MESSAGE_BOUNDARY_OVERHEAD_TOKENS (12 each:
	// the system prompt's and the prompt's) in that estimate.
	promptOverhead = 24
	// requestSlack is kept free beyond the computed room, in chars/4
	// tokens: the transport counts a tool call as its whole JSON
	// ({"id", "type", "function": {"name", "arguments"}}), more than the
	// host's estimate of the pending messages does, and rounds each part up.
	requestSlack = 64
	// fallbackOutputCap bounds the output cap assumed when the host does
	// not say the model's (Request.OutputTokens unset, no modelMaxTokens
	// from the plugin): the turn's compaction reserve, at most this.
	fallbackOutputCap = 8192
	// toolSchemaTokens is the estimate, in chars/4 tokens, of one tool's
	// schema in a request (name, description, JSON-schema parameters)
	// when the host does not say (Request.ToolTokens unset): with
	// OpenClaw 2026.9.6's default tools and tool search on, the 15 tools
	// sent directly took 12,013 chars (3,003 tokens, 200 a tool) of 59
	// available (e2e/openclaw/tools.test.mjs's request log); 5% over.
	toolSchemaTokens = 210
	// directToolsWithSearch is the number of tools OpenClaw 2026.9.6
	// sends directly when its tool search is on (tool_search or tool_call
	// among availableTools): its core tools (ls, read, edit, write,
	// apply_patch, exec, process, openclaw, sessions_yield), tool_search,
	// tool_describe, tool_call and this plugin's direct-only lcm tools;
	// the rest stay in the catalog.
	directToolsWithSearch = 15
)

// Request is what the engine is told, or assumes, of the host's model
// request beside the context (RequestHints of a call, the engine's
// configuration).
type Request struct {
	// OutputTokens is the model's output cap (OpenClaw's maxTokens of the
	// model): the request keeps it free. 0: unknown.
	OutputTokens int
	// ToolTokens is the size of the tool schemas the host sends with the
	// request, in chars/4 tokens. 0: unknown (estimated from the call's
	// availableTools).
	ToolTokens int
}

// HostBudgets is what a session's assembles told of the host's budgets.
// Its own lock: assembles, commits and compactions of the session read and
// write it concurrently.
type HostBudgets struct {
	mu sync.Mutex
	// cfg is the engine's configured Request (BudgetTable's).
	cfg Request
	// open is true from a turn's first assemble to its commit.
	open bool
	// first is the budget of the latest turn-first assemble (0: none
	// seen), prompt the host's estimate of that turn's prompt, reserve
	// that assemble's limits.maxOutputTokens (the compaction reserve).
	first, prompt, reserve int
	// firstEff is first held to the request's room (the output cap, the
	// tools), once the window is known (capped); netted says that first
	// came with its reserve (limits.maxOutputTokens), as OpenClaw nets a
	// turn's first budget: only then does it tell the system prompt's size.
	firstEff       int
	capped, netted bool
	// window is the host's window figure, last seen (0: unknown).
	window int
	// smallest is the smallest budget of the open turn's assembles, for
	// hosts that say nothing of their limits (0: none).
	smallest int
	// addition is the chars/4 size of the system prompt addition the
	// turn's first assemble returned (the host prepends it to its system
	// prompt for the whole turn); tools the chars/4 size of the tool
	// schemas the turn's requests carry (Request.ToolTokens, else
	// estimated from the first assemble's availableTools); output the
	// model's output cap, last told (0: unknown).
	addition, tools, output int
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

// systemTokens returns the host's system prompt, in chars/4 tokens, as its
// turn-first budget tb reveals it: OpenClaw nets that budget of
// ceil(1.2 × (12 + system + 12 + prompt)) and the reserve (window − reserve
// − tb is that product, when tb is above its floor of 1).
func systemTokens(window, reserve, tb, prompt int) int {
	rendered := window - reserve - tb
	return max(0, int(math.Ceil(float64(rendered)/promptMargin))-promptOverhead-prompt)
}

// outputCap returns the output cap the request keeps free: the one told
// (Request.OutputTokens, the plugin's modelMaxTokens), else the turn's
// compaction reserve at most fallbackOutputCap, else a quarter of the
// window at most fallbackOutputCap.
func (b *HostBudgets) outputCap() int {
	switch {
	case b.output > 0:
		return b.output
	case b.reserve > 0:
		return min(b.reserve, fallbackOutputCap)
	}
	return min(b.window/4, fallbackOutputCap)
}

// requestRoom returns the chars/4 tokens the context may take in a model
// request whose other parts (system prompt, tools, the engine's addition,
// pending messages) take fixed tokens, so that the transport's ×1.25
// estimate leaves the model its whole output cap: ⌊(window − cap − 1) /
// 1.25⌋ − fixed − requestSlack. It may be 0 or less: the host's own part
// alone leaves less than the cap.
func (b *HostBudgets) requestRoom(fixed int) int {
	limit := int(float64(b.window-b.outputCap()-1) / transportMargin)
	return limit - fixed - b.addition - b.tools - requestSlack
}

// capFirst holds the turn's first budget to the request's room once the
// window is known (the turn's first assemble of an engine just started
// learns the window only from the per-call assemble after it).
func (b *HostBudgets) capFirst() {
	if b.capped || !b.netted || b.first <= 0 || b.window <= 0 {
		return
	}
	b.capped = true
	sys := systemTokens(b.window, b.reserve, b.first, b.prompt)
	b.firstEff = max(1, min(b.first, b.requestRoom(sys+b.prompt)))
}

// toolTokens estimates the chars/4 size of the tool schemas the host sends
// with a turn whose first assemble listed available: ToolTokens when the
// engine is told, else toolSchemaTokens per tool sent directly (all of
// them, or directToolsWithSearch when the host's tool search holds the rest
// in its catalog).
func toolTokens(r Request, available []string) int {
	if r.ToolTokens > 0 {
		return r.ToolTokens
	}
	n := len(available)
	for _, t := range available {
		if t == toolCallControl || t == toolSearchControl || t == toolSearchCodeControl {
			n = min(n, directToolsWithSearch)
			break
		}
	}
	return n * toolSchemaTokens
}

// RequestHints is what an assemble call tells of the host's model request
// beside its budget: the model's output
// cap the host passed (runtimeContext.modelMaxTokens; 0: none), the tools
// available (the turn's first assemble lists them) and the chars/4 size of
// the system prompt addition this call returns.
type RequestHints struct {
	OutputCap int
	Available []string
	Addition  int
}

// AssembleBudget notes an assemble's budget and returns the budget the
// call really has: tb itself, except on a per-call budget, where it is the
// host's window minus its pending messages (what tb is) minus the host's
// share (system prompt and reserve, learned from the turn's first
// assemble). Under OpenClaw both kinds are then held to the request's room
// (requestRoom): the model's output cap stays free as the host's transport
// counts the request. A result under 1 is 1: a budget that holds nothing.
func (b *HostBudgets) AssembleBudget(tb int, rs *core.RuntimeSettings, prompt string, h RequestHints) int {
	kind, window := ClassifyBudget(tb, rs)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		b.open, b.smallest = true, 0
	}
	if b.smallest <= 0 || tb < b.smallest {
		b.smallest = tb
	}
	switch {
	case b.cfg.OutputTokens > 0:
		b.output = b.cfg.OutputTokens
	case h.OutputCap > 0:
		b.output = h.OutputCap
	}
	switch kind {
	case BudgetTurnFirst:
		b.first, b.prompt, b.reserve, b.netted = tb, core.Chars4{}.CountText(prompt), 0, false
		if l := rs.Limits; l.MaxOutputTokens != nil {
			// OpenClaw's turn-first budget: the window less this reserve
			// and its estimate of the system prompt and the prompt.
			b.reserve, b.netted = max(0, *l.MaxOutputTokens), true
		}
		b.addition, b.tools = h.Addition, toolTokens(b.cfg, h.Available)
		b.firstEff, b.capped = tb, false
		if hostCounts(rs) {
			b.capFirst()
		}
		return b.firstEff
	case BudgetPerCall:
		b.window = window
		share, ok := b.hostShare()
		if !ok {
			share = int(unknownOverheadShare * float64(window))
		}
		budget := tb - share
		if ok && b.netted && hostCounts(rs) {
			sys := systemTokens(window, b.reserve, b.first, b.prompt)
			budget = min(budget, b.requestRoom(sys+window-tb))
			b.capFirst()
		}
		return max(1, budget)
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
// first budget (OpenClaw; held to the request's room, as its assemble
// was), else the smallest budget of its assembles, else
// 0 (unknown: the caller falls back to the runtime context's).
func (b *HostBudgets) TurnBudget() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open = false
	if b.first > 0 {
		return b.firstEff
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
	// tb − share is the turn's first budget and its prompt; held to the
	// request's room as that budget is.
	return max(1, min(tb-share, b.firstEff+b.prompt)), true
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
	req   Request
	cache *lru.Cache[string, *HostBudgets]
}

// NewBudgetTable returns an empty table, bounded to maxBudgetSessions,
// whose sessions' requests are as req configures them (Config.HostRequest).
func NewBudgetTable(req Request) *BudgetTable {
	c, _ := lru.New[string, *HostBudgets](maxBudgetSessions) // errors only on a size < 1
	return &BudgetTable{req: req, cache: c}
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
		b = &HostBudgets{cfg: t.req}
		t.cache.Add(k, b)
	}
	return b
}

// fitHostCount removes messages from the oldest end of res, after its
// leading summaries, until the host's own estimate (core.Chars4, as
// OpenClaw counts) of the messages and the system prompt addition fits
// budget, then any tool results left leading (their calls are gone); the
// summaries go too only when they alone do not fit. A recall block ending
// res is never removed whole for the older messages' sake: it goes last,
// and then only shrunk (recalled.Shrink: its last items first) to what the
// budget leaves. It records what it removed in res.Cut.
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
	end := len(res.Messages) // the messages that may go: [lead, end)
	if end > 0 && recalled.IsMessage(res.Messages[end-1]) {
		end--
	}
	// The leading summaries stand for everything older: the messages after
	// them go first, unless the summaries alone are over half the budget.
	lead, ltok := 0, 0
	for lead < end {
		if _, ok := recalled.SummaryID(res.Messages[lead]); !ok {
			break
		}
		ltok += counts[lead]
		lead++
	}
	if ltok > budget/2 {
		lead = 0
	}
	i := lead
	for i < end && total > budget {
		total -= counts[i]
		i++
	}
	for i < end && res.Messages[i].Role() == core.RoleToolResult {
		total -= counts[i]
		i++
	}
	if total > budget { // the summaries too
		for lead > 0 && total > budget {
			lead--
			total -= counts[lead]
		}
	}
	shrunk := ""
	if total > budget && end < len(res.Messages) {
		// The recall block alone (with what is left) is over: shrunk to
		// the room left, or removed when not even a cut item fits.
		m := res.Messages[end]
		room := budget - (total - counts[end])
		before := core.CountMessage(tc, m)
		if small, ok := recalled.Shrink(core.Chars4{}, m, room); ok {
			res.Messages[end] = small
			res.EstimatedTokens -= min(res.EstimatedTokens, before-core.CountMessage(tc, small))
			shrunk = fmt.Sprintf("; the recall block was cut to %d of its %d tokens", core.CountMessage(core.Chars4{}, small), counts[end])
		} else {
			res.EstimatedTokens -= min(res.EstimatedTokens, before)
			res.Messages = res.Messages[:end]
			shrunk = "; the recall block did not fit and was left out"
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
	res.Cut.Reason = fmt.Sprintf("the host's own estimate of the window was over the budget of %d tokens: the %d oldest messages were left out (they stay stored)%s", budget, i, shrunk)
}
