package lossless

import (
	"context"
	"testing"

	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/internal/pgtest"
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
