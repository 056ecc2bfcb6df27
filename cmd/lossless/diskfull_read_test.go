package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

// TestReadsOnFullDiskUnclosedStore: a store the last process did not
// close (serve killed after it acknowledged writes: its memtable log was
// never flushed), on a disk then filled to the last byte (issue #37: after
// an import failed on a full disk, every read command refused, as it
// needed an open for writing to replay the log). sessions, stats, export
// (byte for byte, the imported session and the one serve acknowledged) and
// grep answer, exit 0, with a note on stderr that the disk is full;
// doctor --deep checks the whole store; the store's files are unchanged by
// them; once space is freed the store opens
// for writing and holds the same.
func TestReadsOnFullDiskUnclosedStore(t *testing.T) {
	mnt := tmpfsMount(t, 512)
	store := filepath.Join(mnt, "store")
	dir := t.TempDir()
	file := filepath.Join(dir, "a.jsonl")
	imported := writeSession(t, file, "sess-imported", 20)
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0, "40 imported")

	// serve writes a session and is killed: the store is left unclosed.
	c := startServe(t, "serve", "--store", store)
	if err := c.call("initialize", map[string]any{"config": map[string]any{}}, nil); err != nil {
		t.Fatal(err)
	}
	var live [][]byte
	for i := 0; i < 5; i++ {
		ts := int64(1_700_000_000_000 + i*1000)
		msgs := []core.Message{core.UserText(fmt.Sprintf("live question %d about the warehouse", i), ts),
			core.AssistantText(fmt.Sprintf("live answer %d", i), ts+1)}
		var r core.IngestBatchResult
		if err := c.call("ingestBatch", core.IngestBatchParams{SessionID: "sess-live", Messages: msgs}, &r); err != nil || r.IngestedCount != 2 {
			t.Fatalf("ingestBatch %d: %+v, %v", i, r, err)
		}
		for _, m := range msgs {
			live = append(live, bytes.Clone(m.Raw()))
		}
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-c.dead
	_ = c.cmd.Wait()
	mems, _ := filepath.Glob(filepath.Join(store, "*.mem"))
	if len(mems) == 0 {
		t.Fatal("the killed serve left no memtable log: the store was closed, the case is not tested")
	}

	fillDisk(t, filepath.Join(mnt, "filler"))
	files := snapshotDir(t, store)
	for _, args := range [][]string{
		{"sessions"},
		{"stats"},
		{"grep", "--all", "warehouse"},
		{"export", "--session", "sess-imported"},
		{"export", "--session", "sess-live"},
	} {
		r := runCLI(t, "", nil, append([]string{args[0], "--store", store}, args[1:]...)...)
		r.want(t, 0)
		if !strings.Contains(r.stderr, "note: ") || !strings.Contains(r.stderr, "disk full") {
			t.Fatalf("%v on a full disk: no note that the disk is full on stderr:\n%s", args, r.stderr)
		}
		switch {
		case args[0] == "sessions" && (!strings.Contains(r.stdout, "sess-imported") || !strings.Contains(r.stdout, "sess-live")):
			t.Fatalf("sessions on a full disk:\n%s", r.stdout)
		case args[0] == "grep" && strings.Count(r.stdout, "live question") != 5:
			t.Fatalf("grep on a full disk: want the 5 live questions:\n%s", r.stdout)
		case args[0] == "export":
			want := imported
			if args[2] == "sess-live" {
				want = live
			}
			got := bytes.Split(bytes.TrimSuffix([]byte(r.stdout), []byte("\n")), []byte("\n"))
			if len(got) != len(want) {
				t.Fatalf("export %s on a full disk: %d messages, want %d", args[2], len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("export %s on a full disk: message %d differs\n got %s\nwant %s", args[2], i, got[i], want[i])
				}
			}
		}
	}
	// doctor reads the unclosed store too (it said it "checked nothing"
	// while Badger needed an open for writing to read its log).
	r := runCLI(t, "", nil, "doctor", "--store", store, "--deep")
	r.want(t, 0, "0 problem(s)", "2 conversations, 50 messages")
	if diff := diffSnapshots(files, snapshotDir(t, store)); len(diff) > 0 {
		t.Fatalf("the read commands changed the store's files: %v", diff)
	}
	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0, "0 imported")
	r = runCLI(t, "", nil, "export", "--store", store, "--session", "sess-live")
	r.want(t, 0)
	if want := string(bytes.Join(live, []byte("\n"))) + "\n"; r.stdout != want {
		t.Fatalf("sess-live after space was freed:\n%s\nwant\n%s", r.stdout, want)
	}
}

// TestRefusedImportLeavesNoDirectory: an import refused because the
// filesystem is smaller than a write needs leaves no directory behind
// (issue #37: it left an empty one, which sessions called "no store here"
// and doctor "no manifest found"), so every command then says the store
// does not exist; and on an empty directory doctor says "no store here",
// as sessions does.
func TestRefusedImportLeavesNoDirectory(t *testing.T) {
	mnt := tmpfsMount(t, 100)
	store := filepath.Join(mnt, "a", "store")
	file := filepath.Join(t.TempDir(), "s.jsonl")
	writeSession(t, file, "sess-small", 5)
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 1, "disk full", "its filesystem holds only 100 MiB in all")
	for _, d := range []string{store, filepath.Dir(store)} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("the refused import left %s (%v)", d, err)
		}
	}
	runCLI(t, "", nil, "sessions", "--store", store).want(t, 1, "does not exist")
	empty := filepath.Join(mnt, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	runCLI(t, "", nil, "sessions", "--store", empty).want(t, 1, "no store here")
	runCLI(t, "", nil, "doctor", "--store", empty).want(t, 1, "no store here")
}
