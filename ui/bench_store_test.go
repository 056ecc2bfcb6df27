package ui_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/synth"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// The explorer's benchmark store: n messages (100K by default, 1M with
// LOSSLESS_BENCH_1M=1, as the engine's benchmarks) of synthetic agent
// transcripts (package synth: tool results, code, identifiers), spread over
// benchAgents agents. Each agent has one very long session (n/8 messages,
// compacted to benchLongBudget: leaf summaries and condensed ones at
// several depths) and many of benchShortLen messages, every
// benchCompactEvery-th compacted too. The store is written through the
// engine's public API (IngestBatch, Compact), counted with chars4, and
// kept for the whole benchmark run (or across runs: LOSSLESS_UI_BENCH_STORE).
const (
	benchAgents       = 4
	benchShortLen     = 400
	benchCompactEvery = 10
	benchLongBudget   = 32000
	benchShortBudget  = 8000
	// benchStoreEnv names a directory that keeps the built store between
	// runs: built there when it holds none (one per size), reused after.
	benchStoreEnv = "LOSSLESS_UI_BENCH_STORE"
)

// benchSession names a session of the benchmark store.
type benchSession struct {
	Agent, ID string
	N         int
}

func (s benchSession) key() string { return "agent:" + s.Agent + ":" + s.ID }

// benchLayout returns the sessions of a store of n messages, long ones
// first.
func benchLayout(n int) []benchSession {
	var out []benchSession
	long := n / 8
	for a := 0; a < benchAgents; a++ {
		out = append(out, benchSession{Agent: fmt.Sprintf("agent-%d", a), ID: fmt.Sprintf("long-%d", a), N: long})
	}
	rest := n - long*benchAgents
	for i := 0; rest > 0; i++ {
		k := min(benchShortLen, rest)
		out = append(out, benchSession{Agent: fmt.Sprintf("agent-%d", i%benchAgents), ID: fmt.Sprintf("s-%05d", i), N: k})
		rest -= k
	}
	return out
}

// benchConfig is the engine configuration the store is built and read
// with.
func benchConfig(dir string) config.Config {
	cfg := config.Default()
	cfg.StoreDir = dir
	cfg.Tokenizer = core.CounterChars4
	return cfg
}

var benchStores struct {
	sync.Mutex
	dirs map[int]string
}

// benchStore returns the directory of the store of n messages, built on
// first use (and removed when the benchmark binary's top-level benchmark
// that built it ends, unless LOSSLESS_UI_BENCH_STORE keeps it).
func benchStore(b *testing.B, n int) string {
	b.Helper()
	benchStores.Lock()
	defer benchStores.Unlock()
	if dir, ok := benchStores.dirs[n]; ok {
		return dir
	}
	var dir string
	if keep := os.Getenv(benchStoreEnv); keep != "" {
		dir = filepath.Join(keep, fmt.Sprintf("ui-bench-%d", n))
		if _, err := os.Stat(filepath.Join(dir, "built")); err == nil {
			b.Logf("reusing the %d-message store in %s", n, dir)
			benchStores.dirs = map[int]string{n: dir}
			return dir
		}
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
	} else {
		var err error
		if dir, err = os.MkdirTemp("", fmt.Sprintf("lossless-ui-bench-%d-", n)); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	if err := buildBenchStore(context.Background(), dir, n, b.Logf); err != nil {
		os.RemoveAll(dir)
		b.Fatalf("build the %d-message store: %v", n, err)
	}
	b.Logf("built the %d-message store in %s (%.0f s)", n, dir, time.Since(start).Seconds())
	if os.Getenv(benchStoreEnv) != "" {
		if err := os.WriteFile(filepath.Join(dir, "built"), []byte(strconv.Itoa(n)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if benchStores.dirs == nil {
		benchStores.dirs = map[int]string{}
	}
	benchStores.dirs[n] = dir
	return dir
}

// removeBenchStores removes the stores this run built in temporary
// directories.
func removeBenchStores() {
	if os.Getenv(benchStoreEnv) != "" {
		return
	}
	benchStores.Lock()
	defer benchStores.Unlock()
	for _, dir := range benchStores.dirs {
		os.RemoveAll(dir)
	}
	benchStores.dirs = nil
}

// buildBenchStore writes the store of n messages into dir: each session's
// messages from its own synth stream in batches of 1,000 (generated on a
// second goroutine while the engine ingests), then the compactions.
func buildBenchStore(ctx context.Context, dir string, n int, logf func(string, ...any)) error {
	e, err := lossless.Open(ctx, benchConfig(dir))
	if err != nil {
		return err
	}
	defer e.Close()
	layout := benchLayout(n)
	type batch struct {
		s    benchSession
		msgs []core.Message
		err  error
	}
	batches := make(chan batch, 4)
	go func() {
		defer close(batches)
		for i, s := range layout {
			g := synth.New(uint64(i + 1))
			for done := 0; done < s.N; {
				k := min(1000, s.N-done)
				msgs := make([]core.Message, k)
				for j := range msgs {
					m, err := core.ParseMessage(g.Next())
					if err != nil {
						batches <- batch{err: fmt.Errorf("synthetic message: %w", err)}
						return
					}
					msgs[j] = m
				}
				select {
				case batches <- batch{s: s, msgs: msgs}:
				case <-ctx.Done():
					return
				}
				done += k
			}
		}
	}()
	begin := time.Now()
	stored, last := 0, begin
	for bt := range batches {
		if bt.err != nil {
			return bt.err
		}
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: bt.s.ID, SessionKey: bt.s.key(), Messages: bt.msgs}); err != nil {
			return fmt.Errorf("ingest %s: %w", bt.s.ID, err)
		}
		stored += len(bt.msgs)
		if time.Since(last) > 30*time.Second {
			logf("stored %d of %d messages", stored, n)
			last = time.Now()
		}
	}
	logf("ingested %d messages in %d sessions (%.0f s)", stored, len(layout), time.Since(begin).Seconds())
	for i, s := range layout {
		budget := benchLongBudget
		if i >= benchAgents {
			if (i-benchAgents)%benchCompactEvery != 0 {
				continue
			}
			budget = benchShortBudget
		}
		t := time.Now()
		res, err := e.Compact(ctx, core.CompactParams{SessionID: s.ID, SessionKey: s.key(), AgentID: s.Agent,
			TokenBudget: budget, Force: true, CompactionTarget: core.CompactionTargetBudget})
		if err != nil {
			return fmt.Errorf("compact %s: %w", s.ID, err)
		}
		if !res.OK {
			return fmt.Errorf("compact %s: %s", s.ID, res.Reason)
		}
		if i < benchAgents {
			logf("compacted %s (%d messages) in %.0f s", s.ID, s.N, time.Since(t).Seconds())
		}
	}
	logf("compacted (%.0f s)", time.Since(begin).Seconds())
	if err := e.WaitRecallIndex(ctx); err != nil {
		return err
	}
	logf("recall index complete (%.0f s)", time.Since(begin).Seconds())
	return nil
}
