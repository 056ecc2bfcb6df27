package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

func TestEveryMethod(t *testing.T) {
	f := newFake()
	var gotOpts core.FactoryOptions
	factory := func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
		gotOpts = o
		return f, nil
	}
	c := startServer(t, factory, Options{ServerName: "test", ServerVersion: "9", AfterTurnNewMessagesOnly: true})

	init := c.initialize()
	if init.ProtocolVersion != ProtocolVersion || init.Info.ID != "fake" || init.Server.Name != "test" || !init.AfterTurnNewMessagesOnly {
		t.Fatalf("initialize = %+v", init)
	}
	if string(gotOpts.Config) != `{"store":"/tmp/x"}` {
		t.Fatalf("factory config = %s", gotOpts.Config)
	}
	want := []string{"afterTurn", "assemble", "bootstrap", "commitTurn", "compact", "dispose", "info",
		"ingest", "ingestBatch", "maintain", "onSubagentEnded", "prepareSubagentSpawn", "tools/call", "tools/list"}
	if !reflect.DeepEqual(init.Methods, want) {
		t.Fatalf("methods = %v, want %v", init.Methods, want)
	}

	var info core.Info
	c.ok(MethodInfo, nil, &info)
	if info.Name != "Fake engine" || !info.OwnsCompaction {
		t.Fatalf("info = %+v", info)
	}

	var boot core.BootstrapResult
	c.ok(MethodBootstrap, map[string]any{"sessionId": "s1", "sessionFile": "/f.jsonl"}, &boot)
	if !boot.Bootstrapped || boot.ImportedMessages != 3 || boot.Reason != "/f.jsonl" {
		t.Fatalf("bootstrap = %+v", boot)
	}

	var mres core.MaintainResult
	c.ok(MethodMaintain, map[string]any{"sessionId": "s1", "sessionFile": "/f.jsonl", "reason": "bootstrap"}, &mres)
	if mres.Reason != "no rewrite" {
		t.Fatalf("maintain without callbacks = %+v", mres)
	}

	var ing core.IngestResult
	c.ok(MethodIngest, json.RawMessage(`{"sessionId":"s1","message":{"role":"user","content":"hi","timestamp":1}}`), &ing)
	if !ing.Ingested {
		t.Fatal("first ingest not ingested")
	}
	c.ok(MethodIngest, json.RawMessage(`{"sessionId":"s1","message":{"role":"user","content":"hi","timestamp":1}}`), &ing)
	if ing.Ingested {
		t.Fatal("duplicate ingest reported ingested")
	}

	var batch core.IngestBatchResult
	c.ok(MethodIngestBatch, json.RawMessage(`{"sessionId":"s1","messages":[{"role":"assistant","content":[{"type":"text","text":"a"}]},{"role":"user","content":"b"}]}`), &batch)
	if batch.IngestedCount != 2 {
		t.Fatalf("ingestBatch = %+v", batch)
	}

	at := c.call(MethodAfterTurn, json.RawMessage(`{"sessionId":"s1","sessionFile":"/f","prePromptMessageCount":1,"messages":[{"role":"user","content":"old"},{"role":"user","content":"new"}]}`))
	if at.Error != nil || string(at.Result) != "null" {
		t.Fatalf("afterTurn = %s %+v", at.Result, at.Error)
	}

	var asm core.AssembleResult
	c.ok(MethodAssemble, map[string]any{"sessionId": "s1", "messages": []any{}, "tokenBudget": 1000}, &asm)
	if len(asm.Messages) != 4 || asm.Messages[3].Text() != "new" || asm.EstimatedTokens != 4 {
		t.Fatalf("assemble = %d messages %+v", len(asm.Messages), asm)
	}

	var cres core.CompactResult
	c.ok(MethodCompact, map[string]any{"sessionId": "s1", "sessionKey": "k", "force": true}, &cres)
	if !cres.Compacted || cres.Result == nil || cres.Result.SessionID != "s1-next" || cres.Result.TokensAfter != 5 {
		t.Fatalf("compact = %+v", cres)
	}

	var commit core.CommitTurnResult
	c.ok(MethodCommitTurn, map[string]any{"advancementKey": "a", "sessionId": "s1", "messages": []any{},
		"admission": map[string]any{"logicalTurnId": "t", "role": "user"}, "terminal": map[string]any{}}, &commit)
	if commit.Status != core.CommitCommitted {
		t.Fatalf("commitTurn = %+v", commit)
	}

	// prepareSubagentSpawn: isolated → null; fork → a rollback handle.
	iso := c.call(MethodPrepareSubagentSpawn, map[string]any{"parentSessionKey": "p", "childSessionKey": "c", "contextMode": "isolated"})
	if iso.Error != nil || string(iso.Result) != "null" {
		t.Fatalf("isolated spawn = %s %+v", iso.Result, iso.Error)
	}
	var spawn SpawnResult
	c.ok(MethodPrepareSubagentSpawn, map[string]any{"parentSessionKey": "p", "childSessionKey": "c", "contextMode": "fork"}, &spawn)
	if spawn.RollbackID == "" {
		t.Fatal("no rollback id")
	}
	c.ok(MethodRollbackSubagentSpawn, RollbackParams(spawn), nil)
	c.ok(MethodRollbackSubagentSpawn, RollbackParams(spawn), nil) // idempotent
	if n := f.rollbacks.Load(); n != 1 {
		t.Fatalf("rollback ran %d times, want 1", n)
	}

	c.ok(MethodOnSubagentEnded, map[string]any{"childSessionKey": "c", "reason": "completed"}, nil)
	f.mu.Lock()
	last := f.calls[len(f.calls)-1]
	f.mu.Unlock()
	if last != "onSubagentEnded:completed" {
		t.Fatalf("last call %q", last)
	}

	c.ok(MethodDispose, nil, nil)
	if f.closed.Load() != 1 {
		t.Fatal("dispose did not close the engine")
	}
	c.fails(MethodInfo, nil, CodeServerNotInitialized)
	// A new initialize after dispose works again.
	c.initialize()
}

func TestEngineErrors(t *testing.T) {
	c := startServer(t, Static(newFake()), Options{})
	c.initialize()
	e := c.fails(MethodCompact, map[string]any{"sessionId": "nope", "sessionKey": "k"}, CodeEngineError)
	if !strings.Contains(e.Message, "unknown session") || string(e.Data) != `{"kind":"unknown_session"}` {
		t.Fatalf("compact error = %+v data %s", e, e.Data)
	}
	e = c.fails(MethodIngest, json.RawMessage(`{"message":{"role":"user","content":"x"}}`), CodeEngineError)
	if string(e.Data) != `{"kind":"empty_session_id"}` {
		t.Fatalf("ingest error data = %s", e.Data)
	}
	// A panic is an internal error, and the server keeps going.
	c.fails(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "panic"}, CodeInternalError)
	c.ok(MethodInfo, nil, nil)
}

func TestBeforeInitialize(t *testing.T) {
	c := startServer(t, Static(newFake()), Options{})
	for _, m := range []string{MethodInfo, MethodIngest, MethodAssemble, MethodCompact, MethodBootstrap} {
		c.fails(m, map[string]any{"sessionId": "s", "message": map[string]any{"role": "user"}}, CodeServerNotInitialized)
	}
	c.initialize()
	c.ok(MethodInfo, nil, nil)
	c.fails(MethodInitialize, nil, CodeInvalidRequest) // twice
}

func TestFactoryErrors(t *testing.T) {
	bad := func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
		return nil, errors.New("store locked")
	}
	c := startServer(t, bad, Options{})
	e := c.fails(MethodInitialize, nil, CodeEngineError)
	if !strings.Contains(e.Message, "store locked") {
		t.Fatalf("factory error = %+v", e)
	}
	noName := func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) { return badInfo{}, nil }
	c2 := startServer(t, noName, Options{})
	e = c2.fails(MethodInitialize, nil, CodeEngineError)
	if string(e.Data) != `{"kind":"invalid_engine"}` {
		t.Fatalf("invalid info error = %+v %s", e, e.Data)
	}
}

type badInfo struct{ minimalEngine }

func (badInfo) Info() core.Info { return core.Info{ID: "x"} }

func TestMalformedInput(t *testing.T) {
	c := startServer(t, Static(newFake()), Options{})
	cases := []struct {
		line   string
		code   int
		withID string
	}{
		{`this is not json`, CodeParseError, "null"},
		{`{"jsonrpc":"2.0","id":1,"method":"info"`, CodeParseError, "null"},
		{`[{"jsonrpc":"2.0","id":1,"method":"info"}]`, CodeInvalidRequest, "null"},
		{`42`, CodeInvalidRequest, "null"},
		{`{"jsonrpc":"1.0","id":77,"method":"info"}`, CodeInvalidRequest, "77"},
		{`{"id":78,"method":"info"}`, CodeInvalidRequest, "78"},
		{`{"jsonrpc":"2.0","id":79,"method":5}`, CodeInvalidRequest, "79"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"info"}`, CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":80,"method":"info","params":"x"}`, CodeInvalidRequest, "80"},
		{`{"jsonrpc":"2.0"}`, CodeInvalidRequest, "null"},
		{"\xff\xfe{}", CodeParseError, "null"},
		// Nested deeper than the decoder goes: answered under its id.
		{`{"jsonrpc":"2.0","id":81,"method":"assemble","params":{"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}`, CodeInvalidRequest, "81"},
	}
	for _, tc := range cases {
		c.send(tc.line)
		m := c.nextStray()
		if m.Error == nil || m.Error.Code != tc.code || idKey(m.ID) != tc.withID {
			t.Errorf("%q: got %s, want code %d id %s", tc.line, m.Line, tc.code, tc.withID)
		}
	}
	// Blank lines are ignored, and the server still works afterwards.
	c.send("")
	c.send("   ")
	c.initialize()
	c.ok(MethodInfo, nil, nil)
}

func TestUnknownAndMissingMethods(t *testing.T) {
	c := startServer(t, Static(minimalEngine{}), Options{})
	init := c.initialize()
	if want := []string{"assemble", "compact", "info", "ingest"}; !reflect.DeepEqual(init.Methods, want) {
		t.Fatalf("methods = %v, want %v", init.Methods, want)
	}
	c.fails("frobnicate", nil, CodeMethodNotFound)
	for _, m := range []string{MethodBootstrap, MethodMaintain, MethodIngestBatch, MethodAfterTurn,
		MethodCommitTurn, MethodPrepareSubagentSpawn, MethodOnSubagentEnded} {
		c.fails(m, map[string]any{}, CodeMethodNotFound)
	}
	// dispose of an engine without Close is fine.
	c.ok(MethodDispose, nil, nil)
	// assemble never returns "messages": null.
	c.initialize()
	m := c.call(MethodAssemble, map[string]any{"sessionId": "s"})
	if !strings.Contains(string(m.Result), `"messages":[]`) {
		t.Fatalf("assemble result %s", m.Result)
	}
}

func TestInvalidParams(t *testing.T) {
	c := startServer(t, Static(newFake()), Options{})
	c.initialize()
	for _, tc := range []struct {
		method string
		params string
	}{
		{MethodIngest, `{"sessionId":5,"message":{"role":"user"}}`},
		{MethodIngest, `{"sessionId":"s"}`},                                 // no message
		{MethodIngest, `{"sessionId":"s","message":{"content":"no role"}}`}, // invalid message
		{MethodIngest, `{"sessionId":"s","message":"text"}`},
		{MethodAssemble, `[1,2]`},
		{MethodAssemble, `{"sessionId":"s","tokenBudget":"lots"}`},
		{MethodIngestBatch, `{"sessionId":"s","messages":[{"role":""}]}`},
		{MethodCompact, `{"sessionId":"s","force":"yes"}`},
		{MethodRollbackSubagentSpawn, `{"rollbackId":1}`},
	} {
		c.fails(tc.method, json.RawMessage(tc.params), CodeInvalidParams)
	}
}

func TestConcurrentRequestsOutOfOrder(t *testing.T) {
	f := newFake()
	c := startServer(t, Static(f), Options{})
	c.initialize()
	// A blocked request first, then many quick ones: the quick ones must all
	// be answered while the first is still running.
	blockedID, blocked := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "block"})
	<-f.started
	const n = 40
	type pending struct {
		prompt string
		ch     chan rawMsg
	}
	var ps []pending
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("#%d", i)
		_, ch := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": p, "tokenBudget": i})
		ps = append(ps, pending{p, ch})
	}
	for i, p := range ps {
		m := c.wait(p.ch)
		var r core.AssembleResult
		if err := json.Unmarshal(m.Result, &r); err != nil {
			t.Fatal(err)
		}
		if r.SystemPromptAddition != p.prompt || r.EstimatedTokens != i {
			t.Fatalf("response for %s carried %+v", p.prompt, r)
		}
	}
	select {
	case m := <-blocked:
		t.Fatalf("blocked request %s answered early: %s", blockedID, m.Line)
	default:
	}
	close(f.release)
	if m := c.wait(blocked); m.Error != nil {
		t.Fatalf("blocked request: %+v", m.Error)
	}
}

func TestConcurrentClientsRace(t *testing.T) {
	c := startServer(t, Static(newFake()), Options{})
	c.initialize()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				sid := fmt.Sprintf("s%d", g)
				_, ch := c.start(MethodIngest, map[string]any{"sessionId": sid,
					"message": map[string]any{"role": "user", "content": fmt.Sprint(i)}})
				if m := c.wait(ch); m.Error != nil {
					t.Errorf("ingest: %+v", m.Error)
				}
			}
		}(g)
	}
	wg.Wait()
	var r core.AssembleResult
	c.ok(MethodAssemble, map[string]any{"sessionId": "s3"}, &r)
	if len(r.Messages) != 20 {
		t.Fatalf("s3 has %d messages, want 20", len(r.Messages))
	}
}

func TestCancelRequest(t *testing.T) {
	f := newFake()
	c := startServer(t, Static(f), Options{})
	c.initialize()
	id, ch := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "block"})
	<-f.started
	c.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":` + id + `}}`)
	m := c.wait(ch)
	if m.Error == nil || m.Error.Code != CodeRequestCancelled {
		t.Fatalf("cancelled request answered %s", m.Line)
	}
	if err := <-f.ctxErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("engine saw %v", err)
	}
	// Cancelling an unknown or finished id is harmless; as a request it is
	// answered with null.
	r := c.call(MethodCancelRequest, map[string]any{"id": 12345})
	if r.Error != nil || string(r.Result) != "null" {
		t.Fatalf("cancel as request: %s", r.Line)
	}
	c.fails(MethodCancelRequest, map[string]any{}, CodeInvalidParams)
	c.ok(MethodInfo, nil, nil)
}

func TestHostCallbacks(t *testing.T) {
	c := startServer(t, Static(newFake()), Options{})
	c.initialize()

	// Without hostCallbacks the engine sees no functions.
	var r core.AssembleResult
	c.ok(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "llm"}, &r)
	if r.SystemPromptAddition != "no llm" {
		t.Fatalf("without callbacks: %+v", r)
	}

	// llm.complete: the server asks the client, tagged with the request id.
	id, ch := c.start(MethodAssemble, json.RawMessage(`{"sessionId":"s","prompt":"llm","messages":[{"role":"user","content":"<q>&é"}],"runtimeContext":{"cwd":"/w"}}`), CallbackLLMComplete)
	h := c.nextHost()
	if h.Method != MethodHostLLMComplete || !h.IsRequest() {
		t.Fatalf("host call %s", h.Line)
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Request   struct {
			System    string            `json:"system"`
			Messages  []json.RawMessage `json:"messages"`
			MaxTokens int               `json:"maxTokens"`
		} `json:"request"`
	}
	if err := json.Unmarshal(h.Params, &p); err != nil {
		t.Fatal(err)
	}
	if idKey(p.RequestID) != id || p.Request.System != "sys" || p.Request.MaxTokens != 7 ||
		len(p.Request.Messages) != 1 || string(p.Request.Messages[0]) != `{"role":"user","content":"<q>&é"}` {
		t.Fatalf("llm params %s", h.Params)
	}
	c.send(`{"jsonrpc":"2.0","id":` + string(h.ID) + `,"result":{"text":"from host","provider":"p","model":"m"}}`)
	m := c.wait(ch)
	if err := json.Unmarshal(m.Result, &r); err != nil || r.SystemPromptAddition != "from host" {
		t.Fatalf("assemble with llm: %s", m.Line)
	}

	// rewriteTranscriptEntries through maintain.
	_, ch = c.start(MethodMaintain, map[string]any{"sessionId": "s", "sessionFile": "/f"}, CallbackRewriteTranscriptEntries, CallbackLLMComplete)
	h = c.nextHost()
	if h.Method != MethodHostRewriteTranscriptEntries || !strings.Contains(string(h.Params), `"entryId":"e1"`) {
		t.Fatalf("rewrite call %s", h.Line)
	}
	c.send(`{"jsonrpc":"2.0","id":` + string(h.ID) + `,"result":{"changed":true,"bytesFreed":120,"rewrittenEntries":1}}`)
	var mres core.MaintainResult
	if err := json.Unmarshal(c.wait(ch).Result, &mres); err != nil || !mres.Changed || mres.BytesFreed != 120 || mres.RewrittenEntries != 1 {
		t.Fatalf("maintain = %+v %v", mres, err)
	}

	// A host error surfaces as an engine error carrying its text.
	_, ch = c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "llm"}, CallbackLLMComplete)
	h = c.nextHost()
	c.send(`{"jsonrpc":"2.0","id":` + string(h.ID) + `,"error":{"code":-32000,"message":"quota exceeded"}}`)
	m = c.wait(ch)
	if m.Error == nil || m.Error.Code != CodeEngineError || !strings.Contains(m.Error.Message, "quota exceeded") {
		t.Fatalf("host error surfaced as %s", m.Line)
	}

	// Cancelling a request that waits on the host cancels the host call too.
	id, ch = c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "llm"}, CallbackLLMComplete)
	h = c.nextHost()
	c.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":` + id + `}}`)
	m = c.wait(ch)
	if m.Error == nil || m.Error.Code != CodeRequestCancelled {
		t.Fatalf("cancelled during callback: %s", m.Line)
	}
	n := c.nextHost()
	if n.Method != MethodCancelRequest || !n.IsNotification() || !strings.Contains(string(n.Params), string(h.ID)) {
		t.Fatalf("server did not cancel its host call: %s", n.Line)
	}
	// A late answer to the cancelled callback is ignored.
	c.send(`{"jsonrpc":"2.0","id":` + string(h.ID) + `,"result":{"text":"late"}}`)
	c.ok(MethodInfo, nil, nil)
}

func TestMessagesPassByteForByte(t *testing.T) {
	c := startServer(t, Static(newFake()), Options{})
	c.initialize()
	raws := []string{
		`{"role":"user","content":"<b>a & b</b> \u00e9 é \"q\" \\ / 🙂","timestamp":1.5e3,"x-unknown":{"deep":[1,2.50,null,true]}}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","thinkingSignature":"sig=="},{"type":"toolCall","id":"t1","name":"bash","arguments":{"cmd":"ls <dir> && echo"}}],"usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"total":0.0001}},"stopReason":"toolUse","timestamp":2,"api":"x","provider":"y","model":"z"}`,
		`{"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":"\u003cok\u003e"}],"isError":false,"details":{"exit":0},"timestamp":3}`,
	}
	for _, raw := range raws {
		c.ok(MethodIngest, json.RawMessage(`{"sessionId":"bytes","message":`+raw+`}`), nil)
	}
	m := c.call(MethodAssemble, map[string]any{"sessionId": "bytes"})
	for _, raw := range raws {
		if !strings.Contains(m.Line, raw) {
			t.Errorf("response line does not contain the message bytes\nwant %s\nline %s", raw, m.Line)
		}
	}
}

func TestEOFDrainsInFlight(t *testing.T) {
	f := newFake()
	inR, inW := io.Pipe()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), inR, &out, Static(f), Options{}) }()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize"}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"assemble","params":{"sessionId":"s","prompt":"block"}}`+"\n")
	<-f.started
	inW.Close()
	// Serve waits for the request in flight.
	select {
	case err := <-done:
		t.Fatalf("Serve returned %v with a request in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(f.release)
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if !strings.Contains(out.String(), `"id":2,"result":`) {
		t.Fatalf("in-flight response lost:\n%s", out.String())
	}
	if f.closed.Load() != 1 {
		t.Fatal("engine not closed at exit")
	}
}

func TestEOFFailsPendingCallbacks(t *testing.T) {
	inR, inW := io.Pipe()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), inR, &out, Static(newFake()), Options{KeepEngineOpen: true})
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize"}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"assemble","params":{"sessionId":"s","prompt":"llm"},"hostCallbacks":["llm.complete"]}`+"\n")
	for !strings.Contains(out.String(), MethodHostLLMComplete) {
		time.Sleep(time.Millisecond)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if !strings.Contains(out.String(), "connection closed") {
		t.Fatalf("pending callback did not fail with connection closed:\n%s", out.String())
	}
}

func TestContextCancelStopsServe(t *testing.T) {
	f := newFake()
	inR, inW := io.Pipe()
	defer inW.Close()
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, inR, &out, Static(f), Options{}) }()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize"}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"assemble","params":{"sessionId":"s","prompt":"block"}}`+"\n")
	<-f.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve = %v, want context.Canceled", err)
	}
	if err := <-f.ctxErr; err == nil {
		t.Fatal("in-flight request not cancelled")
	}
}

func TestLongLine(t *testing.T) {
	c := startServer(t, Static(newFake()), Options{MaxLineBytes: 200})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"info","params":{"pad":"` + strings.Repeat("x", 100000) + `"}}`)
	m := c.nextStray()
	if m.Error == nil || m.Error.Code != CodeInvalidRequest || string(m.ID) != "1" || !strings.Contains(m.Error.Message, "longer than 200") {
		t.Fatalf("long line: %s", m.Line)
	}
	// Without an id to answer: a parse error with a null id.
	c.send(`{"jsonrpc":"2.0","params":{"pad":"` + strings.Repeat("x", 100000) + `"}}`)
	m = c.nextStray()
	if m.Error == nil || m.Error.Code != CodeParseError || string(m.ID) != "null" && m.ID != nil {
		t.Fatalf("long line without id: %s", m.Line)
	}
	c.initialize()
	c.ok(MethodInfo, nil, nil)
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("pipe gone") }

func TestWriteErrorStopsServe(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), inR, failWriter{}, Static(newFake()), Options{}) }()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize"}`+"\n")
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "pipe gone") {
			t.Fatalf("Serve = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not stop on a write error")
	}
}

func TestNotificationsGetNoResponse(t *testing.T) {
	f := newFake()
	var out syncBuffer
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n" +
		`{"jsonrpc":"2.0","method":"ingest","params":{"sessionId":"s","message":{"role":"user","content":"n"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"nosuch"}` + "\n")
	if err := Serve(context.Background(), in, &out, Static(f), Options{KeepEngineOpen: true}); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 1 {
		t.Fatalf("want only the initialize response, got:\n%s", out.String())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sessions["s"]) != 1 {
		t.Fatal("notification ingest did not run")
	}
}

func TestDecodeMessageKinds(t *testing.T) {
	for _, tc := range []struct {
		line                  string
		req, notif, resp, err bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"a"}`, true, false, false, false},
		{`{"jsonrpc":"2.0","id":"x","method":"a","params":{}}`, true, false, false, false},
		{`{"jsonrpc":"2.0","method":"a","params":[1]}`, false, true, false, false},
		{`{"jsonrpc":"2.0","id":1,"result":null}`, false, false, true, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`, false, false, true, false},
		{`{"jsonrpc":"2.0","id":1}`, false, false, false, true},
		{`{"jsonrpc":"2.0","id":1,"error":"bad"}`, false, false, false, true},
		{`{"jsonrpc":"2.0","id":1,"method":"a","hostCallbacks":"x"}`, false, false, false, true},
	} {
		m, err := DecodeMessage([]byte(tc.line))
		if (err != nil) != tc.err || err == nil && (m.IsRequest() != tc.req || m.IsNotification() != tc.notif || m.IsResponse() != tc.resp) {
			t.Errorf("%s: req=%v notif=%v resp=%v err=%v", tc.line, m.IsRequest(), m.IsNotification(), m.IsResponse(), err)
		}
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"config":{}}}`,
		`{"jsonrpc":"2.0","id":"h1","result":{"text":"x"}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"m","data":{"kind":"x"}}}`,
		`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}`,
		`{"jsonrpc":"2.0","id":4,"method":"assemble","params":{"sessionId":"s","messages":[{"role":"user","content":"é"}]},"hostCallbacks":["llm.complete"]}`,
		`[]`, `null`, `{`, `{"id":null}`, "\xff", `{"jsonrpc":"2.0","id":-1.5e3,"method":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := DecodeMessage(line)
		if err != nil {
			if err.Code != CodeParseError && err.Code != CodeInvalidRequest {
				t.Fatalf("unexpected code %d", err.Code)
			}
			if m.ID != nil && !validID(m.ID) {
				t.Fatalf("error carries invalid id %q", m.ID)
			}
			return
		}
		kinds := 0
		for _, k := range []bool{m.IsRequest(), m.IsNotification(), m.IsResponse()} {
			if k {
				kinds++
			}
		}
		if kinds != 1 {
			t.Fatalf("message is %d kinds", kinds)
		}
		if m.JSONRPC != "2.0" {
			t.Fatalf("accepted jsonrpc %q", m.JSONRPC)
		}
		if m.hasMethod && m.Method == "" {
			t.Fatal("empty method accepted")
		}
		if m.IsResponse() && m.Result == nil && m.Error == nil {
			t.Fatal("response without result or error")
		}
		if m.ID != nil && !json.Valid(m.ID) {
			t.Fatalf("invalid id %q", m.ID)
		}
		// The server must be able to answer with this id.
		if m.ID != nil {
			var b bytes.Buffer
			b.WriteString(`{"id":`)
			b.Write(m.ID)
			b.WriteString(`}`)
			if !json.Valid(b.Bytes()) {
				t.Fatalf("id %q cannot be echoed", m.ID)
			}
		}
	})
}

// FuzzServe feeds arbitrary input lines to a server with an engine and
// checks that every output line is a valid JSON-RPC message.
func FuzzServe(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ingest","params":{"sessionId":"s","message":{"role":"user","content":"x"}}}`))
	f.Add([]byte("garbage\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"info\"}\n[]\n"))
	f.Fuzz(func(t *testing.T, input []byte) {
		var out syncBuffer
		init := `{"jsonrpc":"2.0","id":0,"method":"initialize"}` + "\n"
		// No hostCallbacks answered: strip them so no request waits forever.
		in := bytes.ReplaceAll(input, []byte("hostCallbacks"), []byte("x"))
		in = bytes.ReplaceAll(in, []byte("block"), []byte("blocc")) // the fake's blocking prompt
		if err := Serve(context.Background(), io.MultiReader(strings.NewReader(init), bytes.NewReader(in)), &out, Static(newFake()), Options{}); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
			if line == "" {
				continue
			}
			if _, err := DecodeMessage([]byte(line)); err != nil {
				t.Fatalf("server wrote invalid line %q: %v", line, err)
			}
		}
	})
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A client may reuse an id as soon as it has the response (found by the
// benchmark: the id used to be freed after the write).
func TestIDReuseAfterResponse(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go Serve(context.Background(), inR, outW, Static(newFake()), Options{})
	defer inW.Close()
	rd := bufio.NewReader(outR)
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize"}`+"\n")
	rd.ReadBytes('\n')
	for i := 0; i < 300; i++ {
		io.WriteString(inW, `{"jsonrpc":"2.0","id":9,"method":"info"}`+"\n")
		line, err := rd.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(line, []byte(`"error"`)) {
			t.Fatalf("request %d with a reused id: %s", i, line)
		}
	}
}

// commitTurnRecorder records the params of CommitTurn.
type commitTurnRecorder struct {
	*fakeEngine
	got chan core.CommitTurnParams
}

func (c commitTurnRecorder) CommitTurn(ctx context.Context, p core.CommitTurnParams) (core.CommitTurnResult, error) {
	c.got <- p
	return core.CommitTurnResult{Status: core.CommitCommitted}, nil
}

// OpenClaw sends anchors' generation as a string token; numbers are accepted too.
func TestCommitTurnStringGeneration(t *testing.T) {
	rec := commitTurnRecorder{newFake(), make(chan core.CommitTurnParams, 4)}
	c := startServer(t, Static(rec), Options{})
	c.initialize()
	msg := `{"role":"user","content":"<b>é</b> & more","timestamp":1,"x":{"y":[1,2.50]}}`
	anchor := func(gen string) string {
		return `{"agentId":"main","sessionId":"s","sessionKey":"agent:main:s","storePath":"/p","generation":` + gen +
			`,"entryId":"e1","rawSeq":4,"effectiveParentId":null,"activeMessagePosition":2`
	}
	for _, tc := range []struct {
		gen  string
		want core.GenerationToken
	}{
		{`"0f3c9d2e7a4b4c1d9e8f7a6b5c4d3e2f"`, "0f3c9d2e7a4b4c1d9e8f7a6b5c4d3e2f"},
		{`"42"`, "42"},
		{`7`, "7"},
	} {
		params := `{"advancementKey":"k","sessionId":"s","admission":` + anchor(tc.gen) + `,"logicalTurnId":"t1","role":"user"},"terminal":` + anchor(tc.gen) + `},"messages":[` + msg + `]}`
		var res core.CommitTurnResult
		c.ok(MethodCommitTurn, json.RawMessage(params), &res)
		p := <-rec.got
		if res.Status != core.CommitCommitted || p.Admission.Generation != tc.want || p.Terminal.Generation != tc.want ||
			p.Admission.LogicalTurnID != "t1" || p.Admission.EntryID != "e1" || p.Terminal.RawSeq != 4 || p.Admission.EffectiveParentID != nil {
			t.Fatalf("generation %s: got %+v", tc.gen, p)
		}
		if len(p.Messages) != 1 || string(p.Messages[0].Raw()) != msg {
			t.Fatalf("message bytes changed: %s", p.Messages[0].Raw())
		}
	}
}

func TestToolsAndTranscriptRead(t *testing.T) {
	f := newFake()
	c := startServer(t, Static(f), Options{})
	init := c.initialize()
	if !slices.Contains(init.Methods, MethodToolsCall) || !slices.Contains(init.Methods, MethodToolsList) {
		t.Fatalf("methods %v lack the tools", init.Methods)
	}
	var defs []core.ToolDef
	c.ok(MethodToolsList, nil, &defs)
	if len(defs) != 1 || defs[0].Name != "echo" || string(defs[0].Parameters) != `{"type":"object"}` {
		t.Fatalf("tools/list = %+v", defs)
	}
	var tr core.ToolCallResult
	c.ok(MethodToolsCall, map[string]any{"name": "echo", "arguments": map[string]any{"q": "x"},
		"sessionKey": "agent:main:main", "sessionId": "s1", "agentId": "main"}, &tr)
	if tr.Text != `agent:main:main|s1|main|{"q":"x"}` {
		t.Fatalf("tools/call = %q", tr.Text)
	}
	if e := c.fails(MethodToolsCall, map[string]any{"name": "nope"}, CodeEngineError); !strings.Contains(e.Message, "unknown tool") {
		t.Fatalf("unknown tool: %+v", e)
	}
	c.fails(MethodToolsCall, map[string]any{}, CodeInvalidParams)

	// readTranscript: the server asks the client for a page, relaying the
	// request's cursor; the page's entries come back to the engine.
	id, ch := c.start(MethodBootstrap, map[string]any{"sessionId": "s", "sessionFile": "agent:main:main"}, CallbackReadTranscript)
	h := c.nextHost()
	var p struct {
		RequestID json.RawMessage            `json:"requestId"`
		Request   core.TranscriptReadRequest `json:"request"`
	}
	if err := json.Unmarshal(h.Params, &p); err != nil {
		t.Fatal(err)
	}
	if h.Method != MethodHostReadTranscript || idKey(p.RequestID) != id || p.Request.Cursor == nil || *p.Request.Cursor != "c0" || p.Request.MaxMessages != 2 {
		t.Fatalf("readTranscript call %s", h.Line)
	}
	c.send(`{"jsonrpc":"2.0","id":` + string(h.ID) + `,"result":{"kind":"page","cursor":"c2","hasMore":false,"entries":[` +
		`{"entryId":"e1","parentId":null,"seq":1,"role":"user","message":{"role":"user","content":"hi","timestamp":1}},` +
		`{"entryId":"e2","parentId":"e1","seq":2,"role":"assistant","message":{"role":"assistant","content":[]}}]}}`)
	var br core.BootstrapResult
	if err := json.Unmarshal(c.wait(ch).Result, &br); err != nil || br.ImportedMessages != 2 ||
		br.Reason != `c2 {"role":"user","content":"hi","timestamp":1}` {
		t.Fatalf("bootstrap through readTranscript = %+v %v", br, err)
	}
}

func TestTimingHook(t *testing.T) {
	var mu sync.Mutex
	var got []string
	c := startServer(t, Static(newFake()), Options{Timing: func(method string, _ time.Time, d time.Duration, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s:%v", method, ok && d >= 0))
	}})
	c.initialize()
	c.ok(MethodInfo, nil, nil)
	c.fails(MethodToolsCall, map[string]any{"name": "nope"}, CodeEngineError)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(got, "info:true") || !slices.Contains(got, "tools/call:false") || !slices.Contains(got, "initialize:true") {
		t.Fatalf("timing saw %v", got)
	}
}

// gateEngine's Assemble waits on the host's llm.complete (when offered) or
// on release, counting the calls running at once.
type gateEngine struct {
	minimalEngine
	release       chan struct{}
	running, peak atomic.Int32
}

func (g *gateEngine) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	n := g.running.Add(1)
	defer g.running.Add(-1)
	for {
		old := g.peak.Load()
		if n <= old || g.peak.CompareAndSwap(old, n) {
			break
		}
	}
	if p.RuntimeContext != nil && p.RuntimeContext.LLMComplete != nil {
		r, err := p.RuntimeContext.LLMComplete(ctx, core.LLMRequest{System: "s"})
		return core.AssembleResult{SystemPromptAddition: r.Text}, err
	}
	select {
	case <-g.release:
	case <-ctx.Done():
		return core.AssembleResult{}, ctx.Err()
	}
	return core.AssembleResult{SystemPromptAddition: p.Prompt}, nil
}

// TestMaxInFlight: beyond Options.MaxInFlight requests wait their turn (in
// order) instead of each getting a goroutine; host callback answers still
// get through while the slots are full, so nothing deadlocks.
func TestMaxInFlight(t *testing.T) {
	g := &gateEngine{release: make(chan struct{})}
	c := startServer(t, Static(g), Options{MaxInFlight: 2})
	c.initialize()
	// Two requests take both slots and wait on the host.
	_, ch1 := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "a"}, CallbackLLMComplete)
	_, ch2 := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "b"}, CallbackLLMComplete)
	h1, h2 := c.nextHost(), c.nextHost()
	// Five more queue behind them.
	var queued []chan rawMsg
	for i := 0; i < 5; i++ {
		_, ch := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": fmt.Sprint(i)})
		queued = append(queued, ch)
	}
	time.Sleep(50 * time.Millisecond)
	if n := g.running.Load(); n != 2 {
		t.Fatalf("%d requests running with MaxInFlight 2", n)
	}
	// The host answers arrive although no slot is free.
	c.send(`{"jsonrpc":"2.0","id":` + string(h1.ID) + `,"result":{"text":"one"}}`)
	c.send(`{"jsonrpc":"2.0","id":` + string(h2.ID) + `,"result":{"text":"two"}}`)
	for _, ch := range []chan rawMsg{ch1, ch2} {
		if m := c.wait(ch); m.Error != nil {
			t.Fatalf("request with a host callback: %s", m.Line)
		}
	}
	close(g.release)
	for i, ch := range queued {
		var r core.AssembleResult
		if err := json.Unmarshal(c.wait(ch).Result, &r); err != nil || r.SystemPromptAddition != fmt.Sprint(i) {
			t.Fatalf("queued request %d: %+v %v", i, r, err)
		}
	}
	if p := g.peak.Load(); p > 2 {
		t.Fatalf("%d requests ran at once, bound 2", p)
	}
}

// TestQueueBoundAndQueuedCancel: beyond Options.MaxQueued a request is
// refused at once with CodeServerBusy (not held in memory), and a request
// cancelled while it waits for a slot is answered at once, before any slot
// frees up; the others are served as before.
func TestQueueBoundAndQueuedCancel(t *testing.T) {
	g := &gateEngine{release: make(chan struct{})}
	c := startServer(t, Static(g), Options{MaxInFlight: 1, MaxQueued: 2})
	c.initialize()
	// The only slot waits on the host (and keeps waiting until the end).
	_, ch1 := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "a"}, CallbackLLMComplete)
	h1 := c.nextHost()
	id2, ch2 := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "q2"})
	_, ch3 := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "q3"})
	_, ch4 := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "q4"})
	if m := c.wait(ch4); m.Error == nil || m.Error.Code != CodeServerBusy {
		t.Fatalf("third queued request with MaxQueued 2: %s, want code %d", m.Line, CodeServerBusy)
	}
	c.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":` + id2 + `}}`)
	if m := c.wait(ch2); m.Error == nil || m.Error.Code != CodeRequestCancelled {
		t.Fatalf("queued request cancelled: %s, want code %d", m.Line, CodeRequestCancelled)
	}
	// The freed queue place takes a new request.
	_, ch5 := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "q5"})
	c.send(`{"jsonrpc":"2.0","id":` + string(h1.ID) + `,"result":{"text":"one"}}`)
	if m := c.wait(ch1); m.Error != nil {
		t.Fatalf("running request: %s", m.Line)
	}
	close(g.release)
	for i, ch := range []chan rawMsg{ch3, ch5} {
		var r core.AssembleResult
		if err := json.Unmarshal(c.wait(ch).Result, &r); err != nil || r.SystemPromptAddition != []string{"q3", "q5"}[i] {
			t.Fatalf("queued request %d: %+v %v", i, r, err)
		}
	}
	if n := g.peak.Load(); n != 1 {
		t.Fatalf("%d requests ran at once, bound 1", n)
	}
}

func TestLineLimit(t *testing.T) {
	c := startServer(t, Static(newFake()), Options{MaxLineBytes: 1 << 10})
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":9,"method":"ingest","params":{"sessionId":"s","message":{"role":"user","content":"` + strings.Repeat("x", 4<<10) + `"}}}`)
	// The request is answered under its id (a caller waiting on it would
	// otherwise wait forever).
	m := c.nextStray()
	if m.Error == nil || string(m.ID) != "9" || !strings.Contains(m.Error.Message, "longer than 1024 bytes") {
		t.Fatalf("over-long line answered %s", m.Line)
	}
	c.ok(MethodInfo, nil, nil) // the server goes on
	// An over-long answer to a host callback fails that callback.
	_, ch := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "llm"}, CallbackLLMComplete)
	h := c.nextHost()
	c.send(`{"jsonrpc":"2.0","id":` + string(h.ID) + `,"result":{"text":"` + strings.Repeat("y", 4<<10) + `"}}`)
	if m := c.wait(ch); m.Error == nil || !strings.Contains(m.Error.Message, "longer than 1024 bytes") {
		t.Fatalf("request whose host answer was too long: %s", m.Line)
	}
}

// TestQueueBytesBound: requests waiting for a slot are bounded in bytes too
// (MaxQueued alone would hold 1,024 requests of 40 MiB): one that would pass
// Options.MaxQueuedBytes while others wait is refused at once with
// CodeServerBusy; a small one still queues.
func TestQueueBytesBound(t *testing.T) {
	g := &gateEngine{release: make(chan struct{})}
	c := startServer(t, Static(g), Options{MaxInFlight: 1, MaxQueued: 100, MaxQueuedBytes: 8 << 10})
	c.initialize()
	_, ch1 := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "a"}, CallbackLLMComplete)
	h1 := c.nextHost()
	_, ch2 := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": strings.Repeat("x", 6<<10)})
	_, ch3 := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": strings.Repeat("y", 6<<10)})
	if m := c.wait(ch3); m.Error == nil || m.Error.Code != CodeServerBusy {
		t.Fatalf("a request over the queued bytes: %.200s, want code %d", m.Line, CodeServerBusy)
	}
	_, ch4 := c.start(MethodAssemble, map[string]any{"sessionId": "s", "prompt": "small"})
	c.send(`{"jsonrpc":"2.0","id":` + string(h1.ID) + `,"result":{"text":"one"}}`)
	if m := c.wait(ch1); m.Error != nil {
		t.Fatalf("running request: %s", m.Line)
	}
	close(g.release)
	for _, ch := range []chan rawMsg{ch2, ch4} {
		if m := c.wait(ch); m.Error != nil {
			t.Fatalf("queued request: %.200s", m.Line)
		}
	}
}

// TestInitializeHost: initialize's "host" (the OpenClaw plugin sends
// "openclaw") reaches the factory as FactoryOptions.Host, beside the
// config; a client that sends none gives an empty Host.
func TestInitializeHost(t *testing.T) {
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"config": map[string]any{"storeDir": "/s"}, "host": core.HostOpenClaw, "protocolVersion": 1}, core.HostOpenClaw},
		{map[string]any{"config": map[string]any{"storeDir": "/s"}, "protocolVersion": 1}, ""},
	} {
		got := make(chan core.FactoryOptions, 1)
		f := func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
			got <- o
			return minimalEngine{}, nil
		}
		c := startServer(t, f, Options{})
		var r InitializeResult
		c.ok(MethodInitialize, tc.params, &r)
		o := <-got
		if o.Host != tc.want || string(o.Config) != `{"storeDir":"/s"}` {
			t.Fatalf("params %v: factory got host %q config %s, want host %q", tc.params, o.Host, o.Config, tc.want)
		}
	}
}

// closeFails is an engine whose Close fails (a store on a full disk).
type closeFails struct{ *fakeEngine }

var errCloseFailed = errors.New("store: disk full: the memtable cannot be written")

func (c closeFails) Close() error { return errCloseFailed }

// TestContextCancelReportsCloseError: a shutdown by cancellation (serve's
// SIGTERM) whose engine Close fails returns the close error, not
// context.Canceled, which `lossless serve` takes for a clean stop (exit 0
// with nothing said while the store could not be closed).
func TestContextCancelReportsCloseError(t *testing.T) {
	f := newFake()
	inR, inW := io.Pipe()
	defer inW.Close()
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, inR, &out, Static(closeFails{f}), Options{}) }()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize"}`+"\n")
	for !strings.Contains(out.String(), `"id":1`) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	err := <-done
	if !errors.Is(err, errCloseFailed) {
		t.Fatalf("Serve = %v, want the close error", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Fatalf("Serve = %v: wraps context.Canceled, which callers take for a clean stop", err)
	}
}
