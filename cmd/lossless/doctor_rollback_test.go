package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/badgerstore"
)

// storeState is a conversation's record and context items as stored.
type storeState struct {
	c     store.ConvID
	rec   store.Conversation
	items []store.Item
}

// readState reads the only conversation of the Badger store at dir.
func readState(t *testing.T, dir string) storeState {
	t.Helper()
	s, err := readStateErr(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readStateErr is readState returning the error of the store's read.
func readStateErr(t *testing.T, dir string) (storeState, error) {
	t.Helper()
	ctx := context.Background()
	st, err := badgerstore.Open(ctx, badgerstore.Options{Dir: dir, ReadOnly: true})
	if err != nil {
		return storeState{}, err
	}
	defer st.Close()
	var s storeState
	err = st.View(ctx, func(r store.Reader) error {
		n := 0
		for cr, err := range r.Conversations() {
			if err != nil {
				return err
			}
			s.c, s.rec = cr.ID, cr.Conversation
			n++
		}
		if n != 1 {
			t.Fatalf("%d conversations, want 1", n)
		}
		for it, err := range r.Items(s.c, 0, ^uint64(0), false) {
			if err != nil {
				return err
			}
			s.items = append(s.items, it)
		}
		return nil
	})
	return s, err
}

// writeState writes s's record back over the store at dir, and with
// items its context items (every item now stored deleted first), as a
// damaged table bringing older versions back leaves them.
func writeState(t *testing.T, dir string, s storeState, items bool) {
	t.Helper()
	ctx := context.Background()
	st, err := badgerstore.Open(ctx, badgerstore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(ctx, func(tx store.Tx) error {
		if err := tx.PutConversation(s.c, s.rec); err != nil {
			return err
		}
		if !items {
			return nil
		}
		var pos []uint64
		for it, err := range tx.Items(s.c, 0, ^uint64(0), false) {
			if err != nil {
				return err
			}
			pos = append(pos, it.Pos)
		}
		for _, p := range pos {
			if err := tx.DeleteItem(s.c, p); err != nil {
				return err
			}
		}
		for _, it := range s.items {
			if err := tx.PutItem(s.c, it); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDoctorFindsRollback: issue 37 point 2. A conversation whose record
// (and context items) came back as they were before a compaction, or
// before its last import, reads consistent to the summary DAG's own check
// (the older items cover every message once): doctor and doctor --deep
// cross-check the record with the messages, summaries and items stored
// and exit 1 naming what disagrees, without changing a byte; the healthy
// store is clean.
func TestDoctorFindsRollback(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "openclaw.json")
	if err := os.WriteFile(cfg, []byte(`{"plugins":{"slots":{"contextEngine":"lossless"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Compacted: the state before the compaction, and after.
	compacted := filepath.Join(dir, "compacted")
	file := filepath.Join(dir, "s.jsonl")
	writeSession(t, file, "sess-rb", 40)
	runCLI(t, "", nil, "import", "--store", compacted, file).want(t, 0, "80 imported")
	before := readState(t, compacted)
	runCLI(t, "", nil, "compact", "--store", compacted, "--session", "sess-rb", "--budget", "300", "--force").want(t, 0)
	after := readState(t, compacted)
	if before.rec.Summaries != 0 || after.rec.Summaries == 0 || len(after.items) >= len(before.items) {
		t.Fatalf("setup: %d summaries and %d items before the compaction, %d and %d after",
			before.rec.Summaries, len(before.items), after.rec.Summaries, len(after.items))
	}
	// Imported in two parts: the record of the first.
	grown := filepath.Join(dir, "grown")
	part := filepath.Join(dir, "part.jsonl")
	writeSession(t, part, "sess-grow", 20)
	runCLI(t, "", nil, "import", "--store", grown, part).want(t, 0, "40 imported")
	partial := readState(t, grown)
	writeSession(t, part, "sess-grow", 30)
	runCLI(t, "", nil, "import", "--store", grown, part).want(t, 0, "20 imported")
	for _, d := range []string{compacted, grown} {
		for _, deep := range []string{"", "--deep"} {
			args := []string{"doctor", "--store", d, "--config", cfg}
			if deep != "" {
				args = append(args, deep)
			}
			runCLI(t, "", nil, args...).want(t, 0, "no problems found")
		}
	}

	cases := []struct {
		name  string
		from  string
		state storeState
		items bool
		want  []string
	}{
		{"record before its compaction", compacted, before, false, []string{
			"summaries stored, the record counts 0: the record is older than what is stored"}},
		{"record and items before their compaction", compacted, before, true, []string{
			"summaries stored, the record counts 0: the record is older than what is stored",
			"are reached by no context item: the context is older than those summaries (rolled back to before a compaction)",
			"context items list raw messages those summaries cover (1–"}},
		{"record before the last import", grown, partial, false, []string{
			"message 41 is stored at or after the record's next seq 41: the record is older than what is stored"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := filepath.Join(t.TempDir(), "store")
			copyDir(t, tc.from, d)
			writeState(t, d, tc.state, tc.items)
			files := snapshotDir(t, d)
			for _, deep := range []bool{false, true} {
				args := []string{"doctor", "--store", d, "--config", cfg, "--json"}
				if deep {
					args = append(args, "--deep")
				}
				r := runCLI(t, "", nil, args...)
				if r.code != 1 {
					t.Fatalf("doctor (deep %v) exit %d, want 1:\n%s\n%s", deep, r.code, r.stdout, r.stderr)
				}
				var rep doctorReport
				if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
					t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
				}
				all := strings.Join(rep.Problems, "\n")
				for _, w := range append(tc.want, tc.state.c.String()) {
					if !strings.Contains(all, w) {
						t.Errorf("doctor (deep %v) problems do not say %q:\n%s", deep, w, all)
					}
				}
				t.Logf("doctor (deep %v): %q", deep, rep.Problems)
			}
			// The text output says so too, never "no problems found".
			r := runCLI(t, "", nil, "doctor", "--store", d, "--config", cfg, "--deep")
			r.want(t, 1, "PROBLEM", "problem(s) found")
			if strings.Contains(r.stdout, "no problems found") {
				t.Fatalf("doctor --deep on a rolled-back conversation:\n%s", r.stdout)
			}
			if diff := diffSnapshots(files, snapshotDir(t, d)); len(diff) > 0 {
				t.Fatalf("doctor changed the store:\n%s", strings.Join(diff, "\n"))
			}
		})
	}
}
