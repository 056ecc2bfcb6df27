package ui_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/explain"
	"github.com/lossless-engine/contextengine/lossless/explore"
	"github.com/lossless-engine/contextengine/lossless/inspect"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/lossless/tools"
)

type sessionItem struct {
	Agent            string   `json:"agent"`
	ID               string   `json:"id"`
	Session          string   `json:"session"`
	SessionIDs       []string `json:"sessionIds"`
	Messages         int64    `json:"messages"`
	Tokens           int64    `json:"tokens"`
	ActiveTokens     int64    `json:"activeTokens"`
	ContextItems     int      `json:"contextItems"`
	Ratio            float64  `json:"ratio"`
	Summaries        int64    `json:"summaries"`
	SummariesByDepth []int    `json:"summariesByDepth"`
	FirstMessage     int64    `json:"firstMessage"`
	LastMessage      int64    `json:"lastMessage"`
}

type listOf[T any] struct {
	Total, Offset, Limit int
	Items                []T
	Partial              bool
}

func TestSessionsAPI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var all listOf[sessionItem]
	f.getJSON(t, "/api/sessions", nil, &all)
	infos, err := f.e.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if all.Total != len(infos) || len(all.Items) != len(infos) || all.Offset != 0 || all.Limit != explore.DefaultPageLimit {
		t.Fatalf("sessions: total %d, %d items, offset %d, limit %d; the store has %d", all.Total, len(all.Items), all.Offset, all.Limit, len(infos))
	}
	for _, it := range all.Items {
		conv, err := f.e.Conversation(ctx, it.Agent, it.Session)
		if err != nil || conv.ID() != it.ID {
			t.Fatalf("row %+v: its session does not name its conversation: %v", it, err)
		}
		st, err := explore.New(f.e).ContextStats(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		if it.ActiveTokens != st.Tokens || it.ContextItems != st.Items || !slices.Equal(it.SummariesByDepth, st.SummariesByDepth) {
			t.Fatalf("row %s: active %d / %d items / %v; the engine says %+v", it.Session, it.ActiveTokens, it.ContextItems, it.SummariesByDepth, st)
		}
		if it.ActiveTokens > 0 && it.Ratio != float64(it.Tokens)/float64(it.ActiveTokens) {
			t.Fatalf("row %s: ratio %v", it.Session, it.Ratio)
		}
		if it.Session == "s1" {
			if it.Messages != 81 || it.FirstMessage != 1_700_000_000_000 || it.LastMessage != 1_700_000_000_000+79*60_000 {
				t.Fatalf("s1: %+v (message times, not import times)", it)
			}
			if it.Ratio <= 1 || len(it.SummariesByDepth) == 0 {
				t.Fatalf("s1 is compacted: %+v", it)
			}
		}
	}
	// Paging: limit 1 walks the same rows in the same order.
	for off := 0; off < all.Total; off++ {
		var p listOf[sessionItem]
		f.getJSON(t, "/api/sessions", q("offset", strconv.Itoa(off), "limit", "1"), &p)
		if p.Total != all.Total || len(p.Items) != 1 || p.Items[0].ID != all.Items[off].ID || p.Offset != off || p.Limit != 1 {
			t.Fatalf("page at %d: %+v", off, p)
		}
	}
	var past listOf[sessionItem]
	f.getJSON(t, "/api/sessions", q("offset", "99"), &past)
	if past.Total != all.Total || len(past.Items) != 0 || past.Items == nil {
		t.Fatalf("past the end: %+v", past)
	}
	var big listOf[sessionItem]
	f.getJSON(t, "/api/sessions", q("limit", "100000"), &big)
	if big.Limit != explore.MaxPageLimit {
		t.Fatalf("limit capped at %d", big.Limit)
	}
	var b listOf[sessionItem]
	f.getJSON(t, "/api/sessions", q("agent", "b"), &b)
	if b.Total != 1 || b.Items[0].Session != "b-1" {
		t.Fatalf("agent b: %+v", b)
	}
	f.getJSON(t, "/api/sessions", q("q", "s2"), &b)
	if b.Total != 1 || b.Items[0].Session != "s2" {
		t.Fatalf("q=s2: %+v", b)
	}
	for _, bad := range []string{"offset=-1", "limit=0", "limit=x", "offset=1.5"} {
		k, v, _ := strings.Cut(bad, "=")
		f.wantError(t, "/api/sessions", q(k, v), http.StatusBadRequest)
	}
}

type contextAnswer struct {
	EstimatedTokens            int `json:"estimatedTokens"`
	Budget                     int `json:"budget"`
	EffectiveBudget            int `json:"effectiveBudget"`
	SystemPromptAdditionTokens int `json:"systemPromptAdditionTokens"`
	Recall                     recalled.Report
	Parts                      []explain.ContextPart
	Messages                   []struct {
		Index     int    `json:"index"`
		Role      string `json:"role"`
		Part      string `json:"part"`
		Tokens    int    `json:"tokens"`
		SummaryID string `json:"summaryId"`
		Seq       uint64 `json:"seq"`
		Text      string `json:"text"`
	}
}

func TestContextAPI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var c contextAnswer
	f.getJSON(t, "/api/context", q("agent", "main", "session", "s1", "budget", "900", "prompt", "where was the zebra?"), &c)
	rep, err := f.e.AssembleReport(ctx, core.AssembleParams{SessionID: "s1", SessionKey: "agent:main:cli", Messages: []core.Message{},
		TokenBudget: 900, Prompt: "where was the zebra?"})
	if err != nil {
		t.Fatal(err)
	}
	if c.EstimatedTokens != rep.Result.EstimatedTokens || len(c.Messages) != len(rep.Messages) || c.Budget != 900 || c.EffectiveBudget != 900 {
		t.Fatalf("context: %d tokens, %d messages, budget %d/%d; the engine: %d, %d", c.EstimatedTokens, len(c.Messages), c.Budget,
			c.EffectiveBudget, rep.Result.EstimatedTokens, len(rep.Messages))
	}
	sum, byPart := 0, map[string]int{}
	for _, p := range c.Parts {
		sum += p.Tokens
		byPart[p.Part] = p.Tokens
	}
	if sum != c.EstimatedTokens || byPart[explain.PartSummaries] == 0 || byPart[explain.PartTail] == 0 {
		t.Fatalf("parts %+v sum to %d of %d", c.Parts, sum, c.EstimatedTokens)
	}
	msgTokens := 0
	for i, m := range c.Messages {
		msgTokens += m.Tokens
		if m.Index != i || m.Part != rep.Messages[i].Part || m.Tokens != rep.Messages[i].Tokens || m.Role != rep.Messages[i].Message.Role() {
			t.Fatalf("message %d: %+v", i, m)
		}
		if m.Part == explain.PartSummaries && (m.SummaryID == "" || !strings.Contains(m.Text, m.SummaryID)) {
			t.Fatalf("summary message %d: %+v", i, m)
		}
		if m.Part == explain.PartTail && m.Seq == 0 {
			t.Fatalf("tail message %d without its seq", i)
		}
	}
	if msgTokens+c.SystemPromptAdditionTokens != c.EstimatedTokens {
		t.Fatalf("messages hold %d tokens + %d, the estimate is %d", msgTokens, c.SystemPromptAdditionTokens, c.EstimatedTokens)
	}
	// Without a budget: the engine's default, recall off without a prompt.
	f.getJSON(t, "/api/context", q("agent", "main", "session", "s1"), &c)
	if c.Budget != 0 || c.EffectiveBudget != f.e.Config().DefaultTokenBudget || c.Recall.Status != recalled.Off {
		t.Fatalf("default budget: %d/%d, recall %+v", c.Budget, c.EffectiveBudget, c.Recall)
	}
	f.wantError(t, "/api/context", q("agent", "main", "session", "nope"), http.StatusNotFound)
	f.wantError(t, "/api/context", q("agent", "b", "session", "s1"), http.StatusNotFound)
	f.wantError(t, "/api/context", q("session", "s1"), http.StatusBadRequest)
	f.wantError(t, "/api/context", q("agent", "main", "session", "s1", "budget", "-5"), http.StatusBadRequest)
}

type summaryItem struct {
	Kind             string `json:"kind"`
	ID               string `json:"id"`
	SummaryKind      string `json:"summaryKind"`
	Depth            int    `json:"depth"`
	Method           string `json:"method"`
	Refused          string `json:"refused"`
	Tokens           int    `json:"tokens"`
	Earliest         int64  `json:"earliest"`
	Latest           int64  `json:"latest"`
	SourceCount      int    `json:"sourceCount"`
	DescendantCount  int    `json:"descendantCount"`
	DescendantTokens int    `json:"descendantTokens"`
	Text             string `json:"text"`
	Seq              uint64 `json:"seq"`
	Role             string `json:"role"`
	Preview          string `json:"preview"`
}

func TestDAGAPI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	conv, err := f.e.Conversation(ctx, "main", "s1")
	if err != nil {
		t.Fatal(err)
	}
	var roots listOf[summaryItem]
	f.getJSON(t, "/api/summaries", q("agent", "main", "session", "s1"), &roots)
	want, err := explore.New(f.e).ContextSummaries(ctx, conv, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if roots.Total == 0 || roots.Total != want.Total || len(roots.Items) != len(want.Summaries) {
		t.Fatalf("roots %+v, the engine %d", roots, want.Total)
	}
	for i, s := range roots.Items {
		w := want.Summaries[i]
		if s.ID != w.ID || s.Kind != "summary" || s.Depth != w.Depth || s.SourceCount != len(w.Sources) || s.Earliest != w.Earliest ||
			s.Latest != w.Latest || s.DescendantCount != w.DescendantCount || s.Text != "" {
			t.Fatalf("root %d: %+v, want %+v", i, s, w)
		}
	}
	// Down to the raw messages: every message a leaf covers has its
	// stored bytes at /api/message.
	type summaryAnswer struct {
		Summary summaryItem
		listOf[summaryItem]
	}
	var walk func(id string) int
	walk = func(id string) int {
		var a summaryAnswer
		f.getJSON(t, "/api/summary", q("agent", "main", "session", "s1", "id", id, "limit", "500"), &a)
		if a.Summary.ID != id || a.Summary.Text == "" || a.Total != a.Summary.SourceCount || len(a.Items) != a.Total {
			t.Fatalf("summary %s: %+v", id, a)
		}
		n := 0
		for _, ch := range a.Items {
			switch ch.Kind {
			case "summary":
				if ch.Depth != a.Summary.Depth-1 {
					t.Fatalf("child %s of %s at depth %d", ch.ID, id, ch.Depth)
				}
				n += walk(ch.ID)
			case "message":
				if ch.Seq == 0 || ch.Role == "" {
					t.Fatalf("message child %+v", ch)
				}
				n++
			default:
				t.Fatalf("child kind %q", ch.Kind)
			}
		}
		return n
	}
	covered := 0
	for _, s := range roots.Items {
		covered += walk(s.ID)
	}
	if covered == 0 {
		t.Fatal("the DAG reaches no message")
	}
	var leaves listOf[summaryItem]
	f.getJSON(t, "/api/summaries", q("agent", "main", "session", "s1", "depth", "0", "limit", "1"), &leaves)
	if leaves.Total == 0 || len(leaves.Items) != 1 || leaves.Items[0].Depth != 0 {
		t.Fatalf("depth 0: %+v", leaves)
	}
	var a summaryAnswer
	f.getJSON(t, "/api/summary", q("agent", "main", "session", "s1", "id", leaves.Items[0].ID, "offset", "1", "limit", "2"), &a)
	if a.Offset != 1 || a.Limit != 2 || len(a.Items) > 2 || a.Total != leaves.Items[0].SourceCount {
		t.Fatalf("a leaf's second page: %+v", a)
	}
	f.wantError(t, "/api/summary", q("agent", "main", "session", "s1", "id", "sum_missing"), http.StatusNotFound)
	f.wantError(t, "/api/summary", q("agent", "main", "session", "s1"), http.StatusBadRequest)
	f.wantError(t, "/api/summaries", q("agent", "main", "session", "s1", "depth", "-1"), http.StatusBadRequest)
	f.wantError(t, "/api/summaries", q("agent", "main", "session", "nope"), http.StatusNotFound)
}

// TestMessageAPI: /api/message answers the bytes `lossless export` writes
// (Engine.Messages), the hostile message included.
func TestMessageAPI(t *testing.T) {
	f := newFixture(t)
	n := 0
	err := f.e.Messages(context.Background(), "main", "s1", func(seq uint64, m core.Message) error {
		code, body := f.get(t, "/api/message", q("agent", "main", "session", "s1", "seq", strconv.FormatUint(seq, 10)))
		if code != http.StatusOK || !bytes.Equal(body, m.Raw()) {
			t.Fatalf("message %d: %d %q, stored %q", seq, code, body, m.Raw())
		}
		n++
		return nil
	})
	if err != nil || n != 81 {
		t.Fatalf("%d messages: %v", n, err)
	}
	req, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/api/message?agent=main&session=s1&seq=6", nil)
	req.Header.Set("X-Lossless-Token", f.srv.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
	if _, body := f.get(t, "/api/message", q("agent", "main", "session", "s1", "seq", "6")); string(body) != hostile {
		t.Fatalf("message 6: %s", body)
	}
	f.wantError(t, "/api/message", q("agent", "main", "session", "s1", "seq", "999"), http.StatusNotFound)
	f.wantError(t, "/api/message", q("agent", "main", "session", "s1", "seq", "0"), http.StatusBadRequest)
	f.wantError(t, "/api/message", q("agent", "main", "session", "s1", "seq", "x"), http.StatusBadRequest)
	f.wantError(t, "/api/message", q("agent", "main", "session", "gone", "seq", "1"), http.StatusNotFound)
}

type grepAnswer struct {
	Items []struct {
		tools.GrepHit
		Agent   string `json:"agent"`
		Session string `json:"session"`
	}
	Scanned int
	Next    string
}

func TestGrepAPI(t *testing.T) {
	f := newFixture(t)
	var g grepAnswer
	f.getJSON(t, "/api/grep", q("q", "zebra"), &g)
	sessions := map[string]bool{}
	for _, h := range g.Items {
		sessions[h.Session] = true
		if h.Agent != "main" || !strings.Contains(strings.ToLower(h.Snippet), "zebra") {
			t.Fatalf("hit %+v", h)
		}
	}
	if !sessions["s1"] || !sessions["s2"] || g.Next != "" {
		t.Fatalf("zebra in the agent: %+v", g)
	}
	f.getJSON(t, "/api/grep", q("q", "zebra", "agent", "main", "session", "s2"), &g)
	if len(g.Items) != 1 || g.Items[0].Session != "s2" {
		t.Fatalf("zebra in s2: %+v", g)
	}
	// All at once: pages of 200, followed to the end (a page stops early at
	// the handler's time bound, grepTime, on a loaded machine).
	all := map[string]bool{}
	for i, cursor := 0, ""; ; i++ {
		if i > 50 {
			t.Fatal("no end")
		}
		g = grepAnswer{}
		f.getJSON(t, "/api/grep", q("q", `turn \d+ about`, "regex", "1", "agent", "main", "session", "s1", "limit", "200", "cursor", cursor), &g)
		for _, h := range g.Items {
			all[h.SummaryID+strconv.FormatUint(h.Seq, 10)] = true
		}
		if g.Next == "" {
			break
		}
		cursor = g.Next
	}
	total := len(all)
	if total == 0 {
		t.Fatal("regex found nothing")
	}
	// The same search a hit at a time: every hit once, then no cursor.
	seen := map[string]bool{}
	cursor := ""
	for i := 0; ; i++ {
		if i > 500 {
			t.Fatal("no end")
		}
		g = grepAnswer{} // "next" is left out on the last page
		f.getJSON(t, "/api/grep", q("q", `turn \d+ about`, "regex", "1", "session", "s1", "limit", "1", "cursor", cursor), &g)
		for _, h := range g.Items {
			k := h.SummaryID + strconv.FormatUint(h.Seq, 10)
			if seen[k] {
				t.Fatalf("hit %s twice", k)
			}
			seen[k] = true
		}
		if g.Next == "" {
			break
		}
		cursor = g.Next
	}
	if len(seen) != total {
		t.Fatalf("a hit at a time found %d, all at once %d", len(seen), total)
	}
	f.wantError(t, "/api/grep", nil, http.StatusBadRequest)
	f.wantError(t, "/api/grep", q("q", "(", "regex", "1"), http.StatusBadRequest)
	f.wantError(t, "/api/grep", q("q", "x", "cursor", "garbage"), http.StatusBadRequest)
	f.wantError(t, "/api/grep", q("q", "x", "session", "nope"), http.StatusNotFound)
}

type recallAnswer struct {
	Prompt    string
	Agent     string
	Terms     []string
	Threshold float64
	Items     []struct {
		ID           string   `json:"id"`
		Score        float64  `json:"score"`
		Relevance    float64  `json:"relevance"`
		Passed       bool     `json:"passed"`
		MatchedTerms []string `json:"matchedTerms"`
		Agent        string   `json:"agent"`
		Session      string   `json:"session"`
		Seq          uint64   `json:"seq"`
		Timestamp    int64    `json:"timestamp"`
		Snippet      string   `json:"snippet"`
	}
}

func TestRecallAPI(t *testing.T) {
	f := newFixture(t)
	var r recallAnswer
	f.getJSON(t, "/api/recall", q("prompt", "the zebra near the build server", "agent", "main", "session", "s2"), &r)
	if r.Agent != "main" || !slices.Contains(r.Terms, "zebra") || r.Threshold != config.DefaultRecallMinScore || len(r.Items) == 0 {
		t.Fatalf("recall: %+v", r)
	}
	gated, err := f.e.Recall(context.Background(), core.AssembleParams{SessionID: "s2", SessionKey: "agent:main:cli", Prompt: "the zebra near the build server"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	passed, found := 0, false
	for _, it := range r.Items {
		if it.Passed {
			passed++
		}
		if it.Session == "s1" && slices.Contains(it.MatchedTerms, "zebra") && strings.Contains(it.Snippet, "zebra") && it.Timestamp > 0 {
			found = true
		}
	}
	if passed != len(gated) || !found {
		t.Fatalf("%d passed (Recall: %d), s1's zebra found: %v; %+v", passed, len(gated), found, r.Items)
	}
	f.wantError(t, "/api/recall", q("prompt", " "), http.StatusBadRequest)
	f.wantError(t, "/api/recall", q("prompt", "x", "session", "nope"), http.StatusNotFound)
	f.wantError(t, "/api/recall", q("prompt", "x", "k", "-1"), http.StatusBadRequest)
}

type healthAnswer struct {
	Backend          string
	Store            string
	Conversations    int64
	Messages         int64
	Summaries        int64
	RefusedSummaries int64
	Recall           recalled.Status
	Doctor           struct {
		State  string
		Error  string
		Check  *inspect.CheckResult
		Census *explore.SummaryCensus
	}
}

func TestOverviewAndHealthAPI(t *testing.T) {
	f := newFixture(t)
	var ov struct {
		Backend, Store, Version, Tokenizer string
		Format                             int
		DiskBytes                          int64
		Agents                             []struct {
			Agent         string
			Conversations int64
			Messages      int64
		}
	}
	f.getJSON(t, "/api/overview", nil, &ov)
	if ov.Backend != "badger" || ov.Store != f.e.Config().StoreDir || ov.Tokenizer != core.CounterChars4 || ov.DiskBytes <= 0 ||
		len(ov.Agents) != 2 || ov.Agents[0].Agent != "b" || ov.Agents[1].Conversations != 2 || ov.Agents[1].Messages != 82 {
		t.Fatalf("overview %+v", ov)
	}
	check, err := f.e.Check(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	var h healthAnswer
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.getJSON(t, "/api/health", nil, &h)
		if h.Doctor.State != "running" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if h.Doctor.State != "done" || h.Doctor.Check == nil || len(h.Doctor.Check.Problems) != len(check.Problems) ||
		h.Doctor.Check.Conversations != check.Conversations || h.Conversations != 3 || h.Messages != 83 || !h.Recall.Enabled {
		t.Fatalf("health %+v", h)
	}
	if c := h.Doctor.Census; c == nil || c.Summaries == 0 || c.Fallback != 0 {
		t.Fatalf("census %+v", h.Doctor.Census)
	}
}

// TestHealthShowsRefusedSummaries: summaries the extractive summarizer
// wrote because the host's model answered with canned replies are counted
// in /api/health (and /api/overview's agents), listed among the fallbacks
// with the reason, and marked in the DAG view.
func TestHealthShowsRefusedSummaries(t *testing.T) {
	cfg := config.Default()
	cfg.StoreDir = t.TempDir()
	cfg.Tokenizer = core.CounterChars4
	cfg.FreshTailMessages = 6
	cfg.Summarizer = []byte(`{"kind":"host","maxCallsPerHour":-1,"maxTokensPerHour":-1}`)
	ctx := context.Background()
	e, err := lossless.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	var msgs []core.Message
	for i := 0; i < 60; i++ {
		msgs = append(msgs, core.UserText(fmt.Sprintf("turn %d: deploy build MARK-%02d-9d72 %s", i, i, strings.Repeat("and check the logs ", 10)), int64(1_700_000_000_000+i)))
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s1", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	canned := &core.RuntimeContext{LLMComplete: func(context.Context, core.LLMRequest) (core.LLMResponse, error) {
		return core.LLMResponse{Text: "Noted. That should not change the schedule much."}, nil
	}}
	res, err := e.Compact(ctx, core.CompactParams{SessionID: "s1", TokenBudget: 1200, Force: true, RuntimeContext: canned})
	if err != nil || !res.Compacted {
		t.Fatalf("compact: %+v %v", res, err)
	}
	f := serve(t, e)
	var h healthAnswer
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.getJSON(t, "/api/health", nil, &h)
		if h.Doctor.State != "running" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := h.Doctor.Census
	if h.Summaries == 0 || h.RefusedSummaries != h.Summaries || c == nil || c.ByMethod["refused"] != int(h.Summaries) ||
		c.Fallback != int(h.Summaries) || len(c.Fallbacks) == 0 {
		t.Fatalf("health %+v census %+v", h, c)
	}
	for _, fb := range c.Fallbacks {
		if fb.Method != "refused" || !strings.Contains(fb.Refused, "too short to summarize") {
			t.Fatalf("fallback %+v", fb)
		}
	}
	var roots listOf[summaryItem]
	f.getJSON(t, "/api/summaries", q("agent", "main", "session", "s1"), &roots)
	if len(roots.Items) == 0 || roots.Items[0].Method != "refused" || !strings.Contains(roots.Items[0].Refused, "Noted.") {
		t.Fatalf("DAG roots %+v", roots)
	}
}
