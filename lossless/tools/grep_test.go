package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// fixture is a memstore holding one conversation per session (its
// conversation id: the session's index + 1), of agent "a".
type fixture struct {
	st       *memstore.Store
	sessions []string
}

// conv returns the conversation of session s.
func (f *fixture) conv(s string) store.ConvID {
	for i, n := range f.sessions {
		if n == s {
			return store.ConvID{7: byte(i + 1)}
		}
	}
	return store.ConvID{}
}

// all returns every conversation of the fixture.
func (f *fixture) all() []store.ConvID {
	var out []store.ConvID
	for i := range f.sessions {
		out = append(out, store.ConvID{7: byte(i + 1)})
	}
	return out
}

// grep is Grep of the conversations of session s, as the engine's door
// resolves them.
func (f *fixture) grep(ctx context.Context, p GrepParams, convs ...store.ConvID) ([]GrepHit, error) {
	m, err := NewMatcher(p)
	if err != nil {
		return nil, err
	}
	return Grep(ctx, f.st, m, p, convs)
}

// newFixture stores texts (one message each, timestamps 1, 2, ...) under
// each session.
func newFixture(t *testing.T, sessions map[string][]string, order ...string) *fixture {
	t.Helper()
	f := &fixture{st: memstore.New(), sessions: order}
	err := f.st.Update(context.Background(), func(tx store.Tx) error {
		for i, s := range order {
			c := store.ConvID{7: byte(i + 1)}
			texts := sessions[s]
			if err := tx.PutConversation(c, store.Conversation{Agent: "a", NextSeq: uint64(len(texts) + 1), Messages: int64(len(texts))}); err != nil {
				return err
			}
			for j, text := range texts {
				raw := []byte(`{"role":"user","content":` + strconv.Quote(text) + `}`)
				if err := tx.PutMessage(c, store.Message{Seq: uint64(j + 1), Timestamp: int64(j + 1), Role: "user", Tokens: 10, Raw: raw}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestGrep: Grep reads the conversations it is given — the session's, or
// every conversation of the agent — and its time bounds, sorts and limits
// apply; a bad sort or scope is refused.
func TestGrep(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, map[string][]string{
		"s1": {"a zebra here", "nothing", "zebra zebra again"},
		"s2": {"another zebra"},
	}, "s1", "s2")
	hits, err := f.grep(ctx, GrepParams{Query: "zebra", Sort: SortRecency}, f.conv("s1"))
	if err != nil || len(hits) != 2 || hits[0].Seq != 3 || hits[1].Seq != 1 {
		t.Fatalf("conversation scope: %+v %v", hits, err)
	}
	hits, err = f.grep(ctx, GrepParams{Query: "zebra", Since: 1, Until: 1}, f.all()...)
	if err != nil || len(hits) != 2 || hits[0].Conversation == hits[1].Conversation {
		t.Fatalf("agent scope at time 1: %+v %v", hits, err)
	}
	hits, err = f.grep(ctx, GrepParams{Query: "zebra", Limit: 1}, f.all()...)
	if err != nil || len(hits) != 1 {
		t.Fatalf("limit 1: %+v %v", hits, err)
	}
	hits, err = f.grep(ctx, GrepParams{Query: "zebra"}, f.all()...)
	if err != nil || len(hits) != 3 || hits[0].Seq != 3 {
		t.Fatalf("relevance: %+v %v; want the two-zebra message first", hits, err)
	}
	if _, err := f.grep(ctx, GrepParams{Query: "zebra", Sort: "size"}, f.conv("s1")); !errors.Is(err, ErrBadArgs) {
		t.Errorf("bad sort: %v", err)
	}
	if _, err := AgentScope("world"); !errors.Is(err, ErrBadArgs) {
		t.Errorf("bad scope: %v", err)
	}
	if a, err := AgentScope(ScopeAgent); err != nil || !a {
		t.Errorf("agent scope: %v %v", a, err)
	}
	if _, err := NewMatcher(GrepParams{Query: "(", Regex: true}); !errors.Is(err, ErrBadArgs) {
		t.Errorf("bad regex: %v", err)
	}
	if got := ParseConvIDs([]string{f.conv("s2").String(), "xyz", "00"}); len(got) != 1 || got[0] != f.conv("s2") {
		t.Errorf("ParseConvIDs: %v", got)
	}
}

// TestGrepMissingMessage: a gap in a conversation's messages fails the
// search (store.ErrCorrupt naming the range), with or without time bounds.
func TestGrepMissingMessage(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, map[string][]string{"s1": {"zebra one", "zebra two", "zebra three"}}, "s1")
	c := f.conv("s1")
	if err := f.st.Update(ctx, func(tx store.Tx) error {
		return tx.PutConversation(c, store.Conversation{Agent: "a", NextSeq: 6, Messages: 5})
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []GrepParams{{Query: "zebra"}, {Query: "zebra", Since: 1}} {
		if _, err := f.grep(ctx, p, c); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "4") {
			t.Errorf("%+v: %v, want ErrCorrupt naming messages 4-5", p, err)
		}
	}
}

// TestToolArgs: a tool call's session is the ToolSession of its context
// when its arguments name none, and another agent's is refused; the
// definitions need no engine.
func TestToolArgs(t *testing.T) {
	ctx := WithToolSession(context.Background(), ToolSession{AgentID: "a", SessionID: "s1"})
	p, err := GrepArgs(ctx, json.RawMessage(`{"query":"zebra"}`))
	if err != nil || p.SessionID != "s1" || p.AgentID != "a" {
		t.Fatalf("grep args: %+v %v", p, err)
	}
	if _, err := GrepArgs(ctx, json.RawMessage(`{"query":"zebra","agentId":"b"}`)); !errors.Is(err, ErrBadArgs) {
		t.Errorf("another agent: %v", err)
	}
	if _, err := ExpandArgs(ctx, json.RawMessage(`{"id":"sum_1","sessionKey":"agent:b:x"}`)); !errors.Is(err, ErrBadArgs) {
		t.Errorf("another agent's key: %v", err)
	}
	if a, err := DescribeToolArgs(ctx, json.RawMessage(`{"id":"sum_1","sessionId":"s2"}`)); err != nil || a.SessionID != "s2" || a.AgentID != "a" {
		t.Errorf("describe args naming their session: %+v %v", a, err)
	}
	if _, err := DescribeToolArgs(ctx, json.RawMessage(`{}`)); !errors.Is(err, ErrBadArgs) {
		t.Errorf("describe without an id: %v", err)
	}
	if _, err := GrepArgs(context.Background(), json.RawMessage(`{"query":"zebra"}`)); !errors.Is(err, ErrBadArgs) {
		t.Errorf("no session anywhere: %v", err)
	}
	out, err := GrepOutput([]GrepHit{{Kind: "message", ID: "0000000000000001:1", Conversation: "0000000000000001", Score: 1.234, Snippet: "the <b>zebra</b> & co"}})
	if err != nil || !strings.Contains(out, `"id":"0000000000000001:1"`) || !strings.Contains(out, "<b>zebra</b> & co") ||
		strings.Contains(out, `"conversation"`) || !strings.Contains(out, `"score":1.23`) {
		t.Errorf("lcm_grep output: %s %v", out, err)
	}
	if defs := Defs(Tools()); len(defs) != 3 || defs[0].Name != NameGrep || defs[2].Name != NameExpand || !json.Valid(defs[1].Parameters) {
		t.Errorf("defs: %+v", defs)
	}
}

// TestGrepCoveredBy: a message hit's CoveredBy is the smallest leaf
// covering it (a condensed summary never: its sources are summaries), ""
// for a message no leaf covers; a summary hit has none.
func TestGrepCoveredBy(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, map[string][]string{"s1": {"zebra one", "zebra two", "zebra three", "zebra four"}}, "s1")
	c := f.conv("s1")
	err := f.st.Update(ctx, func(tx store.Tx) error {
		for _, s := range []dag.Summary{
			// In id order (the scan's): the smallest between two larger.
			{ID: "sum_a", Kind: dag.KindLeaf, Sources: []dag.Ref{dag.MessageRef(1), dag.MessageRef(2), dag.MessageRef(3)}, Text: "three turns"},
			{ID: "sum_b", Kind: dag.KindLeaf, Sources: []dag.Ref{dag.MessageRef(2)}, Text: "one turn"},
			{ID: "sum_c", Kind: dag.KindLeaf, Sources: []dag.Ref{dag.MessageRef(2), dag.MessageRef(3)}, Text: "two turns"},
			{ID: "sum_up", Kind: dag.KindCondensed, Depth: 1, Sources: []dag.Ref{dag.SummaryRef("sum_a"), dag.SummaryRef("sum_b")}, Text: "a zebra summary"},
		} {
			if err := tx.PutSummary(c, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := f.grep(ctx, GrepParams{Query: "zebra", Limit: 200}, c)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"0000000000000001:1": "sum_a", "0000000000000001:2": "sum_b", "0000000000000001:3": "sum_c", "0000000000000001:4": ""}
	got := map[string]string{}
	for _, h := range hits {
		if h.Kind == "summary" {
			if h.SummaryID != "sum_up" || h.CoveredBy != "" || h.ID != "" {
				t.Errorf("summary hit: %+v", h)
			}
			continue
		}
		got[h.ID] = h.CoveredBy
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("covers %v, want %v", got, want)
	}
	// Message hits alone still name their leaves.
	hits, err = f.grep(ctx, GrepParams{Query: "zebra two", Kind: "message"}, c)
	if err != nil || len(hits) != 1 || hits[0].CoveredBy != "sum_b" {
		t.Fatalf("kind message: %+v %v", hits, err)
	}
}

// TestGrepMatching: words match whole in any case and order, a regular
// expression as written; a bad one is refused; time bounds filter
// messages (by their timestamp) and summaries (by their latest), recency
// sorts newest first; kind "summary" gives summary hits only; the limit
// cuts.
func TestGrepMatching(t *testing.T) {
	ctx := context.Background()
	texts := make([]string, 40)
	for i := range texts {
		texts[i] = fmt.Sprintf("message %d about routine things", i+1)
	}
	texts[9] = "we saw a zebra near the build server"
	texts[29] = "the proxy answered error 404 twice"
	f := newFixture(t, map[string][]string{"s1": texts}, "s1")
	c := f.conv("s1")
	err := f.st.Update(ctx, func(tx store.Tx) error {
		return tx.PutSummary(c, dag.Summary{ID: "sum_1", Kind: dag.KindLeaf, Sources: []dag.Ref{dag.MessageRef(1), dag.MessageRef(2)},
			Text: "SUMMARYMARK of two routine turns", Earliest: 1, Latest: 2})
	})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := f.grep(ctx, GrepParams{Query: "Zebra build"}, c)
	if err != nil || len(hits) != 1 || hits[0].Seq != 10 || !strings.Contains(hits[0].Snippet, "zebra near the build") || hits[0].Role != "user" {
		t.Fatalf("words: %+v %v", hits, err)
	}
	if hits, err := f.grep(ctx, GrepParams{Query: "build zebra lion"}, c); err != nil || len(hits) != 0 {
		t.Fatalf("a word missing: %+v %v", hits, err)
	}
	if hits, err := f.grep(ctx, GrepParams{Query: `error \d{3}`, Regex: true}, c); err != nil || len(hits) != 1 || !strings.Contains(hits[0].Snippet, "404") {
		t.Fatalf("regex: %+v %v", hits, err)
	}
	if _, err := f.grep(ctx, GrepParams{Query: `(unclosed`, Regex: true}, c); !errors.Is(err, ErrBadArgs) {
		t.Fatalf("bad regex: %v", err)
	}
	// The zebra (time 10) is outside [20, 35].
	if hits, err := f.grep(ctx, GrepParams{Query: "zebra", Since: 20, Until: 35}, c); err != nil || len(hits) != 0 {
		t.Fatalf("time filter let through %+v %v", hits, err)
	}
	hits, err = f.grep(ctx, GrepParams{Query: "routine", Since: 20, Until: 35, Sort: SortRecency, Limit: 200, Kind: "message"}, c)
	if err != nil || len(hits) != 15 {
		t.Fatalf("routine messages in [20, 35]: %d, %v; want 15", len(hits), err)
	}
	for i, h := range hits {
		if h.Timestamp < 20 || h.Timestamp > 35 || (i > 0 && h.Timestamp > hits[i-1].Timestamp) {
			t.Fatalf("hit %d at %d out of range or order", i, h.Timestamp)
		}
	}
	hits, err = f.grep(ctx, GrepParams{Query: "summarymark", Kind: "summary"}, c)
	if err != nil || len(hits) != 1 || hits[0].SummaryID != "sum_1" || hits[0].Kind != "summary" {
		t.Fatalf("summary hits: %+v %v", hits, err)
	}
	if hits, err := f.grep(ctx, GrepParams{Query: "summarymark", Kind: "summary", Since: 3}, c); err != nil || len(hits) != 0 {
		t.Fatalf("a summary before the bound: %+v %v", hits, err)
	}
	if hits, err := f.grep(ctx, GrepParams{Query: "routine", Limit: 3}, c); err != nil || len(hits) != 3 {
		t.Fatalf("limit: %d hits, %v", len(hits), err)
	}
	if hits, err := f.grep(ctx, GrepParams{Query: "routine", Limit: 1000, Kind: "message"}, c); err != nil || len(hits) != 38 {
		t.Fatalf("limit over the most: %d hits, %v; want all 38", len(hits), err)
	}
}
