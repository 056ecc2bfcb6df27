package bleveindex

import (
	"context"
	"math"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/scorer"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/lossless-engine/contextengine/index"
)

// bm25Query is a term query scored with BM25 and the index's own b
// (Options.BM25B). Bleve's term scorer reads b from a package variable,
// search.BM25_b, shared by every index in the process; this query computes
// the same score as Bleve's (same IDF, field length from the norm, average
// field length, query weight) with b of its own, so the index never changes
// Bleve's global.
type bm25Query struct {
	term  string
	field string
	boost float64
	b     float64
}

// Searcher implements query.Query.
func (q *bm25Query) Searcher(ctx context.Context, i bindex.IndexReader, _ mapping.IndexMapping, options search.SearcherOptions) (search.Searcher, error) {
	score := options.Score != "none"
	reader, err := i.TermFieldReader(ctx, []byte(q.term), q.field, score, score, false)
	if err != nil {
		return nil, err
	}
	total, err := i.DocCount()
	if err != nil {
		reader.Close()
		return nil, err
	}
	var card int
	if r, ok := i.(bindex.BM25Reader); ok {
		if card, err = r.FieldCardinality(q.field); err != nil {
			reader.Close()
			return nil, err
		}
	}
	s := &bm25Searcher{reader: reader, boost: q.boost, b: q.b, score: score, queryWeight: 1}
	if total > 0 {
		s.avgLen = math.Ceil(float64(card) / float64(total))
	}
	df := float64(reader.Count())
	s.idf = math.Log(1 + (float64(total)-df+0.5)/(df+0.5))
	return s, nil
}

// bm25Searcher walks one term's postings and scores them (bm25Query).
type bm25Searcher struct {
	reader      bindex.TermFieldReader
	tfd         bindex.TermFieldDoc
	idf, boost  float64
	b, avgLen   float64
	queryWeight float64
	score       bool
}

func (s *bm25Searcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	td, err := s.reader.Next(s.tfd.Reset())
	if err != nil || td == nil {
		return nil, err
	}
	return s.match(ctx, td), nil
}

func (s *bm25Searcher) Advance(ctx *search.SearchContext, id bindex.IndexInternalID) (*search.DocumentMatch, error) {
	td, err := s.reader.Advance(id, s.tfd.Reset())
	if err != nil || td == nil {
		return nil, err
	}
	return s.match(ctx, td), nil
}

// match is Bleve's TermQueryScorer.Score for BM25 with s.b.
func (s *bm25Searcher) match(ctx *search.SearchContext, td *bindex.TermFieldDoc) *search.DocumentMatch {
	dm := ctx.DocumentMatchPool.Get()
	if s.score {
		tf := math.Sqrt(float64(td.Freq))
		if td.Freq < scorer.MaxSqrtCache {
			tf = scorer.SqrtCache[td.Freq]
		}
		fieldLen := 1 / (td.Norm * td.Norm)
		norm := 1 - s.b
		if s.avgLen > 0 {
			norm += s.b * fieldLen / s.avgLen
		}
		sc := s.idf * tf * index.BM25K1 / (tf + index.BM25K1*norm)
		if s.queryWeight != 1 {
			sc *= s.queryWeight
		}
		dm.Score = sc
	}
	dm.IndexInternalID = bindex.NewIndexInternalIDFrom(dm.IndexInternalID, td.ID)
	return dm
}

func (s *bm25Searcher) Close() error { return s.reader.Close() }

// Weight and SetQueryNorm are Bleve's TermQueryScorer's.
func (s *bm25Searcher) Weight() float64 {
	w := s.boost * s.idf
	return w * w
}

func (s *bm25Searcher) SetQueryNorm(n float64) { s.queryWeight = s.boost * s.idf * n }

func (s *bm25Searcher) Count() uint64 { return s.reader.Count() }

func (s *bm25Searcher) Min() int { return 0 }

func (s *bm25Searcher) Size() int { return 128 + s.reader.Size() }

func (s *bm25Searcher) DocumentMatchPoolSize() int { return 1 }
