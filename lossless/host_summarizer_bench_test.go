package lossless

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
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
		// Turns: a user message and what follows it.
		var turns [][]core.Message
		for _, m := range msgs {
			if m.Role() == core.RoleUser || len(turns) == 0 {
				turns = append(turns, nil)
			}
			turns[len(turns)-1] = append(turns[len(turns)-1], m)
		}
		hours := float64(msgs[len(msgs)-1].Timestamp()-msgs[0].Timestamp()) / 3_600_000
		b.Run(filepath.Base(path), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				e := openTest(b, func(c *Config) {
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
					p := core.CommitTurnParams{AdvancementKey: fmt.Sprintf("adv-%d", n), SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget,
						Admission: core.AdmissionAnchor{EntryAnchor: core.EntryAnchor{SessionID: "sess-1", EntryID: fmt.Sprintf("u%d", n)},
							LogicalTurnID: fmt.Sprintf("turn-%d", n), Role: turn[0].Role()},
						Terminal: core.EntryAnchor{SessionID: "sess-1", EntryID: fmt.Sprintf("t%d", n)},
						Messages: turn}
					if _, err := e.CommitTurn(ctx, p); err != nil {
						b.Fatal(err)
					}
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
