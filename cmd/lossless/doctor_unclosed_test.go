package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

// killedServe runs serve on store, ingests n messages into session sid
// (each acknowledged) and kills it: the store is left unclosed, its
// memtable log and LOCK file behind. It returns the log.
func killedServe(t *testing.T, store, sid string, n int) string {
	t.Helper()
	c := startServe(t, "serve", "--store", store)
	if err := c.call("initialize", map[string]any{"config": map[string]any{}}, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		var r core.IngestResult
		msg := core.UserText(fmt.Sprintf("live message %d about the warehouse", i), int64(1_700_000_000_000+i))
		if err := c.call("ingest", core.IngestParams{SessionID: sid, Message: msg}, &r); err != nil || !r.Ingested {
			t.Fatalf("ingest %d: %+v, %v", i, r, err)
		}
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-c.dead
	_ = c.cmd.Wait()
	mems, _ := filepath.Glob(filepath.Join(store, "*.mem"))
	if len(mems) != 1 {
		t.Fatalf("the killed serve left %d memtable logs, want 1: the case is not tested", len(mems))
	}
	if _, err := os.Stat(filepath.Join(store, "LOCK")); err != nil {
		t.Fatalf("the killed serve left no LOCK file: %v", err)
	}
	return mems[0]
}

// TestDoctorUnclosedStore: issue 37 point 2a. doctor said "0
// conversations, 0 messages … no problems found" of a store with data
// whenever a memtable log was left behind. A store left unclosed — serve
// killed, assemble killed by SIGPIPE (`lossless assemble | head -c
// 100`), a zeroed 16 MiB log beside — is read with its logs, every
// conversation and message counted; a log damaged in its middle, or a
// store whose only log is zeroed, is a problem saying what was not read
// and what that means, exit 1, never "no problems found"; doctor changes
// no byte.
func TestDoctorUnclosedStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "openclaw.json")
	if err := os.WriteFile(cfg, []byte(`{"plugins":{"slots":{"contextEngine":"lossless"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	doctor := func(t *testing.T, store string, code int, want ...string) result {
		t.Helper()
		files := snapshotDir(t, store)
		r := runCLI(t, "", nil, "doctor", "--store", store, "--config", cfg, "--deep")
		r.want(t, code, want...)
		if code != 0 && strings.Contains(r.stdout, "no problems found") {
			t.Fatalf("doctor exit %d and no problems found:\n%s", r.code, r.stdout)
		}
		if diff := diffSnapshots(files, snapshotDir(t, store)); len(diff) > 0 {
			t.Fatalf("doctor changed the store:\n%s", strings.Join(diff, "\n"))
		}
		return r
	}

	// A store imported and closed, then written by serve, killed.
	killed := filepath.Join(dir, "killed")
	file := filepath.Join(dir, "a.jsonl")
	writeSession(t, file, "sess-imported", 20)
	runCLI(t, "", nil, "import", "--store", killed, file).want(t, 0, "40 imported")
	mem := killedServe(t, killed, "sess-live", 30)
	doctor(t, killed, 0, "2 conversations, 70 messages", "0 problem(s)", "no problems found", "stopped without closing it")

	// A zeroed 16 MiB memtable log beside it (a log never written to).
	zeroed := filepath.Join(dir, "zeroed-beside")
	copyDir(t, killed, zeroed)
	if err := os.WriteFile(filepath.Join(zeroed, "99999.mem"), make([]byte, 16<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	doctor(t, zeroed, 0, "2 conversations, 70 messages", "no problems found")

	// One byte of the log flipped early: the read stops there, the
	// entries after it are not read.
	flipped := filepath.Join(dir, "flipped")
	copyDir(t, killed, flipped)
	b, err := os.ReadFile(filepath.Join(flipped, filepath.Base(mem)))
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2000+600] ^= 0x10 // within the first few transactions
	if err := os.WriteFile(filepath.Join(flipped, filepath.Base(mem)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	doctor(t, flipped, 1, "memtable log "+filepath.Base(mem)+" is damaged", "finished writes", "are not read", "Do not open the store for writing")

	// A store only serve wrote, its one log zeroed: nothing reads, not
	// even the format record.
	lost := filepath.Join(dir, "lost")
	lmem := killedServe(t, lost, "sess-live", 10)
	if err := os.WriteFile(lmem, make([]byte, 16<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	doctor(t, lost, 1, "cannot be opened", "stopped without closing the store and left its memtable logs", "copy the directory aside")

	// assemble killed by SIGPIPE while it prints.
	piped := filepath.Join(dir, "piped")
	runCLI(t, "", nil, "import", "--store", piped, testutil.PiMono(t)[1]).want(t, 0, "914 imported")
	cmd := exec.Command(binary(t), "assemble", "--store", piped, "--session", "d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "--full", "--budget", "1000000")
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "LOSSLESS_TOKENIZER=chars4"}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(out, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	out.Close() // head -c 100 exits
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGPIPE {
		t.Fatalf("assemble with its reader gone: %v, want killed by SIGPIPE", err)
	}
	if mems, _ := filepath.Glob(filepath.Join(piped, "*.mem")); len(mems) == 0 {
		t.Log("assemble's SIGPIPE left no memtable log")
	}
	doctor(t, piped, 0, "1 conversations, 914 messages", "no problems found")
}
