package lossless

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/pgtest"
)

// readsSetup stores three conversations on e — the current one of turns
// turns, an older one holding what the prompt asks about, an unrelated
// one — waits for the recall index, and returns the assemble call of the
// current one: its window (the whole conversation) fits the budget, and
// recall finds the older turns.
func readsSetup(tb testing.TB, e *Engine, turns int) core.AssembleParams {
	tb.Helper()
	ctx := context.Background()
	ingestTurns(tb, e, "old", "agent:main:old",
		"Where did we put the staging database credentials?",
		"They are in vault path secret/staging/postgres, rotated every 30 days.",
		"Thanks. And the deploy script for staging?",
		"ops/deploy_staging.sh, run it from the repo root; it reads the staging credentials from vault.")
	ingestTurns(tb, e, "other", "agent:main:other", "Let us plan the birthday party for Sam.", "Cake at 5pm, balloons are blue.")
	texts := make([]string, turns)
	for i := range texts {
		texts[i] = fmt.Sprintf("turn %d of the current work: refactoring the parser, step %d done", i, i)
	}
	ingestTurns(tb, e, "cur", "agent:main:cur", texts...)
	if err := e.WaitRecallIndex(ctx); err != nil {
		tb.Fatal(err)
	}
	return core.AssembleParams{SessionID: "cur", SessionKey: "agent:main:cur", TokenBudget: 16000,
		Prompt: "where are the staging postgres credentials kept in vault?"}
}

// readsEngine opens an engine on backend ("badger" or "postgres"; the
// latter skips without a server) for tb.
func readsEngine(tb testing.TB, backend string) *Engine {
	tb.Helper()
	if backend == "badger" {
		return openTest(tb, withRecall)
	}
	e, err := openPG(context.Background(), pgtest.NewDB(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

// assembleReads runs one warm assemble of p (its window cached by an
// assemble before) and returns what it asked of the store.
func assembleReads(tb testing.TB, e *Engine, n *storeCounts, p core.AssembleParams) (core.AssembleResult, readCounts) {
	tb.Helper()
	before := n.snapshot()
	res, err := e.Assemble(context.Background(), p)
	if err != nil {
		tb.Fatal(err)
	}
	return res, n.snapshot().sub(before)
}

// BenchmarkAssembleReads counts the store reads of a warm Assemble (the
// conversation resolved and its window cached by the assemble before,
// recall on and finding older turns) on each backend: reads/op is every
// Reader call (a point read or a scan: on PostgreSQL a round trip each),
// batched/op the batched reads among them, views/op the read
// transactions. The median latency of the run is reported too.
//
//	go test -run '^$' -bench BenchmarkAssembleReads -benchtime 200x ./lossless/
func BenchmarkAssembleReads(b *testing.B) {
	for _, backend := range []string{"badger", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			e := readsEngine(b, backend)
			p := readsSetup(b, e, 40)
			if _, err := e.Assemble(context.Background(), p); err != nil {
				b.Fatal(err)
			}
			n := withCountingStore(e)
			b.ReportAllocs()
			lat := make([]float64, 0, b.N)
			b.ResetTimer()
			start := n.snapshot()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if _, err := e.Assemble(context.Background(), p); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
			}
			b.StopTimer()
			d := n.snapshot().sub(start)
			sort.Float64s(lat)
			b.ReportMetric(float64(d.reads)/float64(b.N), "reads/op")
			b.ReportMetric(float64(d.batched)/float64(b.N), "batched/op")
			b.ReportMetric(float64(d.views)/float64(b.N), "views/op")
			b.ReportMetric(float64(d.updates)/float64(b.N), "updates/op")
			b.ReportMetric(lat[len(lat)/2], "median-ms")
		})
	}
}

// TestAssembleReads bounds what a warm Assemble asks of the store, on
// each backend: the conversation is resolved once and its window read in
// one snapshot (at most two reads), and the recalled items are read in
// one batched read — not one read per item, nor the conversation looked
// up again by recall, the subagent check or the projection epoch.
func TestAssembleReads(t *testing.T) {
	for _, backend := range []string{"badger", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			e := readsEngine(t, backend)
			p := readsSetup(t, e, 40)
			ctx := context.Background()
			if _, err := e.Assemble(ctx, p); err != nil {
				t.Fatal(err)
			}
			n := withCountingStore(e)
			for _, mode := range []string{core.ProjectionPerTurn, core.ProjectionThreadBootstrap} {
				q := p
				q.RuntimeContext = &core.RuntimeContext{Values: map[string]json.RawMessage{
					RuntimeContextProjection: json.RawMessage(strconv.Quote(mode))}}
				res, d := assembleReads(t, e, n, q)
				rm := recallMessage(res)
				if items := len(recallBlockIDs(rm)); items < 2 {
					t.Fatalf("%s: recall block of %d turns, want the older turns recalled:\n%s", mode, items, rm)
				}
				if res.ContextProjection == nil || res.ContextProjection.Mode != mode {
					t.Fatalf("%s: projection %+v", mode, res.ContextProjection)
				}
				t.Logf("%s: %d reads (%d batched) in %d views, %d updates", mode, d.reads, d.batched, d.views, d.updates)
				if d.reads-d.batched > 2 || d.batched > 2 || d.reads > 3 || d.views > 2 || d.updates > 0 {
					t.Errorf("%s: a warm assemble made %d store reads (%d of them batched) in %d views and %d updates; want at most 2 reads for the conversation and 1 batched read for the recalled items, in at most 2 views",
						mode, d.reads, d.batched, d.views, d.updates)
				}
			}
		})
	}
}
