package contextengine

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/lossless-engine/contextengine/core"
)

// fakeEngine implements every contract interface, records its calls and
// fails or panics on demand.
type fakeEngine struct {
	mu     sync.Mutex
	id     string
	name   string
	info   *core.Info // overrides the default info when set
	calls  []string
	fail   map[string]error
	panics map[string]bool

	assembles  []core.AssembleParams
	compacts   []core.CompactParams
	afterTurns []core.AfterTurnParams
	batches    []core.IngestBatchParams
	ingests    []core.IngestParams

	// assembleResult, when set, computes the assemble result.
	assembleResult func(p core.AssembleParams) core.AssembleResult
	// compactResult, when set, computes the n-th (0-based) compact result.
	compactResult func(n int, p core.CompactParams) core.CompactResult
	closed        int
}

func newFake(id string) *fakeEngine {
	return &fakeEngine{id: id, name: "Fake " + id, fail: map[string]error{}, panics: map[string]bool{}}
}

func (f *fakeEngine) record(op string) error {
	f.mu.Lock()
	f.calls = append(f.calls, op)
	err, p := f.fail[op], f.panics[op]
	f.mu.Unlock()
	if p {
		panic(fmt.Sprintf("fake %s exploded", op))
	}
	return err
}

func (f *fakeEngine) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeEngine) Info() core.Info {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panics[OpInfo] {
		panic("info exploded")
	}
	if f.info != nil {
		return *f.info
	}
	return core.Info{ID: f.id, Name: f.name}
}

func (f *fakeEngine) Ingest(ctx context.Context, p core.IngestParams) (core.IngestResult, error) {
	if err := f.record(OpIngest); err != nil {
		return core.IngestResult{}, err
	}
	f.mu.Lock()
	f.ingests = append(f.ingests, p)
	f.mu.Unlock()
	return core.IngestResult{Ingested: true}, nil
}

func (f *fakeEngine) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	if err := f.record(OpAssemble); err != nil {
		return core.AssembleResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return core.AssembleResult{}, err
	}
	f.mu.Lock()
	f.assembles = append(f.assembles, p)
	fn := f.assembleResult
	f.mu.Unlock()
	if fn != nil {
		return fn(p), nil
	}
	return core.AssembleResult{Messages: p.Messages, EstimatedTokens: core.EstimateChars4(p.Messages),
		SystemPromptAddition: "from " + f.id}, nil
}

func (f *fakeEngine) Compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	if err := f.record(OpCompact); err != nil {
		return core.CompactResult{}, err
	}
	f.mu.Lock()
	n := len(f.compacts)
	f.compacts = append(f.compacts, p)
	fn := f.compactResult
	f.mu.Unlock()
	if fn != nil {
		return fn(n, p), nil
	}
	return core.CompactResult{OK: true, Compacted: true}, nil
}

func (f *fakeEngine) Bootstrap(ctx context.Context, p core.BootstrapParams) (core.BootstrapResult, error) {
	if err := f.record(OpBootstrap); err != nil {
		return core.BootstrapResult{}, err
	}
	return core.BootstrapResult{Bootstrapped: true}, nil
}

func (f *fakeEngine) Maintain(ctx context.Context, p core.MaintainParams) (core.MaintainResult, error) {
	if err := f.record(OpMaintain + ":" + p.Reason); err != nil {
		return core.MaintainResult{}, err
	}
	return core.MaintainResult{Changed: true, BytesFreed: 1}, nil
}

func (f *fakeEngine) IngestBatch(ctx context.Context, p core.IngestBatchParams) (core.IngestBatchResult, error) {
	if err := f.record(OpIngestBatch); err != nil {
		return core.IngestBatchResult{}, err
	}
	f.mu.Lock()
	f.batches = append(f.batches, p)
	f.mu.Unlock()
	return core.IngestBatchResult{IngestedCount: len(p.Messages)}, nil
}

func (f *fakeEngine) AfterTurn(ctx context.Context, p core.AfterTurnParams) error {
	if err := f.record(OpAfterTurn); err != nil {
		return err
	}
	f.mu.Lock()
	f.afterTurns = append(f.afterTurns, p)
	f.mu.Unlock()
	return nil
}

func (f *fakeEngine) CommitTurn(ctx context.Context, p core.CommitTurnParams) (core.CommitTurnResult, error) {
	if err := f.record(OpCommitTurn); err != nil {
		return core.CommitTurnResult{}, err
	}
	return core.CommitTurnResult{Status: core.CommitCommitted}, nil
}

func (f *fakeEngine) PrepareSubagentSpawn(ctx context.Context, p core.SubagentSpawnParams) (*core.SubagentPreparation, error) {
	if err := f.record(OpPrepareSubagentSpawn); err != nil {
		return nil, err
	}
	return &core.SubagentPreparation{Rollback: func(context.Context) error { return nil }}, nil
}

func (f *fakeEngine) OnSubagentEnded(ctx context.Context, p core.SubagentEndedParams) error {
	return f.record(OpOnSubagentEnded)
}

func (f *fakeEngine) Close() error {
	f.mu.Lock()
	f.closed++
	f.mu.Unlock()
	return f.record(OpDispose)
}

// bareEngine implements only the required methods.
type bareEngine struct{ fakeEngine *fakeEngine }

func (b bareEngine) Info() core.Info { return b.fakeEngine.Info() }
func (b bareEngine) Ingest(ctx context.Context, p core.IngestParams) (core.IngestResult, error) {
	return b.fakeEngine.Ingest(ctx, p)
}
func (b bareEngine) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	return b.fakeEngine.Assemble(ctx, p)
}
func (b bareEngine) Compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	return b.fakeEngine.Compact(ctx, p)
}

func strp(s string) *string { return &s }

func boolp(b bool) *bool { return &b }

// slotConfig returns a config whose slot selects id.
func slotConfig(id string) *Config {
	return &Config{Plugins: PluginsConfig{Slots: SlotsConfig{ContextEngine: strp(id)}}}
}

// registryWith returns a registry where id is served by f, owned by "acme".
func registryWith(id string, f core.Engine) *Registry {
	r := NewRegistry()
	if err := r.Register(id, func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
		return f, nil
	}, "acme"); err != nil {
		panic(err)
	}
	return r
}

func itoa(n int) string { return strconv.Itoa(n) }
