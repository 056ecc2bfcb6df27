package index

import (
	"context"
	"sort"
	"unicode"
	"unicode/utf8"
)

// RecallQuery asks for the turns of an agent's history that best match a
// prompt, for assemble's recall (and the LoCoMo recall benchmark, which
// measures this same path).
type RecallQuery struct {
	// Agent scopes the recall (required unless AllAgents: recall never
	// crosses agents unless configured to).
	Agent string
	// AllAgents searches every agent's history (a deployment that shares
	// memory across agents sets it explicitly).
	AllAgents bool
	// Text is the prompt of the turn.
	Text string
	// K is the number of distinct turns wanted, neighbours included
	// (default 10).
	K int
	// Neighbours is how many turns either side of each of the best hits
	// are ranked in (default 2; negative: none). They count toward K.
	Neighbours int
	// NeighbourHits is how many of the best hits get neighbours (default 10).
	NeighbourHits int
	// CurrentSession is the session being assembled: its turns with
	// Seq >= InContextFrom are already in the context and never recalled.
	CurrentSession string
	// InContextFrom: see CurrentSession.
	InContextFrom uint64
	// ExcludeIDs are ids already in the context (e.g. summaries shown).
	ExcludeIDs map[string]bool
	// ExcludeTexts are TextKey values of texts already in the context: a
	// doc with the same text (case, punctuation and spacing folded) is
	// never recalled, whatever session holds it.
	ExcludeTexts map[uint64]bool
	// MinRelevance is the relevance gate (0: none; every hit has its
	// Relevance set either way). When no hit's Relevance.Value() reaches
	// it (nor gateContextShare of the best hit already in context), Recall
	// returns nothing: the prompt has nothing relevant here. Otherwise
	// hits at gateItemShare of that threshold are kept, and only those at
	// the threshold bring their neighbours in.
	MinRelevance float64
	// Conversations, ExcludeConversation, Since and Until narrow the
	// search as in Query.
	Conversations       []string
	ExcludeConversation string
	Since, Until        int64
	// WaitForLag: as in Query.
	WaitForLag bool
}

// Ranking parameters of Recall (measured on the LoCoMo dev set, see
// internal/locomo).
var (
	// recallFetchMin is the least number of candidates fetched.
	recallFetchMin = 30
	// dateBoost multiplies the score of turns within a date the prompt names.
	dateBoost = 2.0
	// neighbourDecay scales a hit's score for a neighbour one turn away (and
	// again for each further turn).
	neighbourDecay = 0.7
	// gateItemShare: once the best hit passes the relevance gate, the
	// other hits pass at this share of its threshold (tuned with
	// DefaultRecallMinScore of package lossless on LoCoMo conv-26).
	gateItemShare = 0.5
	// gateContextShare: with the gate on, its threshold is at least this
	// share of the relevance of the best hit already in context (what the
	// context shows about the prompt is not repeated by far weaker
	// matches). Chosen, not tuned (LoCoMo's questions come with an empty
	// context).
	gateContextShare = 0.5
)

// gate applies the relevance gate of threshold min to the candidates: none
// when the best is below min (the prompt has nothing relevant here), else
// those at least gateItemShare of min.
func gate(cands []Hit, min float64) []Hit {
	best := 0.0
	for i := range cands {
		best = max(best, cands[i].Relevance.Value())
	}
	if best < min {
		return cands[:0]
	}
	kept := cands[:0]
	for _, h := range cands {
		if h.Relevance.Value() >= min*gateItemShare {
			kept = append(kept, h)
		}
	}
	return kept
}

// addNeighbours fetches the turns within q.Neighbours of the best
// q.NeighbourHits hits and merges them into the ranking with a decayed
// score (a turn keeps the better of its own and its neighbour score).
func addNeighbours(ctx context.Context, r Retriever, q *RecallQuery, cands []Hit, excluded func(*Hit) bool) ([]Hit, error) {
	type want struct {
		of    int
		score float64
	}
	// Positions as struct keys: no string built per candidate.
	type pos struct {
		session string
		seq     uint64
	}
	byPos := make(map[pos]int, len(cands))
	for i := range cands {
		byPos[pos{cands[i].Session, cands[i].Seq}] = i
	}
	wants := map[pos]want{}
	for i := 0; i < len(cands) && i < q.NeighbourHits; i++ {
		h := &cands[i]
		if h.Kind == KindSummary || h.Relevance.Value() < q.MinRelevance {
			continue
		}
		f := 1.0
		for d := 1; d <= q.Neighbours; d++ {
			f *= neighbourDecay
			for _, seq := range []int64{int64(h.Seq) - int64(d), int64(h.Seq) + int64(d)} {
				if seq < 0 {
					continue
				}
				key := pos{h.Session, uint64(seq)}
				sc := h.Score * f
				if j, ok := byPos[key]; ok {
					if cands[j].Score < sc {
						cands[j].Score = sc
						cands[j].NeighbourOf = h.ID
					}
					continue
				}
				if w, ok := wants[key]; !ok || w.score < sc {
					wants[key] = want{of: i, score: sc}
				}
			}
		}
	}
	if len(wants) > 0 {
		// Only a neighbour that can rank among the k best is worth
		// fetching: one scoring below the k-th best of the candidates and
		// the other wanted neighbours cannot (slack for hits that the
		// caller's de-duplication collapses, and positions with no doc).
		limit := q.K + q.K/2 + 2
		floor := 0.0
		if len(cands)+len(wants) > limit {
			scores := make([]float64, 0, len(cands)+len(wants))
			for i := range cands {
				scores = append(scores, cands[i].Score)
			}
			for _, w := range wants {
				scores = append(scores, w.score)
			}
			sort.Sort(sort.Reverse(sort.Float64Slice(scores)))
			floor = scores[limit-1]
		}
		keys := make([]Position, 0, len(wants))
		for k, w := range wants {
			if w.score >= floor {
				keys = append(keys, Position{Session: k.session, Seq: k.seq})
			}
		}
		var got []Hit
		if len(keys) > 0 {
			var err error
			if got, err = r.AtPositions(ctx, q.Agent, q.AllAgents, keys); err != nil {
				return nil, err
			}
		}
		for _, g := range got {
			w, ok := wants[pos{g.Session, g.Seq}]
			if !ok || excluded(&g) {
				continue
			}
			g.Score = w.score
			g.NeighbourOf = cands[w.of].ID
			g.Relevance = cands[w.of].Relevance
			cands = append(cands, g)
		}
	}
	sortHits(cands)
	return cands, nil
}

// mergeDated boosts the dated hits (found with the same terms within the
// named dates) and merges them into cands, best first.
func mergeDated(cands, dated []Hit, boost float64) []Hit {
	idx := make(map[string]int, len(cands))
	for i := range cands {
		idx[cands[i].ID] = i
	}
	for _, d := range dated {
		d.Score *= boost
		if i, ok := idx[d.ID]; ok {
			cands[i].Score = max(cands[i].Score, d.Score)
			continue
		}
		cands = append(cands, d)
	}
	sortHits(cands)
	return cands
}

// TextKey is the key under which Recall collapses near-identical texts
// (see RecallQuery.ExcludeTexts): a hash of the text's letters and digits,
// lower-cased (case, punctuation and spacing folded); 0 for a text without
// any.
func TextKey(s string) uint64 { return textKey(s) }

func textKey(s string) uint64 {
	var k TextKeyer
	k.WriteString(s)
	return k.Sum()
}

// TextKeyer computes TextKey incrementally: after writing the parts of a
// text that are separated by anything but a letter or digit (lines,
// fields), Sum is the TextKey of the text.
type TextKeyer struct {
	h   uint64
	any bool
}

// FNV-1a, 64 bits, written out rather than hash/fnv's: the key folds and
// hashes byte by byte, and through hash/fnv's streaming interface (a
// buffer of folded bytes, a Write per buffer) BenchmarkTextKey took twice
// as long with two allocations per key (7.8 against 3.5 µs for 2 KB; it
// runs for each message of the window on every recall). TestTextKeyStable
// pins the values both indexes store.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// Write adds b.
func (k *TextKeyer) Write(b []byte) { k.WriteString(string(b)) }

// WriteString adds s.
func (k *TextKeyer) WriteString(s string) {
	if !k.any && k.h == 0 {
		k.h = fnvOffset
	}
	h := k.h
	var buf [utf8.UTFMax]byte
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
				h = (h ^ uint64(c)) * fnvPrime
				k.any = true
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		r = unicode.ToLower(r)
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			for _, b := range buf[:utf8.EncodeRune(buf[:], r)] {
				h = (h ^ uint64(b)) * fnvPrime
			}
			k.any = true
		}
	}
	k.h = h
}

// Sum returns the key of what was written.
func (k *TextKeyer) Sum() uint64 {
	if !k.any {
		return 0
	}
	return k.h | 1
}
