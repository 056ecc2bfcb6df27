package contextengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

// replyModel answers every prompt with one assistant message.
func replyModel(ctx context.Context, req ModelRequest) ([]core.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return []core.Message{core.AssistantText("reply", 9)}, nil
}

func newTestDriver(t *testing.T, e core.Engine, model ModelFunc, mod func(*DriverOptions)) *Driver {
	t.Helper()
	opts := DriverOptions{Engine: e, Model: model, SessionID: "s1", SessionKey: "agent:main:s1",
		ContextWindow: 100_000, SystemPrompt: "You are helpful."}
	if mod != nil {
		mod(&opts)
	}
	d, err := NewDriver(opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func copySession(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "openclaw", "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "sess-1.jsonl")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDriverOrderWithoutTranscript(t *testing.T) {
	f := newFake("eng")
	d := newTestDriver(t, f, replyModel, nil)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := d.Turn(ctx, core.UserText("q", 1)); err != nil {
			t.Fatal(err)
		}
	}
	want := "bootstrap,assemble,afterTurn,maintain:turn,assemble,afterTurn,maintain:turn"
	if got := strings.Join(f.Calls(), ","); got != want {
		t.Fatalf("calls\n got %s\nwant %s", got, want)
	}
	at := f.afterTurns[1]
	if len(at.Messages) != 4 || at.PrePromptMessageCount != 2 || len(at.NewMessages()) != 2 ||
		at.NewMessages()[0].Text() != "q" || at.TokenBudget != d.TokenBudget() || at.SessionKey != "agent:main:s1" {
		t.Fatalf("afterTurn params %+v", at)
	}
	// The prompt travels in Prompt, not in Messages (the history), as in OpenClaw.
	if ap := f.assembles[1]; ap.Prompt != "q" || ap.TokenBudget != 80_000 || len(ap.Messages) != 2 {
		t.Fatalf("assemble params %+v", ap)
	}
	if len(d.Messages()) != 4 {
		t.Fatalf("view has %d messages", len(d.Messages()))
	}
}

func TestDriverOrderWithTranscript(t *testing.T) {
	f := newFake("eng")
	path := copySession(t)
	var sent ModelRequest
	d := newTestDriver(t, f, func(ctx context.Context, req ModelRequest) ([]core.Message, error) {
		sent = req
		return []core.Message{core.AssistantToolCall("c2", "read", map[string]string{"p": "a.go"}, 10),
			core.ToolResult("c2", "read", "package a", false, 11), core.AssistantText("done", 12)}, nil
	}, func(o *DriverOptions) { o.SessionFile = path })
	res, err := d.Turn(context.Background(), core.UserText("read a.go", 1))
	if err != nil {
		t.Fatal(err)
	}
	want := "bootstrap,maintain:bootstrap,assemble,afterTurn,maintain:turn"
	if got := strings.Join(f.Calls(), ","); got != want {
		t.Fatalf("calls\n got %s\nwant %s", got, want)
	}
	// The view came from the transcript; the pipeline stripped details before assemble.
	ap := f.assembles[0]
	if len(ap.Messages) != 4 || ap.Messages[2].Role() != core.RoleToolResult {
		t.Fatalf("assembled input %s", roles(ap.Messages))
	}
	if _, ok := ap.Messages[2].Field("details"); ok {
		t.Fatal("details reached assemble")
	}
	if sent.System != "from eng\n\nYou are helpful." || len(sent.Messages) != 5 {
		t.Fatalf("model request system %q, %d messages", sent.System, len(sent.Messages))
	}
	if len(res.NewMessages) != 4 || f.afterTurns[0].PrePromptMessageCount != 4 {
		t.Fatalf("new %d, pre %d", len(res.NewMessages), f.afterTurns[0].PrePromptMessageCount)
	}
	// The turn was appended to the file as a parentId chain after e4.
	tr, err := core.ReadTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 8 || len(tr.Malformed) != 0 {
		t.Fatalf("%d entries, %v malformed", len(tr.Entries), tr.Malformed)
	}
	if p := tr.Entries[4].ParentID; p == nil || *p != "e4" {
		t.Fatalf("first new entry's parent %v", p)
	}
	br := tr.ActiveBranch()
	if len(br) != 8 {
		t.Fatalf("active branch %d", len(br))
	}
	if string(tr.Entries[7].Message.Raw()) != string(res.NewMessages[3].Raw()) {
		t.Fatal("message bytes changed on the way to the file")
	}
	// A second driver on the same file sees the whole conversation.
	d2 := newTestDriver(t, newFake("eng"), replyModel, func(o *DriverOptions) { o.SessionFile = path })
	if err := d2.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(d2.Messages()) != 8 {
		t.Fatalf("reloaded view %d", len(d2.Messages()))
	}
}

func TestDriverNewSessionFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.jsonl")
	f := newFake("eng")
	d := newTestDriver(t, f, replyModel, func(o *DriverOptions) { o.SessionFile = path; o.Cwd = "/w" })
	if _, err := d.Turn(context.Background(), core.UserText("first", 1)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Calls(), ","); got != "bootstrap,assemble,afterTurn,maintain:turn" {
		t.Fatalf("calls %s (no maintain(bootstrap) without a transcript)", got)
	}
	tr, err := core.ReadTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Header == nil || tr.Header.ID != "s1" || tr.Header.Version != core.CurrentTranscriptVersion || len(tr.Entries) != 2 {
		t.Fatalf("header %+v, %d entries", tr.Header, len(tr.Entries))
	}
	if tr.Entries[0].ParentID != nil || tr.Entries[1].ParentID == nil || *tr.Entries[1].ParentID != tr.Entries[0].ID {
		t.Fatal("parent chain wrong")
	}
}

func TestDriverIngestFallbacks(t *testing.T) {
	// No afterTurn: ingestBatch; neither: one ingest per new message.
	batchOnly := &batchEngine{bareEngine{newFake("b")}}
	d := newTestDriver(t, batchOnly, replyModel, nil)
	if _, err := d.Turn(context.Background(), core.UserText("q", 1)); err != nil {
		t.Fatal(err)
	}
	f := batchOnly.fakeEngine
	if got := strings.Join(f.Calls(), ","); got != "assemble,ingestBatch" {
		t.Fatalf("calls %s", got)
	}
	if len(f.batches[0].Messages) != 2 || f.batches[0].Messages[0].Text() != "q" {
		t.Fatalf("batch %d messages", len(f.batches[0].Messages))
	}
	bare := newFake("bare")
	d = newTestDriver(t, bareEngine{bare}, replyModel, nil)
	if _, err := d.Turn(context.Background(), core.UserText("q", 1)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(bare.Calls(), ","); got != "assemble,ingest,ingest" {
		t.Fatalf("calls %s", got)
	}
	// Through a Guarded engine, Supports decides.
	g, _ := registryWith("bare2", bareEngine{newFake("bare2")}).Open(context.Background(), slotConfig("bare2"))
	inner := g.engine.(bareEngine).fakeEngine
	d = newTestDriver(t, g, replyModel, nil)
	if _, err := d.Turn(context.Background(), core.UserText("q", 1)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(inner.Calls(), ","); got != "assemble,ingest,ingest" {
		t.Fatalf("guarded calls %s", got)
	}
}

type batchEngine struct{ bareEngine }

func (b *batchEngine) IngestBatch(ctx context.Context, p core.IngestBatchParams) (core.IngestBatchResult, error) {
	return b.fakeEngine.IngestBatch(ctx, p)
}

func TestDriverFailedOrAbortedPromptSkipsAfterTurn(t *testing.T) {
	boom := errors.New("provider 500")
	f := newFake("eng")
	d := newTestDriver(t, f, func(ctx context.Context, req ModelRequest) ([]core.Message, error) {
		return nil, boom
	}, nil)
	if _, err := d.Turn(context.Background(), core.UserText("q", 1)); !errors.Is(err, boom) || !errors.Is(err, ErrPromptFailed) {
		t.Fatalf("err %v", err)
	}
	if got := strings.Join(f.Calls(), ","); got != "bootstrap,assemble" {
		t.Fatalf("calls %s", got)
	}
	if len(d.Messages()) != 0 {
		t.Fatal("failed prompt entered the view")
	}
	f2 := newFake("eng")
	ctx, cancel := context.WithCancel(context.Background())
	d = newTestDriver(t, f2, func(c context.Context, req ModelRequest) ([]core.Message, error) {
		cancel()
		return nil, c.Err()
	}, nil)
	if _, err := d.Turn(ctx, core.UserText("q", 1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if got := strings.Join(f2.Calls(), ","); got != "bootstrap,assemble" {
		t.Fatalf("aborted calls %s", got)
	}
}

func TestDriverOverflowRecovery(t *testing.T) {
	for _, fails := range []int{1, 3, 4} {
		f := newFake("eng")
		attempts := 0
		d := newTestDriver(t, f, func(ctx context.Context, req ModelRequest) ([]core.Message, error) {
			attempts++
			if attempts <= fails {
				return nil, errors.Join(errors.New("prompt is too long"), ErrContextOverflow)
			}
			return replyModel(ctx, req)
		}, nil)
		res, err := d.Turn(context.Background(), core.UserText("q", 1))
		wantCompacts := min(fails, MaxOverflowCompactions)
		if len(f.compacts) != wantCompacts {
			t.Fatalf("fails=%d: %d compactions, want %d", fails, len(f.compacts), wantCompacts)
		}
		for _, p := range f.compacts {
			if !p.Force || p.CompactionTarget != core.CompactionTargetBudget || p.TokenBudget != 80_000 ||
				p.CurrentTokenCount <= 0 || p.SessionID != "s1" {
				t.Fatalf("compact params %+v", p)
			}
		}
		calls := strings.Join(f.Calls(), ",")
		if fails > MaxOverflowCompactions {
			if !errors.Is(err, ErrOverflowUnrecovered) {
				t.Fatalf("fails=%d: err %v", fails, err)
			}
			if strings.Contains(calls, "afterTurn") || strings.Contains(calls, "maintain:turn") {
				t.Fatalf("afterTurn ran after an unrecovered overflow: %s", calls)
			}
			continue
		}
		if err != nil || res.Compactions != fails {
			t.Fatalf("fails=%d: %v, compactions %d", fails, err, res.Compactions)
		}
		want := "bootstrap" + strings.Repeat(",assemble,compact", fails) + ",assemble,afterTurn,maintain:turn"
		if calls != want {
			t.Fatalf("calls\n got %s\nwant %s", calls, want)
		}
	}
}

func TestDriverPrecheck(t *testing.T) {
	big := func(est int, authority string) func(p core.AssembleParams) core.AssembleResult {
		return func(p core.AssembleParams) core.AssembleResult {
			return core.AssembleResult{Messages: p.Messages, EstimatedTokens: est, PromptAuthority: authority}
		}
	}
	// Budget 80,000: an estimate of 70,000 ×1.2 = 84,000 overflows.
	tests := []struct {
		name      string
		owns      bool
		est       int
		authority string
		compacts  int
	}{
		{"non-owner fits", false, 60_000, "", 0},
		{"non-owner over budget after x1.2", false, 70_000, "", MaxOverflowCompactions},
		{"owner skips precheck", true, 70_000, "", 0},
		{"owner with preassembly_may_overflow", true, 70_000, core.PromptAuthorityPreassemblyMayOverflow, MaxOverflowCompactions},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake("eng")
			f.info = &core.Info{ID: "eng", Name: "Eng", OwnsCompaction: tc.owns}
			f.assembleResult = big(tc.est, tc.authority)
			modelCalls := 0
			d := newTestDriver(t, f, func(ctx context.Context, req ModelRequest) ([]core.Message, error) {
				modelCalls++
				return replyModel(ctx, req)
			}, func(o *DriverOptions) { o.SystemPrompt = "" })
			_, err := d.Turn(context.Background(), core.UserText("q", 1))
			if len(f.compacts) != tc.compacts {
				t.Fatalf("%d compactions, want %d (err %v)", len(f.compacts), tc.compacts, err)
			}
			if tc.compacts == MaxOverflowCompactions {
				if !errors.Is(err, ErrOverflowUnrecovered) || modelCalls != 0 {
					t.Fatalf("err %v, model calls %d", err, modelCalls)
				}
				// The estimate is the assembled context plus the prompt.
				if want := tc.est + core.CountMessage(d.est, core.UserText("q", 1)); f.compacts[0].CurrentTokenCount != want {
					t.Fatalf("currentTokenCount %d", f.compacts[0].CurrentTokenCount)
				}
			} else if err != nil || modelCalls != 1 {
				t.Fatalf("err %v, model calls %d", err, modelCalls)
			}
		})
	}
	// preassembly_may_overflow: the host takes the max with the un-windowed history.
	f := newFake("eng")
	f.info = &core.Info{ID: "eng", Name: "Eng", OwnsCompaction: true}
	f.assembleResult = func(p core.AssembleParams) core.AssembleResult {
		return core.AssembleResult{Messages: p.Messages[len(p.Messages)-1:], EstimatedTokens: 10,
			PromptAuthority: core.PromptAuthorityPreassemblyMayOverflow}
	}
	d := newTestDriver(t, f, replyModel, func(o *DriverOptions) { o.ContextWindow = 1000; o.ReserveTokens = 500 })
	huge := strings.Repeat("word ", 2000) // ~2,500 tokens of history
	d.view = []core.Message{core.UserText(huge, 0), core.AssistantText("ok", 0)}
	d.booted = true
	if _, err := d.Turn(context.Background(), core.UserText("q", 1)); !errors.Is(err, ErrOverflowUnrecovered) {
		t.Fatalf("history estimate ignored: %v", err)
	}
	if f.compacts[0].CurrentTokenCount < 2500 {
		t.Fatalf("currentTokenCount %d", f.compacts[0].CurrentTokenCount)
	}
}

func TestDriverAdoptsRotation(t *testing.T) {
	dir := t.TempDir()
	f := newFake("eng")
	succ := filepath.Join(dir, "s2.jsonl")
	f.compactResult = func(n int, p core.CompactParams) core.CompactResult {
		return core.CompactResult{OK: true, Compacted: true, Result: &core.CompactOutcome{
			TokensBefore: 100, TokensAfter: 10, SessionID: "s2", SessionFile: succ, SessionTarget: []byte(`{"k":"t2"}`)}}
	}
	overflowOnce := true
	d := newTestDriver(t, f, func(ctx context.Context, req ModelRequest) ([]core.Message, error) {
		if overflowOnce {
			overflowOnce = false
			return nil, ErrContextOverflow
		}
		return replyModel(ctx, req)
	}, func(o *DriverOptions) { o.SessionFile = filepath.Join(dir, "s1.jsonl") })
	res, err := d.Turn(context.Background(), core.UserText("q", 1))
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionID != "s2" || res.SessionFile != succ || d.SessionID() != "s2" || d.SessionFile() != succ {
		t.Fatalf("rotation not adopted: %+v", res)
	}
	if f.assembles[0].SessionID != "s1" || f.assembles[1].SessionID != "s2" {
		t.Fatalf("next attempt used %q", f.assembles[1].SessionID)
	}
	if at := f.afterTurns[0]; at.SessionID != "s2" || at.SessionFile != succ || string(at.SessionTarget) != `{"k":"t2"}` {
		t.Fatalf("afterTurn on %q %q %s", at.SessionID, at.SessionFile, at.SessionTarget)
	}
	if _, err := os.Stat(succ); err != nil {
		t.Fatalf("turn not written to the successor file: %v", err)
	}
	if _, err := d.Turn(context.Background(), core.UserText("again", 2)); err != nil {
		t.Fatal(err)
	}
	if last := f.assembles[len(f.assembles)-1]; last.SessionID != "s2" {
		t.Fatalf("next turn used %q", last.SessionID)
	}
	// A manual /compact is force + threshold with the focus text.
	if _, err := d.Compact(context.Background(), "focus on the API"); err != nil {
		t.Fatal(err)
	}
	last := f.compacts[len(f.compacts)-1]
	if !last.Force || last.CompactionTarget != core.CompactionTargetThreshold || last.CustomInstructions != "focus on the API" || last.SessionID != "s2" {
		t.Fatalf("manual compact %+v", last)
	}
}

func TestDriverFailsClosedOnHostRequirements(t *testing.T) {
	f := newFake("eng")
	f.info = &core.Info{ID: "eng", Name: "Eng", HostRequirements: map[string]core.HostRequirement{
		core.OpAgentRun: {RequiredCapabilities: []string{core.CapAssembleBeforePrompt}}}}
	d := newTestDriver(t, f, replyModel, func(o *DriverOptions) { o.Host = GenericCLI })
	_, err := d.Turn(context.Background(), core.UserText("q", 1))
	if !errors.Is(err, core.ErrHostRequirements) || !strings.HasPrefix(err.Error(), `Context engine "eng" cannot run operation "agent-run" on generic CLI backend.`) {
		t.Fatalf("err %v", err)
	}
	if len(f.Calls()) != 0 {
		t.Fatalf("engine called before failing closed: %v", f.Calls())
	}
}

func TestDriverProjectsHostParams(t *testing.T) {
	f := newFake("eng")
	f.info = &core.Info{ID: "eng", Name: "Eng", AcceptedHostParams: []string{core.HostParamPrompt}}
	d := newTestDriver(t, f, replyModel, nil)
	if _, err := d.Turn(context.Background(), core.UserText("q", 1)); err != nil {
		t.Fatal(err)
	}
	if ap := f.assembles[0]; ap.Prompt != "q" || ap.SessionKey != "" {
		t.Fatalf("assemble params %+v", ap)
	}
	if at := f.afterTurns[0]; at.SessionKey != "" {
		t.Fatalf("afterTurn got sessionKey %q", at.SessionKey)
	}
}

func TestDriverPipelineBeforeAssemble(t *testing.T) {
	f := newFake("eng")
	d := newTestDriver(t, f, replyModel, func(o *DriverOptions) { o.HistoryLimit = 1; o.MergeConsecutiveUser = true })
	d.booted = true
	d.view = []core.Message{core.UserText("old1", 0), core.AssistantText("a", 0), core.UserText("old2", 0),
		result("orphan"), core.AssistantText("b", 0), core.UserText("pending", 0)}
	if _, err := d.Turn(context.Background(), core.UserText("q", 1)); err != nil {
		t.Fatal(err)
	}
	ap := f.assembles[0]
	// The history is piped; the prompt travels separately (Prompt) and is
	// appended after the assembled context.
	if roles(ap.Messages) != "U" || ap.Messages[0].Text() != "pending" || ap.Prompt != "q" {
		t.Fatalf("assembled input %s %q", roles(ap.Messages), ap.Messages[0].Text())
	}
	// The session view itself keeps everything.
	if len(d.Messages()) != 8 {
		t.Fatalf("view %d", len(d.Messages()))
	}
}

func TestNewDriverValidates(t *testing.T) {
	good := DriverOptions{Engine: newFake("e"), Model: replyModel, SessionID: "s", ContextWindow: 1000}
	bad := []func(*DriverOptions){
		func(o *DriverOptions) { o.Engine = nil },
		func(o *DriverOptions) { o.Model = nil },
		func(o *DriverOptions) { o.SessionID = "" },
		func(o *DriverOptions) { o.ContextWindow = 0 },
		func(o *DriverOptions) { o.ReserveTokens = 1000 },
	}
	for i, mod := range bad {
		o := good
		mod(&o)
		if _, err := NewDriver(o); err == nil {
			t.Errorf("case %d accepted", i)
		}
	}
	for _, tc := range []struct{ window, reserve int }{{100_000, 20_000}, {40_000, 10_000}, {200_000, 20_000}} {
		if got := DefaultReserveTokens(tc.window); got != tc.reserve {
			t.Errorf("reserve(%d) = %d, want %d", tc.window, got, tc.reserve)
		}
	}
	if !slices.Equal(EmbeddedRuntime.Capabilities[:1], []string{core.CapBootstrap}) {
		t.Fatal("host set order")
	}
}

func TestDriverOnRealTranscript(t *testing.T) {
	src := testutil.SharedFile(t, "data/pi-mono/large-session.jsonl")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := core.ReadTranscript(path)
	window := before.Window().Messages()
	g, err := NewRegistry().Open(context.Background(), chars4Legacy())
	if err != nil {
		t.Fatal(err)
	}
	var sent int
	d := newTestDriver(t, g, func(ctx context.Context, req ModelRequest) ([]core.Message, error) {
		sent = len(req.Messages)
		return replyModel(ctx, req)
	}, func(o *DriverOptions) { o.SessionFile = path; o.ContextWindow = 400_000 })
	if _, err := d.Turn(context.Background(), core.UserText("what next?", 1)); err != nil {
		t.Fatal(err)
	}
	// The model sees the sanitised window (unanswered calls get
	// synthesised results) plus the prompt.
	sanitised, _ := Sanitize(window)
	if sent != len(sanitised)+1 || len(sanitised) <= len(window) {
		t.Fatalf("model saw %d messages, window has %d (%d sanitised)", sent, len(window), len(sanitised))
	}
	after, err := core.ReadTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	// The old file has no entry ids; the appended entries have none either,
	// so the whole file stays one branch and the window grows by two.
	if len(after.Entries) != len(before.Entries)+2 || after.Entries[len(after.Entries)-1].ID != "" {
		t.Fatalf("entries %d -> %d", len(before.Entries), len(after.Entries))
	}
	if got := len(after.Window().Messages()); got != len(window)+2 {
		t.Fatalf("window %d -> %d", len(window), got)
	}
	if !bytes.Equal(data, mustRead(t, path)[:len(data)]) {
		t.Fatal("history bytes changed")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDriverLegacyOverflowCompaction(t *testing.T) {
	src := testutil.SharedFile(t, "data/pi-mono/large-session.jsonl")
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, mustRead(t, src), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := NewRegistry().Open(context.Background(), chars4Legacy())
	if err != nil {
		t.Fatal(err)
	}
	var seen []int
	d := newTestDriver(t, g, func(ctx context.Context, req ModelRequest) ([]core.Message, error) {
		seen = append(seen, req.EstimatedTokens)
		return replyModel(ctx, req)
	}, func(o *DriverOptions) { o.SessionFile = path; o.ContextWindow = 100_000 })
	res, err := d.Turn(context.Background(), core.UserText("continue", 1))
	if err != nil {
		t.Fatal(err)
	}
	if res.Compactions == 0 || len(seen) != 1 {
		t.Fatalf("compactions %d, model calls %d", res.Compactions, len(seen))
	}
	tr, err := core.ReadTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	w := tr.Window()
	if w.Compaction == nil || w.Compaction.Type != core.EntryCompaction || w.Compaction.Summary == "" {
		t.Fatal("legacy compaction wrote no compaction entry")
	}
	if int(float64(seen[0])*PrecheckFactor) > d.TokenBudget() {
		t.Fatalf("prompt of %d tokens sent over a %d budget", seen[0], d.TokenBudget())
	}
	t.Logf("compactions %d, prompt estimate %d, budget %d", res.Compactions, seen[0], d.TokenBudget())
}

// chars4Legacy configures legacy with the chars/4 counter (tiktoken over a
// whole real transcript takes tens of seconds under -race).
func chars4Legacy() *Config {
	return &Config{Plugins: PluginsConfig{Entries: map[string]PluginEntry{
		LegacyID: {Config: json.RawMessage(`{"counter":"chars4"}`)}}}}
}

// storingEngine keeps its own history (from afterTurn) and ignores the
// host's Messages in assemble, as the lossless engine does.
type storingEngine struct {
	mu     sync.Mutex
	stored []core.Message
}

func (s *storingEngine) Info() core.Info {
	return core.Info{ID: "store", Name: "Store", OwnsCompaction: true}
}
func (s *storingEngine) Ingest(ctx context.Context, p core.IngestParams) (core.IngestResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stored = append(s.stored, p.Message)
	return core.IngestResult{Ingested: true}, nil
}
func (s *storingEngine) AfterTurn(ctx context.Context, p core.AfterTurnParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stored = append(s.stored, p.NewMessages()...)
	return nil
}
func (s *storingEngine) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return core.AssembleResult{Messages: slices.Clone(s.stored)}, nil
}
func (s *storingEngine) Compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	return core.CompactResult{OK: true}, nil
}

// An engine that assembles from its own store still gets every prompt to the
// model: the driver appends the prompt after the assembled context.
func TestDriverPromptReachesModelWithStoringEngine(t *testing.T) {
	var got [][]string
	model := func(ctx context.Context, req ModelRequest) ([]core.Message, error) {
		var texts []string
		for _, m := range req.Messages {
			texts = append(texts, m.Role()+":"+m.Text())
		}
		got = append(got, texts)
		return []core.Message{core.AssistantText("reply", 9)}, nil
	}
	d := newTestDriver(t, &storingEngine{}, model, nil)
	for _, q := range []string{"first question", "second question"} {
		if _, err := d.Turn(context.Background(), core.UserText(q, 1)); err != nil {
			t.Fatal(err)
		}
	}
	want := "user:first question,assistant:reply,user:second question"
	if len(got) != 2 || strings.Join(got[1], ",") != want {
		t.Fatalf("turn 2 model input %q, want %q", got, want)
	}
}
