package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// The disk-full tests of `lossless serve` (#27): clients write over
// JSON-RPC while the disk holding the store fills.

// procCPU returns the CPU time (user and system) a process has used so far,
// from /proc/<pid>/stat.
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("read the CPU time of process %d: %v", pid, err)
	}
	// The fields after the command name (in parentheses, which may hold
	// spaces): state is the first, utime the 12th, stime the 13th.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ticks := 0
	for _, s := range f[11:13] {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("/proc/%d/stat: bad CPU field %q", pid, s)
		}
		ticks += n
	}
	// The kernel's USER_HZ, 100 on every Linux the tests run on.
	return time.Duration(ticks) * 10 * time.Millisecond
}

// idleCPU fails the test when the serve process c, idle (no request in
// flight), uses more than a quarter of a core over a few seconds: a retry
// loop left spinning by the full disk (the recall index's persister
// rewrote its segments in a loop: 5 s of CPU in 10 s, until shutdown).
func idleCPU(t *testing.T, c *rpcChild) {
	t.Helper()
	const window = 3 * time.Second
	pid := c.cmd.Process.Pid
	before := procCPU(t, pid)
	time.Sleep(window)
	used := procCPU(t, pid) - before
	t.Logf("idle on a full disk: %v of CPU in %v", used, window)
	if used > window/4 {
		t.Fatalf("serve, idle on a full disk, used %v of CPU in %v: a retry loop spins\nstderr:\n%s", used, window, tail(c.errText(), 3000))
	}
}

// sigterm sends SIGTERM to c and checks how it ends: within the command's
// grace and a margin, without a runtime dump, with exit 0 or with exit 1
// and "disk full" (closing a store on a full disk may fail). It returns
// the exit code.
func sigterm(t *testing.T, c *rpcChild) int {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	select {
	case <-c.dead:
	case <-time.After(interruptGrace + 5*time.Second):
		_ = c.cmd.Process.Signal(syscall.SIGQUIT)
		<-c.dead
		c.cmd.Wait()
		t.Fatalf("serve still running %v after SIGTERM on a full disk (a hang):\n%s", interruptGrace+5*time.Second, tail(c.errText(), 4000))
	}
	err := c.cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	stderr := c.errText()
	t.Logf("ended %v after SIGTERM, exit %d: %s", time.Since(sent).Round(time.Millisecond), code, strings.TrimSpace(tail(stderr, 400)))
	fullDiskEnd(t, result{stderr: stderr, code: code}, "serve after SIGTERM")
	return code
}

// serveWriter is one client session written by ingest and ingestBatch
// calls: what serve acknowledged, in order, and the disk-full refusals.
type serveWriter struct {
	session string
	acked   [][]byte // raw messages, in order
	refused int      // calls answered with a disk-full error
	errs    []error  // any other error
}

// write sends the next message (ingest) or two (ingestBatch), alternately.
func (w *serveWriter) write(c *rpcChild, i int) {
	ts := int64(1_700_000_000_000 + i*1000)
	text := fmt.Sprintf("%s message %d: ", w.session, i) + strings.Repeat("words the disk has to hold until it is full ", 40)
	var msgs []core.Message
	var err error
	if i%2 == 0 {
		msgs = []core.Message{core.UserText(text, ts)}
		var r core.IngestResult
		err = c.call("ingest", core.IngestParams{SessionID: w.session, Message: msgs[0]}, &r)
		if err == nil && !r.Ingested {
			err = fmt.Errorf("%s: message %d acknowledged, not ingested", w.session, i)
		}
	} else {
		msgs = []core.Message{core.UserText(text+"(q)", ts), core.AssistantText(text+"(a)", ts+1)}
		var r core.IngestBatchResult
		err = c.call("ingestBatch", core.IngestBatchParams{SessionID: w.session, Messages: msgs}, &r)
		if err == nil && r.IngestedCount != len(msgs) {
			err = fmt.Errorf("%s: batch %d: %d of %d ingested", w.session, i, r.IngestedCount, len(msgs))
		}
	}
	switch {
	case err == nil:
		for _, m := range msgs {
			w.acked = append(w.acked, bytes.Clone(m.Raw()))
		}
	case strings.Contains(err.Error(), "disk full"):
		w.refused++
	default:
		w.errs = append(w.errs, err)
	}
}

// checkExported checks, once space is freed, that the store holds exactly
// what serve acknowledged: serve opens it again (Badger replays its log)
// and stops cleanly, doctor --deep is clean and each session exports its
// acknowledged messages byte for byte, in order, and nothing else (a
// refused write stored nothing).
func checkExported(t *testing.T, store string, writers []*serveWriter) {
	t.Helper()
	c := startServe(t, "serve after space was freed", "--store", store)
	if err := c.call("initialize", map[string]any{"config": map[string]any{}}, nil); err != nil {
		t.Fatalf("initialize after space was freed: %v\nstderr:\n%s", err, tail(c.errText(), 3000))
	}
	c.stdin.Close()
	select {
	case <-c.dead:
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop 60 s after its input ended\nstderr:\n%s", tail(c.errText(), 3000))
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("serve after space was freed: %v\nstderr:\n%s", err, tail(c.errText(), 3000))
	}
	runCLI(t, "", nil, "doctor", "--store", store, "--deep").want(t, 0, "0 problem(s)")
	for _, w := range writers {
		if len(w.acked) == 0 {
			continue
		}
		r := runCLI(t, "", nil, "export", "--store", store, "--session", w.session)
		r.want(t, 0)
		got := bytes.Split(bytes.TrimSuffix([]byte(r.stdout), []byte("\n")), []byte("\n"))
		if len(got) != len(w.acked) {
			t.Fatalf("%s after space was freed: %d messages exported, %d were acknowledged", w.session, len(got), len(w.acked))
		}
		for i := range w.acked {
			if !bytes.Equal(got[i], w.acked[i]) {
				t.Fatalf("%s after space was freed: message %d differs\n got %.300s\nwant %.300s", w.session, i, got[i], w.acked[i])
			}
		}
	}
}

// TestDiskFullDuringServe runs `lossless serve` with its store on a
// 512 MiB tmpfs and fills the disk at known states: before serve starts
// (initialize fails: the store cannot open), after initialize leaving
// 1 MiB above the reserve (the clients' writes fill it), and once 150
// writes were acknowledged, while four clients write (ingest and
// ingestBatch, a session each). Each client goes on until the disk
// refused it three times. Every error on the
// wire says "disk full" (and no call goes unanswered); writes are refused
// within seconds of the fill; serve, idle on the full disk, uses little
// CPU (the recall index's retries are paced); SIGTERM ends it within a
// bound without a runtime dump; and once space is freed the store is
// intact and holds exactly the acknowledged messages, byte for byte.
func TestDiskFullDuringServe(t *testing.T) {
	mnt := tmpfsMount(t, 512)
	binary(t)
	cases := []struct {
		name   string
		before bool // fill before serve starts (else after initialize)
		// leave is the bytes a fill before the start or after initialize
		// leaves free; 0 after initialize: the disk fills once 150 writes
		// were acknowledged, while the clients go on writing.
		leave int64
	}{
		{"before_start_full", true, 0},
		{"after_initialize_161MiB_free", false, 161 << 20},
		{"while_clients_write", false, 0},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := filepath.Join(mnt, fmt.Sprintf("store%d", i))
			filler := filepath.Join(mnt, "filler")
			t.Cleanup(func() { _ = os.Remove(filler) })
			if tc.before {
				fillDiskLeaving(t, filler, tc.leave)
			}
			c := startServe(t, "serve", "--store", store)
			err := c.call("initialize", map[string]any{"config": map[string]any{}}, nil)
			switch {
			case tc.before && tc.leave == 0:
				// The store cannot open: initialize says why, serve
				// stays up to answer, and ends on SIGTERM.
				if err == nil || !strings.Contains(err.Error(), "disk full") {
					t.Fatalf("initialize on a full disk: %v, want a disk-full error\nstderr:\n%s", err, tail(c.errText(), 3000))
				}
				sigterm(t, c)
				return
			case err != nil:
				t.Fatalf("initialize: %v\nstderr:\n%s", err, tail(c.errText(), 3000))
			}
			writers := make([]*serveWriter, 4)
			for k := range writers {
				writers[k] = &serveWriter{session: fmt.Sprintf("client-%d", k)}
			}
			var mu sync.Mutex
			acks := 0
			filled := make(chan struct{})
			if tc.leave > 0 {
				// Writes are accepted until their files take the 1 MiB
				// above the reserve (160 MiB), then refused.
				fillDiskLeaving(t, filler, tc.leave)
				close(filled)
			}
			var wg sync.WaitGroup
			for _, w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					deadline := time.Time{}
					for i := 0; w.refused < 3 && len(w.errs) == 0; i++ {
						n := len(w.acked)
						w.write(c, i)
						mu.Lock()
						acks += len(w.acked) - n
						mu.Unlock()
						select {
						case <-filled:
							if deadline.IsZero() {
								deadline = time.Now().Add(30 * time.Second)
							}
							if time.Now().After(deadline) {
								w.errs = append(w.errs, fmt.Errorf("%s: writes still acknowledged 30 s after the disk filled", w.session))
							}
						default:
						}
					}
				}()
			}
			if tc.leave == 0 {
				// The fill, once 150 writes were acknowledged, while
				// the clients go on writing.
				for {
					mu.Lock()
					n := acks
					mu.Unlock()
					if n >= 150 {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				fillDisk(t, filler)
				close(filled)
			}
			wg.Wait()
			total := 0
			for _, w := range writers {
				for _, err := range w.errs {
					t.Errorf("%v", err)
				}
				total += len(w.acked)
			}
			if t.Failed() {
				t.FailNow()
			}
			t.Logf("%d messages acknowledged, then every client refused 3 times with \"disk full\"", total)
			idleCPU(t, c)
			sigterm(t, c)
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			checkExported(t, store, writers)
			if err := os.RemoveAll(store); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDiskFullRecallIndexDuringServe fills only the recall index's
// filesystem (a 16 MiB tmpfs on <store>/index) after 40 acknowledged
// messages, so that the index's persist fails for certain while the store
// goes on writing: every write is still acknowledged, assemble with a
// prompt still answers, serve idle uses little CPU (the index's retries
// were a busy loop until shutdown: 3.5 s of CPU in 5 s), SIGTERM ends it
// within a bound with exit 1 and "disk full" (the index could not be
// closed: it is rebuilt at the next open), and every acknowledged message
// exports byte for byte.
func TestDiskFullRecallIndexDuringServe(t *testing.T) {
	mnt := tmpfsMount(t, 512)
	store := filepath.Join(mnt, "store")
	ixDir := filepath.Join(store, "index")
	if err := os.MkdirAll(ixDir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmpfsMountAt(t, ixDir, 16)
	c := startServe(t, "serve", "--store", store)
	if err := c.call("initialize", map[string]any{"config": map[string]any{}}, nil); err != nil {
		t.Fatalf("initialize: %v\nstderr:\n%s", err, tail(c.errText(), 3000))
	}
	w := &serveWriter{session: "client"}
	for i := range 40 {
		w.write(c, i)
	}
	fillDisk(t, filepath.Join(ixDir, "filler"))
	for i := 40; i < 80; i++ {
		w.write(c, i)
	}
	if w.refused > 0 || len(w.errs) > 0 {
		t.Fatalf("writes failed with only the index's disk full: %d refused, %v\nstderr:\n%s", w.refused, w.errs, tail(c.errText(), 3000))
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(c.errText(), "the recall index cannot be written") {
		if time.Now().After(deadline) {
			t.Fatalf("no index write failed 30 s after its disk filled\nstderr:\n%s", tail(c.errText(), 3000))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.call("assemble", core.AssembleParams{SessionID: w.session, Prompt: "which words does the disk hold", TokenBudget: 8000}, nil); err != nil {
		t.Fatalf("assemble with the index's disk full: %v", err)
	}
	idleCPU(t, c)
	if code := sigterm(t, c); code != 1 {
		t.Fatalf("serve exited %d after SIGTERM though its recall index could not be closed, want 1 and the reason", code)
	}
	if err := os.Remove(filepath.Join(ixDir, "filler")); err != nil {
		t.Fatal(err)
	}
	checkExported(t, store, []*serveWriter{w})
}
