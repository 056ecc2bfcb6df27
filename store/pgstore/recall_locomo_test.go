package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/internal/locomo"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

// TestRecallLoCoMo measures LoCoMo recall@k (locomo-dev3.json, the
// harness of lossless-bench --suite recall) in one run through the
// engine's recall on Bleve (what lossless-bench reports), package index's
// Recall on Bleve, and this package's Recall on PostgreSQL (BM25, and
// ts_rank for comparison), and prints them side by side. It holds the
// PostgreSQL recall (BM25) within 5 points of the Bleve index's at every
// k. Skipped with -short, without ../shared (or $LOSSLESS_SHARED) or
// without a PostgreSQL server.
//
//	LOSSLESS_SHARED=/work/shared go test -run TestRecallLoCoMo -v ./store/pgstore/
func TestRecallLoCoMo(t *testing.T) {
	if testing.Short() {
		t.Skip("LoCoMo recall comparison: not with -short")
	}
	path := testutil.SharedFile(t, "data/locomo/locomo-dev3.json")
	ctx := context.Background()
	pgRun := func(rank string) func(string) (locomo.Retriever, error) {
		return func(string) (locomo.Retriever, error) {
			pool, _ := recallPool(t)
			r, err := OpenRecall(ctx, pool, RecallOptions{Rank: rank})
			if err != nil {
				return nil, err
			}
			return locomo.NewRecallRetriever(r, 0), nil
		}
	}
	runs := []struct {
		name string
		cfg  locomo.RecallConfig
	}{
		{"engine+bleve", locomo.RecallConfig{}},
		{"index bleve", locomo.RecallConfig{IndexOnly: true}},
		{"pg bm25", locomo.RecallConfig{NewRetriever: pgRun(RankBM25)}},
		{"pg ts_rank", locomo.RecallConfig{NewRetriever: pgRun(RankTS)}},
	}
	reps := make([]locomo.RecallReport, len(runs))
	for i, run := range runs {
		cfg := run.cfg
		cfg.Path, cfg.Dir = path, t.TempDir()
		rep, err := locomo.RunRecall(ctx, cfg)
		if err != nil {
			t.Fatalf("%s: %v", run.name, err)
		}
		reps[i] = rep
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-14s", "recall@k")
	for _, k := range locomo.DefaultKs {
		fmt.Fprintf(&sb, " %6s", "@"+strconv.Itoa(k))
	}
	fmt.Fprintf(&sb, " %9s %9s %9s\n", "p50 ms", "p99 ms", "gated@8")
	for i, run := range runs {
		fmt.Fprintf(&sb, "%-14s", run.name)
		for _, k := range locomo.DefaultKs {
			fmt.Fprintf(&sb, " %6.1f", reps[i].RecallAt[strconv.Itoa(k)])
		}
		gated := 0.0
		if g := reps[i].Gate; g != nil {
			gated = g.InjectedRecallAt8
		}
		fmt.Fprintf(&sb, " %9.2f %9.2f %9.1f\n", reps[i].QueryP50Ms, reps[i].QueryP99Ms, gated)
	}
	t.Log(sb.String())
	bleve, pg := reps[1], reps[2]
	if pg.Questions != bleve.Questions || pg.Turns != bleve.Turns {
		t.Fatalf("postgres asked %d questions over %d turns, bleve %d over %d", pg.Questions, pg.Turns, bleve.Questions, bleve.Turns)
	}
	for _, k := range locomo.DefaultKs {
		ks := strconv.Itoa(k)
		if pg.RecallAt[ks] < bleve.RecallAt[ks]-5 {
			t.Errorf("recall@%d: postgres %.1f, bleve %.1f: more than 5 points behind", k, pg.RecallAt[ks], bleve.RecallAt[ks])
		}
	}
}
