package lossless

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// BenchmarkHostSummarizerCost measures what OpenClaw's default summarizer
// (the host's model) costs on the real pi-mono sessions, replayed as
// OpenClaw drives the engine: each turn (a user message and what follows
// it) committed in order, then maintain (reason "turn") with llm.complete,
// which compacts when the context passes contextThreshold of the budget
// (128,000 tokens, the default). The fake host model answers with the
// first half of the prompt's transcript, at most the answer cap, and
// reports the prompt and answer tokens (the engine's o200k count) as
// usage. The spend cap is off so that the whole cost shows. Reported:
// compactions, summarizer calls and tokens (prompt + answer) per
// compaction and per session, and per hour of the session's own
// timestamps. Run with -benchtime 1x.
func BenchmarkHostSummarizerCost(b *testing.B) {
	for _, path := range testutil.PiMono(b) {
		turns, hours := piMonoTurns(b, path)
		b.Run(filepath.Base(path), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				e := openTest(b, func(c *config.Config) {
					c.Host = core.HostOpenClaw
					c.Summarizer = json.RawMessage(`{"maxCallsPerHour":-1,"maxTokensPerHour":-1}`)
				})
				var mu sync.Mutex
				var calls, in, out, compactions int
				rc := &core.RuntimeContext{Values: map[string]json.RawMessage{"transcriptStorage": json.RawMessage(`{"kind":"sqlite"}`)},
					LLMComplete: func(_ context.Context, req core.LLMRequest) (core.LLMResponse, error) {
						prompt := req.Messages[0].Text()
						p := e.tc.CountText(req.System) + e.tc.CountText(prompt)
						ans := core.Truncate(e.tc, prompt[:len(prompt)/2], req.MaxTokens)
						a := e.tc.CountText(ans)
						mu.Lock()
						calls, in, out = calls+1, in+p, out+a
						mu.Unlock()
						return core.LLMResponse{Text: ans, Usage: &core.LLMUsage{InputTokens: p, OutputTokens: a}}, nil
					}}
				b.StartTimer()
				ctx := context.Background()
				for n, turn := range turns {
					commitReplayTurn(b, e, n, turn)
					before := calls
					if _, err := e.Maintain(ctx, core.MaintainParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget,
						SessionFile: hostKey, Reason: core.MaintainReasonTurn, RuntimeContext: rc}); err != nil {
						b.Fatal(err)
					}
					if calls > before {
						compactions++
					}
				}
				b.StopTimer()
				if compactions == 0 {
					b.Fatalf("%s: no compaction in %d turns", path, len(turns))
				}
				tokens := float64(in + out)
				b.ReportMetric(float64(len(turns)), "turns")
				b.ReportMetric(hours, "session-hours")
				b.ReportMetric(float64(compactions), "compactions")
				b.ReportMetric(float64(calls)/float64(compactions), "calls/compaction")
				b.ReportMetric(tokens/float64(compactions), "tokens/compaction")
				b.ReportMetric(float64(in)/float64(calls), "prompt-tokens/call")
				b.ReportMetric(float64(calls), "calls/session")
				b.ReportMetric(tokens, "tokens/session")
				if hours > 0 {
					b.ReportMetric(tokens/hours, "tokens/session-hour")
					b.ReportMetric(float64(calls)/hours, "calls/session-hour")
				}
				b.StartTimer()
			}
		})
	}
}

// piMonoTurns reads a pi-mono transcript as turns (a user message and what
// follows it) and the hours its timestamps span.
func piMonoTurns(b *testing.B, path string) ([][]core.Message, float64) {
	b.Helper()
	tr, err := core.ReadTranscript(path)
	if err != nil {
		b.Fatal(err)
	}
	var msgs []core.Message
	for _, en := range tr.Entries {
		if m, ok := en.ModelMessage(); ok {
			msgs = append(msgs, m)
		}
	}
	var turns [][]core.Message
	for _, m := range msgs {
		if m.Role() == core.RoleUser || len(turns) == 0 {
			turns = append(turns, nil)
		}
		turns[len(turns)-1] = append(turns[len(turns)-1], m)
	}
	return turns, float64(msgs[len(msgs)-1].Timestamp()-msgs[0].Timestamp()) / 3_600_000
}

// commitReplayTurn commits turn n of a replayed session as OpenClaw does.
func commitReplayTurn(b *testing.B, e *Engine, n int, turn []core.Message) {
	b.Helper()
	p := core.CommitTurnParams{AdvancementKey: fmt.Sprintf("adv-%d", n), SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget,
		Admission: core.AdmissionAnchor{EntryAnchor: core.EntryAnchor{SessionID: "sess-1", EntryID: fmt.Sprintf("u%d", n)},
			LogicalTurnID: fmt.Sprintf("turn-%d", n), Role: turn[0].Role()},
		Terminal: core.EntryAnchor{SessionID: "sess-1", EntryID: fmt.Sprintf("t%d", n)},
		Messages: turn}
	if _, err := e.CommitTurn(context.Background(), p); err != nil {
		b.Fatal(err)
	}
}

// timedSummarizer counts its inner summarizer's calls and their time.
type timedSummarizer struct {
	inner core.Summarizer
	mu    sync.Mutex
	calls int
	spent time.Duration
}

func (t *timedSummarizer) Name() string { return t.inner.Name() }
func (t *timedSummarizer) Summarize(ctx context.Context, req core.SummarizeRequest) (string, error) {
	start := time.Now()
	out, err := t.inner.Summarize(ctx, req)
	t.mu.Lock()
	t.calls++
	t.spent += time.Since(start)
	t.mu.Unlock()
	return out, err
}

// BenchmarkExtractiveCompactionCost is BenchmarkHostSummarizerCost's
// replay with the CLI's and Go hosts' default, the extractive summarizer:
// each turn committed, its background compaction waited for. Reported:
// compactions, summarizer calls per compaction, the extractive
// summarizer's own time per compaction (CPU: it makes no I/O) and the
// whole compaction's wall time (store reads and writes included). Run
// with -benchtime 1x.
func BenchmarkExtractiveCompactionCost(b *testing.B) {
	for _, path := range testutil.PiMono(b) {
		turns, _ := piMonoTurns(b, path)
		b.Run(filepath.Base(path), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				e := openTest(b)
				sum, err := e.Summarizer()
				if err != nil || sum.Name() != "extractive" {
					b.Fatalf("default summarizer %v %v", sum, err)
				}
				ts := &timedSummarizer{inner: sum}
				e.SetSummarizer(ts)
				compactions := 0
				var wall time.Duration
				b.StartTimer()
				for n, turn := range turns {
					commitReplayTurn(b, e, n, turn)
					before := ts.calls
					start := time.Now()
					e.waitBackground()
					if ts.calls > before {
						compactions++
						wall += time.Since(start)
					}
				}
				b.StopTimer()
				if compactions == 0 {
					b.Fatalf("%s: no compaction in %d turns", path, len(turns))
				}
				b.ReportMetric(float64(compactions), "compactions")
				b.ReportMetric(float64(ts.calls)/float64(compactions), "calls/compaction")
				b.ReportMetric(float64(ts.spent.Milliseconds())/float64(compactions), "summarizer-ms/compaction")
				b.ReportMetric(float64(wall.Milliseconds())/float64(compactions), "compaction-ms/compaction")
			}
		})
	}
}
