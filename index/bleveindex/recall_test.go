package bleveindex

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/index"
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
	hs, err := ix.Recall(ctx, index.RecallQuery{Agent: "a", Text: "name the parrot", K: 20, CurrentSession: "cur", InContextFrom: 3,
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
	var ans index.Hit
	for _, h := range hs {
		if h.ID == "a/old/3" {
			ans = h
		}
	}
	if ans.NeighbourOf == "" || ans.Score <= 0 || ans.Score >= hs[0].Score {
		t.Errorf("answer as neighbour: %+v (top %+v)", ans, hs[0])
	}
	// Without neighbours it is not found (it shares no word with the query).
	hs, err = ix.Recall(ctx, index.RecallQuery{Agent: "a", Text: "name the parrot", K: 20, Neighbours: -1})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids(hs), "a/old/3") {
		t.Errorf("found without neighbours: %v", ids(hs))
	}
	// K bounds the result, neighbours included.
	hs, _ = ix.Recall(ctx, index.RecallQuery{Agent: "a", Text: "name the parrot", K: 2})
	if len(hs) != 2 {
		t.Errorf("K=2: %v", ids(hs))
	}
	// Empty or stop-word-only prompts recall nothing.
	for _, p := range []string{"", "the and of", "   "} {
		if hs, err := ix.Recall(ctx, index.RecallQuery{Agent: "a", Text: p}); err != nil || len(hs) != 0 {
			t.Errorf("prompt %q: %v %v", p, ids(hs), err)
		}
	}
}

func TestRecallDateBoost(t *testing.T) {
	ix, _ := openTest(t, Options{})
	ctx := context.Background()
	day := func(m time.Month, d int) int64 { return time.Date(2023, m, d, 15, 0, 0, 0, time.UTC).UnixMilli() }
	mk := func(id string, ts int64, text string) index.Doc {
		return index.Doc{ID: id, Agent: "a", Session: id, Kind: index.KindMessage, Timestamp: ts, Text: text}
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
		hs, err := ix.Recall(ctx, index.RecallQuery{Agent: "a", Text: q, K: 3})
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

func ExampleIndex_Recall() {
	dir, _ := os.MkdirTemp("", "index-example-*")
	defer os.RemoveAll(dir)
	ix, err := Open(dir, Options{})
	if err != nil {
		panic(err)
	}
	defer ix.Close()
	ix.Add(
		index.Doc{ID: "m1", Agent: "main", Session: "s1", Seq: 1, Text: "where is the deploy script?"},
		index.Doc{ID: "m2", Agent: "main", Session: "s1", Seq: 2, Text: "it lives in ops/deploy_prod.sh"},
		index.Doc{ID: "m3", Agent: "main", Session: "s1", Seq: 3, Text: "thanks, I will run it tonight"},
		index.Doc{ID: "m4", Agent: "main", Session: "s1", Seq: 4, Text: "unrelated: the cat sat on the mat"},
		index.Doc{ID: "x1", Agent: "other", Session: "s9", Seq: 1, Text: "deploy_prod.sh of another agent"},
	)
	hits, err := ix.Recall(context.Background(), index.RecallQuery{
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

// TestPostingBudget: the kept query terms walk at most the posting budget
// of package index (maxPostings, 12,000; TestPruneTermsPostingBudget
// there checks PruneTerms at a lower one); a prompt of terms commoner than
// that searches nothing. The index holds more docs of common words than
// the budget.
func TestPostingBudget(t *testing.T) {
	const budget = 12_000 // package index's maxPostings
	ix, _ := openTest(t, Options{})
	docs := make([]index.Doc, budget+1)
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
	hs, err := ix.Recall(ctx, index.RecallQuery{Agent: "a", Text: "everyday zeppelin chatter", K: 3, Neighbours: -1})
	// The zeppelin turn, and the next one by its context field.
	if err != nil || len(hs) != 2 || hs[0].ID != docs[70].ID || hs[1].ID != docs[71].ID {
		t.Fatalf("recall %v %v", ids(hs), err)
	}
	if hs, err := ix.Recall(ctx, index.RecallQuery{Agent: "a", Text: "everyday chatter", K: 3}); err != nil || len(hs) != 0 {
		t.Fatalf("common words only: %v %v", ids(hs), err)
	}
}

// gateIndex holds agent a's history (filler turns on many topics, the
// walrus-9 backups, a weak match on "bucket") and agent b's turn on
// Zanzibar, for the relevance gate tests.
func gateIndex(t *testing.T) *Index {
	t.Helper()
	ix, _ := openTest(t, Options{})
	topics := []string{"tomato seedlings", "sourdough starter", "bike chain", "tax estimate", "Lisbon flight",
		"dentist appointment", "running shoes", "library book", "router firmware", "birthday gift"}
	for i, topic := range topics {
		s := fmt.Sprintf("filler-%d", i)
		ix.Add(msg("a", s, 1, "please help me with the "+topic),
			msg("a", s, 2, "sure, here are some notes on the "+topic),
			msg("a", s, 3, "thanks, that settles the "+topic),
			msg("a", s, 4, "glad to help"))
	}
	ix.Add(msg("a", "ops", 1, "where do the walrus-9 backups go?"),
		msg("a", "ops", 2, "The walrus-9 backups are kept in bucket cold-archive, snapshotted nightly."),
		msg("a", "ops", 3, "and the restore drill?"),
		msg("a", "paint", 1, "I spilled a bucket of paint on the porch"),
		msg("a", "paint", 2, "did it come off?"),
		msg("a", "paint", 3, "mostly, with a lot of scrubbing"))
	for i := uint64(1); i <= 12; i++ {
		ix.Add(msg("b", "travel", i, fmt.Sprintf("please book ferry %d to Zanzibar", i)))
	}
	if err := ix.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ix
}

// TestRecallRelevance: a hit matching the prompt's specific terms has a
// high relevance; one matching a common word only, a low one; a prompt term
// only another agent's history holds counts as absent.
func TestRecallRelevance(t *testing.T) {
	ix := gateIndex(t)
	ctx := context.Background()
	rel := func(agent, text, id string) index.Relevance {
		t.Helper()
		hs, err := ix.Recall(ctx, index.RecallQuery{Agent: agent, Text: text, K: 50, Neighbours: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			if h.ID == id {
				return h.Relevance
			}
		}
		t.Fatalf("%s not ranked for %q: %v", id, text, ids(hs))
		return index.Relevance{}
	}
	if r := rel("a", "walrus-9 backups", "a/ops/2"); r.Coverage < 0.99 || r.Specificity < 1 || r.Value() < 1 {
		t.Errorf("specific match: %+v", r)
	}
	if r := rel("a", "walrus-9 backups bucket", "a/paint/1"); r.Value() >= 0.65 || r.Value() <= 0 {
		t.Errorf("match on one word of three: %+v (%.2f)", r, r.Value())
	}
	if r := rel("a", "thanks, can you help with the weather forecast?", "a/filler-0/3"); r.Coverage > 0.5 || r.Specificity >= 1 || r.Value() >= 0.65 {
		t.Errorf("common words only: %+v (%.2f)", r, r.Value())
	}
	// "zanzibar", common in agent b's history, is absent from a's: it
	// weighs as a term in one doc there, not as a common one.
	ra, rb := rel("a", "please zanzibar", "a/filler-0/1"), rel("b", "please zanzibar", "b/travel/1")
	if ra.Value() >= 0.65 || ra.Coverage > 0.35 || rb.Coverage < 0.99 {
		t.Errorf("term of another agent: a %+v, b %+v", ra, rb)
	}
}

// TestRecallGate: with MinRelevance, a prompt with nothing relevant gets
// nothing (the same prompt without the gate ranks weak matches); a
// relevant one gets its hits, weaker ones at half the threshold, and
// neighbours only of hits at the threshold; a hit in context far stronger
// than the rest raises it.
func TestRecallGate(t *testing.T) {
	ix := gateIndex(t)
	ctx := context.Background()
	recall := func(q index.RecallQuery) []index.Hit {
		t.Helper()
		hs, err := ix.Recall(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return hs
	}
	for _, p := range []string{"thanks, can you help with the weather forecast?", "please zanzibar", "please book a table for two", "what is 9 + 9?"} {
		if hs := recall(index.RecallQuery{Agent: "a", Text: p, K: 8}); len(hs) == 0 {
			t.Errorf("%q: nothing ranked without the gate", p)
		}
		if hs := recall(index.RecallQuery{Agent: "a", Text: p, K: 8, MinRelevance: 0.65}); len(hs) != 0 {
			t.Errorf("%q: %v past the gate", p, ids(hs))
		}
	}
	hs := recall(index.RecallQuery{Agent: "a", Text: "walrus-9 backups bucket", K: 8, MinRelevance: 0.65})
	got := ids(hs)
	for _, want := range []string{"a/ops/2", "a/ops/1", "a/ops/3", "a/paint/1"} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %s: %v", want, got)
		}
	}
	for _, h := range hs {
		if h.ID == "a/paint/2" || h.ID == "a/paint/3" {
			t.Errorf("neighbour %s of a weak hit: %v", h.ID, got)
		}
		if h.NeighbourOf == "" && h.Relevance.Value() < 0.65*0.5 { // 0.5: package index's gateItemShare (TestGateItemShare there)
			t.Errorf("%s below the item floor: %.2f", h.ID, h.Relevance.Value())
		}
	}
	// The walrus-9 turns in context: the weak bucket match alone is left.
	hs = recall(index.RecallQuery{Agent: "a", Text: "walrus-9 backups bucket", K: 8, CurrentSession: "ops", InContextFrom: 1})
	if !slices.Contains(ids(hs), "a/paint/1") || slices.Contains(ids(hs), "a/ops/2") {
		t.Fatalf("without the gate: %v", ids(hs))
	}
	if hs := recall(index.RecallQuery{Agent: "a", Text: "walrus-9 backups bucket", K: 8, CurrentSession: "ops", InContextFrom: 1, MinRelevance: 0.3}); len(hs) != 0 {
		t.Errorf("a weak match beside a far stronger one in context: %v", ids(hs))
	}
	// A text in context is never recalled, whatever session holds it.
	ex := map[uint64]bool{index.TextKey("the walrus-9 backups are kept in bucket COLD-ARCHIVE, snapshotted nightly"): true}
	if hs := recall(index.RecallQuery{Agent: "a", Text: "walrus-9 backups", K: 8, ExcludeTexts: ex, Neighbours: -1}); slices.Contains(ids(hs), "a/ops/2") || len(hs) == 0 {
		t.Errorf("ExcludeTexts: %v", ids(hs))
	}
}
