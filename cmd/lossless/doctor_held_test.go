package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// heldStoreSetup imports a small session into a new Badger store and writes
// an openclaw.json that selects lossless on it with uiAddr (the gateway's
// setup). It returns the store and the config's path.
func heldStoreSetup(t *testing.T) (store, cfg string) {
	t.Helper()
	dir := t.TempDir()
	store = filepath.Join(dir, "store")
	writeSession(t, filepath.Join(dir, "s.jsonl"), "held", 2)
	runCLI(t, "", nil, "import", "--store", store, filepath.Join(dir, "s.jsonl")).want(t, 0)
	cfg = filepath.Join(dir, "openclaw.json")
	body := `{"plugins":{"slots":{"contextEngine":"lossless"},"entries":{"lossless":{"config":{"storeDir":` + jsonString(store) + `,"uiAddr":"127.0.0.1:0"}}}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return store, cfg
}

// doctorJSON runs doctor --json on cfg, wants exit code 0 and returns its
// report.
func doctorJSON(t *testing.T, cfg string) doctorReport {
	t.Helper()
	r := runCLI(t, "", nil, "doctor", "--config", cfg, "--json")
	r.want(t, 0)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
	return rep
}

// TestDoctorBesideRunningEngine: doctor run while an engine process (here
// `lossless serve --stdio --ui`, as the OpenClaw plugin starts it) holds
// the Badger store says so, with the holder's pid from the store's LOCK
// file; names the configured engine as the one selected, claims no
// quarantine and no problem (its own open would fail on the lock: it does
// not try), says what it could not check, prints the explorer's URL, and
// exits 0. Once the engine stops, the same doctor checks the store.
func TestDoctorBesideRunningEngine(t *testing.T) {
	t.Parallel()
	store, cfg := heldStoreSetup(t)
	c, url := serveExplorerOnce(t, "serve-held", store, "127.0.0.1:0")
	pid := c.cmd.Process.Pid
	if b, err := os.ReadFile(filepath.Join(store, badgerPIDFile)); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(pid) {
		t.Fatalf("the engine's LOCK file: %q, %v (want its pid %d)", b, err, pid)
	}

	r := runCLI(t, "", nil, "doctor", "--config", cfg)
	r.want(t, 0,
		"engine     lossless (configured)",
		fmt.Sprintf("in use by pid %d (", pid), "serve --stdio", "a running engine",
		"explorer   "+url+" (from "+filepath.Join(store, explorerURLFile)+")\n",
		"not checked the store's format",
		"no problems found")
	for _, bad := range []string{"quarantined", "PROBLEM", "engine     legacy", "Cannot acquire directory lock"} {
		if strings.Contains(r.stdout, bad) {
			t.Fatalf("doctor beside a running engine says %q:\n%s", bad, r.stdout)
		}
	}

	rep := doctorJSON(t, cfg)
	h := rep.Store.HeldBy
	switch {
	case rep.Engine != "lossless" || rep.Resolution.Reason != "configured":
		t.Fatalf("engine %q (%s), want lossless (configured)", rep.Engine, rep.Resolution.Reason)
	case len(rep.Quarantines) != 0 || len(rep.Problems) != 0 || rep.Store.Error != "":
		t.Fatalf("quarantines %v, problems %v, store error %q", rep.Quarantines, rep.Problems, rep.Store.Error)
	case h == nil || h.PID != pid || !h.Running || !strings.Contains(h.Command, "serve"):
		t.Fatalf("store held by %+v, want pid %d running `serve`", h, pid)
	case rep.Store.DiskBytes <= 0 || rep.Store.Format != 0 || rep.Store.Check != nil:
		t.Fatalf("the held store: %d bytes on disk (want its size), format %d and check %v (want none: not opened)", rep.Store.DiskBytes, rep.Store.Format, rep.Store.Check)
	case len(rep.NotChecked) != 2:
		t.Fatalf("not checked: %q", rep.NotChecked)
	case rep.Explorer == nil || rep.Explorer.URL != url || !rep.Explorer.Listening:
		t.Fatalf("explorer %+v, want %s listening", rep.Explorer, url)
	case len(rep.HostChecks) != 9:
		t.Fatalf("host checks %+v", rep.HostChecks)
	}
	for _, hc := range rep.HostChecks {
		// The engine's own requirements are checked (not an empty Info):
		// the generic CLI backend cannot run a turn.
		if hc.Host == "generic CLI backend" && hc.Operation == "agent-run" && hc.OK {
			t.Fatalf("host checks without the engine's requirements: %+v", rep.HostChecks)
		}
	}

	// Stopped: nothing holds the store, and doctor reads it.
	stopServe(t, c)
	rep = doctorJSON(t, cfg)
	if rep.Store.HeldBy != nil || rep.Store.StaleLockPID != 0 || rep.Store.Messages != 4 || rep.Store.Check == nil || len(rep.NotChecked) != 0 || len(rep.Problems) != 0 {
		t.Fatalf("after the engine stopped: held %+v, stale LOCK %d, %d messages, check %v, not checked %q, problems %v",
			rep.Store.HeldBy, rep.Store.StaleLockPID, rep.Store.Messages, rep.Store.Check, rep.NotChecked, rep.Problems)
	}
}

// TestDoctorStaleLock: a LOCK file left behind names a process that does
// not hold the store; doctor does not report it as a running engine. A
// process killed while it had the store open leaves the file (and a log
// for Badger to replay: doctor, reading only, checks nothing then but
// says so, without a problem); a LOCK naming a process that runs but holds
// nothing (a reused pid) does not stop doctor from reading the store.
func TestDoctorStaleLock(t *testing.T) {
	t.Parallel()
	t.Run("killed", func(t *testing.T) {
		t.Parallel()
		store, cfg := heldStoreSetup(t)
		c := startServe(t, "serve-killed", "--store", store)
		if err := c.call("initialize", map[string]any{"config": map[string]any{}}, nil); err != nil {
			t.Fatal(err)
		}
		pid := c.cmd.Process.Pid
		if err := c.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-c.dead:
		case <-time.After(30 * time.Second):
			t.Fatal("serve outlived SIGKILL")
		}
		_ = c.cmd.Wait() // killed: its error is the signal
		if b, err := os.ReadFile(filepath.Join(store, badgerPIDFile)); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(pid) {
			t.Fatalf("no stale LOCK file after SIGKILL: %q, %v", b, err)
		}
		r := runCLI(t, "", nil, "doctor", "--config", cfg)
		r.want(t, 0, "engine     lossless (configured)", fmt.Sprintf("LOCK file names pid %d, which does not hold the store", pid), "no problems found")
		if strings.Contains(r.stdout, "in use by") || strings.Contains(r.stdout, "quarantined") {
			t.Fatalf("doctor after the engine was killed:\n%s", r.stdout)
		}
		rep := doctorJSON(t, cfg)
		if rep.Store.HeldBy != nil || rep.Store.StaleLockPID != pid || rep.Engine != "lossless" || len(rep.Quarantines) != 0 {
			t.Fatalf("held %+v, stale LOCK %d (want %d), engine %q, quarantines %v", rep.Store.HeldBy, rep.Store.StaleLockPID, pid, rep.Engine, rep.Quarantines)
		}
	})
	t.Run("reused pid", func(t *testing.T) {
		t.Parallel()
		store, cfg := heldStoreSetup(t)
		// This test's process runs and holds no lock on the store.
		if err := os.WriteFile(filepath.Join(store, badgerPIDFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		rep := doctorJSON(t, cfg)
		if rep.Store.HeldBy != nil || rep.Store.StaleLockPID != os.Getpid() || rep.Store.Messages != 4 || rep.Store.Check == nil || len(rep.Problems) != 0 {
			t.Fatalf("held %+v, stale LOCK %d (want %d), %d messages, check %v, problems %v",
				rep.Store.HeldBy, rep.Store.StaleLockPID, os.Getpid(), rep.Store.Messages, rep.Store.Check, rep.Problems)
		}
	})
}
