package contextengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// logBuffer is a concurrency-safe buffer for slog output.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func withLog(r *Registry) *logBuffer {
	buf := &logBuffer{}
	r.SetLogger(slog.New(slog.NewTextHandler(buf, nil)))
	return buf
}

func msgs(texts ...string) []core.Message {
	var out []core.Message
	for i, t := range texts {
		out = append(out, core.UserText(t, int64(i+1)))
	}
	return out
}

func TestResolutionFailuresQuarantine(t *testing.T) {
	tests := []struct {
		name    string
		factory core.Factory // nil: not registered
		op      string
		reason  string
	}{
		{"unregistered", nil, OpResolve, "not registered"},
		{"factory error", func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
			return nil, errors.New("disk on fire")
		}, OpFactory, "disk on fire"},
		{"factory panic", func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
			panic("boom in factory")
		}, OpFactory, "boom in factory"},
		{"nil engine", func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
			return nil, nil
		}, OpContract, "nil engine"},
		{"empty info.id", func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
			f := newFake("x")
			f.info = &core.Info{ID: "", Name: "No ID"}
			return f, nil
		}, OpContract, "info.id is empty"},
		{"empty info.name", func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
			f := newFake("x")
			f.info = &core.Info{ID: "x"}
			return f, nil
		}, OpContract, "info.name is empty"},
		{"info panics", func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
			f := newFake("x")
			f.panics[OpInfo] = true
			return f, nil
		}, OpContract, "info exploded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry()
			logs := withLog(r)
			if tc.factory != nil {
				if err := r.Register("bad", tc.factory, "acme"); err != nil {
					t.Fatal(err)
				}
			}
			g, err := r.Open(context.Background(), slotConfig("bad"))
			if err != nil {
				t.Fatalf("Open failed instead of falling back: %v", err)
			}
			if !g.Quarantined() || g.Info().ID != LegacyID {
				t.Fatalf("not on legacy: quarantined=%v info=%+v", g.Quarantined(), g.Info())
			}
			res := g.Resolution()
			if res.EngineID != LegacyID || res.Reason != ReasonQuarantined || res.Slot != "bad" {
				t.Fatalf("resolution = %+v", res)
			}
			qs := r.Quarantines()
			if len(qs) != 1 || qs[0].EngineID != "bad" || qs[0].Operation != tc.op ||
				!strings.Contains(qs[0].Reason, tc.reason) || qs[0].FailedAt.IsZero() {
				t.Fatalf("quarantine records = %+v", qs)
			}
			line := logs.String()
			if strings.Count(line, "\n") != 1 || !strings.Contains(line, "engine=bad") ||
				!strings.Contains(line, "operation="+tc.op) || !strings.Contains(line, tc.reason) {
				t.Fatalf("log = %q", line)
			}
			if tc.factory != nil && !strings.Contains(line, "owner=acme") {
				t.Fatalf("log lacks owner: %q", line)
			}
			// Legacy serves: pass-through assemble.
			in := msgs("a", "b")
			out, err := g.Assemble(context.Background(), core.AssembleParams{SessionID: "s", Messages: in})
			if err != nil || len(out.Messages) != 2 || !bytes.Equal(out.Messages[1].Raw(), in[1].Raw()) {
				t.Fatalf("legacy assemble = %+v, %v", out, err)
			}
			// Quarantine is for the process: opening again stays on legacy, no new log line.
			g2, err := r.Open(context.Background(), slotConfig("bad"))
			if err != nil || !g2.Quarantined() || strings.Count(logs.String(), "\n") != 1 {
				t.Fatalf("second open: %v quarantined=%v logs=%q", err, g2.Quarantined(), logs.String())
			}
		})
	}
}

func TestMethodFailureReRunsOnLegacy(t *testing.T) {
	type call func(g *Guarded) (any, error)
	in := msgs("hello", "world")
	ops := []struct {
		op   string
		call call
		// want is the legacy (or canned) result after the failure.
		check func(t *testing.T, res any)
	}{
		{OpIngest, func(g *Guarded) (any, error) {
			return g.Ingest(context.Background(), core.IngestParams{SessionID: "s", Message: in[0]})
		}, func(t *testing.T, res any) {
			if res.(core.IngestResult).Ingested {
				t.Fatal("legacy ingest must report ingested:false")
			}
		}},
		{OpAssemble, func(g *Guarded) (any, error) {
			return g.Assemble(context.Background(), core.AssembleParams{SessionID: "s", Messages: in})
		}, func(t *testing.T, res any) {
			r := res.(core.AssembleResult)
			if len(r.Messages) != 2 || r.SystemPromptAddition != "" || !bytes.Equal(r.Messages[0].Raw(), in[0].Raw()) {
				t.Fatalf("legacy assemble = %+v", r)
			}
		}},
		{OpAfterTurn, func(g *Guarded) (any, error) {
			return nil, g.AfterTurn(context.Background(), core.AfterTurnParams{SessionID: "s", Messages: in})
		}, func(t *testing.T, res any) {}},
		{OpBootstrap, func(g *Guarded) (any, error) {
			return g.Bootstrap(context.Background(), core.BootstrapParams{SessionID: "s"})
		}, func(t *testing.T, res any) {
			if r := res.(core.BootstrapResult); r.Bootstrapped || r.Reason != DowngradedReason {
				t.Fatalf("canned bootstrap = %+v", r)
			}
		}},
		{OpMaintain + ":turn", func(g *Guarded) (any, error) {
			return g.Maintain(context.Background(), core.MaintainParams{SessionID: "s", Reason: "turn"})
		}, func(t *testing.T, res any) {
			if r := res.(core.MaintainResult); r != (core.MaintainResult{}) {
				t.Fatalf("canned maintain = %+v", r)
			}
		}},
		{OpIngestBatch, func(g *Guarded) (any, error) {
			return g.IngestBatch(context.Background(), core.IngestBatchParams{SessionID: "s", Messages: in})
		}, func(t *testing.T, res any) {
			if r := res.(core.IngestBatchResult); r.IngestedCount != 0 {
				t.Fatalf("canned ingestBatch = %+v", r)
			}
		}},
		{OpOnSubagentEnded, func(g *Guarded) (any, error) {
			return nil, g.OnSubagentEnded(context.Background(), core.SubagentEndedParams{ChildSessionKey: "c"})
		}, func(t *testing.T, res any) {}},
	}
	for _, mode := range []string{"error", "panic"} {
		for _, tc := range ops {
			t.Run(mode+"/"+tc.op, func(t *testing.T) {
				f := newFake("lossless")
				if mode == "error" {
					f.fail[tc.op] = errors.New("engine broke")
				} else {
					f.panics[tc.op] = true
				}
				r := registryWith("lossless", f)
				logs := withLog(r)
				g, err := r.Open(context.Background(), slotConfig("lossless"))
				if err != nil || g.Quarantined() {
					t.Fatalf("open: %v", err)
				}
				res, err := tc.call(g)
				if err != nil {
					t.Fatalf("%s after failure returned %v, want the legacy re-run", tc.op, err)
				}
				tc.check(t, res)
				if !g.Quarantined() || g.Info().ID != LegacyID {
					t.Fatal("engine not quarantined")
				}
				q, ok := r.Quarantined("lossless")
				if !ok || !strings.HasPrefix(tc.op, q.Operation) || q.Owner != "acme" {
					t.Fatalf("record = %+v", q)
				}
				if !strings.Contains(logs.String(), "operation="+q.Operation) {
					t.Fatalf("log = %q", logs.String())
				}
				// Later calls never reach the engine.
				before := len(f.Calls())
				if _, err := g.Assemble(context.Background(), core.AssembleParams{SessionID: "s", Messages: in}); err != nil {
					t.Fatal(err)
				}
				if len(f.Calls()) != before {
					t.Fatalf("quarantined engine still called: %v", f.Calls())
				}
			})
		}
	}
}

func TestCompactAndSpawnReturnTheError(t *testing.T) {
	for _, mode := range []string{"error", "panic"} {
		for _, op := range []string{OpCompact, OpPrepareSubagentSpawn, OpCommitTurn} {
			t.Run(mode+"/"+op, func(t *testing.T) {
				f := newFake("lossless")
				cause := errors.New("cannot summarise")
				if mode == "error" {
					f.fail[op] = cause
				} else {
					f.panics[op] = true
				}
				r := registryWith("lossless", f)
				withLog(r)
				g, _ := r.Open(context.Background(), slotConfig("lossless"))
				var err error
				switch op {
				case OpCompact:
					_, err = g.Compact(context.Background(), core.CompactParams{SessionID: "s", Force: true})
				case OpPrepareSubagentSpawn:
					_, err = g.PrepareSubagentSpawn(context.Background(), core.SubagentSpawnParams{ParentSessionKey: "p"})
				case OpCommitTurn:
					_, err = g.CommitTurn(context.Background(), core.CommitTurnParams{AdvancementKey: "k"})
				}
				if err == nil || !errors.Is(err, ErrQuarantined) {
					t.Fatalf("%s = %v, want the error", op, err)
				}
				if mode == "error" && !errors.Is(err, cause) {
					t.Fatalf("cause lost: %v", err)
				}
				if mode == "panic" && !errors.Is(err, errPanic) {
					t.Fatalf("panic not reported: %v", err)
				}
				if !g.Quarantined() {
					t.Fatal("not quarantined")
				}
				// The next compact goes to legacy.
				if op == OpCompact {
					cr, err := g.Compact(context.Background(), core.CompactParams{SessionID: "s"})
					if err != nil || cr.Compacted {
						t.Fatalf("legacy compact after quarantine = %+v, %v", cr, err)
					}
				}
			})
		}
	}
}

func TestCancellationNeverQuarantines(t *testing.T) {
	f := newFake("lossless")
	r := registryWith("lossless", f)
	logs := withLog(r)
	g, _ := r.Open(context.Background(), slotConfig("lossless"))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Assemble(ctx, core.AssembleParams{SessionID: "s"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("assemble on a cancelled ctx = %v", err)
	}
	dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer dcancel()
	f.fail[OpCompact] = dctx.Err()
	if _, err := g.Compact(dctx, core.CompactParams{SessionID: "s"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("compact past deadline = %v", err)
	}
	f.fail[OpIngest] = errors.New("aborted by caller")
	if _, err := g.Ingest(ctx, core.IngestParams{SessionID: "s"}); err == nil {
		t.Fatal("ingest error on a cancelled ctx was swallowed")
	}
	if g.Quarantined() || len(r.Quarantines()) != 0 || logs.String() != "" {
		t.Fatalf("cancellation quarantined: %+v %q", r.Quarantines(), logs.String())
	}
	// But the engine's own context error with a live caller ctx is a failure.
	f.fail[OpIngest] = context.DeadlineExceeded
	if _, err := g.Ingest(context.Background(), core.IngestParams{SessionID: "s"}); err != nil {
		t.Fatalf("re-run on legacy failed: %v", err)
	}
	if !g.Quarantined() {
		t.Fatal("an internal timeout with a live caller ctx must quarantine")
	}
}

func TestSupportsAndForwarding(t *testing.T) {
	f := newFake("bare")
	r := registryWith("bare", bareEngine{f})
	g, _ := r.Open(context.Background(), slotConfig("bare"))
	for _, op := range []string{OpBootstrap, OpMaintain, OpIngestBatch, OpAfterTurn, OpCommitTurn,
		OpPrepareSubagentSpawn, OpOnSubagentEnded, OpDispose} {
		if g.Supports(op) {
			t.Errorf("bare engine reported as supporting %s", op)
		}
	}
	for _, op := range []string{OpIngest, OpAssemble, OpCompact} {
		if !g.Supports(op) {
			t.Errorf("required %s not supported", op)
		}
	}
	// IngestBatch on an engine without it ingests one by one.
	res, err := g.IngestBatch(context.Background(), core.IngestBatchParams{SessionID: "s", Messages: msgs("a", "b", "c")})
	if err != nil || res.IngestedCount != 3 {
		t.Fatalf("batch fallback = %+v, %v", res, err)
	}
	if got := strings.Join(f.Calls(), ","); got != "ingest,ingest,ingest" {
		t.Fatalf("calls = %s", got)
	}
	full := newFake("full")
	g2, _ := registryWith("full", full).Open(context.Background(), slotConfig("full"))
	for _, op := range []string{OpBootstrap, OpMaintain, OpIngestBatch, OpAfterTurn, OpCommitTurn,
		OpPrepareSubagentSpawn, OpOnSubagentEnded, OpDispose} {
		if !g2.Supports(op) {
			t.Errorf("full engine not supporting %s", op)
		}
	}
	ctx := context.Background()
	if r, err := g2.CommitTurn(ctx, core.CommitTurnParams{}); err != nil || r.Status != core.CommitCommitted {
		t.Fatalf("commitTurn = %+v %v", r, err)
	}
	if p, err := g2.PrepareSubagentSpawn(ctx, core.SubagentSpawnParams{}); err != nil || p == nil {
		t.Fatalf("prepareSubagentSpawn = %+v %v", p, err)
	}
	if err := g2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g2.Close(); err != nil || full.closed != 1 {
		t.Fatalf("close not idempotent: %v closed=%d", err, full.closed)
	}
}

func TestLegacyParity(t *testing.T) {
	g, err := NewRegistry().Open(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if info := g.Info(); info.ID != LegacyID || info.Name == "" || info.OwnsCompaction {
		t.Fatalf("legacy info = %+v", info)
	}
	in := msgs("one", "two", "three")
	ir, err := g.Ingest(context.Background(), core.IngestParams{SessionID: "s", Message: in[0]})
	if err != nil || ir.Ingested {
		t.Fatalf("legacy ingest = %+v %v, want {ingested:false}", ir, err)
	}
	ar, err := g.Assemble(context.Background(), core.AssembleParams{SessionID: "s", Messages: in, TokenBudget: 10})
	if err != nil || len(ar.Messages) != len(in) || ar.SystemPromptAddition != "" {
		t.Fatalf("legacy assemble = %+v %v", ar, err)
	}
	for i := range in {
		if !bytes.Equal(ar.Messages[i].Raw(), in[i].Raw()) {
			t.Fatalf("message %d changed", i)
		}
	}
	if ar.EstimatedTokens <= 0 || ar.EstimatedTokens > core.EstimateChars4(in)*4 {
		t.Fatalf("estimate %d", ar.EstimatedTokens)
	}
	// Without a session file legacy's compaction compacts nothing, and says why.
	cr, err := g.Compact(context.Background(), core.CompactParams{SessionID: "s", Force: true})
	if err != nil || cr.Compacted || cr.Reason == "" {
		t.Fatalf("legacy compact without a file = %+v, %v", cr, err)
	}
	if g.Supports(OpAfterTurn) {
		t.Fatal("legacy must not have afterTurn")
	}
}

// passEngine is a minimal engine for benchmarks: assemble passes through.
type passEngine struct{}

func (passEngine) Info() core.Info { return core.Info{ID: "pass", Name: "Pass"} }
func (passEngine) Ingest(ctx context.Context, p core.IngestParams) (core.IngestResult, error) {
	return core.IngestResult{}, nil
}
func (passEngine) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	return core.AssembleResult{Messages: p.Messages, EstimatedTokens: len(p.Messages)}, nil
}
func (passEngine) Compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	return core.CompactResult{OK: true}, nil
}

// BenchmarkGuardAssemble measures what the guard adds to a direct call.
func BenchmarkGuardAssemble(b *testing.B) {
	for _, n := range []int{10, 1000} {
		in := make([]core.Message, n)
		for i := range in {
			in[i] = core.UserText("message", int64(i))
		}
		p := core.AssembleParams{SessionID: "s", Messages: in}
		ctx := context.Background()
		var e core.Engine = passEngine{}
		b.Run("direct/n="+itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Assemble(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		})
		g, _ := registryWith("pass", passEngine{}).Open(ctx, slotConfig("pass"))
		b.Run("guarded/n="+itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Assemble(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestConcurrentFailuresQuarantineOnce(t *testing.T) {
	f := newFake("lossless")
	f.fail[OpAssemble] = errors.New("corrupt index")
	r := registryWith("lossless", f)
	logs := withLog(r)
	g, _ := r.Open(context.Background(), slotConfig("lossless"))
	var wg sync.WaitGroup
	in := msgs("a")
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				res, err := g.Assemble(context.Background(), core.AssembleParams{SessionID: "s", Messages: in})
				if err != nil || len(res.Messages) != 1 {
					t.Errorf("assemble = %+v, %v", res, err)
					return
				}
				_ = g.Info()
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(logs.String(), "\n"); n != 1 || len(r.Quarantines()) != 1 {
		t.Fatalf("%d log lines, %d records", n, len(r.Quarantines()))
	}
	r.ClearQuarantine("lossless")
	if g.Quarantined() {
		t.Fatal("ClearQuarantine did not lift it")
	}
}

func TestInfoBreakingContractLaterQuarantines(t *testing.T) {
	f := newFake("lossless")
	r := registryWith("lossless", f)
	withLog(r)
	g, _ := r.Open(context.Background(), slotConfig("lossless"))
	if g.Info().ID != "lossless" {
		t.Fatal("not selected")
	}
	f.mu.Lock()
	f.info = &core.Info{ID: "lossless"} // name gone
	f.mu.Unlock()
	if g.Info().ID != LegacyID {
		t.Fatal("invalid info served")
	}
	if q, ok := r.Quarantined("lossless"); !ok || q.Operation != OpInfo {
		t.Fatalf("record %+v", q)
	}
}

func TestLegacyConfig(t *testing.T) {
	r := NewRegistry()
	logs := withLog(r)
	bad := &Config{Plugins: PluginsConfig{Entries: map[string]PluginEntry{
		LegacyID: {Config: json.RawMessage(`{"noSuchOption":1}`)}}}}
	g, err := r.Open(context.Background(), bad)
	if err != nil || g.Info().ID != LegacyID {
		t.Fatalf("a refused legacy config left no engine: %v", err)
	}
	if !strings.Contains(logs.String(), "legacy config refused") || len(r.Quarantines()) != 0 {
		t.Fatalf("log %q", logs.String())
	}
	good := &Config{Plugins: PluginsConfig{Entries: map[string]PluginEntry{
		LegacyID: {Config: json.RawMessage(`{"counter":"chars4"}`)}}}}
	g, err = r.Open(context.Background(), good)
	if err != nil {
		t.Fatal(err)
	}
	in := msgs("abcdabcd")
	ar, err := g.Assemble(context.Background(), core.AssembleParams{SessionID: "s", Messages: in})
	if err != nil || ar.EstimatedTokens != core.EstimateChars4(in) {
		t.Fatalf("legacy did not get its config: estimate %d, %v", ar.EstimatedTokens, err)
	}
}

func TestNewGuarded(t *testing.T) {
	r := NewRegistry()
	withLog(r)
	f := newFake("mine")
	f.fail[OpIngest] = errors.New("broken")
	g := NewGuarded(r, "mine", "me", f, passThrough{})
	if g.Info().ID != "mine" || g.Resolution().Reason != ReasonConfigured {
		t.Fatal("not serving the given engine")
	}
	res, err := g.Ingest(context.Background(), core.IngestParams{SessionID: "s", Message: msgs("x")[0]})
	if err != nil || res.Ingested || !g.Quarantined() {
		t.Fatalf("ingest = %+v %v", res, err)
	}
	if q, _ := r.Quarantined("mine"); q.Owner != "me" || q.Operation != OpIngest {
		t.Fatalf("record %+v", q)
	}
	if g.Info().ID != "pass" {
		t.Fatal("fallback engine not serving")
	}
}

// passThrough stands in for legacy in NewGuarded tests.
type passThrough struct{ passEngine }
