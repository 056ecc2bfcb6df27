package bleveindex

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/lossless-engine/contextengine/index"
)

// TestBM25OwnB: the index scores with its own b and leaves Bleve's global
// alone; its scores equal Bleve's own BM25 with that b (the global set to
// it for the comparison only), for a text query and a boosted context one.
func TestBM25OwnB(t *testing.T) {
	before := search.BM25_b
	ix, _ := openTest(t, Options{BM25B: 0.3})
	ctx := context.Background()
	for i := 0; i < 200; i++ {
		text := fmt.Sprintf("turn %d about the ferry", i)
		if i%3 == 0 {
			text += " gondola" + fmt.Sprintf(" %s", "with a much longer tail of words to vary the field length")
		}
		if i%7 == 0 {
			text += " gondola gondola"
		}
		ix.Add(msg("a", fmt.Sprint("s", i%4), uint64(i), text))
	}
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if search.BM25_b != before {
		t.Fatalf("Open changed bleve's search.BM25_b: %v -> %v", before, search.BM25_b)
	}
	run := func(q query.Query) map[string]float64 {
		t.Helper()
		req := bleve.NewSearchRequestOptions(q, 1000, 0, false)
		ix.bmu.RLock()
		defer ix.bmu.RUnlock()
		res, err := ix.bi.SearchInContext(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, h := range res.Hits {
			out[h.ID] = h.Score
		}
		return out
	}
	both := func(field string, boost float64) (ours, bleves map[string]float64) {
		ours = run(query.NewBooleanQuery(nil, []query.Query{
			&bm25Query{term: "gondola", field: fText, boost: 1, b: 0.3},
			&bm25Query{term: "ferri", field: field, boost: boost, b: 0.3},
		}, nil))
		tq := query.NewTermQuery("gondola")
		tq.SetField(fText)
		cq := query.NewTermQuery("ferri")
		cq.SetField(field)
		cq.SetBoost(boost)
		search.BM25_b = 0.3
		defer func() { search.BM25_b = before }()
		bleves = run(query.NewBooleanQuery(nil, []query.Query{tq, cq}, nil))
		return ours, bleves
	}
	for _, c := range []struct {
		field string
		boost float64
	}{{fText, 1}, {fCtx, index.ContextBoost()}} {
		ours, bleves := both(c.field, c.boost)
		if len(ours) == 0 || len(ours) != len(bleves) {
			t.Fatalf("%s: %d hits, bleve %d", c.field, len(ours), len(bleves))
		}
		for id, s := range bleves {
			if math.Abs(ours[id]-s) > 1e-9*math.Max(1, s) {
				t.Fatalf("%s: %s scored %v, bleve with b=0.3 %v", c.field, id, ours[id], s)
			}
		}
		// And b matters: Bleve's default b ranks differently.
		if ours0 := run(&bm25Query{term: "gondola", field: fText, boost: 1, b: 0.75}); equalScores(ours0, run(&bm25Query{term: "gondola", field: fText, boost: 1, b: 0.3})) {
			t.Fatal("b has no effect on the scores")
		}
	}
	if _, err := ix.Search(ctx, index.Query{Agent: "a", Text: "gondola ferry"}); err != nil {
		t.Fatal(err)
	}
	if search.BM25_b != before {
		t.Fatalf("a search changed bleve's search.BM25_b: %v -> %v", before, search.BM25_b)
	}
}

func equalScores(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
