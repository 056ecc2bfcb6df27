package index

import (
	"sort"
	"unicode/utf8"
)

// MaxQueryTerms caps the distinct terms taken from a query text (the rest
// are dropped), bounding query cost for long prompts.
const MaxQueryTerms = 48

// queryTerms returns the distinct analyzed terms of a query text, in order
// of first appearance, at most MaxQueryTerms.
func queryTerms(text string) []string {
	if text == "" {
		return nil
	}
	if !utf8.ValidString(text) {
		text = toValidUTF8(text)
	}
	if len(text) > 16<<10 {
		text = text[:16<<10]
	}
	toks := Analyze([]byte(text))
	seen := make(map[string]struct{}, len(toks))
	out := make([]string, 0, len(toks))
	for _, t := range toks {
		if len(t.Term) == 0 || len(t.Term) > maxIdentLen {
			continue
		}
		s := string(t.Term)
		if _, ok := seen[s]; ok {
			continue
		}
		seen[s] = struct{}{}
		out = append(out, s)
		if len(out) == MaxQueryTerms {
			break
		}
	}
	return out
}

func toValidUTF8(s string) string {
	b := make([]rune, 0, len(s))
	for _, r := range s {
		b = append(b, r) // invalid bytes become U+FFFD
	}
	return string(b)
}

// ctxBoost weighs the neighbour-context field against the text field;
// only the ctxTerms rarest query terms are looked up in it (each costs a
// posting-list walk).
var (
	ctxBoost = 0.5
	ctxTerms = 5
)

// Query-term pruning: a prompt is cut to its maxSearchTerms rarest terms,
// and, in an index of at least commonTermMinDocs docs, terms found in more
// than commonTermShare of the docs (or more than commonTermMaxDF docs) are
// dropped while at least minSearchTerms remain. Common terms cost the most (long posting lists) and weigh the
// least under BM25; on the LoCoMo dev set dropping them changes recall@k by
// less than a point.
const (
	maxSearchTerms    = 10
	minSearchTerms    = 3
	commonTermShare   = 0.05
	commonTermMinDocs = uint64(1000)
	// commonTermMaxDF caps the posting-list length of a dropped-if-common
	// term in large indexes, whatever the share.
	commonTermMaxDF = uint64(2000)
	// maxPostings caps the summed document frequencies of the kept terms
	// (the postings a query walks): a term that would exceed it is dropped
	// with every commoner one, even the rarest term of the prompt (a
	// prompt of common words only, "run the tests again" in a 100K-doc
	// index, then recalls nothing: BM25 would rank its matches by length
	// alone). It bounds the cost of the slowest queries, and binds in none
	// of the LoCoMo dev set's indexes.
	maxPostings = uint64(12000)
)

// PruneTerms keeps the terms worth searching, rarest first, given the
// document frequency of each (dfs, parallel to terms; 0: absent) in an
// index of total docs: the maxSearchTerms rarest present, without common
// ones (see maxSearchTerms, commonTermShare, maxPostings), with their
// frequencies; the first nctx of them are searched in the context field
// too.
func PruneTerms(terms []string, dfs []uint64, total uint64) (out []string, outDFs []uint64, nctx int) {
	return pruneTerms(terms, dfs, total, maxPostings)
}

// pruneTerms is PruneTerms with maxPostings postings at most (tests lower
// it).
func pruneTerms(terms []string, dfs []uint64, total, maxPostings uint64) (out []string, outDFs []uint64, nctx int) {
	type tdf struct {
		t  string
		df uint64
	}
	sorted := make([]tdf, 0, len(terms))
	for i, t := range terms {
		if dfs[i] > 0 {
			sorted = append(sorted, tdf{t, dfs[i]})
		}
	}
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].df < sorted[j].df })
	out = make([]string, 0, min(len(sorted), maxSearchTerms))
	outDFs = make([]uint64, 0, cap(out))
	var postings uint64
	for i, d := range sorted {
		if len(out) == maxSearchTerms {
			break
		}
		if i >= minSearchTerms && total >= commonTermMinDocs && (float64(d.df) > commonTermShare*float64(total) || d.df > commonTermMaxDF) {
			break
		}
		if postings+d.df > maxPostings {
			break
		}
		postings += d.df
		out = append(out, d.t)
		outDFs = append(outDFs, d.df)
		if nctx == i && i < ctxTerms && (total < commonTermMinDocs || d.df <= commonTermMaxDF) {
			nctx++
		}
	}
	return out, outDFs, nctx
}

// sortHits orders hits by score, then id.
func sortHits(hs []Hit) {
	sort.SliceStable(hs, func(i, j int) bool {
		if hs[i].Score != hs[j].Score {
			return hs[i].Score > hs[j].Score
		}
		return hs[i].ID < hs[j].ID
	})
}
