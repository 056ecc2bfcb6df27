package lossless

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/summarize"
)

// TestDefaultSummarizerByHost: with no summarizer configured, an engine
// under OpenClaw (Config.Host, set by Factory from FactoryOptions.Host)
// summarizes with the host's model in a Guard with the extractive
// fallback and the default spend cap, and compacts in maintain (not in the
// background); without a host (the CLI, Go hosts) the extractive
// summarizer stays the default. An explicit kind wins either way, and
// settings without a kind apply to the default kind.
func TestDefaultSummarizerByHost(t *testing.T) {
	spend := summarize.NewSpend()
	for _, tc := range []struct {
		name, host, summarizer string
		wantName               string
		wantCap                *summarize.SpendCap
	}{
		{"cli", "", "", "extractive", nil},
		{"openclaw", core.HostOpenClaw, "", summarize.KindHost, spend.Cap(0, 0)},
		{"openclaw-null", core.HostOpenClaw, "null", summarize.KindHost, spend.Cap(0, 0)},
		{"openclaw-explicit-extractive", core.HostOpenClaw, `{"kind":"extractive"}`, "extractive", nil},
		{"openclaw-cap-only", core.HostOpenClaw, `{"maxCallsPerHour":30,"maxTokensPerHour":200000}`, summarize.KindHost, spend.Cap(30, 200_000)},
		{"cli-cap-only", "", `{"maxTokensPerHour":200000}`, "extractive", nil},
		{"cli-explicit-host", "", `{"kind":"host"}`, summarize.KindHost, spend.Cap(0, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openTest(t, func(c *config.Config) {
				c.Host = tc.host
				c.Summarizer = json.RawMessage(tc.summarizer)
				c.Spend = spend
			})
			s, err := e.Summarizer()
			if err != nil {
				t.Fatal(err)
			}
			if s.Name() != tc.wantName {
				t.Fatalf("summarizer %q, want %q", s.Name(), tc.wantName)
			}
			g, isGuard := s.(*summarize.Guard)
			if (tc.wantCap != nil) != isGuard || (isGuard && g.Cap() != tc.wantCap) {
				t.Fatalf("summarizer %T; want a Guard with cap %p", s, tc.wantCap)
			}
			if e.hostSummarizer() != (tc.wantName == summarize.KindHost) {
				t.Fatalf("hostSummarizer %v", e.hostSummarizer())
			}
		})
	}
	// Factory carries the host's name into the engine.
	for _, host := range []string{"", core.HostOpenClaw} {
		raw, _ := json.Marshal(map[string]any{"storeDir": t.TempDir()})
		eng, err := Factory(context.Background(), core.FactoryOptions{Config: raw, Host: host})
		if err != nil {
			t.Fatal(err)
		}
		e := eng.(*Engine)
		s, err := e.Summarizer()
		want := map[string]string{"": "extractive", core.HostOpenClaw: summarize.KindHost}[host]
		if err != nil || e.Config().Host != host || s.Name() != want {
			t.Fatalf("Factory host %q: config host %q, summarizer %v %v; want %s", host, e.Config().Host, s, err, want)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEnginesShareSpend: the engines one factory makes with a spend (the
// process's: lossless serve's, the registered factory's) share the
// summarizer's spend cap and guard, so that what one spends counts
// against the other; the engines of Factory, or of another spend, do
// not.
func TestEnginesShareSpend(t *testing.T) {
	ctx := context.Background()
	open := func(f core.Factory) *Engine {
		t.Helper()
		raw, _ := json.Marshal(map[string]any{"storeDir": t.TempDir(), "summarizer": map[string]any{"kind": "host", "maxCallsPerHour": 1}})
		eng, err := f(ctx, core.FactoryOptions{Config: raw})
		if err != nil {
			t.Fatal(err)
		}
		e := eng.(*Engine)
		t.Cleanup(func() { _ = e.Close() })
		return e
	}
	guardOf := func(e *Engine) *summarize.Guard {
		t.Helper()
		s, err := e.Summarizer()
		if err != nil {
			t.Fatal(err)
		}
		g, ok := s.(*summarize.Guard)
		if !ok {
			t.Fatalf("summarizer %T, want a Guard", s)
		}
		return g
	}
	process := NewFactory(summarize.NewSpend())
	a, b := guardOf(open(process)), guardOf(open(process))
	if a.Cap() != b.Cap() {
		t.Fatal("two engines of one process have two spend caps")
	}
	// One call by a's engine takes the hour's only call from b's too.
	host := summarize.WithHostLLM(ctx, func(context.Context, string, string, int) (string, error) { return "summary", nil })
	req := core.SummarizeRequest{Text: strings.Repeat("a long enough text to summarize. ", 40), TargetTokens: 50}
	if _, err := a.Summarize(host, req); err != nil {
		t.Fatal(err)
	}
	if u := b.Cap().Usage(); u.Calls != 1 || u.MaxCalls != 1 {
		t.Fatalf("b's cap after a's call: %+v, want 1 call of 1", u)
	}
	for _, other := range []*summarize.Guard{guardOf(open(Factory)), guardOf(open(NewFactory(summarize.NewSpend())))} {
		if other.Cap() == a.Cap() {
			t.Fatal("an engine of another spend shares the process's cap")
		}
		if u := other.Cap().Usage(); u.Calls != 0 {
			t.Fatalf("another spend's cap counts a's call: %+v", u)
		}
	}
}

// TestOpenRefusesBadSummarizer: a summarizer config that cannot work is
// refused by Open (and Validate, which doctor --config runs), naming it.
func TestOpenRefusesBadSummarizer(t *testing.T) {
	for raw, want := range map[string]string{
		`{"maxTokenPerHour":5}`:   `unknown field "maxTokenPerHour"`,
		`{"maxTokensPerHour":-4}`: "maxTokensPerHour -4",
		`{"kind":"gemini"}`:       `unknown summarizer kind "gemini"`,
	} {
		cfg := testConfig(t.TempDir())
		cfg.Summarizer = json.RawMessage(raw)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "summarizer") {
			t.Errorf("%s: Validate %v, want an error naming %q", raw, err, want)
		}
		if e, err := Open(context.Background(), cfg); err == nil {
			e.Close()
			t.Errorf("%s: Open accepted it", raw)
		}
	}
}

// hostSession commits n turns of a session under OpenClaw's identity.
func hostSession(t *testing.T, e *Engine, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		p := commitParams("sess-1", fmt.Sprintf("adv-%d", i), i)
		p.SessionKey, p.SessionTarget = hostKey, hostTarget
		if _, err := e.CommitTurn(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
}

// compactDetails decodes a compact result's details.
func compactDetails(t *testing.T, res core.CompactResult) orchestrate.CompactDetails {
	t.Helper()
	var d orchestrate.CompactDetails
	if res.Result == nil || json.Unmarshal(res.Result.Details, &d) != nil {
		t.Fatalf("no details in %+v", res)
	}
	return d
}

// TestOpenClawDefaultSummarizerCompacts: under OpenClaw with the default
// summarizer, compact (which the host calls with llm.complete) summarizes
// with the host's model, charging the host's reported usage to the cap; a
// compact without llm.complete gets the extractive summaries and says why
// in its details, and fails nothing; with a tiny token cap the host's
// model is not called at all, the extractive summarizer answers, the
// details name the cap, and the compaction succeeds.
func TestOpenClawDefaultSummarizerCompacts(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	rcWith := func() *core.RuntimeContext {
		return &core.RuntimeContext{Values: map[string]json.RawMessage{"transcriptStorage": json.RawMessage(`{"kind":"sqlite"}`)},
			LLMComplete: func(_ context.Context, req core.LLMRequest) (core.LLMResponse, error) {
				calls.Add(1)
				return core.LLMResponse{Text: modelSummary(req, "HOST-SUMMARY"), Usage: &core.LLMUsage{InputTokens: 1000, OutputTokens: 10}}, nil
			}}
	}
	compact := func(e *Engine, rc *core.RuntimeContext) orchestrate.CompactDetails {
		t.Helper()
		res, err := e.Compact(ctx, core.CompactParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget,
			SessionFile: hostKey, TokenBudget: 800, Force: true, RuntimeContext: rc})
		if err != nil || !res.OK || !res.Compacted {
			t.Fatalf("compact: %+v %v", res, err)
		}
		return compactDetails(t, res)
	}

	t.Run("default", func(t *testing.T) {
		calls.Store(0)
		e := openTest(t, func(c *config.Config) {
			c.Host = core.HostOpenClaw
			c.FreshTailMessages = 4
			c.LeafChunkTokens = 400
			// its own cap, so that other tests' calls do not count
			c.Summarizer = json.RawMessage(`{"maxCallsPerHour":1000,"maxTokensPerHour":100000000}`)
		})
		hostSession(t, e, 0, 40)
		d := compact(e, rcWith())
		if d.Summarizer != summarize.KindHost || calls.Load() == 0 || int(calls.Load()) != d.SummarizerCalls || d.SummarizerFallbacks != 0 {
			t.Fatalf("with llm.complete: %d host calls, details %+v", calls.Load(), d)
		}
		s, _ := e.Summarizer()
		if u := s.(*summarize.Guard).Cap().Usage(); u.Calls != int(calls.Load()) || u.Tokens != 1010*int(calls.Load()) {
			t.Fatalf("cap usage %+v after %d calls, want the host's reported 1010 tokens each", u, calls.Load())
		}
		// compact without llm.complete: the extractive summaries, no failure
		hostSession(t, e, 40, 60)
		before := calls.Load()
		d = compact(e, &core.RuntimeContext{Values: rcWith().Values})
		if calls.Load() != before || d.SummarizerFallbacks == 0 || !strings.Contains(d.SummarizerFallbackReason, "not offered") {
			t.Fatalf("without llm.complete: %d host calls, details %+v", calls.Load()-before, d)
		}
	})

	t.Run("tiny-cap", func(t *testing.T) {
		calls.Store(0)
		e := openTest(t, func(c *config.Config) {
			c.Host = core.HostOpenClaw
			c.FreshTailMessages = 4
			c.LeafChunkTokens = 400
			c.Summarizer = json.RawMessage(`{"maxTokensPerHour":1}`)
		})
		hostSession(t, e, 0, 40)
		d := compact(e, rcWith())
		if calls.Load() != 0 || d.SummarizerFallbacks == 0 || !strings.Contains(d.SummarizerFallbackReason, "maxTokensPerHour 1 ") {
			t.Fatalf("tiny cap: %d host calls, details %+v", calls.Load(), d)
		}
	})
}

// TestHostModelCannedRepliesRefused: under OpenClaw, a host model that
// answers every summary request with a canned reply ("Noted. …") is asked
// once more per summary with a stricter prompt that says what was wrong;
// then the extractive summary is stored, with method "refused" and the
// reason, the conversation record counts it (Stats, and so doctor), and
// the compaction's details say so. A model whose stricter answer is a
// summary gets it stored as its own, and nothing is counted.
func TestHostModelCannedRepliesRefused(t *testing.T) {
	ctx := context.Background()
	type request struct{ system, user string }
	run := func(t *testing.T, answer func(n int, req core.LLMRequest) string) (*Engine, orchestrate.CompactDetails, []request) {
		t.Helper()
		e := openTest(t, func(c *config.Config) {
			c.Host = core.HostOpenClaw
			c.FreshTailMessages = 4
			c.LeafChunkTokens = 400
			c.Summarizer = json.RawMessage(`{"maxCallsPerHour":1000,"maxTokensPerHour":100000000}`)
		})
		hostSession(t, e, 0, 40)
		var mu sync.Mutex
		var reqs []request
		rc := &core.RuntimeContext{Values: map[string]json.RawMessage{"transcriptStorage": json.RawMessage(`{"kind":"sqlite"}`)},
			LLMComplete: func(_ context.Context, req core.LLMRequest) (core.LLMResponse, error) {
				mu.Lock()
				reqs = append(reqs, request{req.System, req.Messages[0].Text()})
				n := 0
				for _, r := range reqs {
					if r.user == req.Messages[0].Text() {
						n++
					}
				}
				mu.Unlock()
				return core.LLMResponse{Text: answer(n, req)}, nil
			}}
		res, err := e.Compact(ctx, core.CompactParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget,
			SessionFile: hostKey, TokenBudget: 800, Force: true, RuntimeContext: rc})
		if err != nil || !res.OK || !res.Compacted {
			t.Fatalf("compact: %+v %v", res, err)
		}
		return e, compactDetails(t, res), reqs
	}
	stored := func(t *testing.T, e *Engine) (sums []dag.Summary, refused int64) {
		t.Helper()
		err := e.View(ctx, func(r store.Reader) error {
			for cr, err := range r.Conversations() {
				if err != nil {
					return err
				}
				refused += cr.RefusedSummaries
				for s, err := range r.Summaries(cr.ID) {
					if err != nil {
						return err
					}
					sums = append(sums, s)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return sums, refused
	}

	t.Run("canned", func(t *testing.T) {
		e, d, reqs := run(t, func(n int, _ core.LLMRequest) string {
			return "Noted. That should not change the schedule much."
		})
		sums, refused := stored(t, e)
		if len(sums) == 0 || d.SummarizerRefused != len(sums) || refused != int64(len(sums)) || d.SummarizerFallbacks != len(sums) {
			t.Fatalf("%d summaries, %d counted on the record; details %+v", len(sums), refused, d)
		}
		for _, s := range sums {
			if s.Method != dag.MethodRefused || !strings.Contains(s.Refused, "too short to summarize") ||
				strings.Contains(s.Text, "Noted") || !strings.Contains(s.Text, "file-") {
				t.Fatalf("summary %s: method %q, refused %q, text %q; want the extractive summary, refused", s.ID, s.Method, s.Refused, s.Text)
			}
		}
		// Two requests per summary, the second with the stricter prompt.
		if len(reqs) != 2*len(sums) {
			t.Fatalf("%d requests for %d summaries, want two each", len(reqs), len(sums))
		}
		byUser := map[string][]string{}
		for _, r := range reqs {
			byUser[r.user] = append(byUser[r.user], r.system)
		}
		for _, systems := range byUser {
			if len(systems) != 2 || strings.Contains(systems[0], "refused") || systems[0] == systems[1] ||
				!strings.Contains(systems[1], "Your previous answer to this request was refused: the answer (") ||
				!strings.Contains(systems[1], `"Noted. That should not change the schedule much.") is too short`) {
				t.Fatalf("the requests of one summary: %q", systems)
			}
		}
		st, err := e.Stats(ctx)
		if err != nil || st.Agents["main"].RefusedSummaries != int64(len(sums)) {
			t.Fatalf("stats %+v %v, want %d refused summaries", st, err, len(sums))
		}
	})

	t.Run("stricter-retry-answers", func(t *testing.T) {
		e, d, reqs := run(t, func(n int, req core.LLMRequest) string {
			if n == 1 {
				return "Sure! Let me know if you need anything else."
			}
			return modelSummary(req, "HOST-SUMMARY")
		})
		sums, refused := stored(t, e)
		if len(sums) == 0 || refused != 0 || d.SummarizerRefused != 0 || d.SummarizerFallbacks != 0 || len(reqs) != 2*len(sums) {
			t.Fatalf("%d summaries, %d refused, %d requests; details %+v", len(sums), refused, len(reqs), d)
		}
		for _, s := range sums {
			if s.Method != dag.MethodNormal || s.Refused != "" || !strings.HasPrefix(s.Text, "HOST-SUMMARY") {
				t.Fatalf("summary %s: method %q, refused %q, text %q", s.ID, s.Method, s.Refused, s.Text)
			}
		}
	})
}
