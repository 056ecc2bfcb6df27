package main

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/third_party/badger"
)

// storeKeys returns every key and value of the Badger store in dir.
func storeKeys(t *testing.T, dir string) map[string]string {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithReadOnly(true).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	kv := map[string]string{}
	if err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			kv[string(it.Item().KeyCopy(nil))] = string(v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return kv
}

// TestNoFormatRecordCommands deletes the format record of a store holding
// a session (issue #37: the first write-open wrote a new one, and from then
// on every command found the store clean and, in one layout, empty):
// every command, those that write (import, assemble, serve) and those that
// read, fails with exit 1 naming lossless doctor, and no record changes.
func TestNoFormatRecordCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := filepath.Join(dir, "store")
	file := filepath.Join(dir, "s.jsonl")
	const sid = "sess-noformat"
	writeSession(t, file, sid, 12)
	runCLI(t, "", nil, "import", "--store", st, file).want(t, 0)
	db, err := badger.Open(badger.DefaultOptions(st).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(txn *badger.Txn) error { return txn.Delete([]byte("\x00format")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before := storeKeys(t, st)
	for _, args := range [][]string{
		{"import", file},
		{"assemble", "--session", sid, "--budget", "100000"},
		{"sessions"},
		{"export", "--session", sid},
		{"stats"},
	} {
		r := runCLI(t, "", nil, append([]string{args[0], "--store", st}, args[1:]...)...)
		r.want(t, 1, "format record", "lossless doctor --store")
		if after := storeKeys(t, st); !maps.Equal(before, after) {
			t.Fatalf("%v changed the store's records (%d keys before, %d after)", args, len(before), len(after))
		}
	}
	// serve: initialize fails, naming doctor.
	r := runCLI(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"config":{}}}`+"\n", nil, "serve", "--stdio", "--store", st)
	if out := r.stdout + r.stderr; !strings.Contains(out, "format record") || !strings.Contains(out, "lossless doctor --store") {
		t.Fatalf("serve on a store without its format record:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
	if after := storeKeys(t, st); !maps.Equal(before, after) {
		t.Fatalf("serve changed the store's records (%d keys before, %d after)", len(before), len(after))
	}
}
