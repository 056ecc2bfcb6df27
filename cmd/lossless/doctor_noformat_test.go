package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	badger "github.com/lossless-engine/contextengine/third_party/badger"
)

// TestDoctorNoFormatRecord: issue 37 point 2b. A store holding data whose
// format record is missing, or does not decode, is a problem to doctor
// and doctor --deep, with and without the engine configured: exit 1,
// saying what the store holds and what to do, never "no problems found",
// no record changed.
func TestDoctorNoFormatRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "openclaw.json")
	if err := os.WriteFile(cfg, []byte(`{"plugins":{"slots":{"contextEngine":"lossless"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "s.jsonl")
	writeSession(t, file, "sess-nofmt", 12)
	for _, tc := range []struct {
		name string
		fn   func(txn *badger.Txn) error
	}{
		{"missing", func(txn *badger.Txn) error { return txn.Delete([]byte("\x00format")) }},
		{"garbled", func(txn *badger.Txn) error { return txn.Set([]byte("\x00format"), []byte("\x01{\"form")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := filepath.Join(t.TempDir(), "store")
			runCLI(t, "", nil, "import", "--store", st, file).want(t, 0, "24 imported")
			db, err := badger.Open(badger.DefaultOptions(st).WithLogger(nil))
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(tc.fn); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			before := storeKeys(t, st)
			for _, args := range [][]string{{}, {"--deep"}, {"--config", cfg}, {"--config", cfg, "--deep"}} {
				r := runCLI(t, "", nil, append([]string{"doctor", "--store", st}, args...)...)
				r.want(t, 1, "PROBLEM", "store "+st+" holds 1 conversation records counting 24 messages, but its format record is missing or unreadable",
					"Restore the format record")
				if strings.Contains(r.stdout, "no problems found") {
					t.Fatalf("doctor %v:\n%s", args, r.stdout)
				}
				if after := storeKeys(t, st); !maps.Equal(before, after) {
					t.Fatalf("doctor %v changed the store's records", args)
				}
			}
		})
	}
}
