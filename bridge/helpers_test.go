package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// fakeEngine implements every optional interface, keeps messages per session
// as raw bytes, and has hooks driven by the assemble prompt.
type fakeEngine struct {
	mu        sync.Mutex
	sessions  map[string][]core.Message
	seen      map[string]bool
	calls     []string
	rollbacks atomic.Int32
	closed    atomic.Int32
	started   chan string // receives the prompt of a blocking assemble
	release   chan struct{}
	ctxErr    chan error
}

func newFake() *fakeEngine {
	return &fakeEngine{sessions: map[string][]core.Message{}, seen: map[string]bool{},
		started: make(chan string, 16), release: make(chan struct{}), ctxErr: make(chan error, 16)}
}

func (f *fakeEngine) record(name string) {
	f.mu.Lock()
	f.calls = append(f.calls, name)
	f.mu.Unlock()
}

func (f *fakeEngine) Info() core.Info {
	return core.Info{ID: "fake", Name: "Fake engine", OwnsCompaction: true}
}

func (f *fakeEngine) Ingest(ctx context.Context, p core.IngestParams) (core.IngestResult, error) {
	f.record("ingest")
	if p.SessionID == "" {
		return core.IngestResult{}, fmt.Errorf("fake: ingest: %w", core.ErrEmptySessionID)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := p.SessionID + "\x00" + string(p.Message.Raw())
	if f.seen[key] {
		return core.IngestResult{Ingested: false}, nil
	}
	f.seen[key] = true
	f.sessions[p.SessionID] = append(f.sessions[p.SessionID], p.Message)
	return core.IngestResult{Ingested: true}, nil
}

func (f *fakeEngine) IngestBatch(ctx context.Context, p core.IngestBatchParams) (core.IngestBatchResult, error) {
	f.record("ingestBatch")
	n := 0
	for _, m := range p.Messages {
		r, err := f.Ingest(ctx, core.IngestParams{SessionID: p.SessionID, Message: m})
		if err != nil {
			return core.IngestBatchResult{}, err
		}
		if r.Ingested {
			n++
		}
	}
	return core.IngestBatchResult{IngestedCount: n}, nil
}

func (f *fakeEngine) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	f.record("assemble")
	switch p.Prompt {
	case "block":
		f.started <- p.Prompt
		select {
		case <-ctx.Done():
			f.ctxErr <- ctx.Err()
			return core.AssembleResult{}, fmt.Errorf("fake: assemble: %w", ctx.Err())
		case <-f.release:
		}
	case "panic":
		panic("boom")
	case "llm":
		if p.RuntimeContext == nil || p.RuntimeContext.LLMComplete == nil {
			return core.AssembleResult{SystemPromptAddition: "no llm"}, nil
		}
		resp, err := p.RuntimeContext.LLMComplete(ctx, core.LLMRequest{System: "sys", Messages: p.Messages, MaxTokens: 7})
		if err != nil {
			return core.AssembleResult{}, fmt.Errorf("fake: llm: %w", err)
		}
		return core.AssembleResult{SystemPromptAddition: resp.Text}, nil
	}
	if p.Prompt != "" && p.Prompt[0] == '#' {
		// Echo: lets concurrent tests match results to requests.
		return core.AssembleResult{SystemPromptAddition: p.Prompt, EstimatedTokens: p.TokenBudget}, nil
	}
	f.mu.Lock()
	msgs := append([]core.Message(nil), f.sessions[p.SessionID]...)
	f.mu.Unlock()
	return core.AssembleResult{Messages: msgs, EstimatedTokens: len(msgs)}, nil
}

func (f *fakeEngine) Compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	f.record("compact")
	f.mu.Lock()
	_, ok := f.sessions[p.SessionID]
	f.mu.Unlock()
	if !ok {
		return core.CompactResult{}, fmt.Errorf("fake: compact %q: %w", p.SessionID, core.ErrUnknownSession)
	}
	return core.CompactResult{OK: true, Compacted: true, Result: &core.CompactOutcome{
		Summary: "sum", TokensBefore: 10, TokensAfter: 5, SessionID: p.SessionID + "-next"}}, nil
}

func (f *fakeEngine) Bootstrap(ctx context.Context, p core.BootstrapParams) (core.BootstrapResult, error) {
	f.record("bootstrap")
	if rc := p.RuntimeContext; rc != nil && rc.ReadTranscript != nil {
		cur := "c0"
		page, err := rc.ReadTranscript(ctx, core.TranscriptReadRequest{Cursor: &cur, MaxMessages: 2})
		if err != nil {
			return core.BootstrapResult{}, fmt.Errorf("fake: bootstrap: %w", err)
		}
		return core.BootstrapResult{Bootstrapped: page.Kind == core.TranscriptPageKind, ImportedMessages: len(page.Entries),
			Reason: page.CursorString() + " " + string(page.Entries[0].Message.Raw())}, nil
	}
	return core.BootstrapResult{Bootstrapped: true, ImportedMessages: 3, Reason: p.SessionFile}, nil
}

func (f *fakeEngine) ToolDefs() []core.ToolDef {
	return []core.ToolDef{{Name: "echo", Description: "echoes", Parameters: json.RawMessage(`{"type":"object"}`)}}
}

func (f *fakeEngine) CallTool(ctx context.Context, p core.ToolCallParams) (core.ToolCallResult, error) {
	f.record("tools/call")
	if p.Name != "echo" {
		return core.ToolCallResult{}, fmt.Errorf("fake: unknown tool %q", p.Name)
	}
	return core.ToolCallResult{Text: p.SessionKey + "|" + p.SessionID + "|" + p.AgentID + "|" + string(p.Arguments)}, nil
}

func (f *fakeEngine) Maintain(ctx context.Context, p core.MaintainParams) (core.MaintainResult, error) {
	f.record("maintain")
	if p.RuntimeContext == nil || p.RuntimeContext.RewriteTranscriptEntries == nil {
		return core.MaintainResult{Reason: "no rewrite"}, nil
	}
	res, err := p.RuntimeContext.RewriteTranscriptEntries(ctx, core.RewriteRequest{
		Replacements: []core.TranscriptRewrite{{EntryID: "e1", Message: core.UserText("short", 1)}}})
	if err != nil {
		return core.MaintainResult{}, fmt.Errorf("fake: maintain: %w", err)
	}
	return core.MaintainResult{Changed: res.Changed, BytesFreed: res.BytesFreed, RewrittenEntries: res.RewrittenEntries}, nil
}

func (f *fakeEngine) AfterTurn(ctx context.Context, p core.AfterTurnParams) error {
	f.record("afterTurn")
	for _, m := range p.NewMessages() {
		if _, err := f.Ingest(ctx, core.IngestParams{SessionID: p.SessionID, Message: m}); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeEngine) CommitTurn(ctx context.Context, p core.CommitTurnParams) (core.CommitTurnResult, error) {
	f.record("commitTurn")
	return core.CommitTurnResult{Status: core.CommitCommitted}, nil
}

func (f *fakeEngine) PrepareSubagentSpawn(ctx context.Context, p core.SubagentSpawnParams) (*core.SubagentPreparation, error) {
	f.record("prepareSubagentSpawn")
	if p.ContextMode == core.ContextModeIsolated {
		return nil, nil
	}
	return &core.SubagentPreparation{Rollback: func(context.Context) error {
		f.rollbacks.Add(1)
		return nil
	}}, nil
}

func (f *fakeEngine) OnSubagentEnded(ctx context.Context, p core.SubagentEndedParams) error {
	f.record("onSubagentEnded:" + p.Reason)
	return nil
}

func (f *fakeEngine) Close() error {
	f.closed.Add(1)
	return nil
}

// minimalEngine implements only the required methods.
type minimalEngine struct{}

func (minimalEngine) Info() core.Info { return core.Info{ID: "min", Name: "Minimal"} }
func (minimalEngine) Ingest(context.Context, core.IngestParams) (core.IngestResult, error) {
	return core.IngestResult{}, nil
}
func (minimalEngine) Assemble(_ context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	return core.AssembleResult{}, nil
}
func (minimalEngine) Compact(context.Context, core.CompactParams) (core.CompactResult, error) {
	return core.CompactResult{OK: true}, nil
}

// client drives a Serve over pipes.
type client struct {
	t       *testing.T
	in      *io.PipeWriter
	wmu     sync.Mutex
	mu      sync.Mutex
	waiters map[string]chan rawMsg
	host    chan rawMsg // server → client requests and notifications
	stray   chan rawMsg // responses with a null or unknown id
	done    chan error
	nextID  atomic.Int64
	cancel  context.CancelFunc
}

// rawMsg is a decoded line from the server plus its exact bytes.
type rawMsg struct {
	Message
	Line string
}

func startServer(t *testing.T, factory core.Factory, opts Options) *client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	c := &client{t: t, in: inW, waiters: map[string]chan rawMsg{}, host: make(chan rawMsg, 64),
		stray: make(chan rawMsg, 64), done: make(chan error, 1), cancel: cancel}
	go func() {
		err := Serve(ctx, inR, outW, factory, opts)
		outW.Close()
		c.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			line := sc.Text()
			m, derr := DecodeMessage([]byte(line))
			if derr != nil {
				t.Errorf("server wrote an undecodable line %q: %v", line, derr)
				continue
			}
			rm := rawMsg{m, line}
			if m.Method != "" {
				c.host <- rm
				continue
			}
			c.mu.Lock()
			ch := c.waiters[idKey(m.ID)]
			delete(c.waiters, idKey(m.ID))
			c.mu.Unlock()
			if ch != nil {
				ch <- rm
			} else {
				c.stray <- rm
			}
		}
	}()
	t.Cleanup(func() {
		c.in.Close()
		cancel()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return c
}

func (c *client) send(line string) {
	c.t.Helper()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// start sends a request and returns the channel its response arrives on.
func (c *client) start(method string, params any, callbacks ...string) (string, chan rawMsg) {
	c.t.Helper()
	id := strconv.FormatInt(c.nextID.Add(1), 10)
	ch := make(chan rawMsg, 1)
	c.mu.Lock()
	c.waiters[id] = ch
	c.mu.Unlock()
	env := map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method}
	if params != nil {
		env["params"] = params
	}
	if len(callbacks) > 0 {
		env["hostCallbacks"] = callbacks
	}
	b, err := encode(env) // no HTML escaping, like the JavaScript side
	if err != nil {
		c.t.Fatal(err)
	}
	c.send(string(b))
	return id, ch
}

func (c *client) wait(ch chan rawMsg) rawMsg {
	c.t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatal("timed out waiting for a response")
		return rawMsg{}
	}
}

// call sends a request and waits for its response.
func (c *client) call(method string, params any, callbacks ...string) rawMsg {
	c.t.Helper()
	_, ch := c.start(method, params, callbacks...)
	return c.wait(ch)
}

// ok calls and decodes the result into out, failing on an error response.
func (c *client) ok(method string, params any, out any) {
	c.t.Helper()
	m := c.call(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: error %+v", method, m.Error)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			c.t.Fatalf("%s: decode %s: %v", method, m.Result, err)
		}
	}
}

// fails calls and checks the error code.
func (c *client) fails(method string, params any, code int) *Error {
	c.t.Helper()
	m := c.call(method, params)
	if m.Error == nil {
		c.t.Fatalf("%s: want error %d, got result %s", method, code, m.Result)
	}
	if m.Error.Code != code {
		c.t.Fatalf("%s: want code %d, got %+v", method, code, m.Error)
	}
	return m.Error
}

func (c *client) nextHost() rawMsg {
	c.t.Helper()
	select {
	case m := <-c.host:
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatal("timed out waiting for a host callback")
		return rawMsg{}
	}
}

func (c *client) nextStray() rawMsg {
	c.t.Helper()
	select {
	case m := <-c.stray:
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatal("timed out waiting for an error response")
		return rawMsg{}
	}
}

func (c *client) initialize() InitializeResult {
	c.t.Helper()
	var r InitializeResult
	c.ok(MethodInitialize, map[string]any{"config": map[string]any{"store": "/tmp/x"}, "protocolVersion": 1}, &r)
	return r
}
