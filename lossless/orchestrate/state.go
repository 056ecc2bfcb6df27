package orchestrate

import (
	"context"
	"fmt"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/summarize"
)

// DefaultConcurrency is the number of conversations compacting in the
// background at once when NewState is given none.
const DefaultConcurrency = 2

// MaxBackgroundResults bounds the background results kept.
const MaxBackgroundResults = 1024

// BackgroundResult is the outcome of a conversation's last background
// compaction.
type BackgroundResult struct {
	Result dag.Result
	Err    error
}

// State is the run state of one engine: its background compactions and
// its summarizer. The engine makes it in Open (NewState) and stops it first
// in Close (Stop).
type State struct {
	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopped bool
	// running marks conversations with a background run; again asks the
	// run to go once more (a turn arrived while it ran).
	running map[store.ConvID]bool
	again   map[store.ConvID]bool
	// sem bounds the conversations compacting in the background at once.
	sem chan struct{}
	// last is the last background result of the most recent
	// conversations (bounded: tests and diagnostics read it).
	last *lru.Cache[store.ConvID, BackgroundResult]

	sumOnce  sync.Once
	sum      core.Summarizer
	sumErr   error
	override core.Summarizer
}

// NewState returns the run state of an engine that compacts at most
// concurrency conversations in the background at once (<= 0:
// DefaultConcurrency).
func NewState(concurrency int) *State {
	ctx, cancel := context.WithCancel(context.Background())
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	last, err := lru.New[store.ConvID, BackgroundResult](MaxBackgroundResults)
	if err != nil {
		panic(err) // a constant size
	}
	return &State{ctx: ctx, cancel: cancel, running: map[store.ConvID]bool{}, again: map[store.ConvID]bool{},
		sem: make(chan struct{}, concurrency), last: last}
}

// Stop cancels background compactions and waits for them; no run starts
// after it (a turn that ends after Close starts none). It is idempotent.
func (x *State) Stop() {
	x.mu.Lock()
	x.stopped = true
	x.mu.Unlock()
	x.cancel()
	x.wg.Wait()
}

// Context is the context of background runs (canceled by Stop).
func (x *State) Context() context.Context { return x.ctx }

// Results is the cache of the last background results (bounded by
// MaxBackgroundResults; safe for concurrent use).
func (x *State) Results() *lru.Cache[store.ConvID, BackgroundResult] { return x.last }

// Last returns the last background result of conversation c.
func (x *State) Last(c store.ConvID) (BackgroundResult, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.last.Get(c)
}

// Running returns the number of conversations with a background run and
// whether Stop was called (diagnostics, tests).
func (x *State) Running() (running int, stopped bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.running), x.stopped
}

// WaitIdle waits until no background compaction runs.
func (x *State) WaitIdle() { x.wg.Wait() }

// Wait waits until no background compaction runs, or until ctx is done.
func (x *State) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		x.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("lossless: wait for compactions: %w", ctx.Err())
	}
}

// SetSummarizer makes the runs summarize with s instead of the configured
// summarizer.
func (x *State) SetSummarizer(s core.Summarizer) {
	x.mu.Lock()
	x.override = s
	x.mu.Unlock()
}

func (x *State) overridden() core.Summarizer {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.override
}

// Summarizer returns the summarizer compactions use: the one set with
// SetSummarizer, else summarize.FromConfig of the engine's configuration
// (made once).
func Summarizer[C dag.Store](p Port[C]) (core.Summarizer, error) {
	x := p.State()
	if o := x.overridden(); o != nil {
		return o, nil
	}
	x.sumOnce.Do(func() {
		sc, err := p.SummarizerConfig()
		if err != nil {
			x.sumErr = err
			return
		}
		x.sum, x.sumErr = summarize.FromConfig(sc, p.Counter())
	})
	return x.sum, x.sumErr
}

// HostSummarizer reports whether compactions summarize with the host's
// model (summarizer kind "host", the default under OpenClaw), which only
// calls that offer runtimeContext.llm can reach. A summarizer set with
// SetSummarizer is not the host's.
func HostSummarizer[C dag.Store](p Port[C]) bool {
	if p.State().overridden() != nil {
		return false
	}
	sc, err := p.SummarizerConfig()
	return err == nil && strings.EqualFold(sc.Kind, summarize.KindHost)
}
