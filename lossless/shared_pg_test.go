package lossless

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/store/pgstore"
)

// TestSharedStorePostgres is TestSharedStoreTwoEngines on PostgreSQL: two
// engines on one fresh database (pgstore and its recall, as package
// lossless/postgres opens them), writing and compacting at once.
func TestSharedStorePostgres(t *testing.T) {
	url := pgtest.NewDB(t)
	cfg := testConfig("")
	cfg.StoreURL = url
	sharedTestConfig(&cfg)
	var engines []*Engine
	for i := 0; i < 2; i++ {
		ctx := context.Background()
		st, err := pgstore.Open(ctx, pgstore.Options{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		var rec index.Recall
		if rec, err = pgstore.OpenRecall(ctx, st.Pool(), pgstore.RecallOptions{}); err != nil {
			t.Fatal(err)
		}
		e, err := OpenStore(ctx, cfg, st, rec)
		if err != nil {
			t.Fatal(err)
		}
		if e.locker == nil || e.recall == nil {
			t.Fatalf("an engine on PostgreSQL: shared %v, recall %v", e.locker != nil, e.recall != nil)
		}
		t.Cleanup(func() { e.Close() })
		engines = append(engines, e)
	}
	testSharedEngines(t, engines)
}

// TestSharedAssembleRecreated: an engine that assembled a conversation
// another process then deleted (retention) and made again (the same id,
// from the same session) assembles the new one, not what it cached of the
// old (the record's Created, read in the window's View, differs).
func TestSharedAssembleRecreated(t *testing.T) {
	url := pgtest.NewDB(t)
	ctx := context.Background()
	a, err := openPG(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := openPG(ctx, url, func(c *config.Config) { c.Retention.MaxAgeDays = 1 })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	old := time.Now().Add(-48 * time.Hour).UnixMilli()
	if _, err := a.Ingest(ctx, core.IngestParams{SessionID: "again", Message: core.UserText("the old conversation", old)}); err != nil {
		t.Fatal(err)
	}
	p := core.AssembleParams{SessionID: "again", TokenBudget: 1000}
	if res, err := a.Assemble(ctx, p); err != nil || len(res.Messages) != 1 {
		t.Fatalf("first assemble: %d messages, %v", len(res.Messages), err)
	}
	if res, err := b.Retain(ctx, time.Time{}); err != nil || len(res.Deleted) != 1 {
		t.Fatalf("retention deleted %+v, %v; want the old conversation", res.Deleted, err)
	}
	if _, err := b.Ingest(ctx, core.IngestParams{SessionID: "again", Message: core.UserText("the new conversation", time.Now().UnixMilli())}); err != nil {
		t.Fatal(err)
	}
	res, err := a.Assemble(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || !strings.Contains(res.Messages[0].Text(), "the new conversation") {
		var texts []string
		for _, m := range res.Messages {
			texts = append(texts, m.Text())
		}
		t.Fatalf("assemble after the conversation was made again: %q", texts)
	}
}

// TestSharedReplaceLateCommitPostgres: a compaction's Replace by one engine
// over a late commit of another engine ("process") on one PostgreSQL
// database: refused and planned again, nothing rolled back, every message
// stored byte for byte.
func TestSharedReplaceLateCommitPostgres(t *testing.T) {
	url := pgtest.NewDB(t)
	ctx := context.Background()
	var es []*Engine
	for i := 0; i < 2; i++ {
		e, err := openPG(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		es = append(es, e)
	}
	testReplaceLateCommit(t, es)
}
