package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/postgres"
	"github.com/lossless-engine/contextengine/store/pgstore"
)

// TestCommitMode: the engine's PostgreSQL store commits synchronously by
// default and with syncWrites; asyncCommit opts into asynchronous commits;
// the two together are refused before anything is opened.
func TestCommitMode(t *testing.T) {
	url := pgtest.NewDB(t)
	ctx := context.Background()
	for _, c := range []struct {
		name        string
		sync, async bool
		want        string
	}{
		{"default", false, false, "on"},
		{"syncWrites", true, false, "on"},
		{"asyncCommit", false, true, "off"},
	} {
		cfg := config.Default()
		cfg.StoreURL, cfg.SyncWrites, cfg.AsyncCommit = url, c.sync, c.async
		st, rec, err := postgres.Open(ctx, cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got string
		err = st.(*pgstore.Store).Pool().QueryRow(ctx, "SHOW synchronous_commit").Scan(&got)
		if rec != nil {
			rec.Close()
		}
		st.Close()
		if err != nil || got != c.want {
			t.Errorf("%s: synchronous_commit = %q (%v), want %q", c.name, got, err, c.want)
		}
	}
	cfg := config.Default()
	cfg.StoreURL, cfg.SyncWrites, cfg.AsyncCommit = url, true, true
	if e, err := lossless.Open(ctx, cfg); err == nil || !strings.Contains(err.Error(), "asyncCommit") {
		if e != nil {
			e.Close()
		}
		t.Fatalf("syncWrites and asyncCommit together: %v", err)
	}
}
