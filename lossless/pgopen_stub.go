//go:build !pgstore

package lossless

import (
	"context"
	"fmt"
)

// openPostgres is pgopen.go's until package store/pgstore has its Open
// (build with -tags pgstore once it does).
func openPostgres(ctx context.Context, cfg Config) (*Engine, error) {
	return nil, fmt.Errorf("lossless: open store %s: this build has no PostgreSQL store", RedactURL(cfg.StoreURL))
}
