package badgerstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// damagedKind is one record family of TestDamagedNewestVersion: how to
// write version v (1 or 2) of its record K, read K back, and scan K's
// prefix, each read reporting the version it found.
type damagedKind struct {
	name string
	key  []byte
	put  func(tx store.Tx, v int) error
	get  func(r store.Reader) (int, error)
	scan func(r store.Reader) ([]int, error)
}

var (
	damagedConv = store.ConvID{0x10, 1, 2, 3, 4, 5, 6, 7}
	// fillConv's turns sort after every record of damagedConv's families
	// ('T' > 'C', 'I', 'M', 'S'), so that K's block is not a table's last:
	// Badger reads a table's last block when it opens the table, and the
	// damage must be met by the read under test, not by the open.
	fillConv = store.ConvID{0xf0, 1, 2, 3, 4, 5, 6, 7}
)

// damagedKinds covers the records a conversation is made of: its record,
// a message, a summary, a context item.
func damagedKinds() []damagedKind {
	c := damagedConv
	return []damagedKind{
		{
			name: "conversation",
			key:  convKey(c),
			put: func(tx store.Tx, v int) error {
				return tx.PutConversation(c, store.Conversation{Agent: "main", SessionIDs: []string{"s"}, NextSeq: uint64(v), Messages: int64(v)})
			},
			get: func(r store.Reader) (int, error) {
				rec, err := r.Conversation(c)
				return int(rec.NextSeq), err
			},
			scan: func(r store.Reader) ([]int, error) {
				var out []int
				for rec, err := range r.Conversations() {
					if err != nil {
						return out, err
					}
					if rec.ID == c {
						out = append(out, int(rec.Conversation.NextSeq))
					}
				}
				return out, nil
			},
		},
		{
			name: "message",
			key:  msgKey(c, 7),
			put: func(tx store.Tx, v int) error {
				return tx.PutMessage(c, testMessage(7, fmt.Sprintf("version %d", v)))
			},
			get: func(r store.Reader) (int, error) {
				m, err := r.Message(c, 7)
				return messageVersion(m), err
			},
			scan: func(r store.Reader) ([]int, error) {
				var out []int
				for m, err := range r.Messages(c, 0, true) {
					if err != nil {
						return out, err
					}
					out = append(out, messageVersion(m))
				}
				return out, nil
			},
		},
		{
			name: "summary",
			key:  summaryKey(c, "sum"),
			put: func(tx store.Tx, v int) error {
				return tx.PutSummary(c, dag.Summary{ID: "sum", Kind: dag.KindLeaf, Text: fmt.Sprintf("version %d", v)})
			},
			get: func(r store.Reader) (int, error) {
				s, err := r.Summary(c, "sum")
				return textVersion(s.Text), err
			},
			scan: func(r store.Reader) ([]int, error) {
				var out []int
				for s, err := range r.Summaries(c) {
					if err != nil {
						return out, err
					}
					out = append(out, textVersion(s.Text))
				}
				return out, nil
			},
		},
		{
			name: "context item",
			key:  itemKey(c, 5),
			put:  func(tx store.Tx, v int) error { return tx.PutItem(c, msgItem(5, 3, 100*v)) },
			get: func(r store.Reader) (int, error) {
				it, err := r.Item(c, 5)
				return it.Tokens / 100, err
			},
			scan: func(r store.Reader) ([]int, error) {
				var out []int
				for _, reverse := range []bool{false, true} {
					for it, err := range r.Items(c, 0, ^uint64(0), reverse) {
						if err != nil {
							return out, err
						}
						out = append(out, it.Tokens/100)
					}
				}
				return out, nil
			},
		},
	}
}

func messageVersion(m store.Message) int { return textVersion(string(m.Raw)) }

// textVersion finds "version N" in s (0 when absent).
func textVersion(s string) int {
	var v int
	if i := strings.Index(s, "version "); i >= 0 {
		fmt.Sscanf(s[i+len("version "):], "%d", &v)
	}
	return v
}

// TestDamagedNewestVersion is issue 37 point 1 on a real Badger store, for
// each record a conversation is made of: record K written at version 1 in
// one open (a table), at version 2 in the next (a newer table); one byte
// flipped inside version 2's block. Reading K must then fail with
// store.ErrCorrupt naming the damaged table, and so must a scan over K's
// prefix: never version 1 from the older table (what Badger did before:
// it took the damaged block for the end of the table). Written again, the
// record reads back. Nothing is lost meanwhile: the compactor, which fails on the damaged table, deleted
// neither table, and the older one is byte for byte what it was.
func TestDamagedNewestVersion(t *testing.T) {
	for _, k := range damagedKinds() {
		t.Run(k.name, func(t *testing.T) {
			testDamagedNewestVersion(t, k)
		})
	}
}

func testDamagedNewestVersion(t *testing.T, k damagedKind) {
	ctx := context.Background()
	var dir, older, newer string
	for try := 1; ; try++ {
		dir = t.TempDir()
		older, newer = writeTwoVersions(t, dir, k)
		if newer != "" {
			break
		}
		if try == 5 {
			t.Fatal("setup: five times the compactor merged the two versions of the record into one table")
		}
		t.Logf("setup %d: the compactor merged the two versions of the record; again", try)
	}
	olderBytes, err := os.ReadFile(filepath.Join(dir, older))
	must(t, err)

	// One byte of version 2's value, in its block of the newer table (the
	// first place the key is: the blocks come before the table's index).
	sst := filepath.Join(dir, newer)
	b, err := os.ReadFile(sst)
	must(t, err)
	at := bytes.Index(b, k.key)
	// key, its version (8 bytes), meta, user meta, expiry (1 byte: none),
	// then the value.
	b[at+len(k.key)+8+3+1] ^= 0x01
	must(t, os.WriteFile(sst, b, 0o644))

	s, err := Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatalf("open with a damaged block in %s: %v", newer, err)
	}
	defer func() { must(t, s.Close()) }()
	damaged := func(what string, got []int, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s after the damage: versions %v, no error; want store.ErrCorrupt", what, got)
			return
		}
		t.Logf("%s: %v", what, err)
		if !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("%s after the damage: %v, want store.ErrCorrupt", what, err)
		}
		for _, want := range []string{"table " + newer, "checksum mismatch"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s after the damage: error %q does not say %q", what, err, want)
			}
		}
		for _, v := range got {
			if v != 2 {
				t.Errorf("%s after the damage yielded version %d of the record", what, v)
			}
		}
	}
	get := func(what string) {
		t.Helper()
		var got []int
		err := s.View(ctx, func(r store.Reader) error {
			v, err := k.get(r)
			if err == nil {
				got = append(got, v)
			}
			return err
		})
		damaged(what, got, err)
	}
	get("get")
	var scanned []int
	err = s.View(ctx, func(r store.Reader) error {
		var err error
		scanned, err = k.scan(r)
		return err
	})
	damaged("scan", scanned, err)
	// The same again: the error is not a one-off (no cached block, no
	// state left behind makes the second read fall through).
	get("second get")

	// The record written again (version 3) reads back, the damaged table
	// still there: a table whose versions are all older than the one
	// found is not read.
	must(t, s.Update(ctx, func(tx store.Tx) error { return k.put(tx, 3) }))
	// A later write, so that the read's timestamp is past version 3's and
	// Badger looks below the memtable too.
	must(t, s.Update(ctx, func(tx store.Tx) error {
		return tx.PutTurn(fillConv, "later", store.Turn{Seqs: []uint64{1}, Stored: 1})
	}))
	err = s.View(ctx, func(r store.Reader) error {
		v, err := k.get(r)
		if err == nil && v != 3 {
			t.Errorf("get after the record was written again: version %d, want 3", v)
		}
		return err
	})
	if err != nil {
		t.Errorf("get after the record was written again: %v", err)
	}
	must(t, s.Close())

	// Both tables are still there (a compaction over the damaged one
	// fails rather than writing its entries without the damaged block's),
	// the older one byte for byte.
	for _, name := range []string{older, newer} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("table %s after reading the damaged store: %v", name, err)
		}
	}
	if now, err := os.ReadFile(filepath.Join(dir, older)); err != nil || !bytes.Equal(now, olderBytes) {
		t.Errorf("the undamaged older table %s changed (%v)", older, err)
	}
}

// writeTwoVersions writes k's record at version 1 in one open of a store
// in dir and at version 2 (with filler after it) in a second, and returns
// the tables holding each, older and newer; newer is "" when the two
// versions are not in two tables (Badger's compactor, on its own schedule,
// merged them).
func writeTwoVersions(t *testing.T, dir string, k damagedKind) (older, newer string) {
	t.Helper()
	ctx := context.Background()
	for v := 1; v <= 2; v++ {
		s, err := Open(ctx, Options{Dir: dir})
		must(t, err)
		err = s.Update(ctx, func(tx store.Tx) error {
			if err := k.put(tx, v); err != nil {
				return err
			}
			if v == 1 {
				return nil
			}
			for i := range 80 {
				if err := tx.PutTurn(fillConv, fmt.Sprintf("filler-%03d-%s", i, strings.Repeat("x", 80)), store.Turn{Seqs: []uint64{uint64(i)}, Stored: 1}); err != nil {
					return err
				}
			}
			return nil
		})
		must(t, err)
		must(t, s.Close()) // the memtable into a table
	}
	ents, err := os.ReadDir(dir)
	must(t, err)
	var holding []string
	for _, en := range ents {
		if !strings.HasSuffix(en.Name(), ".sst") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, en.Name()))
		must(t, err)
		if bytes.Contains(b, k.key) {
			holding = append(holding, en.Name())
		}
	}
	if len(holding) != 2 {
		return "", ""
	}
	sort.Strings(holding) // %06d.sst: the newer table has the larger id
	return holding[0], holding[1]
}
