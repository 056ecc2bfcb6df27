package bleveindex

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/lossless-engine/contextengine/index"
)

// relevance sets Relevance on each of hits for the query terms.
//
// agent, when set, is the agent whose history is searched: a prompt term
// the index holds only in other agents' docs counts as absent.
func (ix *Index) relevance(ctx context.Context, terms []string, hits []index.Hit, agent string) error {
	if len(hits) == 0 || len(terms) == 0 {
		return nil
	}
	return ix.withRelevance(func(src *bleveRelevance) error {
		return index.ComputeRelevance(ctx, src, terms, hits, agent)
	})
}

// subjectRelevance is relevance for terms, and for subject alone, on one
// reader (index.SubjectRelevancer).
func (ix *Index) subjectRelevance(ctx context.Context, terms, subject []string, hits []index.Hit, agent string) (subj []index.Relevance, err error) {
	err = ix.withRelevance(func(src *bleveRelevance) error {
		subj, err = index.ComputeSubjectRelevance(ctx, src, terms, subject, hits, agent)
		return err
	})
	return subj, err
}

// withRelevance calls fn with a RelevanceSource on a reader of the index.
func (ix *Index) withRelevance(fn func(*bleveRelevance) error) error {
	ix.bmu.RLock()
	defer ix.bmu.RUnlock()
	if ix.isClosed() {
		return index.ErrClosed
	}
	rd, err := reader(ix.bi)
	if err != nil {
		return fmt.Errorf("index: recall: %w", err)
	}
	defer rd.Close()
	return fn(&bleveRelevance{ix: ix, rd: rd})
}

// bleveRelevance is the Index's RelevanceSource, on one reader.
type bleveRelevance struct {
	ix *Index
	rd bindex.IndexReader
	// docs are the hits' internal ids in index order (term readers
	// advance forward), found on the first Holds.
	docs []bleveDoc
	hits []index.Hit // the hits docs were found for
}

type bleveDoc struct {
	iid bindex.IndexInternalID
	hit int
}

func (b *bleveRelevance) TermStats(ctx context.Context, terms []string) (uint64, []uint64, error) {
	total, err := b.rd.DocCount()
	if err != nil {
		return 0, nil, fmt.Errorf("index: recall: %w", err)
	}
	if total == 0 {
		return 0, nil, nil
	}
	dfs, err := b.ix.termDFs(ctx, func() (bindex.IndexReader, error) { return b.rd, nil }, total, terms)
	if err != nil {
		return 0, nil, fmt.Errorf("index: recall: %w", err)
	}
	return total, dfs, nil
}

func (b *bleveRelevance) Holds(ctx context.Context, term string, context bool, hits []index.Hit, has []bool) error {
	if b.docs == nil || len(b.hits) != len(hits) || (len(hits) > 0 && &b.hits[0] != &hits[0]) {
		b.hits = hits
		b.docs = make([]bleveDoc, 0, len(hits))
		for i := range hits {
			iid, err := b.rd.InternalID(hits[i].ID)
			if err != nil {
				return fmt.Errorf("index: recall: %w", err)
			}
			if iid != nil {
				b.docs = append(b.docs, bleveDoc{append(bindex.IndexInternalID(nil), iid...), i})
			}
		}
		sort.Slice(b.docs, func(i, j int) bool { return bytes.Compare(b.docs[i].iid, b.docs[j].iid) < 0 })
	}
	field := fText
	if context {
		field = fCtx
	}
	tfr, err := b.rd.TermFieldReader(ctx, []byte(term), field, false, false, false)
	if err != nil {
		return fmt.Errorf("index: recall: %w", err)
	}
	defer tfr.Close()
	var cur bindex.IndexInternalID // where the reader is (nil: not started)
	for _, d := range b.docs {
		if cur == nil || bytes.Compare(cur, d.iid) < 0 {
			td, err := tfr.Advance(d.iid, nil)
			if err != nil {
				return fmt.Errorf("index: recall: %w", err)
			}
			if td == nil {
				break
			}
			cur = append(cur[:0], td.ID...)
		}
		if bytes.Equal(cur, d.iid) {
			has[d.hit] = true
		}
	}
	return nil
}

func (b *bleveRelevance) AgentHas(ctx context.Context, term, agent string, budget int) (bool, int, error) {
	return agentHas(ctx, b.rd, term, agent, budget)
}

// agentHas reports whether some doc of agent holds term: the term's and
// the agent's posting lists are intersected until the first common doc, in
// at most budget steps (then true); used is the steps taken.
func agentHas(ctx context.Context, rd bindex.IndexReader, term, agent string, budget int) (has bool, used int, err error) {
	tr, err := rd.TermFieldReader(ctx, []byte(term), fText, false, false, false)
	if err != nil {
		return false, 0, fmt.Errorf("index: recall: %w", err)
	}
	defer tr.Close()
	ar, err := rd.TermFieldReader(ctx, []byte(agent), fAgent, false, false, false)
	if err != nil {
		return false, 0, fmt.Errorf("index: recall: %w", err)
	}
	defer ar.Close()
	td, err := tr.Next(nil)
	for ; err == nil && td != nil; used++ {
		if used == budget {
			return true, used, nil
		}
		var ad *bindex.TermFieldDoc
		if ad, err = ar.Advance(td.ID, nil); err != nil || ad == nil {
			break
		}
		if bytes.Equal(ad.ID, td.ID) {
			return true, used + 1, nil
		}
		td, err = tr.Advance(ad.ID, nil)
	}
	if err != nil {
		return false, used, fmt.Errorf("index: recall: %w", err)
	}
	return false, used, nil
}
