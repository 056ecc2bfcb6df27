// Package bench is the benchmark suite behind cmd/lossless-bench: ingest,
// assemble, compact, recall, lossless round trip and footprint, measured on
// long synthetic transcripts (package synth) and on real transcripts given
// by path, with baselines in the same run (raw Badger WriteBatch, raw Bleve
// batch indexing, the legacy engine) so that figures read as ratios.
//
// The package knows engines only through core.Engine and the small function
// fields of Target, so that tests drive it with fakes and the command wires
// the real engines.
package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/locomo"
)

// Suite names, in the order Run runs them.
const (
	SuiteIngest    = "ingest"
	SuiteAssemble  = "assemble"
	SuiteCompact   = "compact"
	SuiteRecall    = "recall"
	SuiteLossless  = "lossless"
	SuiteFootprint = "footprint"
	SuiteSessions  = "sessions"
	SuiteSoak      = "soak"
	SuiteWindow    = "window"
)

// Suites lists every suite in run order.
var Suites = []string{SuiteIngest, SuiteAssemble, SuiteCompact, SuiteRecall, SuiteLossless, SuiteFootprint}

// ExtraSuites run only when named (not in the default run): sessions
// serves Config.Sessions conversations and takes minutes; soak drives one
// engine as a long-lived gateway does for Config.SoakDuration and checks
// that its heap stays flat; window replays the LoCoMo file Config.LoCoMo
// (required) through the engines at Config.WindowBudgets and measures what
// each question's window holds of its evidence.
var ExtraSuites = []string{SuiteSessions, SuiteSoak, SuiteWindow}

// ErrUnknownSuite is returned by Config.Validate for a suite name not in
// Suites.
var ErrUnknownSuite = errors.New("bench: unknown suite")

// ErrUnsupported is recorded by a suite that needs an operation its target
// does not provide (a nil Target field).
var ErrUnsupported = errors.New("bench: operation not supported by the engine")

// Target is the engine under test, plus the operations beyond core.Engine
// that some suites need. Open is required; nil operations make the suites
// that need them record ErrUnsupported.
type Target struct {
	// Name labels the engine in the output ("lossless").
	Name string
	// Counter names the token counter the engine counts with ("chars4",
	// "o200k_base"), a label in the output; may be empty.
	Counter string
	// Open opens a fresh engine storing its data under dir (an empty
	// directory) with a default token budget of budget.
	Open func(ctx context.Context, dir string, budget int) (core.Engine, error)
	// Expand returns every raw message stored for a conversation, in order,
	// by expanding every summary of its context down to raw messages (the
	// lossless suite compares them byte for byte with the input). sessions
	// are the conversation's session ids: the imported one first, then the
	// successors named by compactions that rotated the transcript.
	Expand func(ctx context.Context, e core.Engine, sessions []string) ([][]byte, error)
	// Rotate forces a rotation of the session's transcript (compacting
	// first, as the engine does) and returns the successor's session id and
	// file. May be nil: the lossless suite then counts only the rotations
	// compaction did on its own.
	Rotate func(ctx context.Context, e core.Engine, session, key, file string, budget int) (string, string, error)
	// Flush waits for background work (indexing, compaction) to finish, so
	// that a measurement includes it. May be nil.
	Flush func(ctx context.Context, e core.Engine) error
	// Summaries returns the summaries the engine stores, in all
	// conversations (the soak suite reports them). May be nil.
	Summaries func(ctx context.Context, e core.Engine) (int, error)
}

// RecallFunc measures cross-session recall on a LoCoMo-format file and
// fills rep: RecallAt (k as a string to the percentage of evidence turns
// found among the top k), Questions, and the other fields it knows.
type RecallFunc func(ctx context.Context, locomoPath string, ks []int, rep *RecallReport) error

// IdentifierFunc returns the opaque identifiers in text (ident.Values).
type IdentifierFunc func(text string) []string

// Progress receives progress reports. Implementations need not be safe for
// concurrent use: Run reports from one goroutine.
type Progress interface {
	// Step starts a named step of total units.
	Step(name string, total int)
	// Add reports n more units done.
	Add(n int)
}

type nopProgress struct{}

func (nopProgress) Step(string, int) {}
func (nopProgress) Add(int)          {}

// Config is what to run.
type Config struct {
	// Suites to run (default: all, in the order of Suites).
	Suites []string
	// Seed of the synthetic transcripts (default 1).
	Seed uint64
	// Messages is the length of the synthetic transcript of the ingest,
	// compact and lossless suites (default 20000).
	Messages int
	// Sizes are the assemble suite's history sizes in messages (default
	// 10000, 100000, 1000000).
	Sizes []int
	// Budget is the token budget (default 128000).
	Budget int
	// K are the recall cut-offs (default 5, 8, 10, 25, 50: 8 is what
	// assemble's recall renders).
	K []int
	// AssembleRuns is the number of timed assembles per size (default 50).
	AssembleRuns int
	// OneByOne caps the messages ingested one call at a time (default 2000).
	OneByOne int
	// LegacyMaxSize is the largest history the legacy assemble baseline is
	// measured at: legacy needs the whole history in memory (default 200000).
	LegacyMaxSize int
	// Sessions is the conversations the sessions suite serves (default
	// DefaultSessions).
	Sessions int
	// SoakDuration is how long the soak suite's workload runs (default
	// DefaultSoakDuration); SoakSample its heap sampling period (default
	// DefaultSoakSample).
	SoakDuration time.Duration
	SoakSample   time.Duration
	// Transcripts are real session files to import and compact as well.
	Transcripts []string
	// LoCoMo is a LoCoMo-format file for the recall suite (empty: the
	// built-in synthetic fixture) and the window suite (required there).
	LoCoMo string
	// WindowBudgets are the window suite's token budgets (default
	// locomo.DefaultWindowBudgets: 2000, 4000, 8000).
	WindowBudgets []int
	// TempDir holds the stores (default os.TempDir()); Run removes what it
	// creates.
	TempDir string
	// Note is printed with the results (e.g. why sizes are reduced).
	Note string

	// Engine is the engine under test (required).
	Engine Target
	// Legacy is the baseline engine, counting as OpenClaw's legacy engine
	// does (its chars/4 estimate); nil Open skips the legacy baselines.
	Legacy Target
	// LegacyExact is the same baseline with an exact token counter, a
	// second row (legacy then re-counts the history with o200k_base on every
	// assemble); nil Open skips it.
	LegacyExact Target
	// Recall runs the recall suite; nil records ErrUnsupported.
	Recall RecallFunc
	// Window runs the window suite; nil records ErrUnsupported.
	Window WindowFunc
	// Identifiers extracts identifiers for the compact suite's retention
	// figure; nil leaves it out.
	Identifiers IdentifierFunc
	// Progress receives progress reports (default none).
	Progress Progress
	// HeapProfile, when set, is a file the footprint and sessions suites
	// write a heap profile to at each new live-heap peak (10% above the
	// last one written), so the peak can be explained with go tool pprof.
	// The soak suite writes others instead: HeapProfile+".middle" when the
	// middle third starts, HeapProfile when the workload has stopped (go
	// tool pprof -base FILE.middle FILE shows what grew),
	// HeapProfile+".flushed" after the engine's background work was
	// flushed, and with SoakProfileEvery HeapProfile+".000", ".001", … at
	// that period.
	HeapProfile string
	// SoakProfileEvery, with HeapProfile, is the period of the soak
	// suite's numbered heap profiles (0: none).
	SoakProfileEvery time.Duration
}

func (c Config) withDefaults() Config {
	if len(c.Suites) == 0 {
		c.Suites = slices.Clone(Suites)
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Messages <= 0 {
		c.Messages = 20000
	}
	if len(c.Sizes) == 0 {
		c.Sizes = []int{10000, 100000, 1000000}
	}
	c.Sizes = slices.Clone(c.Sizes)
	slices.Sort(c.Sizes)
	c.Sizes = slices.Compact(c.Sizes)
	if c.Budget <= 0 {
		c.Budget = 128000
	}
	if len(c.K) == 0 {
		c.K = []int{5, 8, 10, 25, 50}
	}
	if c.AssembleRuns <= 0 {
		c.AssembleRuns = 50
	}
	if c.OneByOne <= 0 {
		c.OneByOne = 2000
	}
	if c.LegacyMaxSize <= 0 {
		c.LegacyMaxSize = 200000
	}
	if c.Sessions <= 0 {
		c.Sessions = DefaultSessions
	}
	if c.SoakDuration <= 0 {
		c.SoakDuration = DefaultSoakDuration
	}
	if c.SoakSample <= 0 {
		c.SoakSample = DefaultSoakSample
	}
	if c.TempDir == "" {
		c.TempDir = os.TempDir()
	}
	if c.Progress == nil {
		c.Progress = nopProgress{}
	}
	if len(c.WindowBudgets) == 0 {
		c.WindowBudgets = locomo.DefaultWindowBudgets
	}
	c.WindowBudgets = slices.Clone(c.WindowBudgets)
	slices.Sort(c.WindowBudgets)
	c.WindowBudgets = slices.Compact(c.WindowBudgets)
	return c
}

// Validate reports a configuration Run cannot use.
func (c Config) Validate() error {
	for _, s := range c.Suites {
		if !slices.Contains(Suites, s) && !slices.Contains(ExtraSuites, s) {
			return fmt.Errorf("%w %q (want one of %s)", ErrUnknownSuite, s, strings.Join(slices.Concat(Suites, ExtraSuites), ", "))
		}
	}
	if c.Engine.Open == nil {
		return errors.New("bench: config: Engine.Open is nil")
	}
	for _, n := range c.Sizes {
		if n <= 0 {
			return fmt.Errorf("bench: config: size %d is not positive", n)
		}
	}
	for _, k := range c.K {
		if k <= 0 {
			return fmt.Errorf("bench: config: k %d is not positive", k)
		}
	}
	for _, b := range c.WindowBudgets {
		if b <= 0 {
			return fmt.Errorf("bench: config: window budget %d is not positive", b)
		}
	}
	if slices.Contains(c.Suites, SuiteWindow) && c.LoCoMo == "" {
		return errors.New("bench: config: the window suite needs a LoCoMo file (LoCoMo)")
	}
	return nil
}

// Run runs the selected suites and returns their figures. A suite that
// fails records its error in the report (Report.Errors) and the others
// still run; Run itself fails only on an invalid config or a cancelled
// context.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp(cfg.TempDir, "lossless-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(root)
	r := &runner{cfg: cfg, root: root}
	rep := &Report{Meta: newMeta(cfg)}
	start := time.Now()
	has := func(s string) bool { return slices.Contains(cfg.Suites, s) }
	for _, s := range slices.Concat(Suites, ExtraSuites) {
		if !has(s) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("bench: %w", err)
		}
		var err error
		suiteStart := time.Now()
		switch s {
		case SuiteIngest:
			rep.Ingest = &IngestReport{}
			err = r.ingest(ctx, rep.Ingest)
			rep.Ingest.Error = errString(err)
		case SuiteAssemble:
			rep.Assemble = &AssembleReport{}
			var fp *FootprintReport
			if has(SuiteFootprint) {
				rep.Footprint = &FootprintReport{}
				fp = rep.Footprint
			}
			err = r.assemble(ctx, rep.Assemble, fp)
			rep.Assemble.Error = errString(err)
			if fp != nil {
				fp.Error = errString(err)
			}
		case SuiteCompact:
			rep.Compact = &CompactReport{}
			err = r.compact(ctx, rep.Compact)
			rep.Compact.Error = errString(err)
		case SuiteRecall:
			rep.Recall = &RecallReport{}
			err = r.recall(ctx, rep.Recall)
			rep.Recall.Error = errString(err)
		case SuiteLossless:
			rep.Lossless = &LosslessReport{LostOrAltered: -1}
			err = r.lossless(ctx, rep.Lossless)
			rep.Lossless.Error = errString(err)
		case SuiteSessions:
			rep.Sessions = &SessionsReport{}
			err = r.sessions(ctx, rep.Sessions)
			rep.Sessions.Error = errString(err)
		case SuiteSoak:
			rep.Soak = &SoakReport{}
			err = r.soak(ctx, rep.Soak)
			rep.Soak.Error = errString(err)
		case SuiteWindow:
			rep.Window = &WindowReport{}
			err = r.window(ctx, rep.Window)
			rep.Window.Error = errString(err)
		case SuiteFootprint:
			if rep.Footprint == nil { // not measured during assemble
				rep.Footprint = &FootprintReport{}
				err = r.footprint(ctx, rep.Footprint)
				rep.Footprint.Error = errString(err)
			}
		}
		rep.Meta.SuiteWallS[s] = time.Since(suiteStart).Seconds()
		if err != nil {
			if ctx.Err() != nil {
				return rep, fmt.Errorf("bench: %s: %w", s, err)
			}
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %v", s, err))
		}
	}
	rep.Meta.WallS = time.Since(start).Seconds()
	rep.Meta.LoadEnd = loadAvg()
	return rep, nil
}

type runner struct {
	cfg  Config
	root string
	n    int // directories made
}

// dir returns a new empty directory under the run's root.
func (r *runner) dir(name string) (string, error) {
	r.n++
	d := fmt.Sprintf("%s/%02d-%s", r.root, r.n, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	return d, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func newMeta(cfg Config) Meta {
	return Meta{
		Date:     time.Now().UTC().Format(time.RFC3339),
		Go:       runtime.Version(),
		OS:       runtime.GOOS + "/" + runtime.GOARCH,
		Cores:    runtime.NumCPU(),
		MemoryGB: memTotalGB(),
		Seed:     cfg.Seed,
		Messages: cfg.Messages,
		Sizes:    cfg.Sizes,
		Budget:   cfg.Budget,
		Suites:   cfg.Suites,
		Engine:   cfg.Engine.Name,
		Note:     cfg.Note,

		SuiteWallS: map[string]float64{},
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		CPU:        cpuModel(),
		LoadStart:  loadAvg(),
	}
}
