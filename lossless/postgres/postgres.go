// Package postgres registers the PostgreSQL store (package store/pgstore)
// with package lossless, as a database/sql driver registers itself: import
// it for its side effect,
//
//	import _ "github.com/lossless-engine/contextengine/lossless/postgres"
//
// and lossless.Open (and lossless.Factory) accept a Config.StoreURL
// "postgres://…" or "postgresql://…". Package lossless does not import
// pgstore itself (pgstore's own tests use the engine).
package postgres

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/pgstore"
)

func init() {
	lossless.RegisterStore("postgres", Open)
	lossless.RegisterStore("postgresql", Open)
}

// Open opens the store and recall of cfg.StoreURL (a lossless.StoreOpener):
// the store, its schema migrated on a read-write open and checked on a
// read-only one, and, when recall is on, the database's full-text recall
// over the store's pool. pgstore's errors name what is wrong (the URL, the
// server, the schema version). A commit returns once the server made it
// durable, so that nothing acknowledged is lost on a crash of the server
// (TestServerCrash), unless cfg.AsyncCommit opts into asynchronous
// commits: then a killed engine process still loses nothing it was told
// was stored, but a server crash may lose the last commits.
func Open(ctx context.Context, cfg config.Config) (store.Store, index.Recall, error) {
	st, err := pgstore.Open(ctx, pgstore.Options{URL: cfg.StoreURL, ReadOnly: cfg.ReadOnly, AsyncCommit: cfg.AsyncCommit && !cfg.SyncWrites})
	if err != nil {
		return nil, nil, err
	}
	if cfg.ReadOnly || !cfg.RecallEnabled() {
		return st, nil, nil
	}
	logf := func(format string, args ...any) { slog.Warn("lossless: recall: " + fmt.Sprintf(format, args...)) }
	rec, err := pgstore.OpenRecall(ctx, st.Pool(), pgstore.RecallOptions{Logf: logf})
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("open the recall index: %w", err)
	}
	return st, rec, nil
}
