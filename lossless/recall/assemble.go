package recall

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
)

// HostCounts reports whether the call comes from OpenClaw, whose budgets
// are counted with its own chars/4 estimate (core.Chars4): what the engine
// assembles must fit that count as well as its own.
func HostCounts(rs *core.RuntimeSettings) bool {
	return rs != nil && rs.Runtime != nil && rs.Runtime.Host != nil && *rs.Runtime.Host == core.HostOpenClaw
}

// MaxCounter counts a text as the larger of its counter's count and the
// host's chars/4 estimate (core.Chars4).
type MaxCounter struct{ TC core.TokenCounter }

// Name names the counter: its own counter's name, "+chars4".
func (m MaxCounter) Name() string { return m.TC.Name() + "+" + core.CounterChars4 }

// CountText returns max(TC's count, chars/4) of s.
func (m MaxCounter) CountText(s string) int {
	return max(m.TC.CountText(s), core.Chars4{}.CountText(s))
}

// hostCounted is a Port whose counter is MaxCounter (a call whose host
// counts chars/4).
type hostCounted[C any] struct {
	Port[C]
	tc core.TokenCounter
}

// Counter is the MaxCounter.
func (h hostCounted[C]) Counter() core.TokenCounter { return h.tc }

// SummaryID returns the id of a summary as the engine's RenderSummary
// shows it (an <lcm_summary id="..."> user message).
func SummaryID(m core.Message) (string, bool) {
	if m.Role() != core.RoleUser {
		return "", false
	}
	bs := m.Blocks()
	if len(bs) == 0 {
		return "", false
	}
	rest, ok := strings.CutPrefix(bs[0].Text, "<lcm_summary id=")
	if !ok {
		return "", false
	}
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "", false
	}
	id, err := strconv.Unquote(q)
	return id, err == nil
}

// The recall message: one user message, its text between recallOpen and
// recallClose, starting with Head (IsMessage recognises it).
const (
	recallOpen = "<lcm_recall>\n"
	// Head is the fixed start of every recall block.
	Head        = recallOpen + "[Recalled by the context engine from earlier history that matches this prompt."
	recallClose = "</lcm_recall>"
)

// IsMessage reports whether m is a recall message that Assemble
// made: a user message whose text starts with the recall block's fixed
// head (after a host's "[...]" time stamp, if any) and ends with its
// closing tag. The host hands Assemble's output back as
// input (OpenClaw assembles again before every model call of a turn), and
// a host may store it: recognised, it is dropped from the input and the
// window (a fresh one is appended), and never indexed or recalled.
func IsMessage(m core.Message) bool {
	if m.Role() != core.RoleUser {
		return false
	}
	var first, last string
	if m.ContentIsString() {
		first = m.Text()
		last = first
	} else {
		n := 0
		for _, b := range m.Blocks() {
			if b.Type != core.BlockText {
				continue
			}
			if n == 0 {
				first = b.Text
			}
			last = b.Text
			n++
		}
	}
	i := strings.Index(first[:min(len(first), 80+len(Head))], Head)
	if i < 0 || !strings.HasSuffix(strings.TrimRight(last, " \t\r\n"), recallClose) {
		return false
	}
	// Before the head: nothing, or a host's stamp ("[Mon 2026-11-30 10:00 UTC] ").
	pre := strings.TrimSpace(first[:i])
	return pre == "" || (len(pre) <= 64 && pre[0] == '[' && pre[len(pre)-1] == ']' && !strings.ContainsAny(pre[1:len(pre)-1], "[]\n"))
}

// withoutMessages returns msgs without recall messages (msgs itself
// when it has none), the tokens of those dropped, and the newest timestamp
// among them.
func withoutMessages(tc core.TokenCounter, msgs []core.Message, count bool) ([]core.Message, int, int64) {
	var out []core.Message
	tokens, ts := 0, int64(0)
	for i, m := range msgs {
		if !IsMessage(m) {
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

// Assemble is the engine's Assemble when recall applies (enabled, a prompt,
// not already inside it): the context is assembled within the budget minus
// the recall share, then the recalled turns are rendered into one user
// message appended at the end, so the assembled prefix stays byte-stable
// for the prompt cache (a system prompt addition would change the cached
// prefix every turn). ok is false when recall does not apply.
//
// It is idempotent over its own output: recall messages in p.Messages (the
// host handing the previous assemble's output back) are dropped before the
// inner assemble, and any in its result (a host that stored one), so that
// exactly one recall block, freshly ranked, ends the context.
func Assemble[C any](ctx context.Context, port Port[C], call *Call[C]) (core.AssembleResult, bool, error) {
	p := call.Params
	rep := detailsFrom(ctx)
	cfg := port.Config()
	switch {
	case !cfg.On():
		rep.set(Off, "recall is disabled")
		return core.AssembleResult{}, false, nil
	case strings.TrimSpace(p.Prompt) == "":
		rep.set(Off, "no prompt")
		return core.AssembleResult{}, false, nil
	}
	if HostCounts(p.RuntimeSettings) {
		// The block is sized as the host counts it too (chars/4 where that
		// is more than the engine's count): a block over its room by the
		// host's count would be cut again after it was built.
		port = hostCounted[C]{port, MaxCounter{port.Counter()}}
	}
	budget := port.Budget(p)
	share := cfg.Share
	if share <= 0 || share >= 1 {
		share = DefaultShare
	}
	reserve := int(float64(budget) * share)
	inner := p
	inner.TokenBudget = budget - reserve
	var previous int64
	inner.Messages, _, previous = withoutMessages(port.Counter(), p.Messages, false)
	res, err := port.AssembleWindow(ctx, call.Engine, inner)
	if err != nil {
		return res, true, err
	}
	var dropped int
	res.Messages, dropped, _ = withoutMessages(port.Counter(), res.Messages, true)
	res.EstimatedTokens -= min(dropped, res.EstimatedTokens)
	if reserve <= 0 {
		rep.set(Off, "no room in the token budget")
		return res, true, nil
	}
	if ix := port.Index(); ix != nil && ix.Rebuilding() {
		// Never waits for the rebuild: the old index answers with what it
		// holds (nothing when it was missing or corrupt).
		rep.partial(ix.RebuildProgress())
	}
	// A question may take more of the budget (split.go): the probe
	// then ranks for the room it may take, so that one ranking serves the
	// probe and the sizing of the block.
	want, k := questionRoom(port.Config(), call, budget, reserve)
	items, err := Rank(ctx, port, call, Options{K: k}, res.Messages)
	bodies := &Bodies{} // read once for sizing and rendering
	if err == nil && len(items) > 0 && want > reserve {
		// The probe found turns outside the window that pass the gate: a
		// question gets more of the budget.
		res, reserve, items, err = splitForQuestion(ctx, port, call, inner, budget, res, reserve, want, items, bodies)
	}
	if err != nil {
		// Recall is an extra: a failing index never fails the turn.
		slog.Warn("lossless: recall failed", "err", err)
		rep.set(Failed, err.Error())
		return res, true, nil
	}
	ts := timestamp(res.Messages, previous)
	m, n, err := Render(ctx, port, items, p.CitationsMode, call.GrepTool, reserve, ts, call.here(), bodies)
	if err != nil {
		// Nor does a failing store read: the turn goes on without the
		// block, and the failure is logged and reported, not taken for
		// "nothing relevant".
		slog.Warn("lossless: recall failed", "err", err)
		rep.set(Failed, err.Error())
		return res, true, nil
	}
	if n > 0 {
		res.Messages = append(res.Messages, m)
		res.EstimatedTokens += n
		rep.injected(len(items))
	} else {
		rep.set(None, "nothing in the history passed the relevance gate")
	}
	return res, true, nil
}

// Rank ranks items for the call's prompt, best first, at most o.K
// (Config.K when 0), those that pass the relevance gate (o.MinScore; 0:
// Config.MinScore). window is the assembled context (what
// Assemble returns before the recall message): a turn whose text is the
// text of one of its messages is never recalled, whatever conversation
// holds it (a subagent's forked prefix, a history imported twice, a host's
// pass-through messages).
func Rank[C any](ctx context.Context, port Port[C], call *Call[C], o Options, window []core.Message) ([]Item, error) {
	p := call.Params
	ix := port.Index()
	if ix == nil || strings.TrimSpace(p.Prompt) == "" {
		return nil, nil
	}
	cfg := port.Config()
	k := o.K
	if k <= 0 {
		k = cfg.k()
	}
	minScore := o.MinScore
	if minScore == 0 {
		minScore = MinScore(cfg.MinScore)
	}
	q := index.RecallQuery{Agent: call.Agent, AllAgents: cfg.CrossAgent, Text: p.Prompt, K: k, MinRelevance: max(minScore, 0)}
	c, known := call.Conv, call.Known // resolved at the call's door
	if known {
		q.CurrentSession = c.String()
		q.InContextFrom, q.ExcludeIDs = port.InContext(c)
	}
	if len(window) > 0 {
		q.ExcludeTexts = ix.keys.TextKeys(c, known, window)
		if known {
			// The summaries the window shows, read from it (the assemble
			// cache Port.InContext reads may have been dropped since).
			for _, m := range window {
				if id, ok := SummaryID(m); ok {
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
	out := make([]Item, 0, len(hits))
	for _, h := range hits {
		it := Item{ID: h.ID, Kind: h.Kind, Conversation: h.Conversation, Seq: h.Seq, Role: h.Role,
			Timestamp: h.Timestamp, Score: h.Score, Relevance: h.Relevance.Value(), Neighbour: h.NeighbourOf != ""}
		if h.Kind == index.KindSummary {
			it.Seq = 0
			_, it.SummaryID, _ = strings.Cut(h.ID, "/")
		}
		out = append(out, it)
	}
	return out, nil
}
