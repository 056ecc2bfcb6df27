package badger

// lossless patch: this test is the lossless module's, not upstream's
// (PATCHES.md).

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/third_party/badger/options"
	"github.com/lossless-engine/contextengine/third_party/badger/table"
)

// damagedOptions: blocks checked on every read (as store/badgerstore opens
// Badger), no background compaction (the test compacts when it wants to,
// with Flatten), a compaction as soon as level 0 holds two tables.
func damagedOptions(dir string) Options {
	return DefaultOptions(dir).
		WithLogger(nil).
		WithChecksumVerificationMode(options.OnBlockRead).
		WithCompression(options.None).
		WithNumCompactors(0).
		WithNumLevelZeroTables(1)
}

// TestDamagedBlockIsAnError: key K at version 1 in one table, at version 2
// (and filler after it) in a newer one; one byte of version 2's value
// flipped. Get, an iteration over K's prefix and a compaction must fail
// with table.ErrCorrupt naming the newer table: upstream Badger returned
// version 1 for the first two, and the compaction wrote a table without
// version 2 and deleted the damaged one. K written again reads back. With
// the byte put back, every version is read again: the failed compaction
// lost nothing.
func TestDamagedBlockIsAnError(t *testing.T) {
	dir := t.TempDir()
	key := []byte("conversation-K")
	for v := 1; v <= 2; v++ {
		db, err := Open(damagedOptions(dir))
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(txn *Txn) error {
			if err := txn.Set(key, fmt.Appendf(nil, "version %d", v)); err != nil {
				return err
			}
			for i := 0; v == 2 && i < 100; i++ { // after K: K's block is not the table's last
				if err := txn.Set(fmt.Appendf(nil, "filler-%03d", i), bytes.Repeat([]byte{'x'}, 100)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil { // the memtable into a table
			t.Fatal(err)
		}
	}
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(ssts) != 2 {
		t.Fatalf("setup: tables %v (%v), want two", ssts, err)
	}
	sort.Strings(ssts)
	newer := ssts[1]
	b, err := os.ReadFile(newer)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte("version 2"))
	if at < 0 {
		t.Fatalf("setup: version 2 is not in the newer table %s", newer)
	}
	b[at+len("version ")] ^= 0x01 // "version 3"
	if err := os.WriteFile(newer, b, 0o644); err != nil {
		t.Fatal(err)
	}

	damaged := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, table.ErrCorrupt) {
			t.Errorf("%s: %v, want table.ErrCorrupt", what, err)
			return
		}
		for _, want := range []string{"table " + filepath.Base(newer), "block 0", "checksum mismatch"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", what, err, want)
			}
		}
	}
	db, err := Open(damagedOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(txn *Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		v, _ := item.ValueCopy(nil)
		t.Errorf("Get after the damage read %q", v)
		return nil
	})
	damaged("Get", err)
	for _, reverse := range []bool{false, true} {
		err = db.View(func(txn *Txn) error {
			it := txn.NewIterator(IteratorOptions{Prefix: []byte("conv"), Reverse: reverse})
			defer it.Close()
			seek := []byte("conv")
			if reverse {
				seek = []byte("conw")
			}
			for it.Seek(seek); it.Valid(); it.Next() {
				v, _ := it.Item().ValueCopy(nil)
				t.Errorf("iteration (reverse %v) after the damage yielded %q = %q", reverse, it.Item().Key(), v)
			}
			return it.Err()
		})
		damaged(fmt.Sprintf("iteration (reverse %v)", reverse), err)
	}
	// A whole-store iteration: the filler after K is in the same damaged
	// table, so the iteration ends at K's block too.
	err = db.View(func(txn *Txn) error {
		it := txn.NewIterator(DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if bytes.Equal(it.Item().Key(), key) {
				v, _ := it.Item().ValueCopy(nil)
				t.Errorf("full iteration after the damage yielded K = %q", v)
			}
		}
		return it.Err()
	})
	damaged("full iteration", err)
	damaged("Flatten", db.Flatten(1))
	// K written again reads back, the damaged table still there (not
	// read: all its versions are older).
	if err := db.Update(func(txn *Txn) error { return txn.Set(key, []byte("version 4")) }); err != nil {
		t.Fatal(err)
	}
	// A later write: the read's timestamp is then past version 4's, and
	// Get looks at the tables too.
	if err := db.Update(func(txn *Txn) error { return txn.Set([]byte("later"), []byte("x")) }); err != nil {
		t.Fatal(err)
	}
	err = db.View(func(txn *Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		if v, err := item.ValueCopy(nil); err != nil || string(v) != "version 4" {
			t.Errorf("Get after K was written again: %q, %v", v, err)
		}
		return nil
	})
	if err != nil {
		t.Errorf("Get after K was written again: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// The background compactors meet the damaged table: each logs one
	// error and pauses, rather than failing and warning every 50 ms.
	log := &countingLogger{}
	db, err = Open(damagedOptions(dir).WithNumCompactors(2).WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if errs, warns := log.counts(); errs < 1 || errs > 2 || warns > 0 {
		t.Errorf("compactors on a damaged table for a second: %d errors, %d warnings logged; want 1 or 2 errors (one per compactor), no warning:\n%s",
			errs, warns, log.text())
	}
	for _, f := range ssts {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("table %s after the failed compaction: %v", f, err)
		}
	}

	// The byte put back: version 2 again, and the filler.
	b[at+len("version ")] ^= 0x01
	if err := os.WriteFile(newer, b, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = Open(damagedOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(txn *Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		if v, err := item.ValueCopy(nil); err != nil || string(v) != "version 4" {
			t.Errorf("Get after the repair: %q, %v; want version 4", v, err)
		}
		// And version 2, under it, is whole again.
		kit := txn.NewKeyIterator(key, IteratorOptions{AllVersions: true})
		defer kit.Close()
		var vals []string
		for kit.Rewind(); kit.Valid(); kit.Next() {
			v, err := kit.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			vals = append(vals, string(v))
		}
		if strings.Join(vals, ",") != "version 4,version 2,version 1" || kit.Err() != nil {
			t.Errorf("versions of K after the repair: %q, %v; want version 4, 2, 1", vals, kit.Err())
		}
		n := 0
		it := txn.NewIterator(IteratorOptions{Prefix: []byte("filler-")})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		if n != 100 || it.Err() != nil {
			t.Errorf("after the repair: %d filler keys, %v; want 100", n, it.Err())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// countingLogger counts the errors and warnings Badger logs.
type countingLogger struct {
	mu          sync.Mutex
	errs, warns int
	lines       []string
}

func (l *countingLogger) add(errs, warns int, f string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs += errs
	l.warns += warns
	l.lines = append(l.lines, fmt.Sprintf(f, a...))
}

func (l *countingLogger) Errorf(f string, a ...any)   { l.add(1, 0, f, a...) }
func (l *countingLogger) Warningf(f string, a ...any) { l.add(0, 1, f, a...) }
func (l *countingLogger) Infof(string, ...any)        {}
func (l *countingLogger) Debugf(string, ...any)       {}

func (l *countingLogger) counts() (errs, warns int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errs, l.warns
}

func (l *countingLogger) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
