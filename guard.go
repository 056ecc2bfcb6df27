package contextengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/lossless-engine/contextengine/core"
)

// Operation names used in quarantine records and Supports.
const (
	OpResolve              = "resolve"
	OpFactory              = "factory"
	OpContract             = "contract"
	OpInfo                 = "info"
	OpBootstrap            = "bootstrap"
	OpMaintain             = "maintain"
	OpIngest               = "ingest"
	OpIngestBatch          = "ingestBatch"
	OpAssemble             = "assemble"
	OpCompact              = "compact"
	OpAfterTurn            = "afterTurn"
	OpCommitTurn           = "commitTurn"
	OpPrepareSubagentSpawn = "prepareSubagentSpawn"
	OpOnSubagentEnded      = "onSubagentEnded"
	OpDispose              = "dispose"
)

// DowngradedReason is the reason of the canned bootstrap result returned
// when the engine was downgraded to legacy, which has no bootstrap.
const DowngradedReason = "context engine downgraded to legacy"

// Guarded is the engine a host talks to: it implements core.Engine and every
// optional interface, forwarding each call to the selected engine when it
// implements the method, and isolating its failures (CONTRACT §5). Use
// Supports to learn whether the engine behind it implements an optional
// method. A Guarded is safe for concurrent use when its engines are.
type Guarded struct {
	reg    *Registry
	res    Resolution
	id     string
	owner  string
	engine core.Engine // the selected engine; nil when resolution failed
	legacy core.Engine

	closeOnce sync.Once
	closeErr  error
}

var (
	_ core.Engine              = (*Guarded)(nil)
	_ core.Bootstrapper        = (*Guarded)(nil)
	_ core.Maintainer          = (*Guarded)(nil)
	_ core.BatchIngester       = (*Guarded)(nil)
	_ core.AfterTurner         = (*Guarded)(nil)
	_ core.TurnCommitter       = (*Guarded)(nil)
	_ core.SubagentSpawner     = (*Guarded)(nil)
	_ core.SubagentEndListener = (*Guarded)(nil)
	_ io.Closer                = (*Guarded)(nil)
)

// Open resolves cfg's contextEngine slot against r and returns the guarded
// engine. Resolution failures (an unregistered id, a factory that fails or
// panics, an engine whose info breaks the contract) quarantine the engine
// and fall back to legacy; they are not errors. Open fails only when the
// caller's ctx is cancelled or legacy itself cannot be built.
func (r *Registry) Open(ctx context.Context, cfg *Config) (*Guarded, error) {
	res := cfg.Resolve()
	legacyReg, ok := r.lookup(LegacyID)
	if !ok {
		return nil, fmt.Errorf("contextengine: legacy is not registered")
	}
	legacyOpts := core.FactoryOptions{AgentDir: res.Options.AgentDir, WorkspaceDir: res.Options.WorkspaceDir}
	if cfg != nil {
		legacyOpts.Config = cfg.Plugins.Entries[LegacyID].Config
	}
	legacy, err := legacyReg.factory(ctx, legacyOpts)
	if err != nil && len(legacyOpts.Config) > 0 && ctx.Err() == nil {
		// A bad plugins.entries.legacy.config must not leave the host
		// without an engine: log it and use the defaults.
		r.log().Warn("contextengine: legacy config refused, using defaults", "reason", err.Error())
		legacyOpts.Config = nil
		legacy, err = legacyReg.factory(ctx, legacyOpts)
	}
	if err != nil {
		return nil, fmt.Errorf("contextengine: build legacy: %w", err)
	}
	g := &Guarded{reg: r, res: res, id: res.EngineID, owner: CoreOwner, legacy: legacy}
	if res.EngineID == LegacyID {
		g.engine = legacy
		return g, nil
	}
	if _, q := r.Quarantined(g.id); q {
		return g, nil
	}
	reg, ok := r.lookup(g.id)
	if !ok {
		g.owner = ""
		r.quarantine(g.id, "", OpResolve, fmt.Errorf("%w: %q is not registered", ErrUnknownEngine, g.id))
		return g, nil
	}
	g.owner = reg.owner
	e, err := protect(func() (core.Engine, error) { return reg.factory(ctx, res.Options) })
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("contextengine: open %q: %w", g.id, err)
		}
		r.quarantine(g.id, g.owner, OpFactory, err)
		return g, nil
	}
	if e == nil {
		r.quarantine(g.id, g.owner, OpContract, fmt.Errorf("%w: factory returned a nil engine", core.ErrInvalidEngine))
		return g, nil
	}
	info, err := protect(func() (core.Info, error) { return e.Info(), nil })
	if err == nil {
		err = info.Validate()
	}
	if err != nil {
		r.quarantine(g.id, g.owner, OpContract, err)
		if c, ok := e.(io.Closer); ok {
			_ = c.Close()
		}
		return g, nil
	}
	g.engine = e
	return g, nil
}

// NewGuarded wraps engine (registered as id by owner in r) with failure
// isolation, falling back to legacy. It is the building block of Open, for
// hosts that construct engines themselves.
func NewGuarded(r *Registry, id, owner string, engine, legacy core.Engine) *Guarded {
	return &Guarded{reg: r, id: id, owner: owner, engine: engine, legacy: legacy,
		res: Resolution{Slot: id, SlotSet: true, EngineID: id, Reason: ReasonConfigured}}
}

// protect runs fn, turning a panic into an error wrapping errPanic.
func protect[T any](fn func() (T, error)) (res T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errPanic, p)
		}
	}()
	return fn()
}

// active returns the selected engine when it may serve calls: resolved, not
// legacy, and not quarantined.
func (g *Guarded) active() core.Engine {
	if g.engine == nil || g.id == LegacyID {
		return nil
	}
	if g.reg.isQuarantined(g.id) {
		return nil
	}
	return g.engine
}

// fail handles a failed call: cancellation of the caller's ctx propagates
// (false); anything else quarantines the engine (true).
func (g *Guarded) fail(ctx context.Context, op string, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	g.reg.quarantine(g.id, g.owner, op, err)
	return true
}

// Selected returns the id of the configured engine (which may be
// quarantined) and its owner.
func (g *Guarded) Selected() (id, owner string) { return g.id, g.owner }

// Quarantined reports whether the selected engine is quarantined (calls go
// to legacy).
func (g *Guarded) Quarantined() bool {
	return g.id != LegacyID && g.active() == nil
}

// Resolution returns how the engine was selected; after a quarantine it
// names legacy with ReasonQuarantined.
func (g *Guarded) Resolution() Resolution {
	res := g.res
	if g.Quarantined() {
		q, _ := g.reg.Quarantined(g.id)
		res.EngineID, res.Reason = LegacyID, ReasonQuarantined
		res.Detail = fmt.Sprintf("%q is quarantined after failing in %s: %s; legacy runs", g.id, q.Operation, q.Reason)
	}
	return res
}

// Engine returns the engine calls currently go to (the selected one, or
// legacy while quarantined).
func (g *Guarded) Engine() core.Engine {
	if e := g.active(); e != nil {
		return e
	}
	return g.legacy
}

// Supports reports whether the engine calls go to implements the optional
// method op (OpBootstrap, OpMaintain, OpIngestBatch, OpAfterTurn,
// OpCommitTurn, OpPrepareSubagentSpawn, OpOnSubagentEnded, OpDispose);
// required methods are always supported.
func (g *Guarded) Supports(op string) bool { return Implements(g.Engine(), op) }

// Implements reports whether e implements the contract method op. For an
// engine that itself has a Supports(op string) bool method (like Guarded),
// that method answers.
func Implements(e core.Engine, op string) bool {
	if s, ok := e.(interface{ Supports(string) bool }); ok {
		return s.Supports(op)
	}
	var ok bool
	switch op {
	case OpIngest, OpAssemble, OpCompact, OpInfo:
		return e != nil
	case OpBootstrap:
		_, ok = e.(core.Bootstrapper)
	case OpMaintain:
		_, ok = e.(core.Maintainer)
	case OpIngestBatch:
		_, ok = e.(core.BatchIngester)
	case OpAfterTurn:
		_, ok = e.(core.AfterTurner)
	case OpCommitTurn:
		_, ok = e.(core.TurnCommitter)
	case OpPrepareSubagentSpawn:
		_, ok = e.(core.SubagentSpawner)
	case OpOnSubagentEnded:
		_, ok = e.(core.SubagentEndListener)
	case OpDispose:
		_, ok = e.(io.Closer)
	}
	return ok
}

// Info reports the selected engine's info, or legacy's while quarantined.
func (g *Guarded) Info() core.Info {
	if e := g.active(); e != nil {
		info, err := protect(func() (core.Info, error) { return e.Info(), nil })
		if err == nil {
			if err = info.Validate(); err == nil {
				return info
			}
		}
		g.reg.quarantine(g.id, g.owner, OpInfo, err)
	}
	return g.legacy.Info()
}

// Ingest forwards to the engine; on failure it quarantines and re-runs on
// legacy.
func (g *Guarded) Ingest(ctx context.Context, p core.IngestParams) (core.IngestResult, error) {
	if e := g.active(); e != nil {
		r, err := protect(func() (core.IngestResult, error) { return e.Ingest(ctx, p) })
		if err == nil || !g.fail(ctx, OpIngest, err) {
			return r, err
		}
	}
	return g.legacy.Ingest(ctx, p)
}

// Assemble forwards to the engine; on failure it quarantines and re-runs on
// legacy.
func (g *Guarded) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	if e := g.active(); e != nil {
		r, err := protect(func() (core.AssembleResult, error) { return e.Assemble(ctx, p) })
		if err == nil || !g.fail(ctx, OpAssemble, err) {
			return r, err
		}
	}
	return g.legacy.Assemble(ctx, p)
}

// Compact forwards to the engine; on failure it quarantines and returns the
// error (later calls go to legacy).
func (g *Guarded) Compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	if e := g.active(); e != nil {
		r, err := protect(func() (core.CompactResult, error) { return e.Compact(ctx, p) })
		if err != nil && g.fail(ctx, OpCompact, err) {
			return r, fmt.Errorf("%w: %q failed in compact: %w", ErrQuarantined, g.id, err)
		}
		return r, err
	}
	return g.legacy.Compact(ctx, p)
}

// Bootstrap forwards to the engine when it implements it; on failure it
// quarantines and re-runs on legacy, or returns {bootstrapped:false,
// reason:DowngradedReason} when legacy has no bootstrap.
func (g *Guarded) Bootstrap(ctx context.Context, p core.BootstrapParams) (core.BootstrapResult, error) {
	if e := g.active(); e != nil {
		b, ok := e.(core.Bootstrapper)
		if !ok {
			return core.BootstrapResult{Bootstrapped: false, Reason: "engine has no bootstrap"}, nil
		}
		r, err := protect(func() (core.BootstrapResult, error) { return b.Bootstrap(ctx, p) })
		if err == nil || !g.fail(ctx, OpBootstrap, err) {
			return r, err
		}
	}
	if b, ok := g.legacy.(core.Bootstrapper); ok {
		return b.Bootstrap(ctx, p)
	}
	return core.BootstrapResult{Bootstrapped: false, Reason: DowngradedReason}, nil
}

// Maintain forwards to the engine when it implements it; on failure it
// quarantines and re-runs on legacy, or returns the canned
// {changed:false, bytesFreed:0, rewrittenEntries:0}.
func (g *Guarded) Maintain(ctx context.Context, p core.MaintainParams) (core.MaintainResult, error) {
	if e := g.active(); e != nil {
		m, ok := e.(core.Maintainer)
		if !ok {
			return core.MaintainResult{}, nil
		}
		r, err := protect(func() (core.MaintainResult, error) { return m.Maintain(ctx, p) })
		if err == nil || !g.fail(ctx, OpMaintain, err) {
			return r, err
		}
	}
	if m, ok := g.legacy.(core.Maintainer); ok {
		return m.Maintain(ctx, p)
	}
	return core.MaintainResult{}, nil
}

// IngestBatch forwards to the engine when it implements it (otherwise it
// ingests the messages one by one); on failure it quarantines and re-runs on
// legacy, or returns the canned {ingestedCount:0}.
func (g *Guarded) IngestBatch(ctx context.Context, p core.IngestBatchParams) (core.IngestBatchResult, error) {
	if e := g.active(); e != nil {
		bi, ok := e.(core.BatchIngester)
		if !ok {
			n := 0
			for _, m := range p.Messages {
				r, err := g.Ingest(ctx, core.IngestParams{SessionID: p.SessionID, SessionKey: p.SessionKey,
					Message: m, IsHeartbeat: p.IsHeartbeat})
				if err != nil {
					return core.IngestBatchResult{IngestedCount: n}, err
				}
				if r.Ingested {
					n++
				}
			}
			return core.IngestBatchResult{IngestedCount: n}, nil
		}
		r, err := protect(func() (core.IngestBatchResult, error) { return bi.IngestBatch(ctx, p) })
		if err == nil || !g.fail(ctx, OpIngestBatch, err) {
			return r, err
		}
	}
	if bi, ok := g.legacy.(core.BatchIngester); ok {
		return bi.IngestBatch(ctx, p)
	}
	return core.IngestBatchResult{IngestedCount: 0}, nil
}

// AfterTurn forwards to the engine when it implements it (a no-op
// otherwise); on failure it quarantines and re-runs on legacy when legacy
// has afterTurn.
func (g *Guarded) AfterTurn(ctx context.Context, p core.AfterTurnParams) error {
	if e := g.active(); e != nil {
		a, ok := e.(core.AfterTurner)
		if !ok {
			return nil
		}
		_, err := protect(func() (struct{}, error) { return struct{}{}, a.AfterTurn(ctx, p) })
		if err == nil || !g.fail(ctx, OpAfterTurn, err) {
			return err
		}
	}
	if a, ok := g.legacy.(core.AfterTurner); ok {
		return a.AfterTurn(ctx, p)
	}
	return nil
}

// CommitTurn forwards to the engine. A failure quarantines it; since a
// commit cannot be faked, the error is returned unless legacy implements
// CommitTurn, which is then called.
func (g *Guarded) CommitTurn(ctx context.Context, p core.CommitTurnParams) (core.CommitTurnResult, error) {
	var failure error
	if e := g.active(); e != nil {
		c, ok := e.(core.TurnCommitter)
		if !ok {
			return core.CommitTurnResult{}, fmt.Errorf("contextengine: %q does not implement commitTurn", g.id)
		}
		r, err := protect(func() (core.CommitTurnResult, error) { return c.CommitTurn(ctx, p) })
		if err == nil || !g.fail(ctx, OpCommitTurn, err) {
			return r, err
		}
		failure = err
	}
	if c, ok := g.legacy.(core.TurnCommitter); ok {
		return c.CommitTurn(ctx, p)
	}
	if failure == nil {
		failure = errors.New("legacy does not implement commitTurn")
	}
	return core.CommitTurnResult{}, fmt.Errorf("%w: commitTurn: %w", ErrQuarantined, failure)
}

// PrepareSubagentSpawn forwards to the engine; on failure it quarantines and
// returns the error.
func (g *Guarded) PrepareSubagentSpawn(ctx context.Context, p core.SubagentSpawnParams) (*core.SubagentPreparation, error) {
	if e := g.active(); e != nil {
		s, ok := e.(core.SubagentSpawner)
		if !ok {
			return nil, nil
		}
		r, err := protect(func() (*core.SubagentPreparation, error) { return s.PrepareSubagentSpawn(ctx, p) })
		if err != nil && g.fail(ctx, OpPrepareSubagentSpawn, err) {
			return nil, fmt.Errorf("%w: %q failed in prepareSubagentSpawn: %w", ErrQuarantined, g.id, err)
		}
		return r, err
	}
	if s, ok := g.legacy.(core.SubagentSpawner); ok {
		return s.PrepareSubagentSpawn(ctx, p)
	}
	return nil, nil
}

// OnSubagentEnded forwards to the engine when it implements it; on failure
// it quarantines and re-runs on legacy when legacy has the method.
func (g *Guarded) OnSubagentEnded(ctx context.Context, p core.SubagentEndedParams) error {
	if e := g.active(); e != nil {
		s, ok := e.(core.SubagentEndListener)
		if !ok {
			return nil
		}
		_, err := protect(func() (struct{}, error) { return struct{}{}, s.OnSubagentEnded(ctx, p) })
		if err == nil || !g.fail(ctx, OpOnSubagentEnded, err) {
			return err
		}
	}
	if s, ok := g.legacy.(core.SubagentEndListener); ok {
		return s.OnSubagentEnded(ctx, p)
	}
	return nil
}

// Close disposes of the selected engine and legacy (once; later calls return
// the first result). A failing or panicking Close is reported, not
// quarantined.
func (g *Guarded) Close() error {
	g.closeOnce.Do(func() {
		var errs []error
		if g.engine != nil && g.engine != g.legacy {
			if c, ok := g.engine.(io.Closer); ok {
				if _, err := protect(func() (struct{}, error) { return struct{}{}, c.Close() }); err != nil {
					errs = append(errs, fmt.Errorf("contextengine: dispose %q: %w", g.id, err))
				}
			}
		}
		if c, ok := g.legacy.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("contextengine: dispose legacy: %w", err))
			}
		}
		g.closeErr = errors.Join(errs...)
	})
	return g.closeErr
}
