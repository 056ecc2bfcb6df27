package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/synth"
)

// assemblePrompt is the user prompt of every timed assemble (the retrieval
// query when the engine recalls).
const assemblePrompt = "what did we decide about the cache timeout and the failing router tests?"

// buildChunk is how many messages the history builder ingests between
// checks (turn by turn inside a chunk).
const buildChunk = 2048

// assemble runs the assemble suite: it grows one session through the
// configured sizes and times Assemble at each; the legacy engine assembles
// the same history (the host's whole message list) at sizes up to
// LegacyMaxSize. When fp is not nil it also records the footprint.
func (r *runner) assemble(ctx context.Context, rep *AssembleReport, fp *FootprintReport) error {
	return r.grow(ctx, rep, fp, true)
}

// footprint runs the footprint suite alone: it builds the largest history
// without timing assembles.
func (r *runner) footprint(ctx context.Context, fp *FootprintReport) error {
	return r.grow(ctx, &AssembleReport{}, fp, false)
}

func (r *runner) grow(ctx context.Context, rep *AssembleReport, fp *FootprintReport, timed bool) error {
	cfg := r.cfg
	p := cfg.Progress
	rep.Budget, rep.Runs = cfg.Budget, cfg.AssembleRuns
	rep.Latencies = NewLatencies()
	rep.Tokens, rep.Messages, rep.Samples = map[string]int{}, map[string]int{}, map[string]int{}
	rep.Note = "lossless is passed the newest turn as the host's messages (it reads its own store); " +
		"legacy is passed the whole history (it is a pass-through of the host's messages)"
	d, err := r.dir("assemble")
	if err != nil {
		return err
	}
	if fp != nil {
		heapMB() // collect first, so the baseline is comparable
		fp.RSSBaseline = rssMB()
		stop := startHeapSampler(cfg.HeapProfile) // the peak of the whole build
		defer func() { fp.HeapPeakMB = stop() }()
	}
	e, err := cfg.Engine.Open(ctx, d, cfg.Budget)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer closeEngine(e)
	if fp != nil {
		fp.HeapMBOpen, fp.RSSMBOpen = heapMB(), rssMB()
	}
	var legacies []legacyAssemble
	if timed {
		legacies, err = r.openLegacyAssemble(ctx, rep)
		defer func() {
			for _, l := range legacies {
				closeEngine(l.e)
			}
		}()
		if err != nil {
			return err
		}
	}
	const session = "assemble"
	g := synth.New(cfg.Seed)
	var history []core.Message // kept for legacy while small enough
	var lastTurn []core.Message
	var rawBytes int64
	have := 0
	var buildSecs float64
	var errs []error
	for _, size := range cfg.Sizes {
		if size > cfg.LegacyMaxSize {
			history = nil // no longer measured: do not hold it while growing
		}
		p.Step(fmt.Sprintf("assemble: build history to %d messages", size), size-have)
		t0 := time.Now()
		for have < size {
			n := min(buildChunk, size-have)
			chunk := make([]core.Message, n)
			for i := range chunk {
				m, err := core.ParseMessage(g.Next())
				if err != nil {
					return fmt.Errorf("bench: synthetic message: %w", err)
				}
				chunk[i] = m
				rawBytes += int64(len(m.Raw()))
				if m.Role() == core.RoleUser {
					lastTurn = lastTurn[:0]
				}
				lastTurn = append(lastTurn, m)
			}
			if err := ingestBatched(ctx, e, session, sessionKey(session), chunk, p); err != nil {
				return fmt.Errorf("build: %w", err)
			}
			if len(legacies) > 0 && size <= cfg.LegacyMaxSize {
				history = append(history, chunk...)
			}
			have += n
		}
		if err := r.flush(ctx, cfg.Engine, e); err != nil {
			return err
		}
		buildSecs += time.Since(t0).Seconds()
		if !timed {
			continue
		}
		key := strconv.Itoa(size)
		params := core.AssembleParams{SessionID: session, SessionKey: sessionKey(session),
			Messages: slices.Clone(lastTurn), TokenBudget: cfg.Budget, Prompt: assemblePrompt}
		p.Step(fmt.Sprintf("assemble: %d runs at %d messages", cfg.AssembleRuns, size), cfg.AssembleRuns)
		lat, res, err := timeAssemble(ctx, e, params, cfg.AssembleRuns, 10*cfg.AssembleRuns, time.Second, true, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("assemble at %d: %w", size, err))
			continue
		}
		rep.Add(key, lat)
		rep.Samples[key] = len(lat)
		rep.Tokens[key], rep.Messages[key] = res.EstimatedTokens, len(res.Messages)
		if res.EstimatedTokens > cfg.Budget {
			errs = append(errs, fmt.Errorf("assemble at %d: estimated %d tokens, over the budget %d", size, res.EstimatedTokens, cfg.Budget))
		}
		if size <= cfg.LegacyMaxSize {
			lp := params
			lp.Messages = history
			for _, l := range legacies {
				// Legacy counts every message on every call: with an exact
				// counter it is slow, so one run at least, more (up to
				// AssembleRuns) while under 3 seconds.
				p.Step(fmt.Sprintf("assemble: %s, up to %d runs at %d messages", l.name, cfg.AssembleRuns, size), cfg.AssembleRuns)
				lat, res, err := timeAssemble(ctx, l.e, lp, 1, cfg.AssembleRuns, 3*time.Second, true, p)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s assemble at %d: %w", l.name, size, err))
					continue
				}
				l.row.p50[key], l.row.p99[key] = percentile(lat, 50), percentile(lat, 99)
				l.row.samples[key], l.row.tokens[key] = len(lat), res.EstimatedTokens
			}
		}
	}
	if buildSecs > 0 {
		rep.BuildMsgsPerS = float64(have) / buildSecs
	}
	if len(cfg.Sizes) > 0 {
		lo, hi := rep.P99Ms[strconv.Itoa(cfg.Sizes[0])], rep.P99Ms[strconv.Itoa(cfg.Sizes[len(cfg.Sizes)-1])]
		rep.P99RatioLargestSmallest = ratio(hi, lo)
	}
	if fp != nil {
		history = nil
		fp.HeapMB, fp.RSSMB, fp.RSSAnonMB, fp.AtMessages = heapMB(), rssMB(), rssAnonMB(), have
		fp.DiskBytes, fp.RawJSON = dirSize(d), rawBytes
		fp.DiskRatio = ratio(float64(fp.DiskBytes), float64(rawBytes))
	}
	return errors.Join(errs...)
}

// timeAssemble runs one untimed warm-up assemble when warm is set, then at
// least minRuns timed ones, continuing up to maxRuns while less than maxDur
// has passed (fast assembles get enough samples for a p99, slow ones do not
// take minutes); it returns the latencies in ms and the last result.
func timeAssemble(ctx context.Context, e core.Engine, params core.AssembleParams, minRuns, maxRuns int, maxDur time.Duration, warm bool, p Progress) ([]float64, core.AssembleResult, error) {
	var res core.AssembleResult
	var err error
	if warm {
		if res, err = e.Assemble(ctx, params); err != nil {
			return nil, res, err
		}
	}
	lat := make([]float64, 0, minRuns)
	start := time.Now()
	for i := 0; i < minRuns || (i < maxRuns && time.Since(start) < maxDur); i++ {
		if err := ctx.Err(); err != nil {
			return nil, res, err
		}
		t := time.Now()
		res, err = e.Assemble(ctx, params)
		if err != nil {
			return nil, res, err
		}
		lat = append(lat, float64(time.Since(t).Nanoseconds())/1e6)
		p.Add(1)
	}
	return lat, res, nil
}

// percentile returns the nearest-rank q-th percentile of xs (q in (0,100]).
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q/100*float64(len(s)))) - 1
	i = max(0, min(i, len(s)-1))
	return s[i]
}
