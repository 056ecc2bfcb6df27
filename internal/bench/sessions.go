package bench

import (
	"context"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/synth"
)

// The sessions suite measures an engine serving many conversations: its
// per-conversation state must stay bounded (issue 15: heap_mb ≤ 96 MB at
// the end of 10,000 conversations). It is not part of the default run
// (ExtraSuites): name it with --suite sessions.

// DefaultSessions is Config.Sessions's default.
const DefaultSessions = 10_000

// Shape of the sessions workload.
const (
	// sessionsHistory is the messages each conversation starts with.
	sessionsHistory = 16
	// sessionsTurns is the turns each conversation then takes: an assemble
	// and the turn's two messages ingested, one conversation after the
	// other, so that every turn after the first comes back to a
	// conversation after all the others were served.
	sessionsTurns = 2
	// sessionsMaxBody caps a synthetic message's text, so that 10,000
	// conversations stay a few minutes of work.
	sessionsMaxBody = 4 << 10
)

// SessionsReport is the sessions suite: one engine serving many
// conversations, each bootstrapped with a short history, then visited
// turn after turn (assemble, then the turn ingested) in a round over all
// of them.
type SessionsReport struct {
	Conversations int `json:"conversations"`
	// Messages is the messages stored in all, Assembles the assembles timed.
	Messages  int `json:"messages"`
	Assembles int `json:"assembles"`
	// HeapMB is the in-use heap at the end (after a collection), in MB;
	// HeapPeakMB the largest live heap of the run (as each collection
	// found it, sampled every 50 ms).
	HeapMB     float64 `json:"heap_mb"`
	HeapPeakMB float64 `json:"heap_peak_mb"`
	// RSSMB is the resident set at the end.
	RSSMB float64 `json:"rss_mb"`
	// AssembleP50Ms/P99Ms are over every assemble: most of them come back
	// to a conversation after thousands of others (cold when its state was
	// evicted).
	AssembleP50Ms float64 `json:"assemble_p50_ms"`
	AssembleP99Ms float64 `json:"assemble_p99_ms"`
	// IngestP99Ms is the p99 of a turn's ingest (two messages).
	IngestP99Ms float64 `json:"ingest_p99_ms"`
	WallS       float64 `json:"wall_s"`
	Error       string  `json:"error,omitempty"`
}

// sessions runs the sessions suite.
func (r *runner) sessions(ctx context.Context, rep *SessionsReport) error {
	cfg := r.cfg
	p := cfg.Progress
	n := cfg.Sessions
	rep.Conversations = n
	start := time.Now()
	d, err := r.dir("sessions")
	if err != nil {
		return err
	}
	heapMB() // collect first
	stop := startHeapSampler(cfg.HeapProfile)
	defer func() { rep.HeapPeakMB = stop() }()
	e, err := cfg.Engine.Open(ctx, d, cfg.Budget)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer closeEngine(e)
	g := synth.New(cfg.Seed)
	next := func() (core.Message, error) {
		raw := g.Next()
		m, err := core.ParseMessage(raw)
		if err != nil {
			return m, fmt.Errorf("bench: synthetic message: %w", err)
		}
		if len(raw) > sessionsMaxBody {
			// Keep the role, shorten the content.
			text := m.Text()
			if len(text) > sessionsMaxBody {
				text = text[:sessionsMaxBody]
			}
			if m.Role() == core.RoleUser {
				m = core.UserText(text, m.Timestamp())
			} else {
				m = core.AssistantText(text, m.Timestamp())
			}
		}
		return m, nil
	}
	session := func(i int) string { return fmt.Sprintf("sessions-%05d", i) }
	p.Step(fmt.Sprintf("sessions: bootstrap %d conversations of %d messages", n, sessionsHistory), n)
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		msgs := make([]core.Message, sessionsHistory)
		for j := range msgs {
			if msgs[j], err = next(); err != nil {
				return err
			}
		}
		if err := ingestAll(ctx, e, session(i), msgs); err != nil {
			return fmt.Errorf("bootstrap %s: %w", session(i), err)
		}
		rep.Messages += len(msgs)
		p.Add(1)
	}
	var asm, ing []float64
	for turn := 0; turn < sessionsTurns; turn++ {
		p.Step(fmt.Sprintf("sessions: turn %d of %d in each conversation", turn+1, sessionsTurns), n)
		for i := 0; i < n; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			user, err := next()
			if err != nil {
				return err
			}
			prompt := user.Text()
			if len(prompt) > 400 {
				prompt = prompt[:400]
			}
			params := core.AssembleParams{SessionID: session(i), SessionKey: sessionKey(session(i)),
				Messages: []core.Message{user}, TokenBudget: cfg.Budget, Prompt: strings.TrimSpace(prompt)}
			t := time.Now()
			res, err := e.Assemble(ctx, params)
			if err != nil {
				return fmt.Errorf("assemble %s: %w", session(i), err)
			}
			asm = append(asm, float64(time.Since(t).Nanoseconds())/1e6)
			if len(res.Messages) == 0 || res.EstimatedTokens > cfg.Budget {
				return fmt.Errorf("assemble %s: %d messages, %d tokens (budget %d)", session(i), len(res.Messages), res.EstimatedTokens, cfg.Budget)
			}
			reply, err := next()
			if err != nil {
				return err
			}
			t = time.Now()
			if err := ingestAll(ctx, e, session(i), []core.Message{user, reply}); err != nil {
				return fmt.Errorf("ingest %s: %w", session(i), err)
			}
			ing = append(ing, float64(time.Since(t).Nanoseconds())/1e6)
			rep.Messages += 2
			p.Add(1)
		}
	}
	rep.Assembles = len(asm)
	rep.AssembleP50Ms, rep.AssembleP99Ms = percentile(asm, 50), percentile(asm, 99)
	rep.IngestP99Ms = percentile(ing, 99)
	if err := r.flush(ctx, cfg.Engine, e); err != nil {
		return err
	}
	rep.HeapMB, rep.RSSMB = heapMB(), rssMB()
	rep.WallS = time.Since(start).Seconds()
	return nil
}

// ingestAll ingests msgs into session in one call when e ingests batches,
// else one message per call.
func ingestAll(ctx context.Context, e core.Engine, session string, msgs []core.Message) error {
	if bi, ok := e.(core.BatchIngester); ok {
		_, err := bi.IngestBatch(ctx, core.IngestBatchParams{SessionID: session, SessionKey: sessionKey(session), Messages: msgs})
		return err
	}
	for _, m := range msgs {
		if _, err := e.Ingest(ctx, core.IngestParams{SessionID: session, SessionKey: sessionKey(session), Message: m}); err != nil {
			return err
		}
	}
	return nil
}

// startHeapSampler samples the live heap (what the last collection found
// reachable, the measure heapMB takes after a forced collection) every
// 50 ms until the returned func is called; that func returns the largest
// sample in MB. With profile set, a heap profile (as of the last
// collection, the same moment the sample describes) is written to that
// file whenever the peak passes the last written one by 10%.
func startHeapSampler(profile string) (stop func() float64) {
	const name = "/gc/heap/live:bytes"
	sample := []metrics.Sample{{Name: name}}
	var peak, written uint64
	read := func() {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			peak = max(peak, sample[0].Value.Uint64())
		}
		if profile != "" && peak > written+written/10 {
			written = peak
			writeHeapProfile(profile)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				read()
			}
		}
	}()
	var once sync.Once
	return func() float64 {
		once.Do(func() {
			close(done)
			wg.Wait()
			read()
		})
		return float64(peak) / (1 << 20)
	}
}

// writeHeapProfile writes the heap profile of the last collection to
// path (through a temporary file, so a reader never sees half of one).
func writeHeapProfile(path string) {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return
	}
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		_ = os.Rename(tmp, path)
	}
}

// writeSessions writes the sessions suite's rows of the table.
func writeSessions(b *strings.Builder, r *SessionsReport) {
	if r == nil {
		return
	}
	fmt.Fprintf(b, "\nSESSIONS   %d conversations, %d messages, %d assembles (each turn after all other conversations)\n",
		r.Conversations, r.Messages, r.Assembles)
	fmt.Fprintf(b, "           heap at the end %.1f MB (peak %.1f MB), RSS %.1f MB; assemble p50 %s, p99 %s ms; turn ingest p99 %s ms\n",
		r.HeapMB, r.HeapPeakMB, r.RSSMB, ms(r.AssembleP50Ms), ms(r.AssembleP99Ms), ms(r.IngestP99Ms))
}

// goBenchSessions returns the sessions suite's benchstat line fields.
func goBenchSessions(r *SessionsReport) []any {
	return []any{fmt.Sprintf("%.2f", r.HeapMB), "heap-MB", fmt.Sprintf("%.3f", r.AssembleP99Ms), "assemble-p99-ms",
		fmt.Sprintf("%.2f", r.HeapPeakMB), "heap-peak-MB"}
}
