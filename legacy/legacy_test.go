package legacy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/compaction"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/legacy"
)

func fixture(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "compaction", "v4-session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInfo(t *testing.T) {
	info := legacy.New(legacy.Options{}).Info()
	if info.ID != "legacy" || info.Name != "Legacy Context Engine" || info.OwnsCompaction {
		t.Fatalf("info %+v", info)
	}
	if err := info.Validate(); err != nil {
		t.Fatal(err)
	}
}

// The legacy engine has no optional hooks: no afterTurn, no bootstrap, no
// maintenance, no batch ingest, no turn commits, no subagent hooks.
func TestNoOptionalInterfaces(t *testing.T) {
	var e core.Engine = legacy.New(legacy.Options{})
	if _, ok := e.(core.AfterTurner); ok {
		t.Error("legacy implements AfterTurner")
	}
	if _, ok := e.(core.Bootstrapper); ok {
		t.Error("legacy implements Bootstrapper")
	}
	if _, ok := e.(core.Maintainer); ok {
		t.Error("legacy implements Maintainer")
	}
	if _, ok := e.(core.BatchIngester); ok {
		t.Error("legacy implements BatchIngester")
	}
	if _, ok := e.(core.TurnCommitter); ok {
		t.Error("legacy implements TurnCommitter")
	}
	if _, ok := e.(core.SubagentSpawner); ok {
		t.Error("legacy implements SubagentSpawner")
	}
}

func TestIngestIsNoOp(t *testing.T) {
	e := legacy.New(legacy.Options{Counter: core.Chars4{}})
	res, err := e.Ingest(context.Background(), core.IngestParams{SessionID: "s", Message: core.UserText("hi", 1)})
	if err != nil || res.Ingested {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestAssemblePassThrough(t *testing.T) {
	tc := core.DefaultCounter()
	e := legacy.New(legacy.Options{Counter: tc})
	msgs := []core.Message{
		core.MustParseMessage(`{"role":"user","content":"héllo <b>&</b>","timestamp":1,"extra":{"kept":true}}`),
		core.AssistantToolCall("c1", "read", map[string]string{"path": "a.go"}, 2),
		core.ToolResult("c1", "read", "package a", false, 3),
		core.AssistantText("done", 4),
	}
	res, err := e.Assemble(context.Background(), core.AssembleParams{SessionID: "s", Messages: msgs, TokenBudget: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != len(msgs) {
		t.Fatalf("%d messages, want %d", len(res.Messages), len(msgs))
	}
	for i := range msgs {
		if !bytes.Equal(res.Messages[i].Raw(), msgs[i].Raw()) {
			t.Errorf("message %d changed", i)
		}
	}
	want := core.CountMessages(tc, msgs)
	if res.EstimatedTokens != want || want == 0 {
		t.Errorf("estimatedTokens %d, want %d", res.EstimatedTokens, want)
	}
	if res.SystemPromptAddition != "" || res.PromptAuthority != "" || res.ContextProjection != nil {
		t.Errorf("legacy added to the prompt: %+v", res)
	}
	// The budget is the host's business (its limit stage): legacy never trims.
	if res.EstimatedTokens <= 10 {
		t.Error("test needs messages over the budget")
	}
	empty, err := e.Assemble(context.Background(), core.AssembleParams{SessionID: "s"})
	if err != nil || empty.Messages == nil || len(empty.Messages) != 0 || empty.EstimatedTokens != 0 {
		t.Errorf("empty assemble: %+v %v", empty, err)
	}
}

func TestCompactWithoutSessionFile(t *testing.T) {
	e := legacy.New(legacy.Options{Counter: core.Chars4{}})
	res, err := e.Compact(context.Background(), core.CompactParams{SessionID: "s", Force: true})
	if err != nil || res.OK || res.Compacted || res.Reason != legacy.ReasonNoSessionFile {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestCompactDelegates(t *testing.T) {
	path := fixture(t)
	orig, _ := os.ReadFile(path)
	e := legacy.New(legacy.Options{Counter: core.Chars4{}, Compaction: compaction.Options{KeepRecentTokens: 300}})
	res, err := e.Compact(context.Background(), core.CompactParams{SessionID: "s", SessionFile: path,
		Force: true, CompactionTarget: core.CompactionTargetThreshold, CustomInstructions: "keep the outage"})
	if err != nil || !res.OK || !res.Compacted {
		t.Fatalf("%+v %v", res, err)
	}
	if res.Result.TokensAfter >= res.Result.TokensBefore || res.Result.FirstKeptEntryID == "" {
		t.Errorf("result %+v", res.Result)
	}
	if !strings.Contains(res.Result.Summary, "keep the outage") {
		t.Error("focus text missing from the summary")
	}
	now, _ := os.ReadFile(path)
	if !bytes.HasPrefix(now, orig) {
		t.Fatal("earlier lines changed")
	}
	tr, err := core.ReadTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	w := tr.Window()
	if w.Compaction == nil || w.Compaction.Summary != res.Result.Summary || w.Entries[0].ID != res.Result.FirstKeptEntryID {
		t.Fatal("the window does not reflect the compaction")
	}
	// The default summarizer is the extractive one.
	if got := e.Options().Summarizer.Name(); got != "extractive" {
		t.Errorf("default summarizer %q", got)
	}
	var d compaction.Details
	if err := json.Unmarshal(res.Result.Details, &d); err != nil || d.Summarizer != "extractive" {
		t.Errorf("details %s: %v", res.Result.Details, err)
	}
}

func TestCompactNeverLosesTheSession(t *testing.T) {
	e := legacy.New(legacy.Options{Counter: core.Chars4{}})
	// A missing transcript: ok:false with a reason, not an error.
	res, err := e.Compact(context.Background(), core.CompactParams{SessionFile: filepath.Join(t.TempDir(), "gone.jsonl"), Force: true})
	if err != nil || res.OK || !strings.Contains(res.Reason, "no such file") {
		t.Fatalf("%+v %v", res, err)
	}
	// Cancellation propagates as an error (the host's abort).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	path := fixture(t)
	orig, _ := os.ReadFile(path)
	_, err = e.Compact(ctx, core.CompactParams{SessionFile: path, Force: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled compact: %v", err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Fatal("a cancelled compaction wrote the transcript")
	}
}

func TestFactory(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		config  string
		wantErr bool
		check   func(t *testing.T, e *legacy.Engine)
	}{
		{name: "absent", config: ""},
		{name: "null", config: "null"},
		{name: "empty", config: "{}", check: func(t *testing.T, e *legacy.Engine) {
			if e.Options().Counter.Name() != core.EncodingO200k {
				t.Errorf("counter %s", e.Options().Counter.Name())
			}
		}},
		{name: "full", config: `{"counter":"chars4","contextWindow":64000,"reserveTokens":9000,"keepRecentTokens":5000,
			"summarizerWindowTokens":8000,"summaryTokens":500,"maxSummaryChars":4000,"summarizer":{"kind":"extractive"}}`,
			check: func(t *testing.T, e *legacy.Engine) {
				o := e.Options()
				if o.Counter.Name() != core.CounterChars4 || o.Compaction.ContextWindow != 64000 ||
					o.Compaction.ReserveTokens != 9000 || o.Compaction.KeepRecentTokens != 5000 ||
					o.Compaction.SummarizerWindowTokens != 8000 || o.Compaction.SummaryTokens != 500 ||
					o.Compaction.MaxSummaryChars != 4000 || o.Summarizer.Name() != "extractive" {
					t.Errorf("options %+v", o)
				}
			}},
		{name: "unknown field", config: `{"keepRecent":1}`, wantErr: true},
		{name: "negative", config: `{"reserveTokens":-1}`, wantErr: true},
		{name: "bad counter", config: `{"counter":"p50k"}`, wantErr: true},
		{name: "bad summarizer", config: `{"summarizer":{"kind":"oracle"}}`, wantErr: true},
		{name: "not an object", config: `[1]`, wantErr: true},
		{name: "trailing", config: `{} {}`, wantErr: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng, err := legacy.Factory(ctx, core.FactoryOptions{Config: json.RawMessage(c.config)})
			if c.wantErr {
				if !errors.Is(err, legacy.ErrInvalidConfig) {
					t.Fatalf("err %v, want ErrInvalidConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if eng.Info().ID != "legacy" {
				t.Fatalf("info %+v", eng.Info())
			}
			if c.check != nil {
				c.check(t, eng.(*legacy.Engine))
			}
		})
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{"", "null", "{}", `{"counter":"chars4"}`, `{"reserveTokens":-5}`,
		`{"summarizer":{"kind":"extractive"}}`, `{"contextWindow":1e3}`, `{"x":1}`, "[", `"str"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := legacy.ParseConfig(raw)
		if err != nil {
			if !errors.Is(err, legacy.ErrInvalidConfig) {
				t.Fatalf("error not wrapping ErrInvalidConfig: %v", err)
			}
			return
		}
		if c.ContextWindow < 0 || c.ReserveTokens < 0 || c.KeepRecentTokens < 0 {
			t.Fatalf("negative figure accepted: %+v", c)
		}
	})
}
