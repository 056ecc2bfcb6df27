package badger

// lossless patch: this test is the lossless module's, not upstream's
// (PATCHES.md).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/third_party/badger/y"
)

// manifestStore writes three tables (three opens, each closed so that its
// memtable becomes a table) and returns the store's directory and the
// offsets of the MANIFEST's change sets.
func manifestStore(t *testing.T) (string, []int) {
	t.Helper()
	dir := t.TempDir()
	for v := 1; v <= 3; v++ {
		db, err := Open(damagedOptions(dir).WithNumLevelZeroTables(8).WithNumLevelZeroTablesStall(16))
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(txn *Txn) error {
			return txn.Set(fmt.Appendf(nil, "key-%d", v), fmt.Appendf(nil, "value %d", v))
		}); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, ManifestFilename))
	if err != nil {
		t.Fatal(err)
	}
	var offs []int
	for off := 8; off+8 <= len(b); off += 8 + int(y.BytesToU32(b[off:off+4])) {
		offs = append(offs, off)
	}
	if len(offs) < 3 {
		t.Fatalf("setup: %d change sets in the MANIFEST, want 3 or more", len(offs))
	}
	return dir, offs
}

func tables(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(m)
	return m
}

// TestManifestDamagedLengthRefused: a change set's length field damaged so
// that it claims more bytes than the MANIFEST holds reads like a torn tail.
// Upstream truncated the MANIFEST there and deleted the tables only the
// later change sets listed (a read-only open too). Such an open is now
// refused, read-only or not, naming the offset, and every table is left
// in place; a real torn tail (the last change set cut short) still opens.
func TestManifestDamagedLengthRefused(t *testing.T) {
	for i := range 3 {
		t.Run(fmt.Sprintf("change set %d", i), func(t *testing.T) {
			dir, offs := manifestStore(t)
			before := tables(t, dir)
			path := filepath.Join(dir, ManifestFilename)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			off := offs[i]
			remaining := len(b) - off - 8
			// The length's top byte stays within the file size check;
			// a length just past what remains reads as a torn tail.
			long := uint32(remaining + 5)
			copy(b[off:off+4], y.U32ToBytes(long))
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, ro := range []bool{true, false} {
				db, err := Open(damagedOptions(dir).WithReadOnly(ro))
				if err == nil {
					db.Close()
					t.Fatalf("read-only %v: a MANIFEST whose change set at %d claims %d bytes of %d opened", ro, off, long, remaining)
				}
				if !errors.Is(err, errBadChecksum) || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", off)) {
					t.Fatalf("read-only %v: %v; want the damaged length named at offset %d", ro, err, off)
				}
				if after := tables(t, dir); len(after) != len(before) {
					t.Fatalf("read-only %v: tables %v after the refused open, %v before", ro, after, before)
				}
			}
		})
	}
	t.Run("torn tail", func(t *testing.T) {
		dir, offs := manifestStore(t)
		path := filepath.Join(dir, ManifestFilename)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		last := offs[len(offs)-1]
		if err := os.WriteFile(path, b[:last+8+int(y.BytesToU32(b[last:last+4]))/2], 0o644); err != nil {
			t.Fatal(err)
		}
		db, err := Open(damagedOptions(dir))
		if err != nil {
			t.Fatalf("a MANIFEST whose last change set is cut short: %v", err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestReadOnlyOpenDeletesNoTable: a table the MANIFEST does not list (left
// by a compaction a crash stopped) is deleted by an open for writing, as
// upstream does, but a read-only open changes no file.
func TestReadOnlyOpenDeletesNoTable(t *testing.T) {
	dir, _ := manifestStore(t)
	before := tables(t, dir)
	orphan := filepath.Join(dir, "999999.sst")
	b, err := os.ReadFile(before[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orphan, b, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Open(damagedOptions(dir).WithReadOnly(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(orphan); err != nil {
		t.Fatalf("a read-only open removed the unlisted table: %v", err)
	}
	db, err = Open(damagedOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an open for writing kept the unlisted table: %v", err)
	}
}
