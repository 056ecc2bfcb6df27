package ui

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/explore"
	"github.com/lossless-engine/contextengine/lossless/inspect"
	"github.com/lossless-engine/contextengine/lossless/recalled"
)

// agentTotals is one agent's row of /api/overview.
type agentTotals struct {
	Agent string `json:"agent"`
	inspect.AgentStats
}

// overviewAnswer is /api/overview's answer.
type overviewAnswer struct {
	Backend    string          `json:"backend"` // "badger" or "postgres"
	Store      string          `json:"store"`   // directory, or URL without its password
	Format     int             `json:"format"`
	Version    string          `json:"version"`
	Tokenizer  string          `json:"tokenizer"`
	DiskBytes  int64           `json:"diskBytes"`
	IndexBytes int64           `json:"indexBytes"`
	Recall     recalled.Status `json:"recall"`
	Agents     []agentTotals   `json:"agents"`
}

// overview answers /api/overview: the store and per-agent totals.
func (s *Server) overview(ctx context.Context, e *lossless.Engine, r *http.Request) (any, error) {
	st, err := e.Stats(ctx)
	if err != nil {
		return nil, err
	}
	cfg := e.Config()
	out := overviewAnswer{Backend: "badger", Store: cfg.StoreDir, Format: st.Format, Version: lossless.Version,
		Tokenizer: cfg.Tokenizer, DiskBytes: st.DiskBytes, IndexBytes: st.IndexBytes, Recall: e.RecallStatus(),
		Agents: []agentTotals{}}
	if cfg.StoreURL != "" {
		out.Backend, out.Store = "postgres", config.RedactURL(cfg.StoreURL)
	}
	for a, t := range st.Agents {
		out.Agents = append(out.Agents, agentTotals{Agent: a, AgentStats: t})
	}
	sort.Slice(out.Agents, func(i, j int) bool { return out.Agents[i].Agent < out.Agents[j].Agent })
	return out, nil
}

// Health: the doctor's check (lossless.Engine.Check, not deep) and the
// census of the summaries read the whole store, which takes seconds on a
// large one: they run in the background, one run at a time, and
// /api/health answers at once with the last run's findings (state
// "running" until the first ends). A run older than healthMaxAge, or than
// healthDuty times its own duration when that is longer, is started again
// by the next request, which meanwhile gets the old one: a page left open
// on a store whose checks take a minute runs them at most a tenth of the
// time.
const (
	healthMaxAge = 30 * time.Second
	healthDuty   = 10
	// maxFallbacks is the most fallback summaries listed.
	maxFallbacks = 100
)

// healthRun is one background run of the whole-store checks.
type healthRun struct {
	State      string                 `json:"state"` // "running", "done" or "error"
	Error      string                 `json:"error,omitempty"`
	StartedAt  int64                  `json:"startedAt"`
	DurationMs int64                  `json:"durationMs"`
	Check      *inspect.CheckResult   `json:"check,omitempty"`
	Census     *explore.SummaryCensus `json:"census,omitempty"`
}

// healthJob holds the last run and the engine it ran on.
type healthJob struct {
	mu      sync.Mutex
	engine  *lossless.Engine
	last    healthRun
	running bool
	ended   time.Time
}

// snapshot returns the last run of e's checks, starting one when there
// is none or it is stale.
func (h *healthJob) snapshot(base context.Context, e *lossless.Engine) healthRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.engine != e {
		h.engine, h.last, h.ended = e, healthRun{}, time.Time{}
	}
	stale := h.last.State == "" || (!h.running && healthStale(h.last, time.Since(h.ended)))
	if stale && !h.running {
		h.running = true
		start := time.Now()
		if h.last.State == "" {
			h.last = healthRun{State: "running", StartedAt: start.UnixMilli()}
		}
		go h.run(base, e, start)
	}
	return h.last
}

// healthStale reports whether a run that ended age ago is to be run again.
func healthStale(last healthRun, age time.Duration) bool {
	return age > max(healthMaxAge, healthDuty*time.Duration(last.DurationMs)*time.Millisecond)
}

// run runs the checks on e and keeps their result.
func (h *healthJob) run(ctx context.Context, e *lossless.Engine, start time.Time) {
	run := healthRun{State: "done", StartedAt: start.UnixMilli()}
	chk, err := e.Check(ctx, false)
	if err == nil {
		run.Check = &chk
		var c explore.SummaryCensus
		if c, err = explore.New(e).SummaryCensus(ctx, maxFallbacks); err == nil {
			run.Census = &c
		}
	}
	if err != nil {
		run.State, run.Error, run.Check, run.Census = "error", err.Error(), nil, nil
	}
	run.DurationMs = time.Since(start).Milliseconds()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.engine == e {
		h.last, h.running, h.ended = run, false, time.Now()
	}
}

// healthAnswer is /api/health's answer.
type healthAnswer struct {
	Backend       string          `json:"backend"`
	Store         string          `json:"store"`
	Format        int             `json:"format"`
	DiskBytes     int64           `json:"diskBytes"`
	IndexBytes    int64           `json:"indexBytes"`
	Recall        recalled.Status `json:"recall"`
	Conversations int64           `json:"conversations"`
	Messages      int64           `json:"messages"`
	Summaries     int64           `json:"summaries"`
	// RefusedSummaries counts the summaries the extractive summarizer
	// wrote because the model's answer was refused (method "refused").
	RefusedSummaries int64 `json:"refusedSummaries"`
	Bytes            int64 `json:"bytes"`
	Tokens           int64 `json:"tokens"`
	// Doctor is the last run of the whole-store checks: the doctor's
	// findings (Check) and the summaries made by a fallback (Census).
	Doctor healthRun `json:"doctor"`
}

// healthView answers /api/health.
func (s *Server) healthView(ctx context.Context, e *lossless.Engine, r *http.Request) (any, error) {
	ov, err := s.overview(ctx, e, r)
	if err != nil {
		return nil, err
	}
	o := ov.(overviewAnswer)
	out := healthAnswer{Backend: o.Backend, Store: o.Store, Format: o.Format, DiskBytes: o.DiskBytes, IndexBytes: o.IndexBytes,
		Recall: o.Recall, Doctor: s.health.snapshot(s.base, e)}
	for _, a := range o.Agents {
		out.Conversations += a.Conversations
		out.Messages += a.Messages
		out.Summaries += a.Summaries
		out.RefusedSummaries += a.RefusedSummaries
		out.Bytes += a.Bytes
		out.Tokens += a.Tokens
	}
	return out, nil
}
