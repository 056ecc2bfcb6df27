package pgstore

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/internal/pgtest"
)

// sqlInsertDocsV2 is sqlInsertDocs as schema 2 had it (no postings): how
// a database migrated to 0003 was written.
const sqlInsertDocsV2 = `
WITH n AS (
	` + sqlDocRows + `
	RETURNING text_tsv, ctx_tsv
), c AS (
	SELECT x AS term, sum(a)::bigint AS df, sum(b)::bigint AS ctx_df FROM (
		SELECT unnest(tsvector_to_array(text_tsv)) AS x, 1 AS a, 0 AS b FROM n
		UNION ALL
		SELECT unnest(tsvector_to_array(ctx_tsv)), 0, 1 FROM n) y
	GROUP BY x
), t AS (
	INSERT INTO recall_terms AS r (term, df, ctx_df)
	SELECT term, df, ctx_df FROM c ORDER BY term
	ON CONFLICT (term) DO UPDATE SET df = r.df + EXCLUDED.df, ctx_df = r.ctx_df + EXCLUDED.ctx_df
	RETURNING r.term, r.df, r.ctx_df
)
` + sqlAddStats

// dbAtSchema returns a pool on a fresh database at schema version (as a
// binary of that version left it).
func dbAtSchema(t *testing.T, version int) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE lossless_schema (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, m := range Migrations()[:version] {
		if _, err := pool.Exec(ctx, m.SQL); err != nil {
			t.Fatalf("step %d: %v", m.Version, err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO lossless_schema (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	return pool
}

// TestRecallMigratePostings: a recall index written at schema 2 (docs and
// tsvectors, no postings) is carried to schema 3 by Migrate, and then
// ranks as one written at schema 3; deleting a migrated doc removes its
// postings.
func TestRecallMigratePostings(t *testing.T) {
	ctx := context.Background()
	old := dbAtSchema(t, 2)
	docs := behaviourCorpus()
	if _, err := old.Exec(ctx, sqlInsertDocsV2, argsV3(rowsOf(&index.TurnMemory{}, docs))[:15]...); err != nil {
		t.Fatal(err)
	}
	migrateFrom(t, old, 2)
	migrated := openTestRecall(t, old, RecallOptions{})

	fresh := openTestRecall(t, openPool(t, pgtest.NewDB(t)), RecallOptions{})
	fresh.AddGeneration(0, docs...)
	flush(t, fresh)

	checkPostings(t, old)
	for _, q := range []index.RecallQuery{
		{Agent: "alice", Text: "when did we go sailing with the kayak club?", K: 10},
		{Agent: "alice", Text: "invoices table disk vacuum", K: 5, Neighbours: -1},
		{AllAgents: true, Text: "regatta thunderstorm", K: 10},
		{Agent: "alice", Text: "nutmeg bechamel lasagna", K: 5, MinRelevance: 0.65},
	} {
		got, want := mustRecall(t, migrated, q), mustRecall(t, fresh, q)
		if len(want) == 0 || !sameRanking(want, got) {
			t.Errorf("%q: migrated %v, written at schema 3 %v", q.Text, scored(got), scored(want))
		}
	}
	migrated.Delete("alice/s2/2")
	flush(t, migrated)
	checkPostings(t, old)
	// (s2/3 holds it as context.)
	if hits := mustRecall(t, migrated, index.RecallQuery{Agent: "alice", Text: "invoices", Neighbours: -1}); !slices.Equal(ids(hits), []string{"alice/s2/3"}) {
		t.Errorf("after deleting alice/s2/2: %v, want alice/s2/3 (by its context) only", ids(hits))
	}
}

// sqlInsertDocsV3 is sqlInsertDocs as schema 3 had it (one row per
// posting in recall_postings): how a database migrated to 0004 was
// written.
const sqlInsertDocsV3 = `
WITH n AS (
	` + sqlDocRows + `
	RETURNING key, id, agent, ts, text_len, ctx_len
), o AS (
	SELECT n.*, u.o FROM n JOIN unnest($1::text[]) WITH ORDINALITY u(id, o) ON u.id = n.id
), x AS (
	SELECT * FROM unnest($16::int[], $17::text[], $18::int2[], $19::int[]) AS x(o, term, field, tf)
), c AS (
	SELECT term, count(*) FILTER (WHERE field = 0) AS df, count(*) FILTER (WHERE field = 1) AS ctx_df
	FROM x GROUP BY term
), t AS (
	` + sqlAddTerms + `
), p AS (
	INSERT INTO recall_postings (doc, ts, tid, tf, len, field, agent)
	SELECT o.key, o.ts, t.tid, x.tf, CASE x.field WHEN 0 THEN o.text_len ELSE o.ctx_len END, x.field, o.agent
	FROM x JOIN o ON o.o = x.o JOIN t ON t.term = x.term
	ORDER BY t.tid, x.field, o.agent, o.key
)
` + sqlAddStats

// migrateFrom records the analyzer of the docs written at schema version
// from and migrates the database to this binary's schema.
func migrateFrom(t *testing.T, pool *pgxpool.Pool, from int) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `UPDATE recall_stats SET analyzer = $1`, index.FormatVersion); err != nil {
		t.Fatal(err)
	}
	if before, after, err := Migrate(ctx, pool); err != nil || before != from || after != SchemaVersion() {
		t.Fatalf("Migrate: %d → %d, %v", before, after, err)
	}
}

// rowsOf are docs as rows, their contexts given by mem.
func rowsOf(mem *index.TurnMemory, docs []index.Doc) *recallRows {
	var rows recallRows
	for i := range docs {
		rows.add(&docs[i], docs[i].ID, mem.Context(&docs[i]))
	}
	return &rows
}

// argsV3 are sqlInsertDocsV3's parameters: the docs' columns, then a row
// per posting (the doc's place from 1, the term, the field, the
// frequency).
func argsV3(w *recallRows) []any {
	var (
		at, tf []int32
		terms  []string
		fields []int16
	)
	for i := range w.id {
		for f, freqs := range [2]map[string]int{w.textTF[i], w.ctxTF[i]} {
			for t, n := range freqs {
				if indexable(t) {
					at, terms, fields, tf = append(at, int32(i+1)), append(terms, t), append(fields, int16(f)), append(tf, int32(n))
				}
			}
		}
	}
	return []any{w.id, w.agent, w.conv, w.sess, w.role, w.kind, w.seq, w.ts, w.text, w.cx, w.key, w.textLen, w.ctxLen, w.textTSV, w.ctxTSV,
		at, terms, fields, tf}
}

// TestRecallMigrateBlocks: a recall index written at schema 3 (one row
// per posting) is carried to blocks by Migrate, and then ranks as one
// written at the current schema; deletions keep the blocks exact.
func TestRecallMigrateBlocks(t *testing.T) {
	ctx := context.Background()
	old := dbAtSchema(t, 3)
	docs := behaviourCorpus()
	// Two writes, so that a term's postings come from more than one.
	var mem index.TurnMemory
	for _, part := range [][]index.Doc{docs[:len(docs)/2], docs[len(docs)/2:]} {
		if _, err := old.Exec(ctx, sqlInsertDocsV3, argsV3(rowsOf(&mem, part))...); err != nil {
			t.Fatal(err)
		}
	}
	var postings int64
	if err := old.QueryRow(ctx, `SELECT count(*) FROM recall_postings`).Scan(&postings); err != nil || postings == 0 {
		t.Fatalf("%d postings written at schema 3 (%v)", postings, err)
	}
	migrateFrom(t, old, 3)
	checkPostings(t, old)
	var blocked int64
	if err := old.QueryRow(ctx, `SELECT sum(cardinality(docs)) FROM recall_blocks`).Scan(&blocked); err != nil || blocked != postings {
		t.Fatalf("%d postings in blocks after the migration, %d before (%v)", blocked, postings, err)
	}
	migrated := openTestRecall(t, old, RecallOptions{})
	fresh := openTestRecall(t, openPool(t, pgtest.NewDB(t)), RecallOptions{})
	fresh.AddGeneration(0, docs...)
	flush(t, fresh)
	queries := []index.RecallQuery{
		{Agent: "alice", Text: "when did we go sailing with the kayak club?", K: 10},
		{Agent: "alice", Text: "invoices table disk vacuum", K: 5, Neighbours: -1},
		{AllAgents: true, Text: "regatta thunderstorm", K: 10},
		{Agent: "alice", Text: "nutmeg bechamel lasagna", K: 5, MinRelevance: 0.65},
	}
	for _, q := range queries {
		got, want := mustRecall(t, migrated, q), mustRecall(t, fresh, q)
		if len(want) == 0 || !sameRanking(want, got) {
			t.Errorf("%q: migrated %v, written at the current schema %v", q.Text, scored(got), scored(want))
		}
	}
	migrated.Delete("alice/s2/2", docs[0].ID, docs[len(docs)-1].ID)
	fresh.Delete("alice/s2/2", docs[0].ID, docs[len(docs)-1].ID)
	flush(t, migrated)
	flush(t, fresh)
	checkPostings(t, old)
	for _, q := range queries {
		got, want := mustRecall(t, migrated, q), mustRecall(t, fresh, q)
		if !sameRanking(want, got) {
			t.Errorf("after deletions, %q: migrated %v, written at the current schema %v", q.Text, scored(got), scored(want))
		}
	}
}
