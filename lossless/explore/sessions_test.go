package explore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/inspect"
	"github.com/lossless-engine/contextengine/store"
)

// wantContextStats computes a conversation's ContextStats the long way:
// every item, with its flags, from Items and the store.
func wantContextStats(t *testing.T, e *lossless.Engine, conv *lossless.Conversation) ContextStats {
	t.Helper()
	items, err := conv.Items(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st := ContextStats{Items: len(items), SummariesByDepth: []int{}}
	for _, it := range items {
		flags := byte(0)
		if !it.IsSummary() {
			rec, err := mustHeader(e, conv, it.Ref.Seq)
			if err != nil {
				t.Fatal(err)
			}
			flags = rec.Flags
		}
		if flags&(store.FlagHeartbeat|store.FlagHidden) == 0 {
			st.Tokens += int64(it.Tokens)
		}
		if it.IsSummary() {
			for len(st.SummariesByDepth) <= it.Depth {
				st.SummariesByDepth = append(st.SummariesByDepth, 0)
			}
			st.SummariesByDepth[it.Depth]++
		}
	}
	return st
}

func mustHeader(e *lossless.Engine, conv *lossless.Conversation, seq uint64) (store.Message, error) {
	var rec store.Message
	err := e.View(context.Background(), func(r store.Reader) error {
		var err error
		rec, err = r.MessageHeader(conv.StoreID(), seq)
		return err
	})
	return rec, err
}

func TestSessionsPage(t *testing.T) {
	e := toolFixture(t) // s1 (80 messages, compacted), s2 (1 message), agent main
	x := New(e)
	ctx := context.Background()
	// More conversations: agent "b" with three, one a heartbeat-only
	// message (stored, never shown: no active tokens).
	for i := 0; i < 3; i++ {
		p := core.IngestParams{SessionID: fmt.Sprintf("b-%d", i), SessionKey: fmt.Sprintf("agent:b:thread-%d", i),
			Message: core.UserText(fmt.Sprintf("hello from b %d", i), 1_900_000_000_000+int64(i))}
		p.IsHeartbeat = i == 2
		if _, err := e.Ingest(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	all, err := e.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	page, err := x.SessionsPage(ctx, SessionQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != len(all) || len(page.Sessions) != len(all) {
		t.Fatalf("total %d, %d on the page; Sessions has %d", page.Total, len(page.Sessions), len(all))
	}
	byID := map[string]inspect.SessionInfo{}
	for _, in := range all {
		byID[in.ID] = in
	}
	for i, d := range page.Sessions {
		if i > 0 {
			prev := page.Sessions[i-1]
			if prev.Agent > d.Agent || (prev.Agent == d.Agent && prev.Created < d.Created) {
				t.Fatalf("order: %s/%d before %s/%d", prev.Agent, prev.Created, d.Agent, d.Created)
			}
		}
		in := byID[d.ID]
		if d.Messages != in.Messages || d.FirstMessage != in.FirstMessage || d.LastMessage != in.LastMessage || d.Tokens != in.Tokens {
			t.Fatalf("session %s: page says %+v, Sessions %+v", d.ID, d.SessionInfo, in)
		}
		conv, err := e.Conversation(ctx, d.Agent, d.Name())
		if err != nil {
			t.Fatalf("Name %q does not resolve: %v", d.Name(), err)
		}
		if want := wantContextStats(t, e, conv); !equalStats(d.Context, want) {
			t.Fatalf("session %s: context %+v, want %+v", d.Name(), d.Context, want)
		}
	}
	s1 := pageSession(t, page, "s1")
	if s1.Context.Tokens >= s1.Tokens || len(s1.Context.SummariesByDepth) == 0 || s1.Context.SummariesByDepth[0] == 0 {
		t.Fatalf("s1 is compacted: %+v (stored %d tokens)", s1.Context, s1.Tokens)
	}
	if hb := pageSession(t, page, "b-2"); hb.Context.Tokens != 0 || hb.Context.Items != 1 {
		t.Fatalf("a heartbeat-only conversation shows %+v", hb.Context)
	}
	// Paging: pages of 2 cover the list once, in order.
	var ids []string
	for off := 0; ; off += 2 {
		p, err := x.SessionsPage(ctx, SessionQuery{Offset: off, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != len(all) {
			t.Fatalf("total %d on page at %d", p.Total, off)
		}
		if len(p.Sessions) == 0 {
			break
		}
		for _, d := range p.Sessions {
			ids = append(ids, d.ID)
		}
	}
	var want []string
	for _, d := range page.Sessions {
		want = append(want, d.ID)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("paged %v, want %v", ids, want)
	}
	// Agent and match filters.
	if p, _ := x.SessionsPage(ctx, SessionQuery{Agent: "b"}); p.Total != 3 {
		t.Fatalf("agent b: %d", p.Total)
	}
	if p, _ := x.SessionsPage(ctx, SessionQuery{Match: "thread-1"}); p.Total != 1 || p.Sessions[0].Key != "agent:b:thread-1" {
		t.Fatalf("match thread-1: %+v", p)
	}
	if p, _ := x.SessionsPage(ctx, SessionQuery{Match: "no such"}); p.Total != 0 || p.Sessions == nil {
		t.Fatalf("match nothing: %+v", p)
	}
	for _, q := range []SessionQuery{{Offset: -1}, {Limit: -1}} {
		if _, err := x.SessionsPage(ctx, q); !errors.Is(err, lossless.ErrBadToolArgs) {
			t.Fatalf("%+v: %v", q, err)
		}
	}
	// SessionByID finds the same conversation.
	in, err := x.SessionByID(ctx, s1.ID)
	if err != nil || in.Name() != "s1" || in.Messages != s1.Messages {
		t.Fatalf("SessionByID: %+v %v", in, err)
	}
	for _, id := range []string{"0000000000000000", "nothex"} {
		if _, err := x.SessionByID(ctx, id); !errors.Is(err, core.ErrUnknownSession) {
			t.Fatalf("SessionByID(%q): %v", id, err)
		}
	}
}

func pageSession(t *testing.T, p SessionPage, name string) SessionDetail {
	t.Helper()
	for _, d := range p.Sessions {
		if d.Name() == name {
			return d
		}
	}
	t.Fatalf("no session %q on the page", name)
	return SessionDetail{}
}

func equalStats(a, b ContextStats) bool {
	return a.Items == b.Items && a.Tokens == b.Tokens && slices.Equal(a.SummariesByDepth, b.SummariesByDepth) && a.Partial == b.Partial
}

// TestContextStatsPartial: a context longer than the scan bound is
// counted up to it and said to be partial.
func TestContextStatsPartial(t *testing.T) {
	e := openTest(t)
	x := New(e)
	ctx := context.Background()
	var msgs []core.Message
	for i := 0; i < 30; i++ {
		msgs = append(msgs, textMsg(core.RoleUser, fmt.Sprintf("turn %d", i), 1_700_000_000_000+int64(i)))
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "long", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	conv := mustConv(t, e, "long")
	full, err := x.ContextStats(ctx, conv)
	if err != nil || full.Items != 30 || full.Partial {
		t.Fatalf("full: %+v %v", full, err)
	}
	x.maxScan = 10
	part, err := x.ContextStats(ctx, conv)
	if err != nil || part.Items != 10 || !part.Partial || part.Tokens >= full.Tokens || part.Tokens == 0 {
		t.Fatalf("partial: %+v (full %+v) %v", part, full, err)
	}
	sp, err := x.ContextSummaries(ctx, conv, 0, 0)
	if err != nil || !sp.Partial || sp.Total != 0 {
		t.Fatalf("ContextSummaries past the bound: %+v %v", sp, err)
	}
}

// TestSummaryCensus: summaries a fallback made (the summarizer's text too
// long every time: aggressive retry, then the deterministic cut) are
// counted and listed.
func TestSummaryCensus(t *testing.T) {
	e := toolFixture(t)
	x := New(e)
	ctx := context.Background()
	c, err := x.SummaryCensus(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	s1 := mustConv(t, e, "s1")
	st, _ := x.ContextStats(ctx, s1)
	if c.Summaries == 0 || c.ByMethod[dag.MethodNormal] != c.Summaries || c.Fallback != 0 || len(c.Fallbacks) != 0 {
		t.Fatalf("census of the fixture: %+v (context %+v)", c, st)
	}
	e.SetSummarizer(longSummarizer{})
	var msgs []core.Message
	for i := 0; i < 60; i++ {
		msgs = append(msgs, textMsg([]string{core.RoleUser, core.RoleAssistant}[i%2], fmt.Sprintf("verbose %d %s", i, "words words words words words"), 1_750_000_000_000+int64(i)))
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s3", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Compact(ctx, core.CompactParams{SessionID: "s3", TokenBudget: 400, Force: true}); err != nil || !res.Compacted {
		t.Fatalf("compact: %+v %v", res, err)
	}
	c2, err := x.SummaryCensus(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	fb := c2.ByMethod[dag.MethodTruncate] + c2.ByMethod[dag.MethodAggressive]
	if fb == 0 || c2.Fallback != fb || len(c2.Fallbacks) != 1 || c2.Fallbacks[0].Session != "s3" {
		t.Fatalf("census after fallbacks: %+v", c2)
	}
	if got := c2.Fallbacks[0].Method; got != dag.MethodTruncate && got != dag.MethodAggressive {
		t.Fatalf("listed a %q summary as a fallback", got)
	}
}

// longSummarizer answers with ten times its input: always too long.
type longSummarizer struct{}

func (longSummarizer) Name() string { return "long" }
func (longSummarizer) Summarize(_ context.Context, req core.SummarizeRequest) (string, error) {
	out := ""
	for i := 0; i < 10; i++ {
		out += req.Text
	}
	return out, nil
}
