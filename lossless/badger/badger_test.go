package badger_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/badger"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// TestRegistered: importing the package registers the Badger store as
// lossless.DirStore; an engine opened on a directory through it stores
// and assembles; Open without a directory is refused.
func TestRegistered(t *testing.T) {
	if !slices.Contains(lossless.StoreSchemes(), lossless.DirStore) {
		t.Fatalf("registered stores %v lack %q", lossless.StoreSchemes(), lossless.DirStore)
	}
	ctx := context.Background()
	cfg := config.Default()
	cfg.StoreDir = t.TempDir()
	e, err := lossless.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "s", Message: core.UserText("kept in Badger", 1)}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", TokenBudget: 1000})
	if err != nil || len(res.Messages) != 1 || res.Messages[0].Text() != "kept in Badger" {
		t.Fatalf("assemble: %v, %v", res.Messages, err)
	}
	if _, _, err := badger.Open(ctx, config.Default()); !errors.Is(err, badger.ErrNoDir) {
		t.Fatalf("Open without a directory: %v, want ErrNoDir", err)
	}
	url := config.Default()
	url.StoreURL = lossless.DirStore + "://" + t.TempDir()
	if e, err := lossless.Open(ctx, url); err == nil || !strings.Contains(err.Error(), "storeUrl") {
		if e != nil {
			e.Close()
		}
		t.Fatalf("a Badger store named by storeUrl: %v, want storeUrl refused", err)
	}
}
