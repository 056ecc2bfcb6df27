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

// Override is the summarizer set with SetSummarizer (nil: none).
func (x *State) Override() core.Summarizer {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.override
}

// Summarizer returns the summarizer compactions use: the one set with
// SetSummarizer, else summarize.FromConfig(sc, tc), made once (the engine
// passes its configured summarizer and token counter on every call; only
// the first one counts).
func (x *State) Summarizer(sc summarize.Config, tc core.TokenCounter) (core.Summarizer, error) {
	if o := x.Override(); o != nil {
		return o, nil
	}
	x.sumOnce.Do(func() { x.sum, x.sumErr = summarize.FromConfig(sc, tc) })
	return x.sum, x.sumErr
}

// HostSummarizer reports whether compactions summarize with the host's
// model (summarizer kind "host" in sc, the default under OpenClaw), which
// only calls that offer runtimeContext.llm can reach. A summarizer set
// with SetSummarizer is not the host's.
func (x *State) HostSummarizer(sc summarize.Config) bool {
	return x.Override() == nil && strings.EqualFold(sc.Kind, summarize.KindHost)
}

// Begin registers a background run of conversation c. It returns true when
// the caller must start the run (it then calls Acquire before the work,
// Release after it, and Again when a pass ends); false when Stop was
// called, or when c already runs (that run is asked to go once more).
func (x *State) Begin(c store.ConvID) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.stopped {
		return false
	}
	if x.running[c] {
		x.again[c] = true
		return false
	}
	x.running[c] = true
	x.wg.Add(1)
	return true
}

// Again ends a pass of c's background run: true when a turn arrived during
// it (the caller runs once more), false when the run is over (c is no
// longer running and Wait no longer waits for it).
func (x *State) Again(c store.ConvID) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.again[c] || x.stopped {
		delete(x.running, c)
		delete(x.again, c)
		x.wg.Done()
		return false
	}
	delete(x.again, c)
	return true
}

// Acquire takes one of the slots that bound the conversations compacting
// in the background at once; false when Stop was called first (nothing to
// release).
func (x *State) Acquire() bool {
	select {
	case x.sem <- struct{}{}:
		return true
	case <-x.ctx.Done():
		return false
	}
}

// Release frees the slot Acquire took.
func (x *State) Release() { <-x.sem }

// Record keeps r as the last background result of c.
func (x *State) Record(c store.ConvID, r BackgroundResult) {
	x.mu.Lock()
	x.last.Add(c, r)
	x.mu.Unlock()
}
