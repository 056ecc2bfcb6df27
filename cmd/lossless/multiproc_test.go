package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// rpcChild is one `lossless serve --stdio` process and its JSON-RPC
// client: requests may be sent from many goroutines at once, each waits
// for its own response.
type rpcChild struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	wmu   sync.Mutex
	next  atomic.Int64

	mu      sync.Mutex
	waiting map[int64]chan rpcResponse
	dead    chan struct{} // closed when stdout ends (the process exited)
	stderr  bytes.Buffer
}

type rpcResponse struct {
	ID     int64           `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// errNoAnswer is a request whose process died before it answered: not
// acknowledged.
var errNoAnswer = errors.New("the process ended before answering")

func startServe(t *testing.T, name string, args ...string) *rpcChild {
	t.Helper()
	c := &rpcChild{name: name, waiting: map[int64]chan rpcResponse{}, dead: make(chan struct{})}
	c.cmd = exec.Command(binary(t), append([]string{"serve", "--stdio"}, args...)...)
	c.cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "LOSSLESS_TOKENIZER=chars4"}
	c.cmd.Stderr = &lockedWriter{w: &c.stderr, mu: &c.mu}
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.dead)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var r rpcResponse
			if json.Unmarshal(sc.Bytes(), &r) != nil || r.ID == 0 {
				continue // a notification or a server request
			}
			c.mu.Lock()
			ch := c.waiting[r.ID]
			delete(c.waiting, r.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- r
			}
		}
	}()
	t.Cleanup(func() {
		c.stdin.Close()
		select {
		case <-c.dead:
		case <-time.After(30 * time.Second):
			c.cmd.Process.Kill()
		}
		c.cmd.Wait()
	})
	return c
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// call sends one request and waits for its answer (errNoAnswer when the
// process dies first).
func (c *rpcChild) call(method string, params any, out any) error {
	id := c.next.Add(1)
	ch := make(chan rpcResponse, 1)
	c.mu.Lock()
	c.waiting[id] = ch
	c.mu.Unlock()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	c.wmu.Lock()
	_, err = c.stdin.Write(append(b, '\n'))
	c.wmu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w: %v", c.name, errNoAnswer, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return fmt.Errorf("%s: %s: error %d: %s", c.name, method, r.Error.Code, r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-c.dead:
		return fmt.Errorf("%s: %s: %w", c.name, method, errNoAnswer)
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("%s: %s: no answer in 2 minutes", c.name, method)
	}
}

func (c *rpcChild) errText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// acked records, per session, the raw bytes of every message an engine
// process acknowledged, and those it was sent but never answered (the
// killed process's).
type ackLog struct {
	mu      sync.Mutex
	acked   map[string][][]byte
	unacked map[string]bool // raw bytes
}

func (l *ackLog) add(session string, ok bool, msgs ...core.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range msgs {
		if ok {
			l.acked[session] = append(l.acked[session], bytes.Clone(m.Raw()))
		} else {
			l.unacked[string(m.Raw())] = true
		}
	}
}

func (l *ackLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, v := range l.acked {
		n += len(v)
	}
	return n
}

// TestServeManyProcessesOnePostgres is issue #17's "many processes": four
// `lossless serve --stdio` processes on one fresh PostgreSQL database
// (they open, and migrate it, at the same moment) write to the same and to
// their own conversations at once (ingest, ingestBatch, afterTurn with its
// background compaction, commitTurn) while explicit compactions run; one
// is killed with SIGKILL in the middle of its writes. Meanwhile `lossless
// sessions`, `grep` and `export` run against the database and see what was
// acknowledged before they started. Afterwards: every acknowledged message
// is stored once, byte for byte; nothing else is stored but what the
// killed process was sent and never answered (each at most once); the
// store's check (dag.Check of every conversation, deep) finds nothing;
// and each surviving process's assemble shows the others' last messages.
func TestServeManyProcessesOnePostgres(t *testing.T) {
	url := pgtest.NewDB(t)
	const procs = 4
	cfg := map[string]any{"freshTailMessages": 6, "leafChunkTokens": 600, "defaultTokenBudget": 2000}
	children := make([]*rpcChild, procs)
	var wg sync.WaitGroup
	for i := range children {
		children[i] = startServe(t, fmt.Sprintf("process %d", i), "--store", url)
	}
	initErrs := make([]error, procs)
	for i, c := range children { // the fresh database is migrated by all at once
		wg.Add(1)
		go func() {
			defer wg.Done()
			initErrs[i] = c.call("initialize", map[string]any{"config": cfg}, nil)
		}()
	}
	wg.Wait()
	for i, err := range initErrs {
		if err != nil {
			t.Fatalf("%v\nstderr:\n%s", err, children[i].errText())
		}
	}

	log := &ackLog{acked: map[string][][]byte{}, unacked: map[string]bool{}}
	shared := []string{"shared-0", "shared-1"}
	const victim = procs - 1
	const rounds = 24
	errs := make(chan error, 64)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	killed := make(chan struct{})
	var cliDone atomic.Bool
	write := func(p int, c *rpcChild, w int, sid string, i int) error {
		ts := int64(1_700_000_000_000 + i*1000)
		tag := fmt.Sprintf("p%d w%d %s #%d", p, w, sid, i)
		text := tag + ": " + strings.Repeat("words written by many processes ", 4+i%5)
		var msgs []core.Message
		var err error
		switch i % 4 {
		case 0:
			msgs = []core.Message{core.UserText(text, ts)}
			var r core.IngestResult
			err = c.call("ingest", core.IngestParams{SessionID: sid, Message: msgs[0]}, &r)
			if err == nil && !r.Ingested {
				return fmt.Errorf("%s: a new message was not ingested", tag)
			}
		case 1:
			msgs = []core.Message{core.UserText(text+" (batch q)", ts), core.AssistantText(text+" (batch a)", ts+1)}
			var r core.IngestBatchResult
			err = c.call("ingestBatch", core.IngestBatchParams{SessionID: sid, Messages: msgs}, &r)
			if err == nil && r.IngestedCount != len(msgs) {
				return fmt.Errorf("%s: %d of %d ingested", tag, r.IngestedCount, len(msgs))
			}
		case 2:
			msgs = []core.Message{core.UserText(text+" (q)", ts), core.AssistantText(text+" (a)", ts+1)}
			err = c.call("afterTurn", core.AfterTurnParams{SessionID: sid, Messages: msgs, TokenBudget: 2000}, nil)
		case 3:
			msgs = []core.Message{core.UserText(text+" (turn q)", ts), core.AssistantText(text+" (turn a)", ts+1)}
			var r core.CommitTurnResult
			err = c.call("commitTurn", core.CommitTurnParams{AdvancementKey: tag, SessionID: sid, Messages: msgs}, &r)
			if err == nil && r.Status != core.CommitCommitted {
				return fmt.Errorf("%s: commit status %q", tag, r.Status)
			}
		}
		if errors.Is(err, errNoAnswer) && p == victim {
			log.add(sid, false, msgs...)
			return errNoAnswer
		}
		if err != nil {
			return err
		}
		log.add(sid, true, msgs...)
		return nil
	}
	for p, c := range children {
		sessions := append(append([]string(nil), shared...), shared...)
		sessions = append(sessions, fmt.Sprintf("own-%d", p))
		for w, sid := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < rounds || p == victim || !cliDone.Load(); i++ {
					err := write(p, c, w, sid, i)
					if errors.Is(err, errNoAnswer) {
						select {
						case <-killed:
							return // the victim died mid-write
						default:
						}
					}
					if err != nil {
						fail(err)
						return
					}
				}
			}()
		}
		if p == victim {
			continue
		}
		wg.Add(1)
		go func() { // explicit compactions while the others write
			defer wg.Done()
			for i := 0; i < rounds/2; i++ {
				sid := shared[(p+i)%len(shared)]
				if err := c.call("compact", core.CompactParams{SessionID: sid, TokenBudget: 1500, Force: i%2 == 0}, nil); err != nil &&
					!strings.Contains(err.Error(), "unknown session") {
					fail(err)
					return
				}
			}
		}()
	}
	// SIGKILL the victim once it has had messages acknowledged, with its
	// writers' requests in flight.
	go func() {
		for log.count() < 40 {
			time.Sleep(5 * time.Millisecond)
		}
		children[victim].cmd.Process.Signal(syscall.SIGKILL)
		close(killed)
	}()
	// The CLI on the live database while the processes write (they go on
	// until it is done): what was acknowledged before a command started is
	// in what it shows.
	<-killed
	liveCLI(t, url, log, fail)
	cliDone.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Each surviving process's last word on each shared session is in
	// every surviving process's next assemble.
	live := children[:victim]
	for p, c := range live {
		for _, sid := range shared {
			m := core.UserText(fmt.Sprintf("last word of process %d on %s", p, sid), 1_800_000_000_000+int64(p))
			if err := c.call("ingest", core.IngestParams{SessionID: sid, Message: m}, nil); err != nil {
				t.Fatal(err)
			}
			log.add(sid, true, m)
		}
	}
	for p, c := range live {
		for _, sid := range shared {
			var res struct {
				Messages []json.RawMessage `json:"messages"`
			}
			if err := c.call("assemble", core.AssembleParams{SessionID: sid, TokenBudget: 100_000}, &res); err != nil {
				t.Fatal(err)
			}
			var all []byte
			for _, m := range res.Messages {
				all = append(all, m...)
			}
			for q := range live {
				if want := fmt.Sprintf("last word of process %d on %s", q, sid); !bytes.Contains(all, []byte(want)) {
					t.Errorf("process %d's assemble of %s misses %q", p, sid, want)
				}
			}
		}
	}
	for _, c := range live {
		c.stdin.Close()
	}
	for _, c := range live {
		<-c.dead
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("%s: %v\nstderr:\n%s", c.name, err, c.errText())
		}
	}

	// The store, read by a fresh engine: every acknowledged message once,
	// byte for byte; nothing but the killed process's unanswered ones
	// besides; the check holds.
	ctx := context.Background()
	e, err := lossless.Open(ctx, config.Config{StoreURL: url, ReadOnly: true, Tokenizer: "chars4"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	total, extra := 0, 0
	for sid, want := range log.acked {
		count := map[string]int{}
		for _, raw := range want {
			count[string(raw)]++
		}
		seen := map[string]bool{}
		err := e.Messages(ctx, config.DefaultAgentID, sid, func(seq uint64, m core.Message) error {
			k := string(m.Raw())
			if seen[k] {
				return fmt.Errorf("message %d of %s is stored twice: %.80s", seq, sid, k)
			}
			seen[k] = true
			switch {
			case count[k] > 0:
				count[k]--
				total++
			case log.unacked[k]:
				extra++ // sent to the killed process, stored before it died
			default:
				return fmt.Errorf("message %d of %s was never sent: %.80s", seq, sid, k)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for k, n := range count {
			if n > 0 {
				t.Errorf("session %s lost an acknowledged message: %.80s", sid, k)
			}
		}
	}
	res, err := e.Check(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		t.Fatalf("check: %+v", res.Problems)
	}
	infos, err := e.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	summaries := int64(0)
	for _, in := range infos {
		summaries += in.Summaries
	}
	if summaries == 0 {
		t.Error("no summary was made: nothing was compacted")
	}
	t.Logf("%d acknowledged messages stored once, %d of the killed process's unanswered ones stored, %d summaries, %d conversations",
		total, extra, summaries, len(infos))
}

// liveCLI runs `lossless sessions`, `grep` and `export` against the
// database while engine processes write to it: each succeeds, and export
// shows every message of its session acknowledged before it started.
func liveCLI(t *testing.T, url string, log *ackLog, fail func(error)) {
	log.mu.Lock()
	var sessions []string
	for sid := range log.acked {
		sessions = append(sessions, sid)
	}
	log.mu.Unlock()
	r := runCLI(t, "", nil, "sessions", "--store", url, "--json")
	if r.code != 0 {
		fail(fmt.Errorf("sessions on the live store: exit %d\n%s", r.code, r.stderr))
		return
	}
	for _, sid := range sessions {
		if !strings.Contains(r.stdout, jsonString(sid)) {
			fail(fmt.Errorf("sessions on the live store misses %s, acknowledged before it started:\n%s", sid, r.stdout))
			return
		}
	}
	r = runCLI(t, "", nil, "grep", "--store", url, "--all", "written by many processes")
	if r.code != 0 || !strings.Contains(r.stdout, "written by many processes") {
		fail(fmt.Errorf("grep on the live store: exit %d\n%s%s", r.code, r.stdout, r.stderr))
		return
	}
	log.mu.Lock()
	before := append([][]byte(nil), log.acked["shared-0"]...)
	log.mu.Unlock()
	r = runCLI(t, "", nil, "export", "--store", url, "--session", "shared-0")
	if r.code != 0 {
		fail(fmt.Errorf("export on the live store: exit %d\n%s", r.code, r.stderr))
		return
	}
	have := map[string]bool{}
	for _, line := range strings.Split(strings.TrimRight(r.stdout, "\n"), "\n") {
		have[line] = true
	}
	for _, m := range before {
		if !have[string(m)] {
			fail(fmt.Errorf("export on the live store misses a message acknowledged before it started: %.80s", m))
			return
		}
	}
	if len(have) < len(before) {
		fail(fmt.Errorf("export on the live store: %d messages, %d acknowledged before it started", len(have), len(before)))
	}
}

// TestStoreURLCommands: `lossless migrate --store URL` applies the schema
// of a fresh database and prints the version before and after (then that
// it is up to date); every command takes the URL (LOSSLESS_STORE too); an
// unreachable server and a bad URL are errors that say so, without the
// password.
func TestStoreURLCommands(t *testing.T) {
	url := pgtest.NewDB(t)
	r := runCLI(t, "", nil, "migrate", "--store", url)
	r.want(t, 0, "schema version 0 -> ")
	runCLI(t, "", nil, "migrate", "--store", url).want(t, 0, "up to date")
	r = runCLI(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"config":{}}}
{"jsonrpc":"2.0","id":2,"method":"ingest","params":{"sessionId":"pg1","message":{"role":"user","content":"stored in postgres","timestamp":5}}}
`, []string{"LOSSLESS_STORE=" + url}, "serve", "--stdio")
	r.want(t, 0, `"ingested":true`)
	runCLI(t, "", nil, "sessions", "--store", url).want(t, 0, "pg1")
	runCLI(t, "", []string{"LOSSLESS_STORE=" + url}, "export", "--session", "pg1").want(t, 0, `{"role":"user","content":"stored in postgres","timestamp":5}`)
	runCLI(t, "", nil, "grep", "--store", url, "postgres").want(t, 0, "stored in postgres")

	r = runCLI(t, "", nil, "sessions", "--store", "postgres://someone:s3cret@127.0.0.1:1/nothing")
	r.want(t, 1, "cannot reach")
	if strings.Contains(r.stdout+r.stderr, "s3cret") {
		t.Fatalf("the password is shown:\n%s", r.stderr)
	}
	r = runCLI(t, "", nil, "migrate", "--store", "postgres://someone:s3cret@[::1/nothing")
	r.want(t, 1, "postgres://")
	if strings.Contains(r.stdout+r.stderr, "s3cret") {
		t.Fatalf("the password is shown:\n%s", r.stderr)
	}
}
