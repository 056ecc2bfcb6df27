package faultsuite

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestJudge: the suite's verdicts, on outcomes made up to be right and
// wrong (it runs without the binary, in every go test ./...).
func TestJudge(t *testing.T) {
	const golden = "line 1\nline 2\n"
	goroutines := "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\nmain.main()\n"
	for _, c := range []struct {
		name string
		r    run
		want string
	}{
		{"same output", run{stdout: golden}, same},
		{"refused", run{code: 1, stdout: "partial\n", stderr: "lossless: corrupt record"}, refused},
		{"refused without output", run{code: 1}, refused},
		{"exit 0, other output", run{stdout: "line 1\nline 3\n"}, differs},
		{"exit 0, short output", run{stdout: "line 1\n"}, differs},
		{"exit 0, no output", run{}, differs},
		{"exit 0, more output", run{stdout: golden + "line 3\n"}, differs},
		{"a panic", run{code: 2, stderr: goroutines}, crashed},
		{"a panic a library recovered and logged", run{stdout: golden, stderr: "ERROR index: async panic error: panic: runtime error\n"}, same},
		{"a fatal error", run{code: 2, stderr: "fatal error: concurrent map writes\n\ngoroutine 7 [running]:\n"}, crashed},
		{"a hang", run{code: -1, timedOut: true}, hung},
	} {
		if got := judgeRead(golden, c.r); got != c.want {
			t.Errorf("judgeRead, %s: %q, want %q", c.name, got, c.want)
		}
	}

	all := func(v string) map[string]string {
		m := map[string]string{}
		for _, c := range readCommands("s", "sum") {
			m[c.name] = v
		}
		return m
	}
	with := func(m map[string]string, kv ...string) map[string]string {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, c := range []struct {
		name    string
		doctor  string
		outcome map[string]string
		culprit string
	}{
		{"all read back", "doctor --deep", all(same), ""},
		{"deep clean while export refused", "doctor --deep", with(all(same), "export", refused), "export"},
		{"deep clean while expand printed other output", "doctor --deep", with(all(same), "expand", differs), "expand"},
		{"deep clean while sessions refused", "doctor --deep", with(all(same), "sessions", refused), "sessions"},
		{"deep refused", "doctor --deep", with(all(same), "doctor --deep", refused, "export", refused), ""},
		{"deep clean while assemble refused (the recall index, which doctor does not open)", "doctor --deep", with(all(same), "assemble", refused), ""},
		{"doctor clean while export refused (message bodies it does not read)", "doctor", with(all(same), "export", refused), ""},
		{"doctor clean while stats refused", "doctor", with(all(same), "stats", refused), "stats"},
		{"doctor clean while stats printed other output", "doctor", with(all(same), "stats", differs), "stats"},
	} {
		culprit, ok := judgeDoctor(c.doctor, c.outcome)
		if culprit != c.culprit || ok != (c.culprit == "") {
			t.Errorf("judgeDoctor, %s: %q, %t; want %q", c.name, culprit, ok, c.culprit)
		}
	}

	const want, more = "m1\nm2\n", "m1\nm2\nnew\n"
	for _, c := range []struct {
		name  string
		acked bool
		after run
		out   string
	}{
		{"acknowledged and exported", true, run{stdout: more}, added},
		{"acknowledged, export refused", true, run{code: 1}, refused},
		{"acknowledged, the new message lost", true, run{stdout: want}, lost},
		{"acknowledged, an original message lost", true, run{stdout: "m2\nnew\n"}, lost},
		{"acknowledged, stored twice", true, run{stdout: more + "new\n"}, lost},
		{"acknowledged, export empty", true, run{}, lost},
		{"refused, originals exported", false, run{stdout: want}, same},
		{"refused, yet stored", false, run{stdout: more}, added},
		{"refused, an original message lost", false, run{stdout: "m1\n"}, lost},
		{"export panicked", true, run{code: 2, stderr: "panic: x\n\ngoroutine 1 [running]:\n"}, crashed},
		{"export hung", true, run{code: -1, timedOut: true}, hung},
	} {
		if got := judgeAfter(want, more, c.acked, c.after); got != c.out {
			t.Errorf("judgeAfter, %s: %q, want %q", c.name, got, c.out)
		}
	}
}

// TestManifestFlips: the change sets of a MANIFEST as Badger wrote one (a
// store whose compaction merged two tables into a third), each flipped at
// its length, its checksum and its first data byte.
func TestManifestFlips(t *testing.T) {
	dir := t.TempDir()
	manifest := []byte("Bdgr\x00\x00\x00\x08" +
		"\x00\x00\x00\x00\x00\x00\x00\x00" + // an empty change set
		"\x00\x00\x00\x04\x21\x54\x19\x16\x0a\x02\x08\x01" + // create table 1
		"\x00\x00\x00\x04\x32\x04\xea\xe2\x0a\x02\x08\x02" + // create table 2
		"\x00\x00\x00\x12\x67\xd5\xc8\x92\x0a\x04\x08\x03\x18\x06\x0a\x04\x08\x01\x10\x01\x0a\x04\x08\x02\x10\x01") // table 3 at level 6, tables 1 and 2 deleted
	if err := os.WriteFile(filepath.Join(dir, "MANIFEST"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range manifestFlips(t, dir) {
		if f.rel != "MANIFEST" || f.mask == 0 {
			t.Errorf("%s: file %s, mask %#x", f.id, f.rel, f.mask)
		}
		got = append(got, fmt.Sprintf("%s@%d", f.id, f.off))
	}
	want := []string{"m0.len@11", "m0.crc@12", "m1.len@19", "m1.crc@20", "m1.data@24", "m2.len@31", "m2.crc@32", "m2.data@36", "m3.len@43", "m3.crc@44", "m3.data@48"}
	if !slices.Equal(got, want) {
		t.Errorf("manifestFlips:\n got %v\nwant %v", got, want)
	}
}

// TestDiffSnapshot: a file deleted, added or changed under a store is
// named; the same files are no difference.
func TestDiffSnapshot(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("000001.sst", "a")
	write("000002.sst", "b")
	write("MANIFEST", "m")
	before := snapshot(t, dir)
	if d := diffSnapshot(before, snapshot(t, dir)); d != "" {
		t.Fatalf("the same files: %q", d)
	}
	if err := os.Remove(filepath.Join(dir, "000002.sst")); err != nil {
		t.Fatal(err)
	}
	write("MANIFEST", "M")
	write("LOCK", "")
	if d, want := diffSnapshot(before, snapshot(t, dir)), "000002.sst deleted, LOCK added, MANIFEST changed"; d != want {
		t.Fatalf("diffSnapshot: %q, want %q", d, want)
	}
}
