package lossless

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// crashMessage is message n of session s in crash round r: deterministic, so
// the parent can rebuild what the child acknowledged.
func crashMessage(r, s, n int) core.Message {
	return core.UserText(fmt.Sprintf("round %d session %d message %d %s", r, s, n, strings.Repeat("payload ", n%50)), int64(r*1_000_000+n))
}

// TestCrashChild is the child of TestCrash: it ingests until killed and
// prints "ack <session> <n>" after each acknowledged message.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("LOSSLESS_CRASH_DIR")
	if dir == "" {
		t.Skip("child of TestCrash only")
	}
	round, _ := strconv.Atoi(os.Getenv("LOSSLESS_CRASH_ROUND"))
	e, err := Open(context.Background(), testConfig(dir))
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	ctx := context.Background()
	rng := rand.New(rand.NewSource(int64(round)))
	next := map[int]int{}
	for {
		s := rng.Intn(4)
		sid := fmt.Sprintf("crash-%d", s)
		switch rng.Intn(3) {
		case 0:
			n := next[s]
			if _, err := e.Ingest(ctx, core.IngestParams{SessionID: sid, Message: crashMessage(round, s, n)}); err != nil {
				fmt.Println("error:", err)
				os.Exit(4)
			}
			next[s]++
			fmt.Fprintf(out, "ack %d %d\n", s, n)
		default:
			k := 1 + rng.Intn(40)
			var msgs []core.Message
			for i := 0; i < k; i++ {
				msgs = append(msgs, crashMessage(round, s, next[s]+i))
			}
			if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: sid, Messages: msgs}); err != nil {
				fmt.Println("error:", err)
				os.Exit(4)
			}
			for i := 0; i < k; i++ {
				fmt.Fprintf(out, "ack %d %d\n", s, next[s]+i)
			}
			next[s] += k
		}
		out.Flush()
	}
}

// TestCrash kills an ingesting child process with SIGKILL at random moments
// and checks that every acknowledged message survived intact and the store
// opens cleanly. Rounds: $LOSSLESS_CRASH_ROUNDS (default 8).
func TestCrash(t *testing.T) {
	if os.Getenv("LOSSLESS_CRASH_DIR") != "" {
		t.Skip("in the child")
	}
	rounds := 8
	if v, err := strconv.Atoi(os.Getenv("LOSSLESS_CRASH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	if testing.Short() {
		rounds = 2
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	acked := map[int]map[string]bool{} // session -> raw messages acknowledged
	total := 0
	for r := 0; r < rounds; r++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), "LOSSLESS_CRASH_DIR="+dir, fmt.Sprintf("LOSSLESS_CRASH_ROUND=%d", r))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Wait for the first ack, then kill at a random moment.
		first := true
		deadline := time.After(30 * time.Second)
		var killAt <-chan time.Time
	loop:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break loop
				}
				var s, n int
				if _, err := fmt.Sscanf(l, "ack %d %d", &s, &n); err != nil {
					t.Fatalf("child: %s", l)
				}
				if acked[s] == nil {
					acked[s] = map[string]bool{}
				}
				acked[s][string(crashMessage(r, s, n).Raw())] = true
				total++
				if first {
					first = false
					killAt = time.After(time.Duration(rng.Intn(300)) * time.Millisecond)
				}
			case <-killAt:
				_ = cmd.Process.Signal(syscall.SIGKILL)
				killAt = nil
			case <-deadline:
				_ = cmd.Process.Signal(syscall.SIGKILL)
				t.Fatal("child produced no ack in 30s")
			}
		}
		_ = cmd.Wait()

		e, err := Open(context.Background(), testConfig(dir))
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", r, err)
		}
		if err := checkInvariants(e); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		for s, want := range acked {
			have := map[string]bool{}
			for _, raw := range storedMessages(t, e, "", fmt.Sprintf("crash-%d", s)) {
				have[string(raw)] = true
			}
			for raw := range want {
				if !have[raw] {
					t.Fatalf("round %d: acknowledged message lost: %.80s", r, raw)
				}
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d rounds, %d acknowledged messages all present", rounds, total)
}
