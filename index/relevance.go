package index

import (
	"context"
	"math"
	"sort"
)

// Relevance of a recall hit, the input of the relevance gate
// (RecallQuery.MinRelevance).
//
// BM25 scores are not comparable across prompts: a prompt of common words
// still has a best hit. The gate looks instead at which of the prompt's
// terms a hit contains, weighted by their IDF (BM25's, ln(1 + (N - df +
// 0.5) / (df + 0.5)) over the whole index); with m the IDF a hit matches
// (of the prompt's relMatchTerms rarest terms found in its text, plus
// ctxBoost times that of the ctxTerms rarest found only in its context,
// the previous turn):
//
//   - Coverage is m over the IDF of the prompt's relTopTerms rarest terms
//     (all of a short prompt; a long one is measured against its most
//     specific part). A term absent from the agent's history (from the
//     whole index, or, within a budget, only in other agents' docs) counts
//     at the IDF of a term in one doc: a prompt whose most specific words
//     appear nowhere in the history is not about it. A number of one or
//     two digits counts for a hit only beside another term it holds.
//   - Specificity is m over the IDF of a term in one doc: about 1 for one
//     unique term, below it for matches on words common here.
//
// Value is their geometric mean, m / sqrt(prompt IDF × one-doc IDF): a hit
// must match a good share of what the prompt is about, in words specific
// to this history ("ok, continue" covers a turn "ok, let's continue"
// fully, but on common words), and a long prompt needs more matched mass
// than a short one, though not in proportion to its length. In a history
// of a few dozen turns no word is common: there, a prompt of the words it
// has passes. Values are about 1 for a hit on the prompt's subject and
// below 0.5 for one on a word or two it shares by chance.
type Relevance struct {
	Coverage    float64
	Specificity float64
}

// Value is the relevance the gate compares with RecallQuery.MinRelevance.
func (r Relevance) Value() float64 { return math.Sqrt(r.Coverage * r.Specificity) }

// relTopTerms is how many of a prompt's rarest terms its IDF mass is
// measured on.
const relTopTerms = 10

// relMatchTerms is how many of a prompt's rarest terms are looked up in
// the hits.
const relMatchTerms = 16

// termIDF is BM25's IDF of a term in df of total docs.
func termIDF(total, df uint64) float64 {
	if df > total {
		total = df
	}
	return math.Log(1 + (float64(total)-float64(df)+0.5)/(float64(df)+0.5))
}

// RelevanceSource is what the relevance gate reads from an index
// (ComputeRelevance).
type RelevanceSource interface {
	// TermStats returns the number of docs in the index and the number
	// of docs holding each of terms in their text (0: absent).
	TermStats(ctx context.Context, terms []string) (total uint64, dfs []uint64, err error)
	// Holds sets has[i] (len(has) == len(hits), all false on entry) when
	// hits[i] holds term in its text, or, with context, in its context.
	Holds(ctx context.Context, term string, context bool, hits []Hit, has []bool) error
	// AgentHas reports whether some doc of agent holds term in its text,
	// within about budget steps of work (beyond them: true); used is the
	// steps taken.
	AgentHas(ctx context.Context, term, agent string, budget int) (has bool, used int, err error)
}

// ComputeRelevance sets Relevance on each of hits for the prompt's terms
// (QueryTerms), reading document frequencies and matches from src: the
// relevance gate's measure, the same over every index.
//
// agent, when set, is the agent whose history is searched: a prompt term
// the index holds only in other agents' docs counts as absent.
func ComputeRelevance(ctx context.Context, src RelevanceSource, terms []string, hits []Hit, agent string) error {
	if len(hits) == 0 || len(terms) == 0 {
		return nil
	}
	if len(terms) > 64 {
		terms = terms[:64]
	}
	total, counts, err := src.TermStats(ctx, terms)
	if err != nil {
		return err
	}
	if total == 0 {
		return nil
	}
	idf1 := termIDF(total, 1)
	// The prompt's terms by document frequency: absent ones weigh as a
	// term in one doc; the relMatchTerms rarest present ones are looked up
	// in the hits (the rest of a long prompt is common or weighs little),
	// in the context field the ctxTerms rarest (as the search does).
	type term struct {
		t  string
		df uint64
	}
	present := make([]term, 0, len(terms))
	idfs := make([]float64, 0, len(terms))
	for i, t := range terms {
		if df := counts[i]; df == 0 {
			idfs = append(idfs, idf1)
		} else {
			present = append(present, term{t, df})
		}
	}
	sort.SliceStable(present, func(i, j int) bool { return present[i].df < present[j].df })
	present = present[:min(len(present), relMatchTerms)]
	text := make([]float64, len(hits)) // matched IDF in the text field
	cx := make([]float64, len(hits))   // matched IDF in the context field only
	num := make([]float64, len(hits))  // matched IDF of short numbers
	inText := make([]bool, len(hits))
	has := make([]bool, len(hits))
	var check []term // terms no hit holds: is the agent's history without them?
	for ti, pt := range present {
		idf := termIDF(total, pt.df)
		short := shortNumber(pt.t)
		clear(inText)
		clear(has)
		matched := false
		if err := src.Holds(ctx, pt.t, false, hits, has); err != nil {
			return err
		}
		for i, h := range has {
			if !h {
				continue
			}
			matched = true
			inText[i] = true
			if short {
				num[i] += idf
			} else {
				text[i] += idf
			}
		}
		if ctxBoost > 0 && ti < ctxTerms {
			clear(has)
			if err := src.Holds(ctx, pt.t, true, hits, has); err != nil {
				return err
			}
			for i, h := range has {
				if !h {
					continue
				}
				matched = true
				switch {
				case inText[i]:
				case short:
					num[i] += ctxBoost * idf
				default:
					cx[i] += ctxBoost * idf
				}
			}
		}
		if matched {
			idfs = append(idfs, idf)
		} else {
			check = append(check, pt)
		}
	}
	// Rarest first, within a budget of posting steps (beyond it, a term
	// counts as present).
	budget := 0
	if agent != "" && relAgentAbsence {
		budget = presenceSteps
	}
	for _, u := range check {
		if budget > 0 {
			has, used, err := src.AgentHas(ctx, u.t, agent, budget)
			if err != nil {
				return err
			}
			budget -= used
			if !has {
				u.df = 1
			}
		}
		idfs = append(idfs, termIDF(total, u.df))
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(idfs)))
	mass := 0.0
	for _, v := range idfs[:min(len(idfs), relTopTerms)] {
		mass += v
	}
	for i := range hits {
		m := text[i] + cx[i]
		if m > 0 {
			m += num[i] // a short number counts beside a word only
		}
		hits[i].Relevance = Relevance{Coverage: min(1, m/mass), Specificity: m / idf1}
	}
	return nil
}

// shortNumber reports whether a term is a number of one or two digits
// ("2", "17"): found in all kinds of turns, it counts for a hit only beside
// a word it also holds ("message 2"), never alone (a year or a code is not
// short).
func shortNumber(t string) bool {
	if len(t) > 2 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return true
}

// relAgentAbsence makes a term the agent's history lacks count as absent
// (agentHas); presenceSteps bounds the posting steps all its checks of one
// recall take (beyond, a term counts as present).
var (
	relAgentAbsence = true
	presenceSteps   = 8192
)

// SubjectRelevancer is implemented by a Retriever that measures a
// prompt's relevance for all its terms and for its subject (the terms
// other than names, names.go) in one pass over the index: what the
// subject's measure reads of the index (document frequencies, the terms
// each hit holds, whether the agent's history holds a term) is read once
// for both. RankRecall uses it when the prompt names someone.
type SubjectRelevancer interface {
	// SubjectRelevance sets Relevance on each of hits for terms, as
	// Retriever.Relevance does, and returns the relevance of each hit for
	// subject (a subset of terms) alone.
	SubjectRelevance(ctx context.Context, terms, subject []string, hits []Hit, agent string) ([]Relevance, error)
}

// ComputeSubjectRelevance is ComputeRelevance for terms, then for subject
// alone, reading src once for both (SubjectRelevancer): hits' Relevance is
// set for terms, and the subject's is returned. Both measures are exactly
// those of two calls of ComputeRelevance.
func ComputeSubjectRelevance(ctx context.Context, src RelevanceSource, terms, subject []string, hits []Hit, agent string) ([]Relevance, error) {
	m := &memoSource{src: src, holds: map[memoTerm][]bool{}, agentHas: map[memoBudget]memoHas{}}
	if err := ComputeRelevance(ctx, m, terms, hits, agent); err != nil {
		return nil, err
	}
	all := make([]Relevance, len(hits))
	for i := range hits {
		all[i] = hits[i].Relevance
		hits[i].Relevance = Relevance{}
	}
	if err := ComputeRelevance(ctx, m, subject, hits, agent); err != nil {
		return nil, err
	}
	subj := make([]Relevance, len(hits))
	for i := range hits {
		subj[i] = hits[i].Relevance
		hits[i].Relevance = all[i]
	}
	return subj, nil
}

// memoSource is a RelevanceSource that reads each thing of src once, for
// one set of hits (ComputeSubjectRelevance).
type memoSource struct {
	src      RelevanceSource
	total    uint64
	dfs      map[string]uint64
	holds    map[memoTerm][]bool
	agentHas map[memoBudget]memoHas
}

type memoTerm struct {
	term    string
	context bool
}

type memoBudget struct {
	term   string
	budget int
}

type memoHas struct {
	has  bool
	used int
}

// TermStats implements RelevanceSource: the first call reads src, a later
// one for terms it read answers from memory.
func (m *memoSource) TermStats(ctx context.Context, terms []string) (uint64, []uint64, error) {
	if m.dfs != nil {
		dfs := make([]uint64, len(terms))
		known := true
		for i, t := range terms {
			df, ok := m.dfs[t]
			if !ok {
				known = false
				break
			}
			dfs[i] = df
		}
		if known {
			return m.total, dfs, nil
		}
	}
	total, dfs, err := m.src.TermStats(ctx, terms)
	if err != nil {
		return 0, nil, err
	}
	if m.dfs == nil {
		m.dfs = make(map[string]uint64, len(terms))
	}
	m.total = total
	for i, t := range terms {
		m.dfs[t] = dfs[i]
	}
	return total, dfs, nil
}

// Holds implements RelevanceSource (the hits are the same on every call).
func (m *memoSource) Holds(ctx context.Context, term string, context bool, hits []Hit, has []bool) error {
	k := memoTerm{term, context}
	if got, ok := m.holds[k]; ok && len(got) == len(has) {
		copy(has, got)
		return nil
	}
	if err := m.src.Holds(ctx, term, context, hits, has); err != nil {
		return err
	}
	m.holds[k] = append([]bool(nil), has...)
	return nil
}

// AgentHas implements RelevanceSource: a term asked again with the same
// budget is answered from memory (how an index answers a smaller or
// larger budget is its own: Bleve walks postings, PostgreSQL compares the
// term's frequency with the budget first).
func (m *memoSource) AgentHas(ctx context.Context, term, agent string, budget int) (bool, int, error) {
	k := memoBudget{term, budget}
	if got, ok := m.agentHas[k]; ok {
		return got.has, got.used, nil
	}
	has, used, err := m.src.AgentHas(ctx, term, agent, budget)
	if err != nil {
		return false, 0, err
	}
	m.agentHas[k] = memoHas{has: has, used: used}
	return has, used, nil
}
