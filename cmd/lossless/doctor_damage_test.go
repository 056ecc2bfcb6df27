package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/badgerstore"
)

// TestDoctorFindsDamage: doctor's check reads the store's invariants and
// reports what is wrong, naming it, without changing a byte: a context
// item gone (a message no longer covered), a summary gone (an item refers
// to nothing), a message record gone (found by --deep). Each damage is
// made through the store interface on a copy of a healthy store that was
// imported and compacted by the CLI.
func TestDoctorFindsDamage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	healthy := filepath.Join(dir, "healthy")
	file := filepath.Join(dir, "s.jsonl")
	writeSession(t, file, "sess-dmg", 40)
	runCLI(t, "", nil, "import", "--store", healthy, file).want(t, 0)
	runCLI(t, "", nil, "compact", "--store", healthy, "--session", "sess-dmg", "--budget", "300", "--force").want(t, 0)
	cfg := filepath.Join(dir, "openclaw.json")
	if err := os.WriteFile(cfg, []byte(`{"plugins":{"slots":{"contextEngine":"lossless"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	runCLI(t, "", nil, "doctor", "--store", healthy, "--config", cfg, "--deep").want(t, 0, "0 problem(s)")

	// damage opens a copy of the healthy store and applies fn to its only
	// conversation.
	damage := func(t *testing.T, fn func(t *testing.T, tx store.Tx, c store.ConvID)) string {
		t.Helper()
		d := filepath.Join(t.TempDir(), "store")
		copyDir(t, healthy, d)
		st, err := badgerstore.Open(ctx, badgerstore.Options{Dir: d})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		err = st.Update(ctx, func(tx store.Tx) error {
			var convs []store.ConvID
			for r, err := range tx.Conversations() {
				if err != nil {
					return err
				}
				convs = append(convs, r.ID)
			}
			if len(convs) != 1 {
				t.Fatalf("%d conversations, want 1", len(convs))
			}
			fn(t, tx, convs[0])
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		return d
	}
	items := func(t *testing.T, tx store.Tx, c store.ConvID) []store.Item {
		t.Helper()
		var out []store.Item
		for it, err := range tx.Items(c, 0, ^uint64(0), false) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, it)
		}
		return out
	}
	cases := []struct {
		name string
		deep bool
		fn   func(t *testing.T, tx store.Tx, c store.ConvID)
		want string
	}{
		{"item of a message gone", false, func(t *testing.T, tx store.Tx, c store.ConvID) {
			its := items(t, tx, c)
			last := its[len(its)-2] // a raw message of the fresh tail
			if last.IsSummary() {
				t.Fatal("the fresh tail holds a summary")
			}
			if err := tx.DeleteItem(c, last.Pos); err != nil {
				t.Fatal(err)
			}
		}, "is not covered by the active context"},
		{"summary gone", false, func(t *testing.T, tx store.Tx, c store.ConvID) {
			for _, it := range items(t, tx, c) {
				if it.IsSummary() {
					if err := tx.DeleteSummary(c, it.Ref.ID); err != nil {
						t.Fatal(err)
					}
					return
				}
			}
			t.Fatal("no summary in the context: compact made none")
		}, "referenced but not stored"},
		{"message record gone", true, func(t *testing.T, tx store.Tx, c store.ConvID) {
			if err := tx.DeleteMessage(c, 3); err != nil {
				t.Fatal(err)
			}
		}, "messages 3-3 are missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := damage(t, tc.fn)
			before := snapshotDir(t, d)
			args := []string{"doctor", "--store", d, "--config", cfg, "--json"}
			if tc.deep {
				args = append(args, "--deep")
			}
			r := runCLI(t, "", nil, args...)
			if r.code != 1 {
				t.Fatalf("doctor exit %d, want 1 (a problem):\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			var rep doctorReport
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
			}
			if len(rep.Problems) == 0 || !strings.Contains(strings.Join(rep.Problems, "\n"), tc.want) {
				t.Fatalf("doctor problems %q, want one naming %q", rep.Problems, tc.want)
			}
			t.Logf("doctor: %q", rep.Problems)
			if diff := diffSnapshots(before, snapshotDir(t, d)); len(diff) > 0 {
				t.Fatalf("doctor changed the damaged store:\n%s", strings.Join(diff, "\n"))
			}
		})
	}
}

// copyDir copies the regular files of directory from (recursively) to to.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDoctorStoreCannotOpen: plain doctor (without --deep) on a store that
// cannot be opened at all (its MANIFEST overwritten, a table file gone, a
// directory of foreign files) exits 1 with a problem naming the store and
// saying it cannot be opened, never "no problems found" with exit 0 (#27).
func TestDoctorStoreCannotOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	healthy := filepath.Join(dir, "healthy")
	file := filepath.Join(dir, "s.jsonl")
	writeSession(t, file, "sess-unopenable", 20)
	runCLI(t, "", nil, "import", "--store", healthy, file).want(t, 0, "40 imported")
	// No OpenClaw config (HOME is empty): the slot resolves to legacy, so
	// the store's own check is the only thing that can find a problem.
	runCLI(t, "", nil, "doctor", "--store", healthy).want(t, 0, "0 problem(s)")

	cases := []struct {
		name string
		fn   func(t *testing.T, d string)
	}{
		{"MANIFEST overwritten", func(t *testing.T, d string) {
			if err := os.WriteFile(filepath.Join(d, "MANIFEST"), []byte("not a manifest, 32 bytes long..."), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"table file gone", func(t *testing.T, d string) {
			ssts, _ := filepath.Glob(filepath.Join(d, "*.sst"))
			if len(ssts) == 0 {
				t.Fatal("the imported store has no .sst file")
			}
			for _, p := range ssts {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"foreign files only", func(t *testing.T, d string) {
			if err := os.RemoveAll(d); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "notes.txt"), []byte("hello\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := filepath.Join(t.TempDir(), "store")
			copyDir(t, healthy, d)
			tc.fn(t, d)
			for _, jsonOut := range []bool{false, true} {
				args := []string{"doctor", "--store", d}
				if jsonOut {
					args = append(args, "--json")
				}
				r := runCLI(t, "", nil, args...)
				if r.code != 1 {
					t.Fatalf("doctor %v on a store that cannot be opened: exit %d, want 1\n%s\n%s", args, r.code, r.stdout, r.stderr)
				}
				if !strings.Contains(r.stdout, "cannot be opened") || !strings.Contains(r.stdout, d) {
					t.Fatalf("doctor %v: output does not say that %s cannot be opened:\n%s", args, d, r.stdout)
				}
				if strings.Contains(r.stdout, "0 problem(s)") {
					t.Fatalf("doctor %v: says no problems:\n%s", args, r.stdout)
				}
			}
		})
	}
}
