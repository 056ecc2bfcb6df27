package bleveindex

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/index"
)

// TestTSCover checks the bucket cover of a time range against its
// definition: every timestamp in the range has a term in the cover, every
// covered timestamp lies within one finest bucket of the range, and the
// cover stays small.
func TestTSCover(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fine := int64(1) << tsLevels[0]
	maxTerms := 0
	for i := 0; i < 3000; i++ {
		lo := rng.Int64N(tsMax)
		var hi int64
		switch i % 3 {
		case 0:
			hi = lo + rng.Int64N(fine*4) // within a few hours
		case 1:
			hi = lo + rng.Int64N(int64(1)<<35) // up to a year
		default:
			hi = rng.Int64N(tsMax) // anything, possibly empty
		}
		cover := tsCover(lo, hi)
		if lo > hi {
			if cover != nil {
				t.Fatalf("[%d, %d]: empty range covered by %v", lo, hi, cover)
			}
			continue
		}
		maxTerms = max(maxTerms, len(cover))
		set := map[string]bool{}
		for _, c := range cover {
			set[c] = true
		}
		covered := func(ts int64) bool {
			for _, term := range tsTerms(ts) {
				if set[term] {
					return true
				}
			}
			return false
		}
		for _, ts := range []int64{lo, hi, lo + (hi-lo)/2, lo + rng.Int64N(hi-lo+1)} {
			if !covered(ts) {
				t.Fatalf("[%d, %d]: %d in range but not covered (%d terms)", lo, hi, ts, len(cover))
			}
		}
		for _, ts := range []int64{lo - fine - 1, hi + fine + 1, lo - rng.Int64N(1<<40) - fine, hi + rng.Int64N(1<<40) + fine} {
			if ts >= 0 && ts <= tsMax && covered(ts) {
				t.Fatalf("[%d, %d]: %d is more than a bucket outside but covered", lo, hi, ts)
			}
		}
	}
	if limit := 2*31*(len(tsLevels)-1) + 32; maxTerms > limit {
		t.Fatalf("a cover took %d terms, more than %d", maxTerms, limit)
	}
	// Out-of-range timestamps are indexed at the bounds.
	if tsTerms(-5) != tsTerms(0) || tsTerms(tsMax+100) != tsTerms(tsMax) {
		t.Fatal("timestamps outside [0, tsMax] are not clamped")
	}
}

func TestTSAnalyzer(t *testing.T) {
	toks := tsAnalyzer{}.Analyze(tsValue(1_700_000_000_000))
	want := tsTerms(1_700_000_000_000)
	if len(toks) != len(want) {
		t.Fatalf("%d tokens, want %d", len(toks), len(want))
	}
	for i, tk := range toks {
		if string(tk.Term) != want[i] || tk.Position != i+1 {
			t.Fatalf("token %d = %q at %d, want %q at %d", i, tk.Term, tk.Position, want[i], i+1)
		}
	}
}

// TestTimeFilterOutrankedByNeighbours: hits just outside a time range (in
// the same finest bucket) that outrank every hit inside it do not crowd
// the in-range hits out of the results.
func TestTimeFilterOutrankedByNeighbours(t *testing.T) {
	ix, _ := openTest(t, Options{})
	base := int64(400_000) << tsLevels[0] // a bucket start (2023)
	until := base + 1_000_000
	var docs []index.Doc
	for i := 0; i < 30; i++ {
		in := msg("a", "s", uint64(i), "zebra "+strings.Repeat("apple banana cherry date elder fig grape ", 5))
		in.Timestamp = base + int64(i)*1000
		out := msg("a", "s", uint64(100+i), "zebra zebra zebra")
		out.Timestamp = until + 600_000 // ten minutes later, same finest bucket
		in.Context, out.Context = "unrelated", "unrelated"
		docs = append(docs, in, out)
	}
	ix.Add(docs...)
	if err := ix.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]index.Query{
		"until": {Agent: "a", Text: "zebra", Until: until, K: 10},
		"span":  {Agent: "a", Text: "zebra", Spans: []index.TimeSpan{{From: base, To: until}}, K: 10},
	} {
		hits, err := ix.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 10 {
			t.Fatalf("%s: %d hits, want 10 in-range hits", name, len(hits))
		}
		for _, h := range hits {
			if h.Timestamp > until {
				t.Fatalf("%s: hit %s at %d is after Until %d", name, h.ID, h.Timestamp, until)
			}
		}
	}
}
