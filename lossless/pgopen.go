package lossless

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/store/pgstore"
)

// openPostgres opens the engine on the PostgreSQL database cfg.StoreURL
// names: the store (its schema migrated on a read-write open, checked on a
// read-only one) and, when recall is on, the database's full-text recall
// over the store's pool. pgstore's errors name what is wrong (the URL, the
// server, the schema version); they are wrapped with the redacted URL.
func openPostgres(ctx context.Context, cfg Config) (*Engine, error) {
	where := RedactURL(cfg.StoreURL)
	// Without SyncWrites a commit returns before the server flushed it, as
	// Badger's writes do: a client process killed loses nothing it was
	// told was stored, a server crash may lose the last commits.
	st, err := pgstore.Open(ctx, pgstore.Options{URL: cfg.StoreURL, ReadOnly: cfg.ReadOnly, AsyncCommit: !cfg.SyncWrites})
	if err != nil {
		return nil, fmt.Errorf("lossless: open store %s: %w", where, err)
	}
	var rec index.Recall
	if !cfg.ReadOnly && cfg.RecallEnabled() {
		logf := func(format string, args ...any) { slog.Warn("lossless: recall: " + fmt.Sprintf(format, args...)) }
		r, err := pgstore.OpenRecall(ctx, st.Pool(), pgstore.RecallOptions{Logf: logf})
		if err != nil {
			st.Close()
			return nil, fmt.Errorf("lossless: open the recall of %s: %w", where, err)
		}
		rec = r
	}
	return OpenStore(ctx, cfg, st, rec)
}
