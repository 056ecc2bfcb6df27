// Package recalled holds what the engine's parts share about recall in
// Assemble, as plain values and functions: the recall message's format
// (Head, Close, IsMessage; Shrink, which cuts a block to a host's count;
// SummaryID and HoldsSummary, which read a rendered summary; IndexedText,
// the text a message is indexed by), the host's count (HostCounts,
// MaxCounter), and what recall reports and returns (Item, Options,
// Details, Report, WithDetails; Status, the recall index's state). It is
// public: the engine's API names its types (Engine.RecallStatus,
// AssembleWithDetails, ExplainRecall). The engine's recall part makes the
// block, its assemble part fits it to the host's count, lossless/explain
// explains it; none of them imports another.
package recalled

import (
	"context"
	"strconv"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// Item is one recalled turn or summary.
type Item struct {
	// ID is the item's id: "<conversation>:<seq>" for a message,
	// "<conversation>/<summary id>" for a summary.
	ID           string  `json:"id"`
	Kind         string  `json:"kind"`
	Conversation string  `json:"conversation"`
	Seq          uint64  `json:"seq,omitempty"`
	SummaryID    string  `json:"summaryId,omitempty"`
	Role         string  `json:"role"`
	Timestamp    int64   `json:"timestamp"`
	Score        float64 `json:"score"`
	// Relevance is what the relevance gate compared with its threshold
	// (index.Relevance.Value; a neighbour carries its hit's).
	Relevance float64 `json:"relevance"`
	// Neighbour is set on turns added as context of a hit.
	Neighbour bool `json:"neighbour,omitempty"`
}

// Options adjust the engine's RecallWith.
type Options struct {
	// K is the number of items wanted (0: Config.K).
	K int
	// MinScore overrides the relevance gate's threshold (0: the configured
	// one, see MinScore; negative: no gate, the bare ranking).
	MinScore float64
}

// MinScore is the relevance gate's threshold for a configured value
// v (Config.MinScore): DefaultMinScore when v is 0, no gate
// (0) when v is negative.
func MinScore(v float64) float64 {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return config.DefaultRecallMinScore
	}
	return v
}

// Recall statuses (Report.Status).
const (
	Injected = "injected" // a recall block ends the context
	None     = "none"     // searched; nothing relevant (or nothing fit)
	Off      = "off"      // not searched: disabled, no prompt or no room
	Failed   = "failed"   // the index or a store read failed (Reason)
)

// Details says how an Assemble went, beyond its result
// (the engine's AssembleWithDetails).
type Details struct {
	Recall Report `json:"recall"`
}

// Report is what recall did in one Assemble.
type Report struct {
	// Status is Injected, None, Off or Failed.
	Status string `json:"status"`
	// Items is the number of recalled items in the block.
	Items int `json:"items,omitempty"`
	// Partial is set while the recall index is rebuilt: the old index was
	// searched (with what it holds: nothing when it was missing or
	// corrupt), Assemble did not wait for the new one.
	Partial bool `json:"partial,omitempty"`
	// Rebuilt is, when Partial, the docs the rebuild has indexed so far.
	Rebuilt int64 `json:"rebuilt,omitempty"`
	// Reason explains a status other than Injected.
	Reason string `json:"reason,omitempty"`
}

type detailsCtxKey struct{}

// From returns the report WithDetails asked for (nil: none;
// its methods then do nothing).
func From(ctx context.Context) *Report {
	d, _ := ctx.Value(detailsCtxKey{}).(*Details)
	if d == nil {
		return nil
	}
	return &d.Recall
}

// SetStatus sets r's status and reason (r nil: nothing).
func (r *Report) SetStatus(status, reason string) {
	if r != nil {
		r.Status, r.Reason = status, reason
	}
}

// SetInjected notes a block of items injected (r nil: nothing).
func (r *Report) SetInjected(items int) {
	if r != nil {
		r.Status, r.Items, r.Reason = Injected, items, ""
	}
}

// SetPartial notes a partial search during a rebuild that indexed
// rebuilt docs so far (r nil: nothing).
func (r *Report) SetPartial(rebuilt int64) {
	if r != nil {
		r.Partial, r.Rebuilt = true, rebuilt
	}
}

// WithDetails returns ctx carrying d: Assemble under it fills in d.Recall
// (the engine's AssembleWithDetails).
func WithDetails(ctx context.Context, d *Details) context.Context {
	return context.WithValue(ctx, detailsCtxKey{}, d)
}

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

// The recall message: one user message, its text between open and
// Close, starting with Head (IsMessage recognises it).
const (
	open = "<lcm_recall>\n"
	// Head is the fixed start of every recall block.
	Head = open + "[Recalled by the context engine from earlier history that matches this prompt."
	// Close ends every recall block.
	Close = "</lcm_recall>"
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
	if i < 0 || !strings.HasSuffix(strings.TrimRight(last, " \t\r\n"), Close) {
		return false
	}
	// Before the head: nothing, or a host's stamp ("[Mon 2026-11-30 10:00 UTC] ").
	pre := strings.TrimSpace(first[:i])
	return pre == "" || (len(pre) <= 64 && pre[0] == '[' && pre[len(pre)-1] == ']' && !strings.ContainsAny(pre[1:len(pre)-1], "[]\n"))
}

// Shrink returns the recall message m (one Render made) cut to at most
// budget tokens as tc counts the whole message: its last <item> elements
// go first, and the one left last is cut short. ok is false when not even
// the block's head and a cut item fit budget (or m is not a recall block).
// A host that counts a window differently from the engine (OpenClaw's
// chars/4) shrinks the block this way rather than leave it out whole.
func Shrink(tc core.TokenCounter, m core.Message, budget int) (core.Message, bool) {
	if !IsMessage(m) {
		return core.Message{}, false
	}
	text := m.Text()
	body, ok := strings.CutSuffix(strings.TrimRight(text, " \t\r\n"), Close)
	if !ok {
		return core.Message{}, false
	}
	mk := func(b string) core.Message { return core.UserText(b+Close, m.Timestamp()) }
	if core.CountMessage(tc, m) <= budget {
		return m, true
	}
	const sep = "</item>\n<item"
	for {
		i := strings.LastIndex(body, sep)
		if i < 0 {
			break
		}
		body = body[:i+len("</item>\n")]
		if out := mk(body); core.CountMessage(tc, out) <= budget {
			return out, true
		}
	}
	// One item left: its text cut to what the budget leaves.
	start := strings.Index(body, "<item")
	if start < 0 {
		return core.Message{}, false
	}
	open := strings.Index(body[start:], ">\n")
	if open < 0 {
		return core.Message{}, false
	}
	prefix := body[:start+open+2]
	item := strings.TrimSuffix(body[start+open+2:], "</item>\n")
	room := budget - core.CountMessage(tc, mk(prefix+"\n</item>\n"))
	if room < 16 {
		return core.Message{}, false
	}
	out := mk(prefix + core.Truncate(tc, item, room) + "\n</item>\n")
	for core.CountMessage(tc, out) > budget && room > 16 {
		room -= max(1, room/8)
		out = mk(prefix + core.Truncate(tc, item, room) + "\n</item>\n")
	}
	if core.CountMessage(tc, out) > budget {
		return core.Message{}, false
	}
	return out, true
}

// HoldsSummary reports whether an assembled window holds a summary
// (rendered by the engine's RenderSummary).
func HoldsSummary(msgs []core.Message) bool {
	for _, m := range msgs {
		if m.Role() != core.RoleUser {
			continue
		}
		if b := m.Blocks(); len(b) > 0 && strings.HasPrefix(b[0].Text, "<lcm_summary ") {
			return true
		}
	}
	return false
}

// MaxIndexedText caps the text indexed per message (large tool output
// beyond it is still stored and expandable, only not searchable).
const MaxIndexedText = 64 << 10

// IndexedText is the text a message is indexed (and de-duplicated) by.
func IndexedText(m core.Message) string {
	text := m.SearchText(false)
	if len(text) > MaxIndexedText {
		text = strings.ToValidUTF8(text[:MaxIndexedText], "")
	}
	return text
}

// Status reports the engine's recall index: whether it is rebuilding, how
// many docs the rebuild indexed so far, and how many added docs are not yet
// searchable.
type Status struct {
	// Enabled is set when the engine has a recall index.
	Enabled bool `json:"enabled"`
	// Rebuilding is set while the opening rebuild (or catch-up) runs.
	Rebuilding bool `json:"rebuilding"`
	// Rebuilt is the docs the opening rebuild indexed so far.
	Rebuilt int64 `json:"rebuilt"`
	// Lag is the added docs not yet searchable.
	Lag int `json:"lag"`
	// Error is the opening rebuild's failure, if any.
	Error string `json:"error,omitempty"`
}
