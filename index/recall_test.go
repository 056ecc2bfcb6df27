package index

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"
	"unicode/utf8"
)

func TestRecallScopeAndNeighbours(t *testing.T) {
	ix, _ := openTest(t, Options{})
	ctx := context.Background()
	// Session old: a question, an unrelated reply, and the answer two turns on.
	ix.Add(
		msg("a", "old", 1, "what should we name the parrot"),
		msg("a", "old", 2, "hmm let me think about it"),
		msg("a", "old", 3, "Captain Feathers it is"),
		msg("a", "old", 4, "done, see you tomorrow"),
		msg("a", "old", 5, "what should we name the parrot"), // near-identical repeat
		msg("a", "old", 6, "What should we name the parrot?!"),
	)
	// Current session: turns 0..2 compacted, 3.. in context.
	for i := uint64(0); i < 6; i++ {
		ix.Add(msg("a", "cur", i, fmt.Sprintf("parrot talk %d", i)))
	}
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	hs, err := ix.Recall(ctx, RecallQuery{Agent: "a", Text: "name the parrot", K: 20, CurrentSession: "cur", InContextFrom: 3,
		ExcludeIDs: map[string]bool{"a/cur/1": true}})
	if err != nil {
		t.Fatal(err)
	}
	got := ids(hs)
	for _, id := range []string{"a/cur/3", "a/cur/4", "a/cur/5", "a/cur/1"} {
		if slices.Contains(got, id) {
			t.Errorf("recalled %s, which is in context: %v", id, got)
		}
	}
	for _, id := range []string{"a/cur/0", "a/cur/2", "a/old/3"} {
		if !slices.Contains(got, id) {
			t.Errorf("missing %s: %v", id, got)
		}
	}
	// Near-identical texts collapse to one.
	n := 0
	for _, id := range got {
		if id == "a/old/1" || id == "a/old/5" || id == "a/old/6" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("near-identical turns not collapsed: %v", got)
	}
	// The answer came in as a neighbour of a hit, ranked below it.
	var ans Hit
	for _, h := range hs {
		if h.ID == "a/old/3" {
			ans = h
		}
	}
	if ans.NeighbourOf == "" || ans.Score <= 0 || ans.Score >= hs[0].Score {
		t.Errorf("answer as neighbour: %+v (top %+v)", ans, hs[0])
	}
	// Without neighbours it is not found (it shares no word with the query).
	hs, err = ix.Recall(ctx, RecallQuery{Agent: "a", Text: "name the parrot", K: 20, Neighbours: -1})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids(hs), "a/old/3") {
		t.Errorf("found without neighbours: %v", ids(hs))
	}
	// K bounds the result, neighbours included.
	hs, _ = ix.Recall(ctx, RecallQuery{Agent: "a", Text: "name the parrot", K: 2})
	if len(hs) != 2 {
		t.Errorf("K=2: %v", ids(hs))
	}
	// Empty or stop-word-only prompts recall nothing.
	for _, p := range []string{"", "the and of", "   "} {
		if hs, err := ix.Recall(ctx, RecallQuery{Agent: "a", Text: p}); err != nil || len(hs) != 0 {
			t.Errorf("prompt %q: %v %v", p, ids(hs), err)
		}
	}
}

func TestRecallDateBoost(t *testing.T) {
	ix, _ := openTest(t, Options{})
	ctx := context.Background()
	day := func(m time.Month, d int) int64 { return time.Date(2023, m, d, 15, 0, 0, 0, time.UTC).UnixMilli() }
	mk := func(id string, ts int64, text string) Doc {
		return Doc{ID: id, Agent: "a", Session: id, Kind: KindMessage, Timestamp: ts, Text: text}
	}
	ix.Add(
		mk("june", day(time.June, 3), "I started a new hobby, pottery"),
		mk("may", day(time.May, 1), "I started a new hobby, pottery classes are fun and a new hobby"),
		mk("aug", day(time.August, 9), "new hobby news: I started a hobby"),
	)
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	first := func(q string) string {
		hs, err := ix.Recall(ctx, RecallQuery{Agent: "a", Text: q, K: 3})
		if err != nil || len(hs) == 0 {
			t.Fatalf("%q: %v %v", q, hs, err)
		}
		return hs[0].ID
	}
	if got := first("What new hobby did she start on 3 June, 2023?"); got != "june" {
		t.Errorf("day: got %s", got)
	}
	if got := first("What new hobby did she start in August 2023?"); got != "aug" {
		t.Errorf("month: got %s", got)
	}
}

func TestDateSpans(t *testing.T) {
	d := func(y int, m time.Month, day int) int64 {
		return time.Date(y, m, day, 0, 0, 0, 0, time.UTC).UnixMilli()
	}
	cases := []struct {
		text string
		want []int64 // span starts + dayBefore/monthBefore
	}{
		{"what happened on 3 June, 2023?", []int64{d(2023, 6, 3)}},
		{"on June 3rd 2023 and on 2023-07-04", []int64{d(2023, 6, 3), d(2023, 7, 4)}},
		{"October 13, 2023", []int64{d(2023, 10, 13)}},
		{"the 1st of Dec. 2022", []int64{d(2022, 12, 1)}},
		{"in July 2023", []int64{d(2023, 7, 1)}},
		{"in June", nil},
		{"31 June, 2023", []int64{d(2023, 6, 1)}}, // no such day: the month
		{"no dates here 42", nil},
		{"2023-13-45", nil},
	}
	for _, c := range cases {
		got := DateSpans(c.text)
		if len(got) != len(c.want) {
			t.Errorf("%q: %v", c.text, got)
			continue
		}
		for i, sp := range got {
			if sp.From > c.want[i] || sp.To <= c.want[i]+int64(24*time.Hour/time.Millisecond) {
				t.Errorf("%q: span %d = %v, want around %d", c.text, i, sp, c.want[i])
			}
		}
	}
}

// FuzzQueryParsing: the prompt is outside input; turning it into terms and
// date spans must never fail, and its results stay bounded and valid.
func FuzzQueryParsing(f *testing.F) {
	for _, s := range []string{"", "hello world", "src/a_b/cD.go 550e8400-e29b-41d4", "北京 東京タワー", "3 June, 2023 2023-06-03",
		"AND OR NOT +a -b \"phrase\" field:value *wild? ~fuzzy^2", "\xff\xfe", "a.b.c.d.e.f.g.h.i.j.k", "___---///"} {
		f.Add(s)
	}
	ix, _ := openTest(f, Options{})
	f.Fuzz(func(t *testing.T, s string) {
		terms := ix.Terms(s)
		if len(terms) > MaxQueryTerms {
			t.Fatalf("%d terms", len(terms))
		}
		seen := map[string]bool{}
		for _, term := range terms {
			if term == "" || !utf8.ValidString(term) || seen[term] {
				t.Fatalf("bad term %q in %q", term, terms)
			}
			seen[term] = true
		}
		spans := DateSpans(s)
		if len(spans) > maxSpans {
			t.Fatalf("%d spans", len(spans))
		}
		for _, sp := range spans {
			if sp.From >= sp.To {
				t.Fatalf("empty span %v", sp)
			}
		}
	})
}

func ExampleIndex_Recall() {
	dir, _ := os.MkdirTemp("", "index-example-*")
	defer os.RemoveAll(dir)
	ix, err := Open(dir, Options{})
	if err != nil {
		panic(err)
	}
	defer ix.Close()
	ix.Add(
		Doc{ID: "m1", Agent: "main", Session: "s1", Seq: 1, Text: "where is the deploy script?"},
		Doc{ID: "m2", Agent: "main", Session: "s1", Seq: 2, Text: "it lives in ops/deploy_prod.sh"},
		Doc{ID: "m3", Agent: "main", Session: "s1", Seq: 3, Text: "thanks, I will run it tonight"},
		Doc{ID: "m4", Agent: "main", Session: "s1", Seq: 4, Text: "unrelated: the cat sat on the mat"},
		Doc{ID: "x1", Agent: "other", Session: "s9", Seq: 1, Text: "deploy_prod.sh of another agent"},
	)
	hits, err := ix.Recall(context.Background(), RecallQuery{
		Agent: "main", Text: "which script deploys to prod?", K: 3, WaitForLag: true,
	})
	if err != nil {
		panic(err)
	}
	for _, h := range hits {
		fmt.Println(h.ID, h.Session, h.NeighbourOf != "")
	}
	// Output:
	// m2 s1 false
	// m1 s1 true
	// m3 s1 true
}

// TestPostingBudget: the kept query terms walk at most maxPostings
// postings; a prompt of terms commoner than that searches nothing.
func TestPostingBudget(t *testing.T) {
	old := maxPostings
	maxPostings = 100
	defer func() { maxPostings = old }()
	ix, _ := openTest(t, Options{})
	docs := make([]Doc, 150)
	for i := range docs {
		text := fmt.Sprintf("everyday chatter number %d", i)
		if i == 70 {
			text += " about the zeppelin"
		}
		docs[i] = msg("a", "s", uint64(i), text)
	}
	ix.Add(docs...)
	if err := ix.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ix.bmu.RLock()
	terms, _, err := ix.pruneTerms(ctx, ix.Terms("everyday zeppelin chatter"))
	ix.bmu.RUnlock()
	if err != nil || !slices.Equal(terms, []string{"zeppelin"}) {
		t.Fatalf("terms %v %v, want only the rare one", terms, err)
	}
	hs, err := ix.Recall(ctx, RecallQuery{Agent: "a", Text: "everyday zeppelin chatter", K: 3, Neighbours: -1})
	// The zeppelin turn, and the next one by its context field.
	if err != nil || len(hs) != 2 || hs[0].ID != docs[70].ID || hs[1].ID != docs[71].ID {
		t.Fatalf("recall %v %v", ids(hs), err)
	}
	if hs, err := ix.Recall(ctx, RecallQuery{Agent: "a", Text: "everyday chatter", K: 3}); err != nil || len(hs) != 0 {
		t.Fatalf("common words only: %v %v", ids(hs), err)
	}
}
