package lossless

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/internal/dirs"
	"github.com/lossless-engine/contextengine/internal/diskspace"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Engine identity (Info).
const (
	EngineID   = "lossless"
	EngineName = "Lossless Context Engine"
	// Version is the engine's version reported in Info.
	Version = "0.1.0"
)

// Engine is the lossless context engine: every message stored verbatim in
// its store (store.Store: Badger or PostgreSQL), an active context of raw
// messages and summaries, and Assemble reading only the budgeted suffix. It implements core.Engine and the
// optional core.Bootstrapper, core.Maintainer, core.BatchIngester,
// core.AfterTurner, core.TurnCommitter, core.SubagentSpawner,
// core.SubagentEndListener and core.ToolCaller, and io.Closer. It is safe
// for concurrent use.
type Engine struct {
	cfg engineConfig // config.go
	// st is the store (store/badgerstore's in a directory, or a
	// registered backend's: RegisterStore). The engine uses it only
	// through the store.Store interface (and its optional interfaces).
	st store.Store
	// locker is st as a store.Locker when several processes share it (nil
	// for Badger): the engine then takes st's named locks besides its own
	// and re-reads what another process may have written (store.go).
	locker store.Locker
	// where names the store in errors: its directory, or its URL without
	// the password.
	where string
	tc    core.TokenCounter

	// life guards Close against in-flight calls: calls hold it shared.
	life   sync.RWMutex
	closed atomic.Bool

	// convs is the per-conversation cached state (record, window), kept
	// by lru: a cache bounded by Config.AssembleCacheBytes (asmcache.go),
	// whose lock guards convs.
	convs map[convID]*convState
	lru   *stateCache
	// convLocks are the conversations' write locks and winLocks their
	// window locks (lockLive, lockWindow): outside the cache, so that
	// evicting a conversation's state never frees a lock someone holds;
	// each holds only the conversations in use.
	convLocks, winLocks keyLocks[convID]

	// metaMu serialises creation of conversations and the import checkpoints.
	metaMu sync.Mutex

	// cache of token counts by content hash (bounded).
	counts *countCache

	// budgets is what each session's assembles told of the host's budgets
	// (assemble.BudgetTable), bounded.
	budgets *budgetTable

	// importMus serialise imports of one file (agent/path), holding only
	// the files being imported.
	importMus keyLocks[string]

	// The engine's parts, in the order Open sets them up (Close stops them
	// in reverse):
	//
	// recall is the recall index (recall.Index); nil when recall is off (as
	// it is for a read-only engine) or the index could not be opened.
	recall *recaller
	// compaction is the compaction state: per-conversation compaction
	// locks, background runs and the summarizer (orchestrate.go;
	// the runs are lossless/orchestrate's).
	compaction *compactionState
	// subagents is the subagent state: the lock of record changes, the
	// sweep of expired preparations and the fork caches (subagent.go).
	subagents subagents
	// retention is the automatic retention pass (retention.go).
	retention *retentionLoop

	// space is the free-space guard of the store's directory (space.go;
	// nil without a directory).
	space *diskspace.Guard
}

var (
	_ core.Engine        = (*Engine)(nil)
	_ core.Bootstrapper  = (*Engine)(nil)
	_ core.BatchIngester = (*Engine)(nil)
	_ core.AfterTurner   = (*Engine)(nil)
)

// Open opens (creating if needed) the store in cfg.StoreDir with the
// defaults of DefaultConfig for zero fields. A store written by a newer
// format is refused with an error wrapping core.ErrFormatTooNew; a store of
// another engine is refused too.
//
// The store in cfg.StoreDir is opened by the opener registered as
// DirStore: import package lossless/badger, as cmd/lossless does. When
// none is registered, Open opens Badger there itself (the same store,
// kept so that library code written before lossless/badger works
// unchanged). The recall index is Bleve's in <StoreDir>/index.
//
// With cfg.StoreURL set, the store is the one the opener registered for
// its scheme opens (RegisterStore): import package lossless/postgres for
// postgres:// URLs, a PostgreSQL database (its schema migrated on open,
// unless ReadOnly) searched by its own full-text recall and shared with
// every other process opened on it. An unparsable URL, an unreachable
// server and a schema newer than this binary are errors naming what is
// wrong.
func Open(ctx context.Context, cfg config.Config) (*Engine, error) {
	return openHooked(ctx, cfg, testHooks{})
}

// openHooked is Open with the tests' seams h (hooks.go; zero in production).
func openHooked(ctx context.Context, cfg config.Config, h testHooks) (*Engine, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lossless: open: %w", err)
	}
	cfg = cfg.WithDefaults()
	if err := validate(cfg); err != nil {
		return nil, err
	}
	if cfg.StoreURL != "" {
		return openURL(ctx, cfg, h) // register_store.go (lossless/postgres)
	}
	if !cfg.ReadOnly {
		created, err := dirs.Make(cfg.StoreDir)
		if err != nil {
			return nil, fmt.Errorf("lossless: open: %w", err)
		}
		// Badger maps a new memtable as it opens for writing: on a full
		// disk that is a SIGBUS, so look first (space.go).
		probe := &Engine{cfg: engineConfig{Config: cfg, hooks: h}}
		probe.space = newSpaceGuard(&probe.cfg)
		if err := probe.checkSpace(); err != nil {
			// The directories made for the store go again: an empty one
			// left behind would be "no store here" to the commands that
			// read.
			err = fmt.Errorf("lossless: open %s for writing: %w (commands that only read still work)", cfg.StoreDir, err)
			if size, serr := diskspace.Size(cfg.StoreDir); serr == nil && size < probe.space.Reserve() {
				// Freeing space cannot help there.
				err = fmt.Errorf("%w; its filesystem holds only %d MiB in all: put the store on a larger one", err, size>>20)
			}
			if rerr := dirs.Unmake(created); rerr != nil {
				return nil, fmt.Errorf("%w; the directory made for it stays: %w", err, rerr)
			}
			return nil, err
		}
	}
	// The store in the directory: through the opener registered as
	// DirStore (package lossless/badger), else Badger opened here (the
	// fallback library code written before lossless/badger relies on).
	open := registeredStore(DirStore)
	if open == nil {
		open = openBadger
	}
	st, rec, err := open(ctx, cfg)
	if err != nil {
		if errors.Is(err, store.ErrCorrupt) {
			return nil, fmt.Errorf("lossless: open store %s: %w; run `lossless doctor --store %s` to see what it holds", cfg.StoreDir, err, cfg.StoreDir)
		}
		return nil, fmt.Errorf("lossless: open store %s: %w", cfg.StoreDir, err)
	}
	if rec != nil {
		// A directory store with its own search: as OpenStore's.
		e, err := openEngine(ctx, cfg, h, st, cfg.StoreDir, func(_ context.Context, e *Engine) (*recaller, error) {
			if e.cfg.ReadOnly || !e.cfg.RecallEnabled() {
				rec.Close()
				return nil, nil
			}
			return e.storeRecall(rec), nil
		})
		if err != nil {
			rec.Close()
		}
		return e, err
	}
	var recall func(context.Context, *Engine) (*recaller, error)
	if !cfg.ReadOnly && cfg.RecallEnabled() {
		recall = func(ctx context.Context, e *Engine) (*recaller, error) {
			return e.openRecallOrLog(ctx) // Bleve, in <StoreDir>/index (recall.go)
		}
	}
	return openEngine(ctx, cfg, h, st, cfg.StoreDir, recall)
}

// OpenStore opens an engine on st, a store the caller opened (package
// store/pgstore's, say), with rec as its recall index (nil: no recall).
// The engine owns both from then on: its Close closes them, and so does a
// failed OpenStore. cfg.StoreDir is not used (there is no directory: no
// Bleve index, no free-space guard). When st implements store.Locker the
// engine treats it as shared by several processes (see store.Locker).
func OpenStore(ctx context.Context, cfg config.Config, st store.Store, rec index.Recall) (*Engine, error) {
	return openStoreHooked(ctx, cfg, testHooks{}, st, rec)
}

// openStoreHooked is OpenStore with the tests' seams h (hooks.go).
func openStoreHooked(ctx context.Context, cfg config.Config, h testHooks, st store.Store, rec index.Recall) (*Engine, error) {
	closeAll := func() {
		st.Close()
		if rec != nil {
			rec.Close()
		}
	}
	if err := ctx.Err(); err != nil {
		closeAll()
		return nil, fmt.Errorf("lossless: open: %w", err)
	}
	cfg = cfg.WithDefaults()
	cfg.StoreDir = ""
	if err := cfg.Validate(); err != nil {
		closeAll()
		return nil, err
	}
	var open func(context.Context, *Engine) (*recaller, error)
	if rec != nil {
		open = func(_ context.Context, e *Engine) (*recaller, error) {
			if e.cfg.ReadOnly || !e.cfg.RecallEnabled() {
				rec.Close()
				return nil, nil
			}
			return e.storeRecall(rec), nil // the store's own search (recall.OverStore)
		}
	}
	e, err := openEngine(ctx, cfg, h, st, storeName(cfg), open)
	if err != nil && rec != nil {
		rec.Close()
	}
	return e, err
}

// openEngine opens the engine on st (closed on failure), named where in
// errors; openRecall opens its recall index (nil: none) once the store is
// checked, before any write, so that the generation the index counts from
// is exact (its error, when ctx ended it, fails the open: it owns nothing
// then). h are the tests' seams.
func openEngine(ctx context.Context, cfg config.Config, h testHooks, st store.Store, where string, openRecall func(context.Context, *Engine) (*recaller, error)) (*Engine, error) {
	if cfg.ReadOnly {
		off := false
		cfg.Recall.Enabled = &off // the index is written as it is read
	}
	tc, err := core.NewCounter(cfg.Tokenizer) // o200k_base: package tokens
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("lossless: open: %w", err)
	}
	e := &Engine{cfg: engineConfig{Config: cfg, hooks: h}, st: st, tc: tc, where: where, convs: map[convID]*convState{}, counts: newCountCache(),
		budgets: newBudgetTable(cfg.HostRequest)}
	e.space = newSpaceGuard(&e.cfg)
	e.lru = newStateCache(e)
	e.locker, _ = st.(store.Locker) // shared by several processes (store.go)
	if err := e.checkFormat(ctx); err != nil {
		st.Close()
		return nil, err
	}
	// The parts, in dependency order: a compaction indexes the summaries it
	// makes, so the recall index opens first (and closes last).
	if openRecall != nil {
		if e.recall, err = openRecall(ctx, e); err != nil {
			st.Close()
			return nil, err
		}
	}
	e.compaction = newCompactionState(cfg) // orchestrate.go
	if cfg.ReadOnly {
		return e, nil // nothing below may write
	}
	e.startRetention() // the periodic retention pass, when limits are set
	e.sweepOnce(ctx)   // expired subagent preparations (subagent.go)
	return e, nil
}

// Factory makes an engine from core.FactoryOptions (NewFactory), each
// with a summarizer spend cap of its own; the factory registered as
// "lossless" shares one among the engines of the process.
var Factory core.Factory = NewFactory(nil)

// Config returns the engine's configuration, defaults filled.
func (e *Engine) Config() config.Config { return e.cfg.Config }

// TokenCounter returns the counter the engine counts tokens with.
func (e *Engine) TokenCounter() core.TokenCounter { return e.tc }

// Info describes the engine: id "lossless", ownsCompaction true. It is
// EngineInfo: the same for every engine, whatever its store and config.
func (e *Engine) Info() core.Info { return EngineInfo() }

// EngineInfo is what every Engine's Info returns, known without opening a
// store (doctor checks the host requirements with it when it cannot open
// the store).
func EngineInfo() core.Info {
	info := core.Info{
		ID: EngineID, Name: EngineName, Version: Version, OwnsCompaction: true,
		TurnMaintenanceMode: core.MaintenanceForeground,
		// All six: a host drops every one not listed (OpenClaw filters by
		// this list), and the engine reads each of them.
		AcceptedHostParams: []string{core.HostParamSessionKey, core.HostParamPrompt,
			core.HostParamRuntimeSettings, core.HostParamSessionTarget, core.HostParamRuntimeContext,
			core.HostParamAbortSignal},
	}
	declareLifecycle(&info) // transcriptSemantics, hostRequirements (commit.go)
	return info
}

// enter marks the start of a call; it fails with core.ErrClosed after Close.
// The returned func ends the call.
func (e *Engine) enter() (func(), error) {
	e.life.RLock()
	if e.closed.Load() {
		e.life.RUnlock()
		return nil, fmt.Errorf("lossless: %w", core.ErrClosed)
	}
	return e.life.RUnlock, nil
}

// Close waits for in-flight calls and closes the store. It is idempotent;
// later calls of any method return an error wrapping core.ErrClosed.
//
// The parts stop in the reverse of the order Open set them up. Those that
// run on their own (retention, background compactions) stop before the
// wait for in-flight calls, as their runs make such calls; the subagent
// state holds nothing to close and goes with the engine.
func (e *Engine) Close() error {
	e.stopRetention()   // the periodic retention pass (retention.go)
	e.compaction.stop() // background compactions (lossless/orchestrate)
	e.life.Lock()
	defer e.life.Unlock()
	if e.closed.Swap(true) {
		return nil
	}
	rerr := e.closeRecall() // recall index (recall.go)
	if err := e.st.Close(); err != nil {
		return errors.Join(rerr, fmt.Errorf("lossless: close: %w", err))
	}
	return rerr
}

// Compact summarises older history into the summary DAG and, when the
// transcript is due, rotates it (see orchestrate.Compact).
func (e *Engine) Compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	return e.compact(ctx, p)
}

// agentFor resolves the agent of a call by one rule for every method, so
// that ingest, assemble, compact and commitTurn of one session always meet
// in the same conversation: a sessionKey "agent:<id>:..." first, else the
// explicit agent the call names (CompactParams.AgentID, a commit anchor's
// agentId, the CLI's --agent), else Config.AgentID, else "main".
func (e *Engine) agentFor(explicit, sessionKey string) string {
	if a := AgentFromSessionKey(sessionKey); a != "" {
		return a
	}
	if explicit != "" {
		return explicit
	}
	if e.cfg.AgentID != "" {
		return e.cfg.AgentID
	}
	return config.DefaultAgentID
}

// AgentFromSessionKey returns <id> of a session key "agent:<id>:...", or "".
func AgentFromSessionKey(key string) string { return records.AgentOfKey(key) }
