package lossless

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	contextengine "github.com/lossless-engine/contextengine"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// turnMessages is turn n of a test conversation: a user prompt, a tool
// call, its result and an answer (deterministic).
func commitTurnMsgs(n int) []core.Message {
	ts := int64(1_700_000_000_000 + n*10_000)
	id := fmt.Sprintf("call_%d", n)
	return []core.Message{
		core.UserText(fmt.Sprintf("turn %d: please read file-%d.txt", n, n), ts),
		core.AssistantToolCall(id, "read", map[string]any{"path": fmt.Sprintf("file-%d.txt", n)}, ts+1),
		core.ToolResult(id, "read", fmt.Sprintf("contents of file %d: %s", n, strings.Repeat("x", n%7)), false, ts+2),
		core.AssistantText(fmt.Sprintf("file %d is read", n), ts+3),
	}
}

func commitParams(session, key string, n int) core.CommitTurnParams {
	msgs := commitTurnMsgs(n)
	return core.CommitTurnParams{
		AdvancementKey: key,
		SessionID:      session,
		Admission: core.AdmissionAnchor{EntryAnchor: core.EntryAnchor{SessionID: session, EntryID: fmt.Sprintf("u%d", n)},
			LogicalTurnID: fmt.Sprintf("turn-%d", n), Role: core.RoleUser},
		Terminal: core.EntryAnchor{SessionID: session, EntryID: fmt.Sprintf("a%d", n)},
		Messages: msgs,
	}
}

func countStored(t testing.TB, e *Engine, session string) map[string]int {
	t.Helper()
	out := map[string]int{}
	err := e.Messages(context.Background(), "", session, func(_ uint64, m core.Message) error {
		out[string(m.Raw())]++
		return nil
	})
	if err != nil && !errors.Is(err, core.ErrUnknownSession) {
		t.Fatal(err)
	}
	return out
}

func TestCommitTurnIdempotent(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	p := commitParams("s1", "adv-1", 1)
	res, err := e.CommitTurn(ctx, p)
	if err != nil || res.Status != core.CommitCommitted {
		t.Fatalf("first commit: %+v %v", res, err)
	}
	for i := 0; i < 3; i++ {
		res, err = e.CommitTurn(ctx, p)
		if err != nil || res.Status != core.CommitDuplicate {
			t.Fatalf("retry %d: %+v %v", i, res, err)
		}
	}
	got := countStored(t, e, "s1")
	if len(got) != 4 {
		t.Fatalf("stored %d distinct messages, want 4", len(got))
	}
	for _, m := range p.Messages {
		if got[string(m.Raw())] != 1 {
			t.Fatalf("message %s stored %d times", m.Raw(), got[string(m.Raw())])
		}
	}
	ok, seqs, err := e.TurnCommitted(ctx, "s1", "", "adv-1")
	if err != nil || !ok || len(seqs) != 4 {
		t.Fatalf("TurnCommitted: %v %v %v", ok, seqs, err)
	}
	// A retry under the same key with some of the turn's messages is a
	// duplicate too.
	sub := p
	sub.Messages = p.Messages[1:3]
	if res, err := e.CommitTurn(ctx, sub); err != nil || res.Status != core.CommitDuplicate {
		t.Fatalf("same key, some of the turn's messages: %+v %v", res, err)
	}
	// The same key with other messages is refused, naming the key, and
	// stores nothing (issue #37: it answered "duplicate", and the host
	// dropped the messages that differ).
	q := commitParams("s1", "adv-1", 2)
	mixed := p
	mixed.Messages = append(append([]core.Message(nil), p.Messages...), q.Messages[3])
	for _, c := range []core.CommitTurnParams{q, mixed} {
		res, err := e.CommitTurn(ctx, c)
		if !errors.Is(err, ErrKeyReused) || !strings.Contains(err.Error(), `"adv-1"`) {
			t.Fatalf("same key, other messages: %+v %v, want ErrKeyReused", res, err)
		}
	}
	if n := len(countStored(t, e, "s1")); n != 4 {
		t.Fatalf("a refused commit stored messages: %d", n)
	}
	// A new key commits; messages already stored by Ingest are not stored
	// twice.
	if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "s1", Message: q.Messages[0]}); err != nil {
		t.Fatal(err)
	}
	q.AdvancementKey = "adv-2"
	if res, err := e.CommitTurn(ctx, q); err != nil || res.Status != core.CommitCommitted {
		t.Fatalf("second turn: %+v %v", res, err)
	}
	got = countStored(t, e, "s1")
	if len(got) != 8 {
		t.Fatalf("stored %d distinct messages, want 8", len(got))
	}
	for raw, n := range got {
		if n != 1 {
			t.Fatalf("%s stored %d times", raw, n)
		}
	}
	// The committed turn is in the context, in order.
	res2, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s1", TokenBudget: 100000})
	if err != nil {
		t.Fatal(err)
	}
	want := append(commitTurnMsgs(1), commitTurnMsgs(2)...)
	if len(res2.Messages) != len(want) {
		t.Fatalf("assembled %d messages, want %d", len(res2.Messages), len(want))
	}
	for i := range want {
		if string(res2.Messages[i].Raw()) != string(want[i].Raw()) {
			t.Fatalf("message %d: %s, want %s", i, res2.Messages[i].Raw(), want[i].Raw())
		}
	}
}

func TestCommitTurnKeysPerConversation(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	for _, s := range []string{"a", "b"} {
		res, err := e.CommitTurn(ctx, commitParams(s, "same-key", 1))
		if err != nil || res.Status != core.CommitCommitted {
			t.Fatalf("session %s: %+v %v", s, res, err)
		}
	}
}

func TestCommitTurnRefusesAtomically(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	if _, err := e.CommitTurn(ctx, commitParams("s", " ", 1)); !errors.Is(err, ErrBadParams) {
		t.Fatalf("empty key: %v", err)
	}
	p := commitParams("s", "k", 1)
	p.Messages = append(p.Messages, core.Message{})
	if _, err := e.CommitTurn(ctx, p); !errors.Is(err, core.ErrInvalidMessage) {
		t.Fatalf("invalid message: %v", err)
	}
	if n := len(countStored(t, e, "s")); n != 0 {
		t.Fatalf("a refused turn stored %d messages", n)
	}
	if ok, _, _ := e.TurnCommitted(ctx, "s", "", "k"); ok {
		t.Fatal("a refused turn recorded its key")
	}
	// A turn too large for one transaction is refused whole.
	small := openTest(t, func(c *config.Config) { c.Badger.MemTableSize = 1 << 20 })
	big := commitParams("s", "big", 1)
	big.Messages = nil
	for i := 0; i < 20000; i++ {
		big.Messages = append(big.Messages, core.UserText(fmt.Sprintf("m%d", i), int64(i)))
	}
	if _, err := small.CommitTurn(ctx, big); !errors.Is(err, core.ErrTooLarge) {
		t.Fatalf("huge turn: %v", err)
	}
	if n := len(countStored(t, small, "s")); n != 0 {
		t.Fatalf("a refused huge turn stored %d messages", n)
	}
	// The retry of the refused turn, fixed, commits.
	p.Messages = p.Messages[:4]
	if res, err := e.CommitTurn(ctx, p); err != nil || res.Status != core.CommitCommitted {
		t.Fatalf("retry: %+v %v", res, err)
	}
}

func TestInfoDeclaresLifecycle(t *testing.T) {
	e := openTest(t)
	b, err := json.Marshal(e.Info())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		TranscriptSemantics map[string]string `json:"transcriptSemantics"`
		HostRequirements    map[string]struct {
			RequiredCapabilities []string `json:"requiredCapabilities"`
			UnsupportedMessage   string   `json:"unsupportedMessage"`
		} `json:"hostRequirements"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.TranscriptSemantics["currentTurnFence"] != "before-current-turn-entry-v1" ||
		got.TranscriptSemantics["turnAdvancementIdempotency"] != "atomic-idempotent-v1" {
		t.Fatalf("transcriptSemantics %v", got.TranscriptSemantics)
	}
	run := got.HostRequirements["agent-run"]
	if len(run.RequiredCapabilities) != 1 || run.RequiredCapabilities[0] != "assemble-before-prompt" || run.UnsupportedMessage == "" {
		t.Fatalf("hostRequirements %s", b)
	}
}

// TestHostRequirements checks, through the root package, that a generic CLI
// backend (no assemble before the prompt) fails closed with the contract's
// exact message, and that the embedded runtime and the Codex app-server run.
func TestHostRequirements(t *testing.T) {
	e := openTest(t)
	err := contextengine.CheckHostRequirements(e.Info(), core.OpAgentRun, contextengine.GenericCLI)
	want := `Context engine "lossless" cannot run operation "agent-run" on generic CLI backend. ` +
		`Missing host capabilities: assemble-before-prompt. Required capabilities: assemble-before-prompt. ` +
		`Host capabilities: bootstrap, after-turn, maintain. ` + UnsupportedAgentRunMessage
	if err == nil || err.Error() != want {
		t.Fatalf("generic CLI:\n got %v\nwant %s", err, want)
	}
	if !errors.Is(err, core.ErrHostRequirements) {
		t.Fatalf("not ErrHostRequirements: %v", err)
	}
	for _, h := range []contextengine.Host{contextengine.EmbeddedRuntime, contextengine.CodexAppServer} {
		if err := contextengine.CheckHostRequirements(e.Info(), core.OpAgentRun, h); err != nil {
			t.Fatalf("%s: %v", h.Label, err)
		}
	}
}

// TestCommitCrashChild is the child of TestCommitCrash: in mode "once" it
// commits one turn and SIGKILLs itself before printing the reply; in mode
// "loop" it commits turns 0, 1, ... printing "ack <n>" after each reply,
// until killed.
func TestCommitCrashChild(t *testing.T) {
	dir := os.Getenv("LOSSLESS_COMMIT_CRASH_DIR")
	if dir == "" {
		t.Skip("child of TestCommitCrash only")
	}
	ctx := context.Background()
	e, err := Open(ctx, testConfig(dir))
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	if os.Getenv("LOSSLESS_COMMIT_CRASH_MODE") == "once" {
		if _, err := e.CommitTurn(ctx, commitParams("crash", "key-once", 0)); err != nil {
			fmt.Println("error:", err)
			os.Exit(4)
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	out := bufio.NewWriter(os.Stdout)
	for n := 0; ; n++ {
		fmt.Fprintf(out, "start %d\n", n)
		out.Flush()
		if _, err := e.CommitTurn(ctx, commitParams("crash", fmt.Sprintf("key-%d", n), n)); err != nil {
			fmt.Println("error:", err)
			os.Exit(4)
		}
		fmt.Fprintf(out, "ack %d\n", n)
		out.Flush()
	}
}

func runCommitChild(t *testing.T, dir, mode string, kill time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCommitCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LOSSLESS_COMMIT_CRASH_DIR="+dir, "LOSSLESS_COMMIT_CRASH_MODE="+mode)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1<<16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if kill > 0 {
		time.Sleep(kill)
		_ = cmd.Process.Signal(syscall.SIGKILL)
	}
	var out []string
	for l := range lines {
		out = append(out, l)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v; output %q", err, out)
	}
	return out
}

// TestCommitCrash kills a committing child process with SIGKILL (1) right
// after CommitTurn returned, before the reply reaches the host, and (2) at
// random moments of a loop of commits; the parent reopens the store and
// retries. (1): the retry is "duplicate" and the turn is stored once.
// (2): every acknowledged turn is a duplicate; the turn in flight is
// committed by the retry or a duplicate, never half stored; every message
// is stored exactly once. Rounds of (2): $LOSSLESS_COMMIT_CRASH_ROUNDS
// (default 3).
func TestCommitCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	ctx := context.Background()
	t.Run("after-commit", func(t *testing.T) {
		dir := t.TempDir()
		out := runCommitChild(t, dir, "once", 0)
		for _, l := range out {
			if strings.HasPrefix(l, "error") || strings.HasPrefix(l, "open error") {
				t.Fatalf("child: %s", l)
			}
		}
		e, err := Open(ctx, testConfig(dir))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		p := commitParams("crash", "key-once", 0)
		res, err := e.CommitTurn(ctx, p)
		if err != nil || res.Status != core.CommitDuplicate {
			t.Fatalf("retry after the kill: %+v %v", res, err)
		}
		got := countStored(t, e, "crash")
		if len(got) != len(p.Messages) {
			t.Fatalf("stored %d messages, want %d", len(got), len(p.Messages))
		}
		for _, m := range p.Messages {
			if got[string(m.Raw())] != 1 {
				t.Fatalf("%s stored %d times", m.Raw(), got[string(m.Raw())])
			}
		}
		if err := checkInvariants(e); err != nil {
			t.Fatal(err)
		}
	})
	rounds := 3
	if s := os.Getenv("LOSSLESS_COMMIT_CRASH_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for r := 0; r < rounds; r++ {
		t.Run(fmt.Sprintf("random-%d", r), func(t *testing.T) {
			dir := t.TempDir()
			out := runCommitChild(t, dir, "loop", time.Duration(300+rng.Intn(500))*time.Millisecond)
			acked, started := -1, -1
			for _, l := range out {
				var n int
				if _, err := fmt.Sscanf(l, "ack %d", &n); err == nil {
					acked = n
				} else if _, err := fmt.Sscanf(l, "start %d", &n); err == nil {
					started = n
				} else if strings.Contains(l, "error") {
					t.Fatalf("child: %s", l)
				}
			}
			e, err := Open(ctx, testConfig(dir))
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			committedByRetry := 0
			for n := 0; n <= started; n++ {
				res, err := e.CommitTurn(ctx, commitParams("crash", fmt.Sprintf("key-%d", n), n))
				if err != nil {
					t.Fatal(err)
				}
				if n <= acked && res.Status != core.CommitDuplicate {
					t.Fatalf("acknowledged turn %d: retry says %s", n, res.Status)
				}
				if res.Status == core.CommitCommitted {
					committedByRetry++
				}
			}
			if committedByRetry > 1 {
				t.Fatalf("%d turns committed by the retry, at most the one in flight can be", committedByRetry)
			}
			got := countStored(t, e, "crash")
			if want := 4 * (started + 1); len(got) != want {
				t.Fatalf("acked %d started %d: %d distinct messages stored, want %d", acked, started, len(got), want)
			}
			for raw, c := range got {
				if c != 1 {
					t.Fatalf("%s stored %d times", raw, c)
				}
			}
			if err := checkInvariants(e); err != nil {
				t.Fatal(err)
			}
			t.Logf("acked %d, started %d, committed by retry %d", acked, started, committedByRetry)
		})
	}
}

// A commit whose anchor names another agent than the session key still lands
// in the conversation that ingest and assemble use for that key.
func TestCommitTurnAgentFollowsSessionKey(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	p := commitParams("s", "k", 1)
	p.SessionKey = "agent:alpha:s"
	p.Admission.AgentID = "other"
	if _, err := e.CommitTurn(ctx, p); err != nil {
		t.Fatal(err)
	}
	res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", SessionKey: "agent:alpha:s", TokenBudget: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != len(p.Messages) {
		t.Fatalf("assemble under the session key sees %d messages, committed %d", len(res.Messages), len(p.Messages))
	}
}
