package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	_ "github.com/lossless-engine/contextengine/lossless/postgres"
)

// TestOpenStoreURL: with this package imported, lossless.Open takes a
// Config.StoreURL: two engines on one database see each other's messages;
// an unreachable server is an error saying so, without the password.
func TestOpenStoreURL(t *testing.T) {
	url := pgtest.NewDB(t)
	ctx := context.Background()
	cfg := config.Default()
	cfg.StoreURL, cfg.Tokenizer = url, core.CounterChars4
	a, err := lossless.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := lossless.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.Ingest(ctx, core.IngestParams{SessionID: "s", Message: core.UserText("written by a", 1)}); err != nil {
		t.Fatal(err)
	}
	res, err := b.Assemble(ctx, core.AssembleParams{SessionID: "s", TokenBudget: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || !strings.Contains(res.Messages[0].Text(), "written by a") {
		t.Fatalf("b assembles %d messages", len(res.Messages))
	}
	bad := cfg
	bad.StoreURL = "postgres://u:s3cret@127.0.0.1:1/x"
	if _, err := lossless.Open(ctx, bad); err == nil || !strings.Contains(err.Error(), "cannot reach") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("an unreachable server: %v", err)
	}
}
