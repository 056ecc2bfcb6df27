package postgres_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
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
	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// The server crash test (issue #27): writer processes ingest through the
// engine with its default configuration, the server is stopped with
// pg_ctl stop -m immediate (a crash: no checkpoint, the WAL replayed at
// the next start) while they write, and every message a writer was told
// was stored must be there, byte for byte, after the restart.
//
// It runs a server of its own (.ci/postgres.sh, fsync on: the shared
// test server may run with fsync off, and is not to be crashed), so it
// needs what the PostgreSQL tests need (LOSSLESS_TEST_PG_URL set: the
// binaries are there) and takes about ten seconds. Longer runs:
// LOSSLESS_PGCRASH_ROUNDS crashes (default 1), LOSSLESS_PGCRASH_SECONDS of
// writing before each (default 2), LOSSLESS_PGCRASH_WRITERS processes
// (default 4).

const (
	envCrashURL    = "LOSSLESS_PGCRASH_URL"
	envCrashWriter = "LOSSLESS_PGCRASH_WRITER"
	envCrashRound  = "LOSSLESS_PGCRASH_ROUND"
)

// crashSessions is the number of sessions each writer writes.
const crashSessions = 3

// crashSession is session k of writer w.
func crashSession(w, k int) string { return fmt.Sprintf("w%d-s%d", w, k) }

// crashMessage is message n of writer w's session k in round r:
// deterministic, so that the parent rebuilds the bytes of each message a
// writer acknowledged; of varied sizes, with non-ASCII text and JSON
// escapes.
func crashMessage(r, w, k, n int) core.Message {
	text := fmt.Sprintf("round %d writer %d session %d message %d: «ledger» 日本 \"quoted\" \\ tab\t%s",
		r, w, k, n, strings.Repeat("payload ", (n*7+w)%60))
	return core.UserText(text, int64(1_700_000_000_000+r*10_000_000+n))
}

// TestServerCrashWriter is a writer of TestServerCrash: it ingests into
// its sessions (single messages and batches of up to 40) until killed,
// printing "ack <session> <n>" for each message acknowledged; a call that
// fails (the server is down) is retried with the same messages.
func TestServerCrashWriter(t *testing.T) {
	url := os.Getenv(envCrashURL)
	if url == "" {
		t.Skip("writer of TestServerCrash only")
	}
	w, _ := strconv.Atoi(os.Getenv(envCrashWriter))
	round, _ := strconv.Atoi(os.Getenv(envCrashRound))
	ctx := context.Background()
	cfg := config.Default()
	cfg.StoreURL, cfg.Tokenizer = url, core.CounterChars4
	var e *lossless.Engine
	var err error
	for range 100 {
		if e, err = lossless.Open(ctx, cfg); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	rng := rand.New(rand.NewPCG(uint64(w), uint64(round)))
	next := make([]int, crashSessions)
	for {
		k := rng.IntN(crashSessions)
		sid := crashSession(w, k)
		n := 1
		if rng.IntN(4) > 0 {
			n = 1 + rng.IntN(40)
		}
		msgs := make([]core.Message, n)
		for i := range msgs {
			msgs[i] = crashMessage(round, w, k, next[k]+i)
		}
		for {
			if n == 1 {
				_, err = e.Ingest(ctx, core.IngestParams{SessionID: sid, Message: msgs[0]})
			} else {
				_, err = e.IngestBatch(ctx, core.IngestBatchParams{SessionID: sid, Messages: msgs})
			}
			if err == nil {
				break
			}
			fmt.Fprintln(os.Stderr, "retry:", err)
			time.Sleep(20 * time.Millisecond)
		}
		for i := range msgs {
			fmt.Fprintf(out, "ack %s %d\n", sid, next[k]+i)
		}
		out.Flush()
		next[k] += n
	}
}

// crashServer is a PostgreSQL server of the test's own (.ci/postgres.sh).
type crashServer struct {
	dir, bin, url string
	asUser        []string // setpriv's prefix when run as root
}

// startCrashServer starts a throwaway server with fsync on, stopped and
// deleted when t ends.
func startCrashServer(t *testing.T) *crashServer {
	t.Helper()
	script, err := filepath.Abs("../../.ci/postgres.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script, "start")
	cmd.Env = append(os.Environ(), "LOSSLESS_PG_FSYNC=on")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("start a server of the test's own: %v\n%s", err, stderr.String())
	}
	s := &crashServer{}
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, "'")
		switch k {
		case "LOSSLESS_PG_DIR":
			s.dir = v
		case pgtest.EnvURL:
			s.url = v
		}
	}
	if s.dir == "" || s.url == "" {
		t.Fatalf("postgres.sh start printed no server:\n%s", out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("bash", script, "stop", s.dir).CombinedOutput(); err != nil {
			t.Logf("stop the server: %v\n%s", err, out)
		}
	})
	bin, err := os.ReadFile(filepath.Join(s.dir, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	s.bin = strings.TrimSpace(string(bin))
	if os.Getuid() == 0 { // the server runs as the user the script chose
		user, err := os.ReadFile(filepath.Join(s.dir, "user"))
		if err != nil {
			t.Fatal(err)
		}
		u := strings.TrimSpace(string(user))
		s.asUser = []string{"setpriv", "--reuid=" + u, "--regid=" + u, "--init-groups", "--"}
	}
	var fsync string
	if err := s.pgctl("-D", filepath.Join(s.dir, "data"), "status"); err != nil {
		t.Fatal(err)
	}
	conf, _ := os.ReadFile(filepath.Join(s.dir, "data", "postgresql.conf"))
	for _, l := range strings.Split(string(conf), "\n") {
		if strings.HasPrefix(l, "fsync =") {
			fsync = l
		}
	}
	if fsync != "fsync = on" {
		t.Fatalf("the test's server has %q, want fsync = on", fsync)
	}
	return s
}

func (s *crashServer) pgctl(args ...string) error {
	argv := append(append(append([]string(nil), s.asUser...), filepath.Join(s.bin, "pg_ctl")), args...)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// crash stops the server as a crash does: pg_ctl stop -m immediate (no
// shutdown checkpoint; the next start replays the WAL).
func (s *crashServer) crash() error {
	return s.pgctl("-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
}

func (s *crashServer) start() error {
	return s.pgctl("-D", filepath.Join(s.dir, "data"), "-l", filepath.Join(s.dir, "server.log"), "-w", "-t", "60", "start")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestServerCrash: with the engine's default configuration, a crash of
// the PostgreSQL server (pg_ctl stop -m immediate, fsync on) under
// several writer processes loses no message the engine acknowledged:
// each is stored after the restart, byte for byte, once.
func TestServerCrash(t *testing.T) {
	if os.Getenv(envCrashURL) != "" {
		t.Skip("in a writer")
	}
	pgtest.ServerURL(t) // skips without PostgreSQL
	if testing.Short() {
		t.Skip("starts a server of its own (-short)")
	}
	rounds := envInt("LOSSLESS_PGCRASH_ROUNDS", 1)
	seconds := envInt("LOSSLESS_PGCRASH_SECONDS", 2)
	writers := envInt("LOSSLESS_PGCRASH_WRITERS", 4)
	srv := startCrashServer(t)
	ctx := context.Background()
	cfg := config.Default()
	cfg.StoreURL, cfg.Tokenizer = srv.url, core.CounterChars4
	if e, err := lossless.Open(ctx, cfg); err != nil { // the schema, before the writers
		t.Fatal(err)
	} else if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	// acked[session] holds the raw bytes of each message acknowledged.
	acked := map[string]map[string]bool{}
	total := 0
	for r := range rounds {
		var mu sync.Mutex
		var wg sync.WaitGroup
		started := make(chan struct{}, writers)
		cmds := make([]*exec.Cmd, writers)
		for w := range writers {
			cmd := exec.Command(os.Args[0], "-test.run=^TestServerCrashWriter$", "-test.v=false")
			cmd.Env = append(os.Environ(), envCrashURL+"="+srv.url, fmt.Sprintf("%s=%d", envCrashWriter, w), fmt.Sprintf("%s=%d", envCrashRound, r))
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = nil
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds[w] = cmd
			wg.Add(1)
			go func() {
				defer wg.Done()
				sc := bufio.NewScanner(stdout)
				first := true
				for sc.Scan() {
					var sid string
					var n int
					if _, err := fmt.Sscanf(sc.Text(), "ack %s %d", &sid, &n); err != nil {
						t.Errorf("writer %d: %s", w, sc.Text())
						continue
					}
					var k, ww int
					fmt.Sscanf(sid, "w%d-s%d", &ww, &k)
					raw := string(crashMessage(r, w, k, n).Raw())
					mu.Lock()
					if acked[sid] == nil {
						acked[sid] = map[string]bool{}
					}
					acked[sid][raw] = true
					total++
					mu.Unlock()
					if first {
						first = false
						started <- struct{}{}
					}
				}
			}()
		}
		kill := func() {
			for _, c := range cmds {
				_ = c.Process.Signal(syscall.SIGKILL)
			}
		}
		for range writers {
			select {
			case <-started:
			case <-time.After(60 * time.Second):
				kill()
				t.Fatal("a writer acknowledged nothing in 60 s")
			}
		}
		time.Sleep(time.Duration(seconds)*time.Second + time.Duration(rand.IntN(500))*time.Millisecond)
		mu.Lock()
		before := total
		mu.Unlock()
		err := srv.crash()
		// The writers' calls in flight fail; what they acknowledged so far
		// is what the server must keep.
		time.Sleep(300 * time.Millisecond)
		kill()
		for _, c := range cmds {
			_ = c.Wait()
		}
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.start(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: crashed after %d acknowledged messages (%d in all)", r, before, total)
	}

	e, err := lossless.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open after the crash: %v", err)
	}
	defer e.Close()
	lost := 0
	for sid, want := range acked {
		have := map[string]int{}
		err := e.Messages(ctx, "", sid, func(_ uint64, m core.Message) error {
			have[string(m.Raw())]++
			return nil
		})
		if err != nil {
			t.Fatalf("read %s after the crash: %v", sid, err)
		}
		for raw, n := range have {
			if n > 1 {
				t.Errorf("%s: stored %d times: %.80s", sid, n, raw)
			}
		}
		for raw := range want {
			if have[raw] == 0 {
				if lost++; lost <= 5 {
					t.Errorf("%s: acknowledged message lost: %.100s", sid, raw)
				}
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged messages lost in the crash", lost, total)
	}
	t.Logf("%d round(s), %d writers: all %d acknowledged messages stored byte for byte", rounds, writers, total)
}
