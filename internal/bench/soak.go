package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/synth"
)

// The soak suite drives one engine the way a long-lived gateway does, for
// Config.SoakDuration, and samples the live heap: it must stay flat (issue
// 27: nothing unbounded). It is not part of the default run (ExtraSuites):
// name it with --suite soak.
//
// The workload, on soakWorkers goroutines (a gateway serves several
// sessions at once), each keeping soakActive sessions open:
//
//   - every turn is an OpenClaw-like assemble (the turn's user message, a
//     prompt, so recall runs, and a small budget, soakBudget) and then the
//     turn committed with CommitTurn (a user message, the assistant's
//     messages and tool results), which also starts the background
//     compaction decision: with soakBudget's small window, sessions
//     compact as they grow;
//   - a session lives soakMinTurns to soakMaxTurns turns, then goes idle
//     for good and a new one arrives in its place (one in soakImportEvery
//     by importing a session file with Bootstrap);
//   - every soakSubagentEvery turns of a worker a subagent of the session
//     just driven is spawned (counted per worker, not per session, so a
//     short run on a slow machine still spawns some: sessions picked at
//     random may none reach soakSubagentEvery turns of their own)
//     (fork or isolated, alternately), assembles and commits a few turns of
//     its own and ends (completed); every soakRollbackEvery-th spawn is
//     rolled back instead, as after a failed launch;
//   - every soakCompactEvery turns of a worker the host asks for a compaction (a
//     preflight or overflow compact, forced).
//
// The heap is sampled every Config.SoakSample (after a forced collection:
// HeapAlloc is then the live heap). The first third of the run is
// warm-up (caches filling to their bounds); the figure is the growth of
// the median live heap from the middle third to the last third, and the
// least-squares slope over the second half. The heap is flat when both
// stay within SoakToleranceMB (see SoakReport.Flat).

// Soak defaults and shape.
const (
	// DefaultSoakDuration is Config.SoakDuration's default.
	DefaultSoakDuration = 60 * time.Second
	// DefaultSoakSample is Config.SoakSample's default.
	DefaultSoakSample = 2 * time.Second

	// SoakToleranceMB is the most the live heap may grow, in MB, from the
	// middle third's median to the last third's, and the most the
	// second half's least-squares slope may add over that half (so the
	// slope's tolerance in MB/min is SoakToleranceMB over the second
	// half's length: 4.8 MB/min over a 5-minute run). Below it is the
	// noise of a steady engine: Badger's memtables (8 MiB each) and the
	// recall index's in-memory segments come and go.
	SoakToleranceMB = 8.0
	// SoakTolerancePct is the growth allowed as well as SoakToleranceMB, as
	// a share of the middle third's median (whichever is larger).
	SoakTolerancePct = 10.0

	soakWorkers       = 2
	soakActive        = 6
	soakBudget        = 16000
	soakMaxBody       = 4 << 10
	soakMinTurns      = 20
	soakMaxTurns      = 80
	soakTurnMax       = 8 // messages of a turn at most
	soakImportEvery   = 4
	soakImportLen     = 40
	soakSubagentEvery = 15
	soakRollbackEvery = 4
	soakChildTurns    = 3
	soakCompactEvery  = 25
)

// SoakReport is the soak suite's figures.
type SoakReport struct {
	// DurationS is the workload's wall time, SampleEveryS the sampling
	// period, WarmupS the part left out of the figures.
	DurationS    float64 `json:"duration_s"`
	SampleEveryS float64 `json:"sample_every_s"`
	WarmupS      float64 `json:"warmup_s"`
	// Sessions is the sessions started (Imported of them by importing a
	// session file), Idle those that went idle for good.
	Sessions int `json:"sessions"`
	Imported int `json:"imported"`
	Idle     int `json:"idle"`
	// Turns committed (subagents' included), Messages stored by them.
	Turns    int `json:"turns"`
	Messages int `json:"messages"`
	// Assembles, with RecallBlocks of them carrying a recall block.
	Assembles    int `json:"assembles"`
	RecallBlocks int `json:"recall_blocks"`
	// Subagents spawned and ended, Rollbacks spawns rolled back.
	Subagents int `json:"subagents"`
	Rollbacks int `json:"rollbacks"`
	// Compactions are the host's compact calls that compacted; Summaries
	// the summaries stored at the end (background compactions' too), -1
	// when the target cannot say.
	Compactions int `json:"compactions"`
	Summaries   int `json:"summaries"`
	// Samples are the heap samples, in order.
	Samples []HeapSample `json:"samples"`
	// HeapMiddleMB and HeapLastMB are the medians of the live heap over the
	// middle and the last third; GrowthMB their difference.
	HeapMiddleMB float64 `json:"heap_middle_mb"`
	HeapLastMB   float64 `json:"heap_last_mb"`
	GrowthMB     float64 `json:"growth_mb"`
	// MiddleSamples and LastSamples are the samples in those thirds (a
	// verdict needs minThirdSamples in each: ErrTooFewSamples).
	MiddleSamples int `json:"middle_samples"`
	LastSamples   int `json:"last_samples"`
	// SlopeMBPerMin is the least-squares slope of the live heap over the
	// second half, in MB per minute; SlopeRiseMB what it adds over that
	// half.
	SlopeMBPerMin float64 `json:"slope_mb_per_min"`
	SlopeRiseMB   float64 `json:"slope_rise_mb"`
	// ToleranceMB is the growth allowed (the larger of SoakToleranceMB and
	// SoakTolerancePct of HeapMiddleMB), for GrowthMB and SlopeRiseMB
	// both; Flat says both are within it.
	ToleranceMB float64 `json:"tolerance_mb"`
	Flat        bool    `json:"flat"`
	// HeapPeakMB is the largest live heap of the run (every collection's,
	// sampled every 50 ms); RSSMB the resident set at the end.
	HeapPeakMB float64 `json:"heap_peak_mb"`
	RSSMB      float64 `json:"rss_mb"`
	// AssembleP50Ms/P99Ms and CommitP99Ms are the latencies of the turns'
	// assembles and commits (on a machine shared with the workload's
	// other goroutines and the engine's background work).
	AssembleP50Ms float64 `json:"assemble_p50_ms"`
	AssembleP99Ms float64 `json:"assemble_p99_ms"`
	CommitP99Ms   float64 `json:"commit_p99_ms"`
	Error         string  `json:"error,omitempty"`
}

// HeapSample is one heap sample of the soak suite.
type HeapSample struct {
	// T is the seconds since the workload started.
	T float64 `json:"t_s"`
	// LiveMB is the live heap a forced collection found (what it marked,
	// runtime/metrics' /gc/heap/live:bytes), the figure the suite judges;
	// AllocMB is HeapAlloc right after it (the live heap plus what the
	// workload allocated while the collection ran), InuseMB HeapInuse
	// (with the spans' free space), in MB.
	LiveMB  float64 `json:"heap_live_mb"`
	AllocMB float64 `json:"heap_alloc_mb"`
	InuseMB float64 `json:"heap_inuse_mb"`
	// Messages is the messages committed so far.
	Messages int `json:"messages"`
}

// ErrNotFlat is the soak suite's error when the heap grew beyond the
// tolerance.
var ErrNotFlat = errors.New("bench: soak: the live heap grew beyond the tolerance")

// ErrTooFewSamples is the soak suite's error when the middle or the last
// third of the run holds fewer than minThirdSamples heap samples: no
// verdict (a run shorter than a few --soak-sample intervals, or a sampler
// starved by the machine's load; each sample forces a collection).
var ErrTooFewSamples = errors.New("bench: soak: too few heap samples to judge the heap")

// minThirdSamples is the fewest samples in each of the middle and last
// thirds for a verdict.
const minThirdSamples = 3

// soakStats are the soak workers' counters, under mu.
type soakStats struct {
	mu                                sync.Mutex
	sessions, imported, idle, turns   int
	messages, assembles, recall       int
	subagents, rollbacks, compactions int
	asm, commit                       []float64
}

func (s *soakStats) add(fn func(*soakStats)) {
	s.mu.Lock()
	fn(s)
	s.mu.Unlock()
}

// soak runs the soak suite.
func (r *runner) soak(ctx context.Context, rep *SoakReport) error {
	cfg := r.cfg
	d, err := r.dir("soak")
	if err != nil {
		return err
	}
	files := filepath.Join(d, "files")
	if err := os.MkdirAll(files, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	store := filepath.Join(d, "store")
	if err := os.MkdirAll(store, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	heapMB()
	// The soak's profiles are not the peak's (the peak says nothing about
	// growth): with Config.HeapProfile set, one at the first sample of the
	// middle third (FILE.middle), one when the workload has stopped (FILE)
	// and one after the engine's background work was flushed
	// (FILE.flushed: what the engine retains, without work in flight), so
	// that go tool pprof -base FILE.middle FILE shows what grew; with
	// Config.SoakProfileEvery also FILE.000, FILE.001, … at that period.
	stopPeak := startHeapSampler("")
	defer func() { rep.HeapPeakMB = stopPeak() }()
	e, err := cfg.Engine.Open(ctx, store, soakBudget)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer closeEngine(e)

	p := cfg.Progress
	secs := int(math.Ceil(cfg.SoakDuration.Seconds()))
	p.Step(fmt.Sprintf("soak: %s of sessions, subagents and compactions", cfg.SoakDuration), secs)
	st := &soakStats{}
	start := time.Now()
	// The workers stop at the deadline between calls (a call the deadline
	// interrupted would fail, and recall would log it); wctx is done when
	// they are.
	deadline := start.Add(cfg.SoakDuration)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, soakWorkers)
	for w := 0; w < soakWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sw := &soakWorker{e: e, id: w, st: st, files: files,
				rng: rand.New(rand.NewPCG(cfg.Seed, uint64(w)+1)), gen: synth.New(cfg.Seed*1000 + uint64(w))}
			errs[w] = sw.run(ctx, deadline)
		}()
	}
	go func() {
		wg.Wait()
		cancel()
	}()
	// Sample until the workload's time is up.
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	middleWritten := false
	nprof := 0
	sample := func() {
		runtime.GC()
		if d := cfg.SoakProfileEvery; d > 0 && cfg.HeapProfile != "" && time.Since(start) >= time.Duration(nprof)*d {
			writeHeapProfile(fmt.Sprintf("%s.%03d", cfg.HeapProfile, nprof))
			nprof++
		}
		if cfg.HeapProfile != "" && !middleWritten && time.Since(start) >= cfg.SoakDuration/3 {
			middleWritten = true
			writeHeapProfile(cfg.HeapProfile + ".middle")
		}
		metrics.Read(live)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		st.mu.Lock()
		n := st.messages
		st.mu.Unlock()
		hs := HeapSample{T: round3(time.Since(start).Seconds()), AllocMB: round3(float64(ms.HeapAlloc) / (1 << 20)),
			InuseMB: round3(float64(ms.HeapInuse) / (1 << 20)), Messages: n}
		if live[0].Value.Kind() == metrics.KindUint64 {
			hs.LiveMB = round3(float64(live[0].Value.Uint64()) / (1 << 20))
		}
		rep.Samples = append(rep.Samples, hs)
	}
	tick := time.NewTicker(cfg.SoakSample)
	lastSec := 0
	progress := time.NewTicker(time.Second)
loop:
	for {
		select {
		case <-wctx.Done():
			break loop
		case <-tick.C:
			sample()
		case <-progress.C:
			if s := int(time.Since(start).Seconds()); s > lastSec && s <= secs {
				p.Add(s - lastSec)
				lastSec = s
			}
		}
	}
	tick.Stop()
	progress.Stop()
	wg.Wait()
	rep.DurationS = time.Since(start).Seconds()
	if cfg.HeapProfile != "" {
		runtime.GC()
		writeHeapProfile(cfg.HeapProfile)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	rep.SampleEveryS = cfg.SoakSample.Seconds()
	rep.Sessions, rep.Imported, rep.Idle, rep.Turns = st.sessions, st.imported, st.idle, st.turns
	rep.Messages, rep.Assembles, rep.RecallBlocks = st.messages, st.assembles, st.recall
	rep.Subagents, rep.Rollbacks, rep.Compactions = st.subagents, st.rollbacks, st.compactions
	rep.AssembleP50Ms, rep.AssembleP99Ms = percentile(st.asm, 50), percentile(st.asm, 99)
	rep.CommitP99Ms = percentile(st.commit, 99)
	rep.Summaries = -1
	if cfg.Engine.Summaries != nil {
		if err := r.flush(ctx, cfg.Engine, e); err != nil {
			return err
		}
		if rep.Summaries, err = cfg.Engine.Summaries(ctx, e); err != nil {
			return fmt.Errorf("summaries: %w", err)
		}
	}
	if cfg.HeapProfile != "" {
		runtime.GC()
		writeHeapProfile(cfg.HeapProfile + ".flushed")
	}
	rep.RSSMB = rssMB()
	rep.Judge(rep.DurationS)
	if !rep.judged() {
		return fmt.Errorf("%w: %d in the middle third, %d in the last, %d needed in each (sampled every %s over %.0f s)",
			ErrTooFewSamples, rep.MiddleSamples, rep.LastSamples, minThirdSamples, cfg.SoakSample, rep.DurationS)
	}
	if !rep.Flat {
		return fmt.Errorf("%w: %.1f MB from the middle third to the last, slope %.2f MB/min over the second half (+%.1f MB); tolerance %.1f MB",
			ErrNotFlat, rep.GrowthMB, rep.SlopeMBPerMin, rep.SlopeRiseMB, rep.ToleranceMB)
	}
	return nil
}

// Judge computes the heap figures of rep.Samples over a run of duration
// seconds and sets Flat: the medians of the live heap over the middle and
// the last thirds (the first third is warm-up), the least-squares slope
// over the second half and what it adds there, and the tolerance.
func (rep *SoakReport) Judge(duration float64) {
	rep.WarmupS = duration / 3
	var middle, last, hx, hy []float64
	for _, s := range rep.Samples {
		switch {
		case s.T >= 2*duration/3:
			last = append(last, s.LiveMB)
		case s.T >= duration/3:
			middle = append(middle, s.LiveMB)
		}
		if s.T >= duration/2 {
			hx, hy = append(hx, s.T/60), append(hy, s.LiveMB)
		}
	}
	rep.HeapMiddleMB, rep.HeapLastMB = round3(median(middle)), round3(median(last))
	rep.GrowthMB = round3(rep.HeapLastMB - rep.HeapMiddleMB)
	rep.SlopeMBPerMin = round3(slope(hx, hy))
	if len(hx) > 1 {
		rep.SlopeRiseMB = round3(rep.SlopeMBPerMin * (hx[len(hx)-1] - hx[0]))
	}
	rep.ToleranceMB = round3(max(SoakToleranceMB, rep.HeapMiddleMB*SoakTolerancePct/100))
	rep.MiddleSamples, rep.LastSamples = len(middle), len(last)
	rep.Flat = rep.judged() && rep.GrowthMB <= rep.ToleranceMB && rep.SlopeRiseMB <= rep.ToleranceMB
}

// judged reports whether the run holds samples enough for a verdict.
func (rep *SoakReport) judged() bool {
	return rep.MiddleSamples >= minThirdSamples && rep.LastSamples >= minThirdSamples
}

// median returns the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// slope returns the least-squares slope of y over x (0 for fewer than two
// points).
func slope(x, y []float64) float64 {
	n := float64(len(x))
	if len(x) < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx, sy, sxx, sxy = sx+x[i], sy+y[i], sxx+x[i]*x[i], sxy+x[i]*y[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// soakWorker drives its own sessions; its generator and random source are
// its own.
type soakWorker struct {
	e       core.Engine
	id      int
	st      *soakStats
	files   string
	rng     *rand.Rand
	gen     *synth.Generator
	pending *core.Message // the next turn's user message, read ahead
	n       int           // sessions started
	spawns  int
	turns   int // committed by this worker, over all its sessions
}

// soakSession is one open session of a worker.
type soakSession struct {
	id, key string
	turns   int // committed
	life    int // turns before it goes idle
}

// run drives the worker's sessions until deadline (or ctx is done).
func (w *soakWorker) run(ctx context.Context, deadline time.Time) error {
	active := make([]*soakSession, 0, soakActive)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		for len(active) < soakActive {
			s, err := w.newSession(ctx)
			if err != nil {
				return soakErr(ctx, err)
			}
			active = append(active, s)
		}
		i := w.rng.IntN(len(active))
		s := active[i]
		if err := w.turn(ctx, s.id, s.key, s.turns); err != nil {
			return soakErr(ctx, fmt.Errorf("session %s turn %d: %w", s.id, s.turns, err))
		}
		s.turns++
		w.turns++
		if w.turns%soakSubagentEvery == 0 {
			if err := w.subagent(ctx, s); err != nil {
				return soakErr(ctx, fmt.Errorf("session %s subagent: %w", s.id, err))
			}
		}
		if w.turns%soakCompactEvery == 0 {
			res, err := w.e.Compact(ctx, core.CompactParams{SessionID: s.id, SessionKey: s.key, TokenBudget: soakBudget, Force: true})
			if err != nil {
				return soakErr(ctx, fmt.Errorf("session %s compact: %w", s.id, err))
			}
			if res.Compacted {
				w.st.add(func(st *soakStats) { st.compactions++ })
			}
		}
		if s.turns >= s.life { // idle for good; a new one takes its place
			active = slices.Delete(active, i, i+1)
			w.st.add(func(st *soakStats) { st.idle++ })
		}
	}
	return nil
}

// soakErr is nil when the run was cancelled (the caller reports that),
// else err.
func soakErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// newSession starts a session: one in soakImportEvery by importing a
// session file (Bootstrap), the others with their first turn.
func (w *soakWorker) newSession(ctx context.Context) (*soakSession, error) {
	w.n++
	s := &soakSession{id: fmt.Sprintf("soak-%d-%06d", w.id, w.n), life: soakMinTurns + w.rng.IntN(soakMaxTurns-soakMinTurns+1)}
	s.key = "agent:main:" + s.id
	imported := false
	if b, ok := w.e.(core.Bootstrapper); ok && w.n%soakImportEvery == 0 {
		file := filepath.Join(w.files, s.id+".jsonl")
		info, err := synth.WriteSessionFile(file, uint64(w.id)<<32|uint64(w.n), soakImportLen)
		if err != nil {
			return nil, err
		}
		s.id = info.ID
		if _, err := b.Bootstrap(ctx, core.BootstrapParams{SessionID: s.id, SessionKey: s.key, SessionFile: file}); err != nil {
			return nil, fmt.Errorf("import %s: %w", file, err)
		}
		if err := os.Remove(file); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		imported = true
	}
	w.st.add(func(st *soakStats) {
		st.sessions++
		if imported {
			st.imported++
		}
	})
	return s, nil
}

// turn runs one turn of a session: the assemble before the model call,
// with the turn's user message, a prompt and the soak's budget, then the
// turn committed.
func (w *soakWorker) turn(ctx context.Context, session, key string, n int) error {
	msgs, err := w.nextTurn()
	if err != nil {
		return err
	}
	prompt := strings.TrimSpace(msgs[0].Text())
	if len(prompt) > 400 {
		prompt = strings.ToValidUTF8(prompt[:400], "")
	}
	if prompt == "" {
		prompt = assemblePrompt
	}
	t := time.Now()
	res, err := w.e.Assemble(ctx, core.AssembleParams{SessionID: session, SessionKey: key, Messages: msgs[:1],
		TokenBudget: soakBudget, Prompt: prompt})
	if err != nil {
		return fmt.Errorf("assemble: %w", err)
	}
	asm := float64(time.Since(t).Nanoseconds()) / 1e6
	recalled := hasRecallBlock(res.Messages)
	tc, ok := w.e.(core.TurnCommitter)
	if !ok {
		return fmt.Errorf("commit: %w", ErrUnsupported)
	}
	adv := fmt.Sprintf("%s-turn-%d", session, n)
	t = time.Now()
	if _, err := tc.CommitTurn(ctx, core.CommitTurnParams{AdvancementKey: adv, SessionID: session, SessionKey: key,
		Admission: core.AdmissionAnchor{EntryAnchor: core.EntryAnchor{SessionID: session, SessionKey: key, EntryID: adv + "-u"},
			LogicalTurnID: adv, Role: core.RoleUser},
		Terminal: core.EntryAnchor{SessionID: session, SessionKey: key, EntryID: adv + "-a"},
		Messages: msgs}); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	commit := float64(time.Since(t).Nanoseconds()) / 1e6
	w.st.add(func(st *soakStats) {
		st.turns++
		st.messages += len(msgs)
		st.assembles++
		if recalled {
			st.recall++
		}
		st.asm = append(st.asm, asm)
		st.commit = append(st.commit, commit)
	})
	return nil
}

// hasRecallBlock reports whether an assembled window carries a recall
// block (the lossless engine's recall message starts with this tag).
func hasRecallBlock(msgs []core.Message) bool {
	for _, m := range msgs {
		if m.Role() == core.RoleUser && strings.HasPrefix(m.Text(), "<lcm_recall>") {
			return true
		}
	}
	return false
}

// subagent spawns a child of s (fork or isolated, alternately), runs a
// few turns in it and ends it; every soakRollbackEvery-th spawn is rolled
// back instead, as when the launch fails.
func (w *soakWorker) subagent(ctx context.Context, s *soakSession) error {
	sp, ok := w.e.(core.SubagentSpawner)
	if !ok {
		return nil
	}
	w.spawns++
	mode := core.ContextModeFork
	if w.spawns%2 == 0 {
		mode = core.ContextModeIsolated
	}
	child := fmt.Sprintf("%s-sub-%d", s.id, w.spawns)
	childKey := fmt.Sprintf("agent:main:subagent:%s", child)
	prep, err := sp.PrepareSubagentSpawn(ctx, core.SubagentSpawnParams{ParentSessionKey: s.key, ParentSessionID: s.id,
		ChildSessionKey: childKey, ChildSessionID: child, ContextMode: mode, TTLMs: 600_000})
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if w.spawns%soakRollbackEvery == 0 {
		if prep != nil && prep.Rollback != nil {
			if err := prep.Rollback(ctx); err != nil {
				return fmt.Errorf("rollback: %w", err)
			}
		}
		w.st.add(func(st *soakStats) { st.rollbacks++ })
		return nil
	}
	for i := 0; i < soakChildTurns; i++ {
		if err := w.turn(ctx, child, childKey, i); err != nil {
			return fmt.Errorf("child %s: %w", child, err)
		}
	}
	if el, ok := w.e.(core.SubagentEndListener); ok {
		if err := el.OnSubagentEnded(ctx, core.SubagentEndedParams{ChildSessionKey: childKey, Reason: core.SubagentCompleted}); err != nil {
			return fmt.Errorf("end: %w", err)
		}
	}
	w.st.add(func(st *soakStats) { st.subagents++ })
	return nil
}

// nextTurn returns the next turn of the worker's synthetic stream: a user
// message and what follows it up to the next user message (at most
// soakTurnMax), each message shortened to soakMaxBody.
func (w *soakWorker) nextTurn() ([]core.Message, error) {
	var out []core.Message
	if w.pending != nil {
		out = append(out, *w.pending)
		w.pending = nil
	}
	for {
		m, err := cappedMessage(w.gen, soakMaxBody)
		if err != nil {
			return nil, err
		}
		if len(out) == 0 {
			if m.Role() != core.RoleUser {
				continue // a turn starts at a user message
			}
			out = append(out, m)
			continue
		}
		if m.Role() == core.RoleUser {
			w.pending = &m
			return out, nil
		}
		out = append(out, m)
		if len(out) >= soakTurnMax {
			return out, nil
		}
	}
}

// cappedMessage returns g's next message, parsed; a message larger than
// maxBody becomes a plain text message of its role (user, else assistant)
// holding the first maxBody bytes of its text.
func cappedMessage(g *synth.Generator, maxBody int) (core.Message, error) {
	raw := g.Next()
	m, err := core.ParseMessage(raw)
	if err != nil {
		return m, fmt.Errorf("bench: synthetic message: %w", err)
	}
	if len(raw) <= maxBody {
		return m, nil
	}
	text := m.Text()
	if len(text) > maxBody {
		text = strings.ToValidUTF8(text[:maxBody], "")
	}
	if m.Role() == core.RoleUser {
		return core.UserText(text, m.Timestamp()), nil
	}
	return core.AssistantText(text, m.Timestamp()), nil
}

// writeSoak writes the soak suite's rows of the table.
func writeSoak(b *strings.Builder, r *SoakReport) {
	if r == nil {
		return
	}
	verdict := "FLAT"
	switch {
	case !r.judged():
		verdict = fmt.Sprintf("TOO FEW SAMPLES (%d and %d; no verdict)", r.MiddleSamples, r.LastSamples)
	case !r.Flat:
		verdict = "NOT FLAT"
	}
	fmt.Fprintf(b, "\nSOAK       %.0f s: %d sessions (%d imported, %d gone idle), %d turns, %d messages, %d assembles (%d with a recall block)\n",
		r.DurationS, r.Sessions, r.Imported, r.Idle, r.Turns, r.Messages, r.Assembles, r.RecallBlocks)
	fmt.Fprintf(b, "           %d subagents ended, %d rolled back; %d host compactions compacted, %d summaries stored\n",
		r.Subagents, r.Rollbacks, r.Compactions, r.Summaries)
	fmt.Fprintf(b, "           live heap: middle third %.1f MB, last third %.1f MB (%+.1f MB); slope %+.2f MB/min over the second half (%+.1f MB); tolerance %.1f MB: %s\n",
		r.HeapMiddleMB, r.HeapLastMB, r.GrowthMB, r.SlopeMBPerMin, r.SlopeRiseMB, r.ToleranceMB, verdict)
	fmt.Fprintf(b, "           heap peak %.1f MB, RSS %.1f MB; assemble p50 %s, p99 %s ms; commit p99 %s ms; %d samples every %.0f s\n",
		r.HeapPeakMB, r.RSSMB, ms(r.AssembleP50Ms), ms(r.AssembleP99Ms), ms(r.CommitP99Ms), len(r.Samples), r.SampleEveryS)
}

// goBenchSoak returns the soak suite's benchstat line fields.
func goBenchSoak(r *SoakReport) []any {
	return []any{fmt.Sprintf("%.2f", r.HeapLastMB), "heap-MB", fmt.Sprintf("%.2f", r.GrowthMB), "growth-MB",
		fmt.Sprintf("%.3f", r.SlopeMBPerMin), "slope-MB/min"}
}
