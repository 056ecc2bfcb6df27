package lossless

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/third_party/badger"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/badgerstore"
)

// rawKeys returns every key and value of the Badger store in dir, read
// with Badger itself (read-only), not through the engine.
func rawKeys(t *testing.T, dir string) map[string]string {
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

// rawUpdate changes the Badger store in dir with Badger itself.
func rawUpdate(t *testing.T, dir string, fn func(txn *badger.Txn) error) {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// dirFiles returns the contents of every regular file under dir.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// formatKey is badgerstore's key of the format record (store/badgerstore
// doc.go: 0x00 "format").
var formatKey = []byte("\x00format")

// TestNoFormatRefused: a store that holds data but whose format record is
// deleted, or does not decode, is refused by Open, for writing and
// read-only, with an error wrapping ErrNoFormat that names lossless
// doctor; the refused open writes nothing (every record as it was, the
// recall index unchanged), and the store opens again once its format
// record is back. (Before, the write-open wrote a new format record and
// the store looked new.)
func TestNoFormatRefused(t *testing.T) {
	ctx := context.Background()
	for _, damage := range []struct {
		name string
		fn   func(txn *badger.Txn) error
	}{
		{"deleted", func(txn *badger.Txn) error { return txn.Delete(formatKey) }},
		{"corrupt", func(txn *badger.Txn) error { return txn.Set(formatKey, []byte("{\"format\":3,\x00garbage")) }},
	} {
		t.Run(damage.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			on := true
			cfg.Recall.Enabled = &on
			e, err := Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: turn(1)}); err != nil {
				t.Fatal(err)
			}
			want := storedMessages(t, e, "", "s")
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			meta := rawKeys(t, cfg.StoreDir)[string(formatKey)]
			if meta == "" {
				t.Fatal("no format record at 0x00 \"format\"")
			}
			rawUpdate(t, cfg.StoreDir, damage.fn)
			before := rawKeys(t, cfg.StoreDir)
			index := dirFiles(t, filepath.Join(cfg.StoreDir, "index"))
			if len(index) == 0 {
				t.Fatal("no recall index files")
			}
			for _, ro := range []bool{false, true} {
				c := cfg
				c.ReadOnly = ro
				e, err := Open(ctx, c)
				if err == nil {
					e.Close()
					t.Fatalf("read-only %v: a store with data and no readable format record opened", ro)
				}
				if !errors.Is(err, ErrNoFormat) || !strings.Contains(err.Error(), "lossless doctor --store "+cfg.StoreDir) {
					t.Fatalf("read-only %v: error %v, want ErrNoFormat naming lossless doctor", ro, err)
				}
				if after := rawKeys(t, cfg.StoreDir); !maps.Equal(before, after) {
					t.Fatalf("read-only %v: the refused open changed the records: %d keys before, %d after", ro, len(before), len(after))
				}
				if after := dirFiles(t, filepath.Join(cfg.StoreDir, "index")); !maps.Equal(index, after) {
					t.Fatalf("read-only %v: the refused open changed the recall index", ro)
				}
			}
			// The format record back: everything is there.
			rawUpdate(t, cfg.StoreDir, func(txn *badger.Txn) error { return txn.Set(formatKey, []byte(meta)) })
			e, err = Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			got := storedMessages(t, e, "", "s")
			if len(got) != len(want) {
				t.Fatalf("%d messages after the format record was restored, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("message %d differs after the format record was restored", i)
				}
			}
		})
	}
}

// TestNewStoreOnlyWhenEmpty: an empty directory, and a Badger store
// holding no record (a first open interrupted before the engine's first
// transaction), become a new store with its format record.
func TestNewStoreOnlyWhenEmpty(t *testing.T) {
	ctx := context.Background()
	interrupted := t.TempDir()
	st, err := badgerstore.Open(ctx, badgerstore.Options{Dir: interrupted})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"empty": t.TempDir(), "interrupted": interrupted} {
		e, err := Open(ctx, testConfig(dir))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var m store.Meta
		err = e.st.View(ctx, func(r store.Reader) error { m, err = r.Meta(); return err })
		e.Close()
		if err != nil || m.Format != FormatVersion || m.Engine != EngineID {
			t.Fatalf("%s: format record %+v, %v", name, m, err)
		}
	}
}

// TestNoManifestRefused: a Badger store whose MANIFEST is gone (its data
// files still there) is refused, for writing and read-only, with an error
// naming the MANIFEST and lossless doctor, and no file is changed (Badger
// would open it as a new store and delete its tables).
func TestNoManifestRefused(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t.TempDir())
	e, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: turn(1)}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(cfg.StoreDir, badger.ManifestFilename)); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, cfg.StoreDir)
	var tables int
	for p := range before {
		if strings.HasSuffix(p, ".sst") {
			tables++
		}
	}
	if tables == 0 {
		t.Fatal("the store has no table to lose")
	}
	for _, ro := range []bool{false, true} {
		c := cfg
		c.ReadOnly = ro
		e, err := Open(ctx, c)
		if err == nil {
			e.Close()
			t.Fatalf("read-only %v: a store without its MANIFEST opened", ro)
		}
		if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "MANIFEST") || !strings.Contains(err.Error(), "lossless doctor --store") {
			t.Fatalf("read-only %v: error %v, want ErrCorrupt naming the MANIFEST and lossless doctor", ro, err)
		}
		if after := dirFiles(t, cfg.StoreDir); !maps.Equal(before, after) {
			t.Fatalf("read-only %v: the refused open changed the store's files (%d before, %d after)", ro, len(before), len(after))
		}
	}
}

// TestNoFormatRefusedPostgres is TestNoFormatRefused on PostgreSQL: the
// format record's row deleted, the engine refuses the database (and adds
// no row to lossless_meta); the store opens again once the row is back.
func TestNoFormatRefusedPostgres(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDB(t)
	e, err := openPG(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: turn(1)}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var meta []byte
	if err := conn.QueryRow(ctx, "DELETE FROM lossless_meta RETURNING rec").Scan(&meta); err != nil {
		t.Fatal(err)
	}
	count := func() (n int) {
		if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM lossless_meta) * 1000000 + (SELECT count(*) FROM lossless_messages)").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	for _, ro := range []bool{false, true} {
		e, err := openPG(ctx, url, func(c *config.Config) { c.ReadOnly = ro })
		if err == nil {
			e.Close()
			t.Fatalf("read-only %v: a database with data and no format record opened", ro)
		}
		if !errors.Is(err, ErrNoFormat) || !strings.Contains(err.Error(), "lossless doctor --store") {
			t.Fatalf("read-only %v: error %v, want ErrNoFormat naming lossless doctor", ro, err)
		}
		if after := count(); after != before {
			t.Fatalf("read-only %v: the refused open changed the database (%d -> %d: format rows * 1e6 + messages)", ro, before, after)
		}
	}
	if _, err := conn.Exec(ctx, "INSERT INTO lossless_meta (id, rec) VALUES (1, $1)", meta); err != nil {
		t.Fatal(err)
	}
	e, err = openPG(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := storedMessages(t, e, "", "s"); len(got) != len(turn(1)) {
		t.Fatalf("%d messages after the format record was restored, want %d", len(got), len(turn(1)))
	}
}
