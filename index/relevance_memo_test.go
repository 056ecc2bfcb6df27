package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// fakeSource is a RelevanceSource over made-up docs: postings[term] are
// the docs holding term in their text, agentDocs the agent's docs in
// order; it counts the reads.
type fakeSource struct {
	total     uint64
	postings  map[string][]int
	ctxTerms  map[string][]int
	agentDocs map[int]bool
	stats     int
	holds     map[memoTerm]int
	agentHas  int
}

func (f *fakeSource) TermStats(_ context.Context, terms []string) (uint64, []uint64, error) {
	f.stats++
	dfs := make([]uint64, len(terms))
	for i, t := range terms {
		dfs[i] = uint64(len(f.postings[t]))
	}
	return f.total, dfs, nil
}

func (f *fakeSource) Holds(_ context.Context, term string, context bool, hits []Hit, has []bool) error {
	f.holds[memoTerm{term, context}]++
	src := f.postings
	if context {
		src = f.ctxTerms
	}
	for i, h := range hits {
		for _, d := range src[term] {
			if h.ID == fmt.Sprint(d) {
				has[i] = true
			}
		}
	}
	return nil
}

// AgentHas walks the term's postings as bleveindex's does: one step per
// posting, true at the first of the agent's docs, true when the budget
// runs out first.
func (f *fakeSource) AgentHas(_ context.Context, term, _ string, budget int) (bool, int, error) {
	f.agentHas++
	used := 0
	for _, d := range f.postings[term] {
		if used == budget {
			return true, used, nil
		}
		if f.agentDocs[d] {
			return true, used + 1, nil
		}
		used++
	}
	return false, used, nil
}

func newFakeSource(r *rand.Rand, terms []string) *fakeSource {
	f := &fakeSource{total: 1000, postings: map[string][]int{}, ctxTerms: map[string][]int{}, agentDocs: map[int]bool{}, holds: map[memoTerm]int{}}
	for d := 0; d < 1000; d++ {
		f.agentDocs[d] = r.IntN(5) == 0
	}
	for _, t := range terms {
		for d, n := 0, r.IntN(40); d < n; d++ {
			f.postings[t] = append(f.postings[t], r.IntN(1000))
		}
		for d, n := 0, r.IntN(10); d < n; d++ {
			f.ctxTerms[t] = append(f.ctxTerms[t], r.IntN(1000))
		}
	}
	return f
}

// TestSubjectRelevanceReadsOnce: ComputeSubjectRelevance gives what two
// ComputeRelevance calls give (the prompt's terms, then the subject's),
// reading each term's matches in the hits once.
func TestSubjectRelevanceReadsOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var terms []string
		for i, n := 0, 2+r.IntN(12); i < n; i++ {
			terms = append(terms, fmt.Sprint("t", r.IntN(30)))
		}
		terms = uniq(terms)
		subject := terms[:1+r.IntN(len(terms))]
		if len(subject) == len(terms) && len(terms) > 1 {
			subject = subject[1:]
		}
		f := newFakeSource(r, terms)
		var hits []Hit
		for i := 0; i < 1+r.IntN(30); i++ {
			hits = append(hits, Hit{Doc: Doc{ID: fmt.Sprint(r.IntN(1000))}})
		}
		agent := ""
		if round%2 == 0 {
			agent = "a"
		}
		// Two passes, as before.
		ref := append([]Hit(nil), hits...)
		g := *f
		g.holds = map[memoTerm]int{}
		if err := ComputeRelevance(context.Background(), &g, terms, ref, agent); err != nil {
			t.Fatal(err)
		}
		all := make([]Relevance, len(ref))
		for i := range ref {
			all[i], ref[i].Relevance = ref[i].Relevance, Relevance{}
		}
		if err := ComputeRelevance(context.Background(), &g, subject, ref, agent); err != nil {
			t.Fatal(err)
		}
		want := make([]Relevance, len(ref))
		for i := range ref {
			want[i] = ref[i].Relevance
		}
		// One.
		got, err := ComputeSubjectRelevance(context.Background(), f, terms, subject, hits, agent)
		if err != nil {
			t.Fatal(err)
		}
		for i := range hits {
			if hits[i].Relevance != all[i] {
				t.Fatalf("round %d: hit %d's relevance %+v, two passes %+v", round, i, hits[i].Relevance, all[i])
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: subject relevance %+v, two passes %+v", round, got, want)
		}
		for k, n := range f.holds {
			if n > 1 {
				t.Fatalf("round %d: %v read %d times", round, k, n)
			}
		}
		if f.stats != 1 {
			t.Fatalf("round %d: term stats read %d times, want 1", round, f.stats)
		}
	}
}

// TestMemoAgentHas: the memo answers AgentHas as its source would, for
// any budget after any other (the same budget from memory).
func TestMemoAgentHas(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 2000; round++ {
		f := newFakeSource(r, []string{"x"})
		if round%2 == 0 {
			// Few of the agent's docs: a search that runs out of postings
			// in as many steps as a budget allows.
			clear(f.agentDocs)
			f.agentDocs[r.IntN(1000)] = true
		}
		m := &memoSource{src: f, holds: map[memoTerm][]bool{}, agentHas: map[memoBudget]memoHas{}}
		for _, budget := range []int{r.IntN(45), r.IntN(45), r.IntN(45), r.IntN(45)} {
			h1, u1, _ := m.AgentHas(context.Background(), "x", "a", budget)
			h2, u2, _ := f.AgentHas(context.Background(), "x", "a", budget)
			if h1 != h2 || u1 != u2 {
				t.Fatalf("round %d, budget %d: memo (%v, %d), source (%v, %d)", round, budget, h1, u1, h2, u2)
			}
		}
	}
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	out := s[:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
