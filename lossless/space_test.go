package lossless

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

// storeDigest hashes every record of the store (dumpRecords).
func storeDigest(t *testing.T, e *Engine) [32]byte {
	t.Helper()
	h := sha256.New()
	d := dumpRecords(t, e, false)
	for _, k := range slices.Sorted(maps.Keys(d)) {
		fmt.Fprintf(h, "%q=%q\n", k, d[k])
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// TestDiskFullRefusesEveryWrite: with the store's filesystem below the
// reserve, every kind of write (a new conversation, messages, an import's
// checkpoint and entry map, a reconciliation, a committed turn, a
// compaction) fails with ErrDiskFull and leaves the store byte-identical;
// reads go on; once space is back the same writes succeed.
func TestDiskFullRefusesEveryWrite(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	dir := t.TempDir()
	pathA, pathB := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	linesA := toolTranscript("sess-a", 30)
	writeLines(t, pathA, linesA, false)
	writeLines(t, pathB, toolTranscript("sess-b", 3), false)
	if _, err := e.Import(ctx, "", pathA); err != nil {
		t.Fatal(err)
	}
	full := true
	e.cfg.hooks.freeSpace = func(string) (uint64, error) {
		if full {
			return 1 << 20, nil
		}
		return 1 << 40, nil
	}
	e.space.Expire() // look again now
	before := storeDigest(t, e)

	linesA[6] = bytes.Replace(linesA[6], []byte("1234"), []byte("4321"), 1) // a rewrite to reconcile
	writeLines(t, pathA, linesA, false)
	writes := []struct {
		name string
		do   func() error
	}{
		{"ingest into a new session", func() error {
			_, err := e.Ingest(ctx, core.IngestParams{SessionID: "new", Message: core.UserText("hello", 1)})
			return err
		}},
		{"ingest into a stored session", func() error {
			_, err := e.Ingest(ctx, core.IngestParams{SessionID: "sess-a", Message: core.UserText("more", 99)})
			return err
		}},
		{"bootstrap of a session without a transcript", func() error {
			_, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: "fresh", SessionFile: filepath.Join(dir, "none.jsonl")})
			return err
		}},
		{"import of a new file", func() error { _, err := e.Import(ctx, "", pathB); return err }},
		{"import of a rewritten file", func() error { _, err := e.Import(ctx, "", pathA); return err }},
		{"commitTurn", func() error {
			_, err := e.CommitTurn(ctx, core.CommitTurnParams{AdvancementKey: "k1", SessionID: "sess-a",
				Messages: []core.Message{core.UserText("turn", 100), core.AssistantText("done", 101)}})
			return err
		}},
		{"compact", func() error {
			_, err := e.Compact(ctx, core.CompactParams{SessionID: "sess-a", Force: true, TokenBudget: 200})
			return err
		}},
	}
	for _, w := range writes {
		if err := w.do(); !errors.Is(err, ErrDiskFull) {
			t.Errorf("%s on a full disk: %v, want ErrDiskFull", w.name, err)
		}
	}
	if after := storeDigest(t, e); after != before {
		t.Fatal("a write refused for a full disk changed the store")
	}
	if n := len(storedMessages(t, e, "", "sess-a")); n != 90 {
		t.Fatalf("read on a full disk: %d messages, want 90", n)
	}

	full = false
	e.space.Expire()
	for _, w := range writes {
		if err := w.do(); err != nil {
			t.Errorf("%s once space is back: %v", w.name, err)
		}
	}
	wantFileOrder(t, e, "sess-b", pathB)
}
