package lossless

import (
	"context"
	"testing"

	"github.com/lossless-engine/contextengine/internal/pgtest"
)

// TestSharedStorePostgres is TestSharedStoreTwoEngines on PostgreSQL: two
// engines opened with Config.StoreURL on one fresh database (Open through
// pgstore and its recall), writing and compacting at once.
func TestSharedStorePostgres(t *testing.T) {
	url := pgtest.NewDB(t)
	cfg := testConfig("")
	cfg.StoreURL = url
	sharedTestConfig(&cfg)
	var engines []*Engine
	for i := 0; i < 2; i++ {
		e, err := Open(context.Background(), cfg)
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
