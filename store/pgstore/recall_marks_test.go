package pgstore

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/internal/pgtest"
)

// markDocs are the docs of conversation conv's messages 1..n (seq i, one
// session), each with a rare term (its number).
func markDocs(conv string, n int) []index.Doc {
	texts := make([]string, n+1)
	for i := range texts {
		texts[i] = fmt.Sprintf("ledger line %d of the %s audit", 9000+i, conv)
	}
	return session("alice", conv, conv, 1_700_000_000_000, texts...)[1:]
}

func mustMarks(t *testing.T, r *Recall, convs ...string) []uint64 {
	t.Helper()
	m, err := r.Marks(context.Background(), convs)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRecallMarks: AddMessages moves a conversation's mark when its range
// follows on from it, reports a gap (once) when it does not, and never
// moves it back; CatchUp writes the docs not written (as AddGeneration in
// order would have: same contexts, same ranking), leaves the written ones
// (no doc or posting twice) and moves the mark.
func TestRecallMarks(t *testing.T) {
	pool, _ := recallPool(t)
	r := openTestRecall(t, pool, RecallOptions{})
	docs := markDocs("c1", 8) // docs[i] is message i+1
	r.AddMessages("c1", 1, 3, docs[0:3]...)
	flush(t, r)
	if m := mustMarks(t, r, "c1", "c2"); !slices.Equal(m, []uint64{3, 0}) {
		t.Fatalf("marks after messages 1-3: %v, want [3 0]", m)
	}
	if g := r.Gaps(); len(g) != 0 {
		t.Fatalf("gaps %v after a range from the start", g)
	}
	r.AddMessages("c1", 7, 8, docs[6:8]...)
	flush(t, r)
	if m := mustMarks(t, r, "c1"); m[0] != 3 {
		t.Fatalf("mark %d after messages 7-8 (4-6 missing), want 3", m[0])
	}
	if g := r.Gaps(); !slices.Equal(g, []string{"c1"}) {
		t.Fatalf("gaps %v, want [c1]", g)
	}
	if g := r.Gaps(); len(g) != 0 {
		t.Fatalf("gaps %v reported twice", g)
	}
	r.AddMessages("c1", 4, 5, docs[3:5]...) // message 6 is still missing
	flush(t, r)
	if m := mustMarks(t, r, "c1"); m[0] != 5 {
		t.Fatalf("mark %d after messages 4-5, want 5", m[0])
	}
	ctx := context.Background()
	if err := r.CatchUp(ctx, "c1", 8, docs); err != nil {
		t.Fatal(err)
	}
	if err := r.CatchUp(ctx, "c1", 2, docs[:2]); err != nil {
		t.Fatal(err)
	}
	if m := mustMarks(t, r, "c1"); m[0] != 8 {
		t.Fatalf("mark %d after catching up through 8 (then 2), want 8", m[0])
	}
	var n, distinct int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT id) FROM recall_docs`).Scan(&n, &distinct); err != nil || n != 8 || distinct != 8 {
		t.Fatalf("%d docs (%d ids), want 8 (%v)", n, distinct, err)
	}
	checkPostings(t, pool)
	// As an index given the messages in order.
	fresh := openTestRecall(t, openPool(t, pgtest.NewDB(t)), RecallOptions{})
	fresh.AddGeneration(0, docs...)
	flush(t, fresh)
	for _, q := range []string{"ledger line 9006", "ledger line 9005 audit", "9002 9007"} {
		got, want := mustRecall(t, r, index.RecallQuery{Agent: "alice", Text: q, K: 10, Neighbours: -1}),
			mustRecall(t, fresh, index.RecallQuery{Agent: "alice", Text: q, K: 10, Neighbours: -1})
		if len(want) == 0 || !sameRanking(want, got) {
			t.Errorf("%q: caught up %v, in order %v", q, scored(got), scored(want))
		}
	}
}

// TestRecallMigrateMarks: migrating an index written at schema 4 marks
// each conversation through its last message's doc (a conversation
// without docs has no mark: it is indexed from its start).
func TestRecallMigrateMarks(t *testing.T) {
	ctx := context.Background()
	old := dbAtSchema(t, 4)
	docs := append(markDocs("cA", 4), markDocs("cB", 2)...)
	docs = append(docs, index.Doc{ID: "cA/sum-1", Agent: "alice", Conversation: "cA", Session: "cA", Kind: index.KindSummary, Seq: 99, Text: "a summary"})
	if _, err := old.Exec(ctx, sqlInsertDocs, rowsOf(&index.TurnMemory{}, docs).args()...); err != nil {
		t.Fatal(err)
	}
	migrateFrom(t, old, 4)
	r := openTestRecall(t, old, RecallOptions{})
	if m := mustMarks(t, r, "cA", "cB", "cC"); !slices.Equal(m, []uint64{4, 2, 0}) {
		t.Fatalf("marks after the migration: %v, want [4 2 0]", m)
	}
	// Writes carry on from them.
	more := markDocs("cB", 3)
	r.AddMessages("cB", 3, 3, more[2])
	flush(t, r)
	if m := mustMarks(t, r, "cB"); m[0] != 3 || len(r.Gaps()) != 0 {
		t.Fatalf("cB mark %d after message 3, want 3 and no gap", m[0])
	}
}
