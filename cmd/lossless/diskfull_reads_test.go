package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadsOnFullDiskEveryCommand: issue 37 point 4. On a disk filled to
// the last byte, every command that reads answers from the store opened
// read-only, with a note on stderr that the disk is full, exit 0, and
// changes no byte of the store: sessions, stats, export, grep, describe
// and expand (read-only already), and assemble and ui, which open the
// store for writing for the recall index and refused on a full disk
// ("open for writing: disk full"). assemble's output is the one it gave
// before the disk filled, describe and expand show the same summary, the
// explorer lists the session.
func TestReadsOnFullDiskEveryCommand(t *testing.T) {
	mnt := tmpfsMount(t, 512)
	store := filepath.Join(mnt, "store")
	file := filepath.Join(t.TempDir(), "s.jsonl")
	writeSession(t, file, "sess-full", 40)
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0, "80 imported")
	runCLI(t, "", nil, "compact", "--store", store, "--session", "sess-full", "--budget", "300", "--force").want(t, 0)
	var sum string
	for _, it := range readState(t, store).items {
		if it.IsSummary() {
			sum = it.Ref.ID
			break
		}
	}
	if sum == "" {
		t.Fatal("setup: the compaction left no summary in the context")
	}
	reads := [][]string{
		{"sessions"},
		{"stats"},
		{"export", "--session", "sess-full"},
		{"grep", "--all", "file7.go"},
		{"describe", sum},
		{"expand", sum},
		{"assemble", "--session", "sess-full", "--budget", "400"},
	}
	before := map[string]string{}
	for _, args := range reads {
		r := runCLI(t, "", nil, append([]string{args[0], "--store", store}, args[1:]...)...)
		r.want(t, 0)
		before[args[0]] = r.stdout
	}

	fillDisk(t, filepath.Join(mnt, "filler"))
	files := snapshotDir(t, store)
	for _, args := range reads {
		r := runCLI(t, "", nil, append([]string{args[0], "--store", store}, args[1:]...)...)
		r.want(t, 0)
		if !strings.Contains(r.stderr, "note: ") || !strings.Contains(r.stderr, "disk full") {
			t.Fatalf("%v on a full disk: no note that the disk is full on stderr:\n%s", args, r.stderr)
		}
		got, want := r.stdout, before[args[0]]
		if args[0] == "assemble" {
			// The same window; the recall line says why recall is off.
			if !strings.Contains(r.stderr, "the store is open read-only, so recall is not used") ||
				!strings.Contains(got, "recall: off: the disk is full: the store is open read-only, and the recall index opens only for writing\n") {
				t.Fatalf("assemble on a full disk does not say recall is not used:\n%s\n%s", got, r.stderr)
			}
			got, want = dropRecallLine(got), dropRecallLine(want)
		}
		if args[0] != "stats" && got != want { // stats shows the filled disk's free space
			t.Fatalf("%v on a full disk:\n%s\nbefore the disk filled:\n%s", args, got, want)
		}
	}
	if !strings.Contains(before["describe"], sum) || !strings.Contains(before["assemble"], "session sess-full") {
		t.Fatalf("describe and assemble before the disk filled:\n%s\n%s", before["describe"], before["assemble"])
	}

	// The explorer.
	cmd, url := startUI(t, "--store", store, "--addr", "127.0.0.1:0")
	code, body := apiGet(t, url, "/api/sessions")
	if code != http.StatusOK || !strings.Contains(body, `"session":"sess-full"`) || !strings.Contains(body, `"messages":80`) {
		t.Fatalf("/api/sessions on a full disk: %d %s", code, body)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if diff := diffSnapshots(files, snapshotDir(t, store)); len(diff) > 0 {
		t.Fatalf("the read commands changed the store's files on a full disk: %v", diff)
	}
	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	runCLI(t, "", nil, "assemble", "--store", store, "--session", "sess-full", "--budget", "400").want(t, 0, "session sess-full")
}

// dropRecallLine returns assemble's output without its "recall:" line.
func dropRecallLine(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "recall: ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
