package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/index/bleveindex"
	"github.com/lossless-engine/contextengine/internal/pgtest"
)

// recallPool opens a pool on a fresh, migrated database of t's, closed
// when t ends.
func recallPool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	url := pgtest.NewDB(t)
	return openPool(t, url), url
}

// openPool opens another pool (another process) on url and migrates.
func openPool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, _, err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

// openTestRecall opens a Recall on pool, closed when t ends.
func openTestRecall(t testing.TB, pool *pgxpool.Pool, opts RecallOptions) *Recall {
	t.Helper()
	r, err := OpenRecall(context.Background(), pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

func newPGRecall(t testing.TB) index.Recall {
	pool, _ := recallPool(t)
	return openTestRecall(t, pool, RecallOptions{})
}

func newBleveRecall(t testing.TB) index.Recall {
	ix, err := bleveindex.Open(t.TempDir(), bleveindex.Options{StoreText: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// recallImpls are the implementations the behavioural tests run against.
var recallImpls = []struct {
	name string
	open func(testing.TB) index.Recall
}{
	{"bleve", newBleveRecall},
	{"postgres", newPGRecall},
}

func ids(hits []index.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func mustRecall(t *testing.T, r index.Recall, q index.RecallQuery) []index.Hit {
	t.Helper()
	hits, err := r.Recall(context.Background(), q)
	if err != nil {
		t.Fatalf("recall %q: %v", q.Text, err)
	}
	return hits
}

func flush(t testing.TB, r index.Recall) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// session builds the docs of one session of agent, one per text, Seq
// from 0, a second apart from ts0.
func session(agent, conv, sess string, ts0 int64, texts ...string) []index.Doc {
	out := make([]index.Doc, len(texts))
	for i, tx := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		out[i] = index.Doc{ID: fmt.Sprintf("%s/%s/%d", agent, sess, i), Agent: agent, Conversation: conv, Session: sess,
			Role: role, Kind: index.KindMessage, Seq: uint64(i), Timestamp: ts0 + int64(i)*1000, Text: tx}
	}
	return out
}

// behaviourCorpus is a small history: two agents, several sessions, a
// topic per session, filler turns around the topical ones.
func behaviourCorpus() []index.Doc {
	var docs []index.Doc
	day := int64(86_400_000)
	base := int64(1_685_750_400_000) // 3 June 2023 00:00 UTC
	docs = append(docs, session("alice", "c1", "s1", base,
		"good morning",
		"morning! how did the weekend go",
		"we went sailing on the lake with the kayak club",
		"the regatta was cancelled because of the thunderstorm",
		"that sounds stormy, was anyone hurt",
		"no, everyone got back to the marina safely",
		"ok",
		"see you tomorrow")...)
	docs = append(docs, session("alice", "c1", "s2", base+10*day,
		"the database migration failed last night",
		"which table broke",
		"the invoices table ran out of disk during the vacuum",
		"we should add monitoring for disk usage on the replica",
		"ok",
		"ok")...)
	docs = append(docs, session("alice", "c2", "s3", base+40*day,
		"my grandmother's lasagna recipe uses nutmeg in the bechamel",
		"nutmeg is a classic in bechamel",
		"the regatta trophy now sits on her kitchen shelf")...)
	// Another agent with the same words: never recalled for alice.
	docs = append(docs, session("bob", "c9", "s9", base,
		"bob went sailing on the lake with the kayak club",
		"bob's regatta was cancelled because of the thunderstorm",
		"bob's invoices table ran out of disk during the vacuum")...)
	return docs
}

// TestRecallBehaviour runs the same recalls on the Bleve index and on
// PostgreSQL: agent isolation, neighbours, exclusions, filters, the
// relevance gate, de-duplication; and the two rank alike.
func TestRecallBehaviour(t *testing.T) {
	results := map[string]map[string][]index.Hit{}
	for _, impl := range recallImpls {
		t.Run(impl.name, func(t *testing.T) {
			r := impl.open(t)
			r.AddGeneration(0, behaviourCorpus()...)
			// A duplicate of a turn's text in another session: collapsed.
			r.AddGeneration(0, session("alice", "c3", "s4", 1_700_000_000_000, "The regatta was cancelled because of the thunderstorm!")...)
			flush(t, r)
			got := map[string][]index.Hit{}
			results[impl.name] = got
			rec := func(name string, q index.RecallQuery) []index.Hit {
				t.Helper()
				hits := mustRecall(t, r, q)
				got[name] = hits
				return hits
			}

			// Agent isolation.
			hits := rec("sailing", index.RecallQuery{Agent: "alice", Text: "when did we go sailing with the kayak club?", K: 10})
			if len(hits) == 0 || hits[0].ID != "alice/s1/2" {
				t.Fatalf("sailing: %v, want alice/s1/2 first", ids(hits))
			}
			for _, h := range hits {
				if h.Agent != "alice" {
					t.Errorf("sailing for alice returned %s of agent %s", h.ID, h.Agent)
				}
			}
			all := rec("sailing-all", index.RecallQuery{AllAgents: true, Text: "sailing kayak club", K: 20, Neighbours: -1})
			if !slices.Contains(ids(all), "bob/s9/0") || !slices.Contains(ids(all), "alice/s1/2") {
				t.Errorf("AllAgents: %v, want both agents' sailing turns", ids(all))
			}
			if _, err := r.Recall(context.Background(), index.RecallQuery{Text: "sailing"}); !errors.Is(err, index.ErrNoAgent) {
				t.Errorf("no agent: %v, want ErrNoAgent", err)
			}

			// Neighbours: the turns either side of the best hit, with
			// NeighbourOf; none with Neighbours < 0.
			hits = rec("neighbours", index.RecallQuery{Agent: "alice", Text: "thunderstorm regatta cancelled", K: 6, Neighbours: 1})
			nb := map[string]string{}
			for _, h := range hits {
				nb[h.ID] = h.NeighbourOf
			}
			// s1/4 is a hit itself (its context is s1/3); s1/5 its neighbour.
			if nb["alice/s1/2"] != "alice/s1/3" || nb["alice/s1/5"] != "alice/s1/4" {
				t.Errorf("neighbours: %v (NeighbourOf %v), want s1/2 as neighbour of s1/3, s1/5 of s1/4", ids(hits), nb)
			}
			if _, ok := nb["alice/s1/1"]; ok {
				t.Errorf("neighbours: %v, s1/1 is two turns away with Neighbours 1", ids(hits))
			}
			// The duplicate text of s4 is collapsed into s1/3 (or the other way).
			if slices.Contains(ids(hits), "alice/s1/3") && slices.Contains(ids(hits), "alice/s4/0") {
				t.Errorf("duplicate texts not collapsed: %v", ids(hits))
			}
			hits = rec("no-neighbours", index.RecallQuery{Agent: "alice", Text: "thunderstorm regatta cancelled", K: 6, Neighbours: -1})
			for _, h := range hits {
				if h.NeighbourOf != "" {
					t.Errorf("Neighbours -1 added %s", h.ID)
				}
			}

			// Exclusions: by id, by text, by position in the current session.
			hits = rec("exclude-id", index.RecallQuery{Agent: "alice", Text: "invoices table disk vacuum", K: 5, Neighbours: -1,
				ExcludeIDs: map[string]bool{"alice/s2/2": true}})
			if slices.Contains(ids(hits), "alice/s2/2") {
				t.Errorf("ExcludeIDs: %v", ids(hits))
			}
			hits = rec("exclude-text", index.RecallQuery{Agent: "alice", Text: "invoices table disk vacuum", K: 5, Neighbours: -1,
				ExcludeTexts: map[uint64]bool{index.TextKey("THE invoices table ran out of disk during the vacuum."): true}})
			if slices.Contains(ids(hits), "alice/s2/2") {
				t.Errorf("ExcludeTexts: %v", ids(hits))
			}
			hits = rec("in-context", index.RecallQuery{Agent: "alice", Text: "invoices table disk vacuum monitoring replica", K: 5, Neighbours: -1,
				CurrentSession: "s2", InContextFrom: 3})
			if slices.Contains(ids(hits), "alice/s2/3") || !slices.Contains(ids(hits), "alice/s2/2") {
				t.Errorf("InContextFrom 3 of s2: %v, want s2/2 but not s2/3", ids(hits))
			}

			// Filters.
			hits = rec("conversations", index.RecallQuery{Agent: "alice", Text: "regatta", K: 5, Neighbours: -1, Conversations: []string{"c2"}})
			if !slices.Equal(ids(hits), []string{"alice/s3/2"}) {
				t.Errorf("Conversations c2: %v", ids(hits))
			}
			hits = rec("exclude-conversation", index.RecallQuery{Agent: "alice", Text: "regatta", K: 5, Neighbours: -1, ExcludeConversation: "c1"})
			if slices.Contains(ids(hits), "alice/s1/3") || !slices.Contains(ids(hits), "alice/s3/2") {
				t.Errorf("ExcludeConversation c1: %v", ids(hits))
			}
			s3 := int64(1_685_750_400_000) + 40*86_400_000
			hits = rec("since", index.RecallQuery{Agent: "alice", Text: "regatta", K: 5, Neighbours: -1, Since: s3, Until: s3 + 10_000})
			if !slices.Equal(ids(hits), []string{"alice/s3/2"}) {
				t.Errorf("Since/Until: %v", ids(hits))
			}

			// The relevance gate: a prompt about nothing here recalls
			// nothing; one on the subject passes, with Relevance set.
			hits = rec("gate-off-topic", index.RecallQuery{Agent: "alice", Text: "quantum chromodynamics lecture notes", K: 5, MinRelevance: 0.65})
			if len(hits) != 0 {
				t.Errorf("gate: off-topic prompt recalled %v", ids(hits))
			}
			hits = rec("gate-on-topic", index.RecallQuery{Agent: "alice", Text: "nutmeg bechamel lasagna", K: 5, MinRelevance: 0.65})
			if !slices.Contains(ids(hits), "alice/s3/0") || hits[0].Relevance.Value() < 0.65 {
				t.Errorf("gate: on-topic prompt recalled %v", ids(hits))
			}

			// A named date boosts the turns of that day.
			rec("dated", index.RecallQuery{Agent: "alice", Text: "what happened with the regatta on 3 June, 2023?", K: 5, Neighbours: -1})
		})
	}
	// Both implementations rank alike: the same scores in the same order,
	// the same doc wherever a score is not tied (Bleve breaks ties in no
	// fixed order).
	b, p := results["bleve"], results["postgres"]
	if b == nil || p == nil {
		return // one was skipped (no server)
	}
	names := make([]string, 0, len(b))
	for n := range b {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !sameRanking(b[n], p[n]) {
			t.Errorf("%s: bleve %v, postgres %v", n, scored(b[n]), scored(p[n]))
		}
	}
}

// sameRanking reports whether two rankings have the same scores (to a
// relative 1e-12: the same computation, summed in another order) in the
// same order, and the same doc (or text) wherever a score is not tied.
func sameRanking(a, b []index.Hit) bool {
	if len(a) != len(b) {
		return false
	}
	round := func(f float64) string { return fmt.Sprintf("%.9f", f) }
	count := map[string]int{}
	for _, h := range a {
		count[round(h.Score)]++
	}
	for i := range a {
		if math.Abs(a[i].Score-b[i].Score) > 1e-12*max(math.Abs(a[i].Score), math.Abs(b[i].Score)) {
			return false
		}
		// (Tied duplicates of one text collapse into either.)
		if count[round(a[i].Score)] == 1 && a[i].ID != b[i].ID && a[i].TextKey() != b[i].TextKey() {
			return false
		}
	}
	return true
}

func scored(hs []index.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = fmt.Sprintf("%s=%.12f", h.ID, h.Score)
	}
	return out
}

// TestRecallTwoProcesses: two Recalls on two pools (two processes) see
// each other's docs once written.
func TestRecallTwoProcesses(t *testing.T) {
	poolA, url := recallPool(t)
	poolB := openPool(t, url)
	a := openTestRecall(t, poolA, RecallOptions{})
	b := openTestRecall(t, poolB, RecallOptions{})
	ctx := context.Background()

	a.AddGeneration(1, session("alice", "c1", "sa", 1000, "the blue heron nests by the pond")...)
	flush(t, a)
	hits := mustRecall(t, b, index.RecallQuery{Agent: "alice", Text: "heron nests"})
	if !slices.Equal(ids(hits), []string{"alice/sa/0"}) {
		t.Fatalf("b sees %v, want a's doc", ids(hits))
	}
	b.AddGeneration(1, session("alice", "c1", "sb", 2000, "a grey heron fished in the river")...)
	flush(t, b)
	hits = mustRecall(t, a, index.RecallQuery{Agent: "alice", Text: "heron", Neighbours: -1})
	if got := ids(hits); len(got) != 2 {
		t.Fatalf("a sees %v, want both processes' docs", got)
	}
	got, err := a.ConversationDocIDs(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"alice/sa/0", "alice/sb/0"}) {
		t.Fatalf("ConversationDocIDs: %v", got)
	}
	// A deletion by one is seen by the other.
	b.Delete("alice/sa/0")
	flush(t, b)
	hits = mustRecall(t, a, index.RecallQuery{Agent: "alice", Text: "heron nests", Neighbours: -1})
	if !slices.Equal(ids(hits), []string{"alice/sb/0"}) {
		t.Fatalf("after b deleted sa/0, a sees %v", ids(hits))
	}
}

// TestRecallDeleteAndReplace: Delete and re-adding an id keep the term
// statistics exact (a deleted doc's terms stop counting).
func TestRecallDeleteAndReplace(t *testing.T) {
	pool, _ := recallPool(t)
	r := openTestRecall(t, pool, RecallOptions{})
	ctx := context.Background()
	r.AddGeneration(0, session("alice", "c1", "s1", 0, "zebra crossing near the school", "penguin parade at noon")...)
	r.AddGeneration(0, session("alice", "c2", "s2", 0, "zebra stripes")...)
	flush(t, r)
	got, err := r.ConversationDocIDs(ctx, "c1")
	if err != nil || !slices.Equal(got, []string{"alice/s1/0", "alice/s1/1"}) {
		t.Fatalf("ConversationDocIDs c1: %v, %v", got, err)
	}
	r.Delete(got...)
	// Replace s2/0's text: the old text is no longer found.
	r.AddGeneration(0, index.Doc{ID: "alice/s2/0", Agent: "alice", Conversation: "c2", Session: "s2", Text: "giraffe necks"})
	flush(t, r)
	if got, _ := r.ConversationDocIDs(ctx, "c1"); len(got) != 0 {
		t.Errorf("after Delete, c1 holds %v", got)
	}
	if hits := mustRecall(t, r, index.RecallQuery{Agent: "alice", Text: "zebra penguin"}); len(hits) != 0 {
		t.Errorf("deleted and replaced texts still found: %v", ids(hits))
	}
	if hits := mustRecall(t, r, index.RecallQuery{Agent: "alice", Text: "giraffe"}); !slices.Equal(ids(hits), []string{"alice/s2/0"}) {
		t.Errorf("replacement not found: %v", ids(hits))
	}
	var docs, textTerms, zebra int64
	if err := pool.QueryRow(ctx, `SELECT docs, text_terms, (SELECT coalesce(sum(df), 0) FROM recall_terms WHERE term = 'zebra') FROM recall_stats`).Scan(&docs, &textTerms, &zebra); err != nil {
		t.Fatal(err)
	}
	var want int64
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT t) FROM recall_docs, unnest(tsvector_to_array(text_tsv)) t`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if docs != 1 || zebra != 0 || textTerms != want {
		t.Errorf("stats: docs %d (want 1), df(zebra) %d (want 0), text terms %d (want %d)", docs, zebra, textTerms, want)
	}
	checkPostings(t, pool)
}

// checkPostings checks the postings' blocks: the postings are the live
// docs' terms, no more; each block's arrays are as long as its docs, which
// ascend from its first_doc, and no block is empty; the blocks of a term,
// field and agent hold disjoint ranges of docs.
func checkPostings(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	var live, postings, lexemes, bad, overlaps int64
	err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM recall_blocks b CROSS JOIN LATERAL unnest(b.docs) u(doc) JOIN recall_docs d ON d.key = u.doc),
		(SELECT coalesce(sum(cardinality(docs)), 0) FROM recall_blocks),
		(SELECT coalesce(sum(length(text_tsv) + length(ctx_tsv)), 0) FROM recall_docs),
		(SELECT count(*) FROM recall_blocks b WHERE cardinality(b.docs) = 0 OR b.docs[1] <> b.first_doc
			OR cardinality(b.tf) <> cardinality(b.docs) OR cardinality(b.len) <> cardinality(b.docs) OR cardinality(b.ts) <> cardinality(b.docs)
			OR b.docs <> ARRAY(SELECT DISTINCT u FROM unnest(b.docs) u ORDER BY u)),
		(SELECT count(*) FROM (SELECT b.docs[1] AS lo, lag(b.docs[cardinality(b.docs)]) OVER w AS prev_hi
			FROM recall_blocks b WINDOW w AS (PARTITION BY b.tid, b.field, b.agent ORDER BY b.first_doc)) o WHERE o.lo <= o.prev_hi)`).
		Scan(&live, &postings, &lexemes, &bad, &overlaps)
	if err != nil {
		t.Fatal(err)
	}
	if postings != live || postings != lexemes {
		t.Errorf("%d postings, %d of live docs, want %d (their terms)", postings, live, lexemes)
	}
	if bad != 0 || overlaps != 0 {
		t.Errorf("%d malformed blocks, %d overlapping ones", bad, overlaps)
	}
}

// TestRecallQueueing: AddGeneration returns without waiting for the
// database, Lag counts what is queued, Flush waits for it, and a full
// queue blocks the caller.
func TestRecallQueueing(t *testing.T) {
	pool, _ := recallPool(t)
	r := openTestRecall(t, pool, RecallOptions{MaxLag: 3, BatchSize: 2})
	hold := make(chan struct{})
	r.beforeBatch = func() { <-hold }
	r.AddGeneration(0, session("alice", "c1", "s1", 0, "one", "two", "three", "four")...)
	if lag := r.Lag(); lag != 4 {
		t.Fatalf("Lag %d with the writer held, want 4", lag)
	}
	added := make(chan struct{})
	go func() {
		r.AddGeneration(0, session("alice", "c1", "s2", 0, "five")...)
		close(added)
	}()
	select {
	case <-added:
		t.Fatal("AddGeneration did not wait with more than MaxLag docs queued")
	case <-time.After(100 * time.Millisecond):
	}
	close(hold)
	<-added
	flush(t, r)
	if lag := r.Lag(); lag != 0 {
		t.Fatalf("Lag %d after Flush", lag)
	}
	got, err := r.ConversationDocIDs(context.Background(), "c1")
	if err != nil || len(got) != 5 {
		t.Fatalf("ConversationDocIDs: %v, %v; want 5", got, err)
	}
}

// TestRecallClosed: after Close, calls fail with ErrClosed, Add and
// Delete do nothing, Close again is nil; what was queued was written.
func TestRecallClosed(t *testing.T) {
	pool, _ := recallPool(t)
	r, err := OpenRecall(context.Background(), pool, RecallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.AddGeneration(0, session("alice", "c1", "s1", 0, "written at close")...)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	r.AddGeneration(0, session("alice", "c1", "s2", 0, "after close")...)
	r.Delete("alice/s1/0")
	if _, err := r.Recall(ctx, index.RecallQuery{Agent: "alice", Text: "written"}); !errors.Is(err, index.ErrClosed) || !errors.Is(err, core.ErrClosed) {
		t.Errorf("Recall after Close: %v", err)
	}
	if _, err := r.ConversationDocIDs(ctx, "c1"); !errors.Is(err, index.ErrClosed) {
		t.Errorf("ConversationDocIDs after Close: %v", err)
	}
	if r.Lag() != 0 {
		t.Errorf("Lag %d after Close", r.Lag())
	}
	// What was queued before Close is in the database.
	r2 := openTestRecall(t, pool, RecallOptions{})
	if got, err := r2.ConversationDocIDs(ctx, "c1"); err != nil || !slices.Equal(got, []string{"alice/s1/0"}) {
		t.Errorf("after Close, the database holds %v (%v), want the doc queued before Close only", got, err)
	}
}

// TestTSVectorLiteral: awkward terms survive the round trip, and the
// number of positions is the frequency.
func TestTSVectorLiteral(t *testing.T) {
	pool, _ := recallPool(t)
	lit := tsvectorLiteral(map[string]int{`it's`: 2, `back\slash`: 1, "path/to/file.go": 300, "": 1}, 'A')
	var lexemes []string
	var counts []int32
	err := pool.QueryRow(context.Background(), `SELECT array_agg(u.lexeme ORDER BY u.lexeme), array_agg(cardinality(u.positions) ORDER BY u.lexeme) FROM unnest($1::tsvector) u`, lit).Scan(&lexemes, &counts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lexemes, []string{`back\slash`, `it's`, "path/to/file.go"}) || !slices.Equal(counts, []int32{1, 2, maxPositions}) {
		t.Errorf("tsvector %q: lexemes %q, positions %v", lit, lexemes, counts)
	}
	var match bool
	if err := pool.QueryRow(context.Background(), `SELECT $1::tsvector @@ $2::tsquery`, lit, tsqueryLiteral([]string{"nope", `it's`})).Scan(&match); err != nil || !match {
		t.Errorf("tsquery OR: %v, %v", match, err)
	}
}

// TestRecallPreviousTurnFromDatabase: the previous turn of a session
// written by another process (or before a restart) is read from the
// database as the next turn's context, so two processes index a session
// as one Bleve index does.
func TestRecallPreviousTurnFromDatabase(t *testing.T) {
	poolA, url := recallPool(t)
	poolB := openPool(t, url)
	a := openTestRecall(t, poolA, RecallOptions{})
	b := openTestRecall(t, poolB, RecallOptions{})
	ctx := context.Background()
	long := "the grey heron nests by the pond behind the old mill " + strings.Repeat("and waits ", 60)
	docs := session("alice", "c1", "s1", 1000, long, "what bird was that?", "it flew away")
	a.AddGeneration(0, docs[0])
	flush(t, a)
	b.AddGeneration(0, docs[1:]...) // b has never seen s1's first turn
	flush(t, b)
	var cx []string
	if err := poolA.QueryRow(ctx, `SELECT array_agg(context ORDER BY seq) FROM recall_docs WHERE session = 's1'`).Scan(&cx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"", index.TurnContext(long), "what bird was that?"}; !slices.Equal(cx, want) {
		t.Fatalf("contexts %q, want %q", cx, want)
	}
	bl := newBleveRecall(t)
	bl.AddGeneration(0, docs...)
	flush(t, bl)
	q := index.RecallQuery{Agent: "alice", Text: "heron pond", K: 5, Neighbours: -1}
	pg, want := mustRecall(t, b, q), mustRecall(t, bl, q)
	if !slices.Contains(ids(pg), "alice/s1/1") || !sameRanking(want, pg) {
		t.Errorf("recall: postgres %v, bleve %v (alice/s1/1 matches by its context)", scored(pg), scored(want))
	}
}

// TestRecallDeleteFromBlocks: docs deleted from the middle, the start and
// the end of postings blocks (one block per term of a batch of 60 docs),
// and whole blocks, leave the postings of the others: the index ranks as
// one that never held the deleted docs.
func TestRecallDeleteFromBlocks(t *testing.T) {
	words := []string{"harbour", "lantern", "copper", "meadow", "signal", "orchard"}
	var all, kept []index.Doc
	var gone []string
	for i := range 60 {
		d := index.Doc{ID: fmt.Sprintf("alice/b%d/0", i), Agent: "alice", Conversation: "cb", Session: fmt.Sprintf("b%d", i),
			Timestamp: int64(1_700_000_000_000 + i),
			Text:      fmt.Sprintf("%s %s %s note %d", words[i%6], words[(i*5+1)%6], words[(i/6)%6], i)}
		all = append(all, d)
		if i%3 == 0 || i < 2 || i > 57 || (i >= 20 && i < 30) {
			gone = append(gone, d.ID)
		} else {
			kept = append(kept, d)
		}
	}
	pool, _ := recallPool(t)
	r := openTestRecall(t, pool, RecallOptions{})
	r.AddGeneration(0, all...)
	flush(t, r)
	r.Delete(gone...)
	flush(t, r)
	checkPostings(t, pool)
	fresh := openTestRecall(t, openPool(t, pgtest.NewDB(t)), RecallOptions{})
	fresh.AddGeneration(0, kept...)
	flush(t, fresh)
	for _, q := range []string{"harbour lantern", "copper meadow signal", "orchard", "note 31", "note 24"} {
		got, want := mustRecall(t, r, index.RecallQuery{Agent: "alice", Text: q, K: 20, Neighbours: -1}),
			mustRecall(t, fresh, index.RecallQuery{Agent: "alice", Text: q, K: 20, Neighbours: -1})
		if !sameRanking(want, got) {
			t.Errorf("%q: after deletions %v, never held %v", q, scored(got), scored(want))
		}
	}
}
