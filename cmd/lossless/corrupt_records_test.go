package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/third_party/badger"

	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/badgerstore"
)

// TestCorruptSummaryAndItem changes one byte inside a summary's value and
// inside a context item's value of a compacted store (issue 27: one flipped
// byte turned "getAvailableModels" into "getAvaifableModels" and assemble,
// describe and doctor --deep said nothing), two ways: under Badger (the
// value rewritten with the byte changed, as a fault before the write or in
// memory would leave it: only the record's checksum can tell) and in the
// files (the value's bytes changed in place in the value log or a table:
// Badger's own checksums tell). For every damage, every command (export,
// assemble, describe, expand, grep, sessions, doctor) either prints
// exactly what it printed on the healthy store or fails (exit 1): none
// returns altered or fewer records with exit 0. Plain doctor finds the
// damage.
func TestCorruptSummaryAndItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	healthy := filepath.Join(dir, "healthy")
	file := filepath.Join(dir, "s.jsonl")
	const sid = "sess-flip"
	writeSession(t, file, sid, 60)
	runCLI(t, "", nil, "import", "--store", healthy, file).want(t, 0)
	runCLI(t, "", nil, "compact", "--store", healthy, "--session", sid, "--budget", "400", "--force").want(t, 0)

	// The records to damage: a summary in the active context, and that
	// summary's item.
	var sumID string
	var conv store.ConvID
	var itemPos uint64
	st, err := badgerstore.Open(ctx, badgerstore.Options{Dir: healthy, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	err = st.View(ctx, func(r store.Reader) error {
		for cr, err := range r.Conversations() {
			if err != nil {
				return err
			}
			conv = cr.ID
		}
		for it, err := range r.Items(conv, 0, ^uint64(0), false) {
			if err != nil {
				return err
			}
			if it.IsSummary() && sumID == "" {
				sumID, itemPos = it.Ref.ID, it.Pos
			}
		}
		return nil
	})
	st.Close()
	if err != nil || sumID == "" {
		t.Fatalf("no summary in the compacted context: %v", err)
	}

	commands := [][]string{
		{"export", "--session", sid},
		{"assemble", "--session", sid, "--budget", "100000", "--full"},
		{"assemble", "--session", sid, "--budget", "100000", "--prompt", "answer file3.go", "--json"},
		{"describe", sumID},
		{"describe", "--session", sid, sumID},
		{"expand", sumID},
		{"grep", "--session", sid, "file"},
		{"grep", "--session", sid, "--kind", "summary", "file"},
		{"grep", "--all", "answer"},
		{"sessions"},
		{"sessions", "--json"},
	}
	want := map[string]string{}
	for _, args := range commands {
		r := runCLI(t, "", nil, append([]string{args[0], "--store", healthy}, args[1:]...)...)
		r.want(t, 0)
		want[strings.Join(args, " ")] = r.stdout
	}

	// rewrite changes the middle byte of the value under key, through
	// Badger.
	rewrite := func(t *testing.T, d string, key []byte) {
		db, err := badger.Open(badger.DefaultOptions(d).WithLogger(nil))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		err = db.Update(func(txn *badger.Txn) error {
			kv, err := txn.Get(key)
			if err != nil {
				return err
			}
			v, err := kv.ValueCopy(nil)
			if err != nil {
				return err
			}
			v[len(v)/2] ^= 0x04
			return txn.Set(key, v)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// inFiles changes one byte of the first occurrence of needle in the
	// store's value log files; false when none holds it. (A byte changed
	// in a table file fails the table's block checksum: Badger then ends
	// a scan early without an error, which the engine's checks of message
	// continuity catch, and TestCorruptionNeverShortensReads covers.)
	inFiles := func(t *testing.T, d string, needle []byte) bool {
		ents, _ := os.ReadDir(d)
		for _, en := range ents {
			if !strings.HasSuffix(en.Name(), ".vlog") {
				continue
			}
			p := filepath.Join(d, en.Name())
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if i := bytes.Index(b, needle); i >= 0 {
				b[i+len(needle)/2] ^= 0x04
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
				return true
			}
		}
		return false
	}
	sumKey := append(append([]byte{'S'}, conv[:]...), sumID...)
	itemKey := append(append([]byte{'I'}, conv[:]...), beU64(itemPos)...)
	cases := []struct {
		name   string
		damage func(t *testing.T, d string) bool
	}{
		{"summary under Badger", func(t *testing.T, d string) bool { rewrite(t, d, sumKey); return true }},
		{"item under Badger", func(t *testing.T, d string) bool { rewrite(t, d, itemKey); return true }},
		{"summary in the value log", func(t *testing.T, d string) bool { return inFiles(t, d, []byte(`"text":"`)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := filepath.Join(t.TempDir(), "store")
			copyDir(t, healthy, d)
			if !tc.damage(t, d) {
				t.Skip("the bytes to change are not in the files (compressed or compacted away)")
			}
			failed := 0
			for _, args := range commands {
				name := strings.Join(args, " ")
				r := runCLI(t, "", nil, append([]string{args[0], "--store", d}, args[1:]...)...)
				switch {
				case r.code == 0 && r.stdout == want[name]:
				case r.code == 0:
					t.Errorf("%s: exit 0 with output that differs from the healthy store's:\n%s\nwant\n%s", name, r.stdout, want[name])
				case r.code != 1:
					t.Errorf("%s: exit %d, want 1 (or 0 with the healthy output)\n%s", name, r.code, r.stderr)
				default:
					failed++
					t.Logf("%s: exit 1: %s", name, strings.TrimSpace(r.stderr))
				}
			}
			if failed == 0 {
				t.Errorf("no command noticed the damage")
			}
			r := runCLI(t, "", nil, "doctor", "--store", d)
			if r.code != 1 {
				t.Errorf("plain doctor: exit %d on the damaged store, want 1\n%s%s", r.code, r.stdout, r.stderr)
			}
			// It says what it did not read.
			if !strings.Contains(r.stdout, "not read   message records (bodies and headers: run with --deep)") {
				t.Errorf("plain doctor does not say it left the messages unread:\n%s", r.stdout)
			}
		})
	}
}

func beU64(n uint64) []byte {
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = byte(n)
		n >>= 8
	}
	return b
}
