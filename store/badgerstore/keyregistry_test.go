package badgerstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/store"
)

// TestDamagedKeyRegistry: a damaged KEYREGISTRY of a store without
// encryption is reported as a damaged file (store.ErrCorrupt, naming
// KEYREGISTRY and that the store is not encrypted), not only as Badger's
// "Encryption key mismatch" (issue #37); moved away, the store opens with
// its records.
func TestDamagedKeyRegistry(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	want := store.Meta{Format: 3, Engine: "e", Tokenizer: "t"}
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.PutMeta(want) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	reg := filepath.Join(dir, "KEYREGISTRY")
	b, err := os.ReadFile(reg)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff // in the sanity text
	if err := os.WriteFile(reg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		_, err := Open(ctx, Options{Dir: dir, ReadOnly: ro})
		if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "KEYREGISTRY file is damaged") ||
			!strings.Contains(err.Error(), "not encrypted") {
			t.Fatalf("read-only %v: %v, want ErrCorrupt naming KEYREGISTRY", ro, err)
		}
	}
	if err := os.Rename(reg, reg+".damaged"); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got store.Meta
	if err := s.View(ctx, func(r store.Reader) error { got, err = r.Meta(); return err }); err != nil || got != want {
		t.Fatalf("after KEYREGISTRY was moved away: %+v, %v", got, err)
	}
}
