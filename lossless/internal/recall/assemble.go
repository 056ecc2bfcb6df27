package recall

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/recalled"
)

// withoutMessages returns msgs without recall messages (msgs itself
// when it has none), the tokens of those dropped, and the newest timestamp
// among them.
func withoutMessages(tc core.TokenCounter, msgs []core.Message, count bool) ([]core.Message, int, int64) {
	var out []core.Message
	tokens, ts := 0, int64(0)
	for i, m := range msgs {
		if !recalled.IsMessage(m) {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]core.Message, 0, len(msgs)-1), msgs[:i]...)
		}
		if count {
			tokens += core.CountMessage(tc, m)
		}
		ts = max(ts, m.Timestamp())
	}
	if out == nil {
		return msgs, 0, 0
	}
	return out, tokens, ts
}

// timestamp is the recall message's timestamp: the newest of the
// assembled window's messages, so that it sorts where it sits (after
// them, before the turn's prompt) and renders as a real date; else the
// timestamp of the recall message the host handed back (the same turn
// assembling again); else now. Deterministic for identical inputs, which
// keeps the repeated assembles of one turn byte-identical for the prompt
// cache (the current time would change the message on every model call).
func timestamp(window []core.Message, previous int64) int64 {
	ts := int64(0)
	for _, m := range window {
		ts = max(ts, m.Timestamp())
	}
	switch {
	case ts > 0:
		return ts
	case previous > 0:
		return previous
	}
	return time.Now().UnixMilli()
}

// Assembly is one Assemble with recall (enabled, a prompt): the context
// is assembled within the budget minus the recall share, then the recalled
// turns are rendered into one user message appended at the end, so the
// assembled prefix stays byte-stable for the prompt cache (a system prompt
// addition would change the cached prefix every turn).
//
// Recall never assembles a window itself: the engine's Assemble does (the
// window is package assemble's, under the engine's window lock) and hands
// each window to the Assembly. The exchange is Begin (the first window's
// parameters), then Window for each window assembled (it returns the
// parameters of the next one, when a question moves the split, see
// split.go), then Result.
//
// It is idempotent over its own output: recall messages in p.Messages (the
// host handing the previous assemble's output back) are dropped before the
// window is assembled, and any in its result (a host that stored one), so
// that exactly one recall block, freshly ranked, ends the context.
type Assembly struct {
	d    Deps
	call *Call
	rep  *recalled.Report
	// budget is the call's; reserve the block's room at the base split;
	// want the room a question may take.
	budget, reserve, want int
	inner                 core.AssembleParams
	previous              int64
	// probe is the window assembled at the base split; items ranked
	// against it; bodies the recalled texts read once for sizing and
	// rendering.
	probe  core.AssembleResult
	items  []recalled.Item
	bodies Bodies
	// slack is what the probe leaves of the budget; tries the budgets of
	// the smaller windows still to try for a question.
	slack, need int
	tries       []int
	split       bool
	// out, err are the result once done.
	out  core.AssembleResult
	err  error
	done bool
}

// Window is a window the engine assembled for an Assembly: its result
// (recall messages may be in it; they are dropped), its error, and what it
// shows of the conversation (the engine's window cache right after it was
// assembled: Shown).
type Window struct {
	Result core.AssembleResult
	Err    error
	Shown  Shown
}

// Shown is what the last assembled window of the call's conversation
// shows: raw messages from seq From on, and the doc ids (SummaryDocID) of
// its summaries. The zero value shows nothing.
type Shown struct {
	From      uint64
	Summaries map[string]bool
}

// Begin starts an Assembly for call: ok is false when recall does not
// apply (disabled, no prompt; ctx's report, recalled.WithDetails, says
// so), and the engine assembles the window alone. Else p is the first
// window's parameters: the budget less the recall share, recall messages
// dropped from the host's messages.
func Begin(ctx context.Context, d Deps, call *Call) (a *Assembly, p core.AssembleParams, ok bool) {
	cp := call.Params
	rep := recalled.From(ctx)
	switch {
	case !d.Config.On():
		rep.SetStatus(recalled.Off, "recall is disabled")
		return nil, core.AssembleParams{}, false
	case strings.TrimSpace(cp.Prompt) == "":
		rep.SetStatus(recalled.Off, "no prompt")
		return nil, core.AssembleParams{}, false
	}
	if recalled.HostCounts(cp.RuntimeSettings) {
		// The block is sized as the host counts it too (chars/4 where that
		// is more than the engine's count): a block over its room by the
		// host's count would be cut again after it was built.
		d.Counter = recalled.MaxCounter{TC: d.Counter}
	}
	a = &Assembly{d: d, call: call, rep: rep, budget: call.Budget}
	share := d.Config.Share
	if share <= 0 || share >= 1 {
		share = config.DefaultRecallShare
	}
	a.reserve = int(float64(a.budget) * share)
	a.inner = cp
	a.inner.TokenBudget = a.budget - a.reserve
	a.inner.Messages, _, a.previous = withoutMessages(d.Counter, cp.Messages, false)
	return a, a.inner, true
}

// Window takes the window the engine assembled with the parameters Begin
// or the previous Window returned; more is true when another window is
// wanted, with parameters p.
func (a *Assembly) Window(ctx context.Context, w Window) (p core.AssembleParams, more bool) {
	if a.done {
		return core.AssembleParams{}, false
	}
	if !a.split {
		a.probeWindow(ctx, w)
	} else {
		a.splitWindow(ctx, w)
	}
	if a.done {
		return core.AssembleParams{}, false
	}
	p = a.inner
	p.TokenBudget = a.tries[0]
	return p, true
}

// Result is the assembled context with its recall block (a failing index
// or store read never fails it: the block is left out, logged and
// reported), or the error of the first window.
func (a *Assembly) Result() (core.AssembleResult, error) {
	return a.out, a.err
}

// withoutRecall drops recall messages from an assembled window (a host
// that stored one) and their tokens.
func (a *Assembly) withoutRecall(res core.AssembleResult) core.AssembleResult {
	var dropped int
	res.Messages, dropped, _ = withoutMessages(a.d.Counter, res.Messages, true)
	res.EstimatedTokens -= min(dropped, res.EstimatedTokens)
	return res
}

// probeWindow takes the window at the base split: it ranks against it,
// and for a question whose turns outside it pass the gate, sizes the block
// and asks for a smaller window when the block needs more than it leaves.
func (a *Assembly) probeWindow(ctx context.Context, w Window) {
	if w.Err != nil {
		a.out, a.err, a.done = w.Result, w.Err, true
		return
	}
	res := a.withoutRecall(w.Result)
	a.probe = res
	if a.reserve <= 0 {
		a.rep.SetStatus(recalled.Off, "no room in the token budget")
		a.out, a.done = res, true
		return
	}
	if ix := a.d.Index; ix != nil && ix.Rebuilding() {
		// Never waits for the rebuild: the old index answers with what it
		// holds (nothing when it was missing or corrupt).
		a.rep.SetPartial(ix.RebuildProgress())
	}
	// A question may take more of the budget (split.go): the probe
	// then ranks for the room it may take, so that one ranking serves the
	// probe and the sizing of the block.
	want, k := questionRoom(a.d.Config, a.call, a.budget, a.reserve)
	items, err := Rank(ctx, a.d, a.call, recalled.Options{K: k}, res.Messages, w.Shown)
	if err != nil || len(items) == 0 || want <= a.reserve {
		a.finish(ctx, res, a.reserve, items, err)
		return
	}
	// The probe found turns outside the window that pass the gate: a
	// question gets more of the budget.
	a.want, a.items = want, items
	a.slack = a.budget - res.EstimatedTokens
	need, err := recallNeed(ctx, a.d, a.call, items, want, &a.bodies)
	a.need = need
	switch {
	case err != nil:
		a.finish(ctx, res, a.reserve, items, err)
	case need <= a.slack:
		// The context leaves room enough: the block keeps to its bound
		// (want), not to all the room the context leaves.
		a.finish(ctx, res, max(a.reserve, min(a.slack, want)), items, nil)
	default:
		// The context assembled again in what the block leaves; a window
		// that lost every summary of a context that held some is not
		// taken (its summaries stand for everything older, and once one
		// reached the model every later request holds one, #8): the
		// context is tried once more halfway between, and failing that,
		// recall takes the room the whole context leaves.
		a.split = true
		a.tries = []int{a.budget - need, (2*a.budget - need - a.reserve) / 2}
	}
}

// splitWindow takes a smaller window of a question (splitForQuestion in
// split.go's terms): taken when it keeps a summary the probe showed, else
// the next try, else the probe's split stands.
func (a *Assembly) splitWindow(ctx context.Context, w Window) {
	base := max(a.slack, a.reserve)
	if w.Err != nil {
		// The probe's split stands.
		slog.Warn("lossless: recall: assembling the context for a question failed; the base split stands", "err", w.Err)
		a.finish(ctx, a.probe, base, a.items, nil)
		return
	}
	small := a.withoutRecall(w.Result)
	if recalled.HoldsSummary(a.probe.Messages) && !recalled.HoldsSummary(small.Messages) {
		if a.tries = a.tries[1:]; len(a.tries) == 0 {
			a.finish(ctx, a.probe, base, a.items, nil)
		}
		return
	}
	if small.Messages == nil {
		a.finish(ctx, a.probe, base, a.items, nil)
		return
	}
	if small.Cut != nil {
		small.Cut.Budget = a.budget
		small.Cut.Reason += fmt.Sprintf("; recall took up to %d tokens of the budget for a question (recall.questionShare)", a.need)
	}
	room := a.budget - small.EstimatedTokens
	more, err := Rank(ctx, a.d, a.call, recalled.Options{K: expandedK(kOf(a.d.Config), room)}, small.Messages, w.Shown)
	a.finish(ctx, small, room, more, err)
}

// finish renders items into the block of at most reserve tokens after
// res (err: ranking failed, res goes alone).
func (a *Assembly) finish(ctx context.Context, res core.AssembleResult, reserve int, items []recalled.Item, err error) {
	a.done = true
	a.out = res
	if err != nil {
		// Recall is an extra: a failing index never fails the turn.
		slog.Warn("lossless: recall failed", "err", err)
		a.rep.SetStatus(recalled.Failed, err.Error())
		return
	}
	ts := timestamp(res.Messages, a.previous)
	cp := a.call.Params
	m, n, err := Render(ctx, a.d, items, cp.CitationsMode, a.call.GrepTool, reserve, ts, a.call.here(), &a.bodies)
	if err != nil {
		// Nor does a failing store read: the turn goes on without the
		// block, and the failure is logged and reported, not taken for
		// "nothing relevant".
		slog.Warn("lossless: recall failed", "err", err)
		a.rep.SetStatus(recalled.Failed, err.Error())
		return
	}
	if n > 0 {
		a.out.Messages = append(res.Messages, m)
		a.out.EstimatedTokens += n
		a.rep.SetInjected(len(items))
	} else {
		a.rep.SetStatus(recalled.None, "nothing in the history passed the relevance gate")
	}
}

// Rank ranks items for the call's prompt, best first, at most o.K
// (Config.K when 0), those that pass the relevance gate (o.MinScore; 0:
// Config.MinScore). window is the assembled context (what
// Assemble returns before the recall message): a turn whose text is the
// text of one of its messages is never recalled, whatever conversation
// holds it (a subagent's forked prefix, a history imported twice, a host's
// pass-through messages).
func Rank(ctx context.Context, d Deps, call *Call, o recalled.Options, window []core.Message, shown Shown) ([]recalled.Item, error) {
	p := call.Params
	ix := d.Index
	if ix == nil || strings.TrimSpace(p.Prompt) == "" {
		return nil, nil
	}
	cfg := d.Config
	k := o.K
	if k <= 0 {
		k = kOf(cfg)
	}
	minScore := o.MinScore
	if minScore == 0 {
		minScore = recalled.MinScore(cfg.MinScore)
	}
	q := index.RecallQuery{Agent: call.Agent, AllAgents: cfg.CrossAgent, Text: p.Prompt, K: k, MinRelevance: max(minScore, 0)}
	c, known := call.Conv, call.Known // resolved at the call's door
	if known {
		q.CurrentSession = c.String()
		q.InContextFrom, q.ExcludeIDs = shown.From, shown.Summaries
	}
	if len(window) > 0 {
		q.ExcludeTexts = ix.keys.TextKeys(c, known, window)
		if known {
			// The summaries the window shows, read from it (the assemble
			// cache Shown comes from may have been dropped since).
			for _, m := range window {
				if id, ok := recalled.SummaryID(m); ok {
					if q.ExcludeIDs == nil {
						q.ExcludeIDs = map[string]bool{}
					}
					q.ExcludeIDs[SummaryDocID(c, id)] = true
				}
			}
		}
	}
	hits, err := ix.ix.Recall(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("lossless: recall: %w", err)
	}
	out := make([]recalled.Item, 0, len(hits))
	for _, h := range hits {
		it := recalled.Item{ID: h.ID, Kind: h.Kind, Conversation: h.Conversation, Seq: h.Seq, Role: h.Role,
			Timestamp: h.Timestamp, Score: h.Score, Relevance: h.Relevance.Value(), Neighbour: h.NeighbourOf != ""}
		if h.Kind == index.KindSummary {
			it.Seq = 0
			_, it.SummaryID, _ = strings.Cut(h.ID, "/")
		}
		out = append(out, it)
	}
	return out, nil
}
