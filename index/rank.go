package index

import (
	"context"
	"unicode/utf8"
)

// Retriever is the search half of a recall index: it supplies scored
// candidates, the relevance of hits and the docs at given positions.
// RankRecall does the rest (date boost, exclusions, the relevance gate,
// neighbours, de-duplication), so that every implementation of Recall
// ranks the same way. Package bleveindex's retriever is Bleve, package
// pgstore's PostgreSQL. A Retriever may be built per call (it can cache what one
// recall reads twice, such as document frequencies).
type Retriever interface {
	// Candidates returns up to size docs matching q's filters (Agent or
	// AllAgents, Conversations, ExcludeConversation, Sessions,
	// ExcludeSessions, Kind, Since, Until, Spans) and any of terms (the
	// analyzed prompt, QueryTerms), best first, scored like the index's
	// BM25 (scores are compared within one recall only). It prunes terms
	// as PruneTerms does.
	Candidates(ctx context.Context, q *Query, terms []string, size int) ([]Hit, error)
	// Relevance sets Relevance on each of hits for the prompt's terms;
	// ComputeRelevance does it from a RelevanceSource. agent, when set, is
	// the agent whose history is searched.
	Relevance(ctx context.Context, terms []string, hits []Hit, agent string) error
	// AtPositions returns the docs of agent (of any agent when allAgents)
	// at the given positions (none for a position without a doc).
	AtPositions(ctx context.Context, agent string, allAgents bool, pos []Position) ([]Hit, error)
}

// Position is a turn's place: its session and Seq (neighbours are found
// by it).
type Position struct {
	Session string
	Seq     uint64
}

// SetTextKey sets the key under which Recall collapses the hit with
// near-identical texts (TextKey of its text); a Retriever sets it on the
// hits it returns (0: never collapsed).
func (h *Hit) SetTextKey(k uint64) { h.hash = k }

// TextKey returns the hit's text key (see SetTextKey).
func (h *Hit) TextKey() uint64 { return h.hash }

// RankRecall is Recall over any Retriever: terms are q.Text's analyzed
// terms (QueryTerms). It does not wait for lag (q.WaitForLag is the
// caller's).
func RankRecall(ctx context.Context, r Retriever, terms []string, q RecallQuery) ([]Hit, error) {
	if q.K <= 0 {
		q.K = 10
	}
	if q.Agent == "" && !q.AllAgents {
		return nil, ErrNoAgent
	}
	if q.NeighbourHits <= 0 {
		q.NeighbourHits = 10
	}
	if q.Neighbours == 0 {
		q.Neighbours = 2
	}
	if len(terms) == 0 {
		return nil, nil
	}
	sq := Query{
		Agent:               q.Agent,
		AllAgents:           q.AllAgents,
		Conversations:       q.Conversations,
		ExcludeConversation: q.ExcludeConversation,
		Since:               q.Since,
		Until:               q.Until,
	}
	fetch := max(q.K*2, recallFetchMin) + len(q.ExcludeIDs)
	cands, err := r.Candidates(ctx, &sq, terms, fetch)
	if err != nil {
		return nil, err
	}
	if spans := DateSpans(q.Text); len(spans) > 0 && dateBoost > 0 {
		dq := sq
		dq.Spans = spans
		dated, err := r.Candidates(ctx, &dq, terms, fetch)
		if err != nil {
			return nil, err
		}
		cands = mergeDated(cands, dated, dateBoost)
	}
	excluded := func(h *Hit) bool {
		if q.ExcludeIDs[h.ID] || (h.hash != 0 && q.ExcludeTexts[h.hash]) {
			return true
		}
		return q.CurrentSession != "" && h.Session == q.CurrentSession && h.Seq >= q.InContextFrom
	}
	agent := q.Agent
	if q.AllAgents {
		agent = ""
	}
	// Turns about the asked thing above turns that only share a name
	// (names.go): the subject's relevance measured beside the prompt's,
	// in one pass when the retriever can.
	if sr, ok := r.(SubjectRelevancer); ok {
		if subject := subjectTerms(q.Text, terms, cands); subject != nil {
			subj, err := sr.SubjectRelevance(ctx, terms, subject, cands, agent)
			if err != nil {
				return nil, err
			}
			scoreOnSubject(cands, subj)
		} else if err := r.Relevance(ctx, terms, cands, agent); err != nil {
			return nil, err
		}
	} else {
		if err := r.Relevance(ctx, terms, cands, agent); err != nil {
			return nil, err
		}
		if err := rankOnSubject(ctx, r, q.Text, terms, cands, agent); err != nil {
			return nil, err
		}
	}
	inContext := 0.0 // the best relevance among the hits in context
	kept := cands[:0]
	for _, h := range cands {
		if excluded(&h) {
			inContext = max(inContext, h.Relevance.Value())
			continue
		}
		kept = append(kept, h)
	}
	cands = kept
	if q.MinRelevance > 0 {
		q.MinRelevance = max(q.MinRelevance, gateContextShare*inContext)
		cands = gate(cands, q.MinRelevance)
	}
	if q.Neighbours > 0 && len(cands) > 0 {
		cands, err = addNeighbours(ctx, r, &q, cands, excluded)
		if err != nil {
			return nil, err
		}
	}
	out := make([]Hit, 0, q.K)
	seenText := make(map[uint64]bool, q.K*2)
	for i := range cands {
		if len(out) >= q.K {
			break
		}
		h := cands[i]
		if h.hash != 0 {
			if seenText[h.hash] {
				continue
			}
			seenText[h.hash] = true
		}
		out = append(out, h)
	}
	return out, nil
}

// QueryTerms returns the distinct analyzed terms of a prompt with Analyze
// (AnalyzerChat), in order of first appearance, at most MaxQueryTerms.
// This is the whole of query parsing: no operator or syntax in the text
// has any effect.
func QueryTerms(text string) []string { return queryTerms(text) }

// DocTerms analyzes a doc's text as the index does (AnalyzerChat): the
// frequency of each term and the field length (the number of tokens, what
// BM25 normalises by).
func DocTerms(text string) (freqs map[string]int, length int) {
	if text == "" {
		return nil, 0
	}
	if !utf8.ValidString(text) {
		text = toValidUTF8(text)
	}
	toks := Analyze([]byte(text))
	freqs = make(map[string]int, len(toks))
	for _, t := range toks {
		freqs[string(t.Term)]++
	}
	return freqs, len(toks)
}

// TurnMemory gives each doc the context the index gives it (Doc.Context,
// else the previous turn of its session, clipped, in the order docs are
// given). The zero value is ready; not safe for concurrent use.
type TurnMemory struct{ m turnMemory }

// Context returns the context indexed with d and remembers d's text as
// the context of its session's next turn.
func (t *TurnMemory) Context(d *Doc) string { return t.m.context(d) }

// Remembers reports whether t holds the previous turn of d's session
// (what Context gives it when d.Context is empty). A caller that keeps the
// turns elsewhere can look the previous one up when not (after a restart,
// or one written by another process) and pass it as d.Context, cut by
// TurnContext.
func (t *TurnMemory) Remembers(d *Doc) bool {
	_, ok := t.m.get(d.Agent + "\x00" + d.Session)
	return ok
}

// TurnContext returns a turn's text cut as TurnMemory keeps it for the
// next turn of its session.
func TurnContext(text string) string { return clip(text, maxCtxBytes) }

// BM25K1 is BM25's term-frequency saturation (Bleve's default), for
// a Retriever scoring as the index does.
const BM25K1 = 1.2

// DefaultBM25B is the default of BM25's length normalisation b in every
// implementation (bleveindex.Options.BM25B, pgstore's RecallOptions.BM25B).
const DefaultBM25B = 0.3

// ContextBoost is the weight of a term matched in a doc's context (the
// previous turn) against one in its text, in the search's BM25 score and
// in Relevance.
func ContextBoost() float64 { return ctxBoost }

// TermIDF is BM25's IDF of a term in df of total docs, as the index
// scores it.
func TermIDF(total, df uint64) float64 { return termIDF(total, df) }
