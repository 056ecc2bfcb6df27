// Package badger registers the Badger store (package store/badgerstore)
// with package lossless, as package lossless/postgres registers
// PostgreSQL: import it for its side effect,
//
//	import _ "github.com/lossless-engine/contextengine/lossless/badger"
//
// and lossless.Open (and lossless.Factory) open a Config.StoreDir through
// it (lossless.DirStore). The engine keeps its recall index for such a
// store, Bleve's, in <StoreDir>/index, beside it.
//
// Package lossless still opens Badger itself when nothing is registered
// as lossless.DirStore, so that library code written before this package
// keeps working; binaries (cmd/lossless, cmd/lossless-bench) import it,
// as they import lossless/postgres.
package badger

import (
	"context"

	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/badgerstore"
)

func init() {
	lossless.RegisterStore(lossless.DirStore, Open)
}

// Open opens the Badger store in cfg.StoreDir (a lossless.StoreOpener)
// with cfg's Badger options (Config.BadgerOptions). It has no recall index
// of its own: the engine opens Bleve's beside the store.
func Open(ctx context.Context, cfg config.Config) (store.Store, index.Recall, error) {
	if cfg.StoreDir == "" {
		return nil, nil, ErrNoDir
	}
	st, err := badgerstore.Open(ctx, cfg.BadgerOptions())
	if err != nil {
		return nil, nil, err
	}
	return st, nil, nil
}
