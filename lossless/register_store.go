package lossless

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/badgerstore"
)

// StoreOpener opens the store (and its own recall index, nil for none) that
// cfg.StoreURL names, or, registered as DirStore, the store in
// cfg.StoreDir (without a recall index of its own, the engine keeps
// Bleve's in <StoreDir>/index). The engine owns what it returns. Package
// lossless/postgres registers one for postgres:// and postgresql://,
// package lossless/badger the DirStore one.
type StoreOpener func(ctx context.Context, cfg config.Config) (store.Store, index.Recall, error)

// DirStore is the name the opener of a store kept in a directory
// (Config.StoreDir, no StoreURL) is registered under: package
// lossless/badger registers Badger's. It is not a StoreURL scheme.
const DirStore = "badger"

// registeredStore returns the opener registered as name (nil: none).
func registeredStore(name string) StoreOpener {
	storesMu.RLock()
	defer storesMu.RUnlock()
	return stores[name]
}

// openBadger opens the Badger store in cfg.StoreDir: Open's fallback when
// no DirStore opener is registered (lossless/badger's Open does the same).
func openBadger(ctx context.Context, cfg config.Config) (store.Store, index.Recall, error) {
	st, err := badgerstore.Open(ctx, cfg.BadgerOptions())
	if err != nil {
		return nil, nil, err
	}
	return st, nil, nil
}

var (
	storesMu sync.RWMutex
	stores   = map[string]StoreOpener{}
)

// RegisterStore makes the store opener open available for Config.StoreURL
// values of URL scheme scheme. It panics when open is nil, scheme is empty
// or already registered (as database/sql's Register).
func RegisterStore(scheme string, open StoreOpener) {
	storesMu.Lock()
	defer storesMu.Unlock()
	if open == nil {
		panic("lossless: RegisterStore opener is nil")
	}
	if scheme == "" {
		panic("lossless: RegisterStore with an empty scheme")
	}
	if _, dup := stores[scheme]; dup {
		panic("lossless: RegisterStore called twice for scheme " + scheme)
	}
	stores[scheme] = open
}

// StoreSchemes returns the registered StoreURL schemes, sorted.
func StoreSchemes() []string {
	storesMu.RLock()
	defer storesMu.RUnlock()
	out := make([]string, 0, len(stores))
	for s := range stores {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// openURL opens the engine on the store cfg.StoreURL names, through the
// opener registered for its scheme, with the tests' seams h.
func openURL(ctx context.Context, cfg config.Config, h testHooks) (*Engine, error) {
	where := config.RedactURL(cfg.StoreURL)
	scheme, _, _ := strings.Cut(cfg.StoreURL, "://")
	open := registeredStore(scheme)
	if open == nil {
		return nil, fmt.Errorf("lossless: open store %s: no store registered for %s:// (forgotten import of github.com/lossless-engine/contextengine/lossless/postgres?)", where, scheme)
	}
	st, rec, err := open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("lossless: open store %s: %w", where, err)
	}
	return openStoreHooked(ctx, cfg, h, st, rec)
}
