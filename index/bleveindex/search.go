package bleveindex

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/internal/lru"
)

// Terms returns the distinct analyzed terms of a query text, in order of
// first appearance, at most MaxQueryTerms. This is the whole of query
// parsing: no operator or syntax in the text has any effect.
func (ix *Index) Terms(text string) []string {
	return index.QueryTerms(text)
}

// Search runs q and returns up to q.K hits, best first.
func (ix *Index) Search(ctx context.Context, q index.Query) ([]index.Hit, error) {
	if q.K <= 0 {
		q.K = 10
	}
	if q.Agent == "" && !q.AllAgents {
		return nil, index.ErrNoAgent
	}
	if q.WaitForLag {
		if err := ix.Flush(ctx); err != nil {
			return nil, err
		}
	}
	terms := ix.Terms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	return ix.search(ctx, &q, terms, q.K)
}

// dfCache caches document frequencies for term pruning, in an LRU bounded
// in bytes (internal/lru). Frequencies move slowly; the cache is dropped
// when the doc count has changed by a tenth since it was filled, or the
// index it describes is replaced. A miss reads the frequency from the
// index.
type dfCache struct {
	mu    sync.Mutex
	valid bool   // filled for an index of total docs (false: empty, after reset)
	total uint64 // guarded by mu, as valid
	c     *lru.Cache[string, uint64]
}

// dfCacheBytes bounds the cache: some 40,000 terms.
const dfCacheBytes = 4 << 20

func (c *dfCache) get(total uint64, t string) (uint64, bool) {
	c.mu.Lock()
	if c.c == nil {
		c.c = lru.NewStrings[uint64](dfCacheBytes, 8)
	}
	if !c.valid || total > c.total+c.total/10 || total+total/10 < c.total {
		c.c.Purge()
		c.valid, c.total = true, total
		c.mu.Unlock()
		return 0, false
	}
	c.mu.Unlock()
	return c.c.Get(t)
}

// reset empties the cache (the index it describes was replaced).
func (c *dfCache) reset() {
	c.mu.Lock()
	c.valid = false
	if c.c != nil {
		c.c.Purge()
	}
	c.mu.Unlock()
}

func (c *dfCache) put(t string, n uint64) {
	c.mu.Lock()
	if c.valid {
		c.c.Add(t, n)
	}
	c.mu.Unlock()
}

// reader opens a reader of bi's current snapshot (the caller closes it).
func reader(bi bleve.Index) (bindex.IndexReader, error) {
	adv, err := bi.Advanced()
	if err != nil {
		return nil, err
	}
	return adv.Reader()
}

// termDFs returns the document frequency of each of terms in the text
// field of an index of total docs (0: absent), from the cache or, for those
// it lacks, from the reader open returns (opened on the first miss).
func (ix *Index) termDFs(ctx context.Context, open func() (bindex.IndexReader, error), total uint64, terms []string) ([]uint64, error) {
	out := make([]uint64, len(terms))
	for i, t := range terms {
		n, ok := ix.dfs.get(total, t)
		if !ok {
			rd, err := open()
			if err != nil {
				return nil, err
			}
			tfr, err := rd.TermFieldReader(ctx, []byte(t), fText, false, false, false)
			if err != nil {
				return nil, err
			}
			n = tfr.Count()
			tfr.Close()
			ix.dfs.put(t, n)
		}
		out[i] = n
	}
	return out, nil
}

// pruneTerms keeps the terms worth searching, rarest first (bmu held);
// the first nctx of them are searched in the context field too (at most
// ctxTerms, and in a large index only terms no commoner than
// commonTermMaxDF: a common term's context postings cost as much as its
// text postings and weigh little).
func (ix *Index) pruneTerms(ctx context.Context, terms []string) (out []string, nctx int, err error) {
	total, err := ix.bi.DocCount()
	if err != nil {
		return nil, 0, fmt.Errorf("index: search: %w", err)
	}
	var rd bindex.IndexReader
	defer func() {
		if rd != nil {
			rd.Close()
		}
	}()
	open := func() (bindex.IndexReader, error) {
		var err error
		if rd == nil {
			rd, err = reader(ix.bi)
		}
		return rd, err
	}
	counts, err := ix.termDFs(ctx, open, total, terms)
	if err != nil {
		return nil, 0, fmt.Errorf("index: search: %w", err)
	}
	out, _, nctx = index.PruneTerms(terms, counts, total)
	return out, nctx, nil
}

func (ix *Index) search(ctx context.Context, q *index.Query, terms []string, size int) ([]index.Hit, error) {
	ix.bmu.RLock()
	if ix.isClosed() {
		ix.bmu.RUnlock()
		return nil, index.ErrClosed
	}
	terms, nctx, err := ix.pruneTerms(ctx, terms)
	ix.bmu.RUnlock()
	if err != nil {
		return nil, err
	}
	if len(terms) == 0 {
		return nil, nil
	}
	should := make([]query.Query, 0, 2*len(terms))
	for i, t := range terms {
		should = append(should, &bm25Query{term: t, field: fText, boost: 1, b: ix.opts.BM25B})
		if cb := index.ContextBoost(); cb > 0 && i < nctx {
			should = append(should, &bm25Query{term: t, field: fCtx, boost: cb, b: ix.opts.BM25B})
		}
	}
	bq := query.NewBooleanQuery(nil, should, nil)
	var filters []query.Query
	if !q.AllAgents {
		filters = append(filters, termQ(fAgent, q.Agent))
	}
	if len(q.Conversations) > 0 {
		filters = append(filters, anyTerm(fConv, q.Conversations))
	}
	if len(q.Sessions) > 0 {
		filters = append(filters, anyTerm(fSession, q.Sessions))
	}
	if q.Kind != "" {
		filters = append(filters, termQ(fKind, q.Kind))
	}
	tr, timed := timeRangeOf(q)
	if q.Since != 0 || q.Until != 0 {
		lo, hi := q.Since, q.Until
		if hi == 0 {
			hi = tsMax
		}
		tq := tsQuery(lo, hi)
		if tq == nil {
			return nil, nil
		}
		filters = append(filters, tq)
	}
	if len(q.Spans) > 0 {
		var rs []query.Query
		for _, sp := range q.Spans {
			if r := tsQuery(sp.From, sp.To-1); r != nil {
				rs = append(rs, r)
			}
		}
		switch len(rs) {
		case 0:
			return nil, nil
		case 1:
			filters = append(filters, rs[0])
		default:
			filters = append(filters, query.NewDisjunctionQuery(rs))
		}
	}
	var not []query.Query
	if q.ExcludeConversation != "" {
		not = append(not, termQ(fConv, q.ExcludeConversation))
	}
	for _, s := range q.ExcludeSessions {
		not = append(not, termQ(fSession, s))
	}
	if len(not) > 0 {
		bq.AddMustNot(not...)
	}
	switch len(filters) {
	case 0:
	case 1:
		bq.AddFilter(filters[0])
	default:
		bq.AddFilter(query.NewConjunctionQuery(filters))
	}
	if !timed {
		return ix.run(ctx, bq, size)
	}
	// The bucket filter reaches past the range by less than one finest
	// bucket on each side: keep the hits in range, and fetch again, more,
	// while out-of-range hits crowd in-range ones out of a full fetch.
	for fetch := 2 * size; ; fetch *= 4 {
		hits, err := ix.run(ctx, bq, fetch)
		if err != nil {
			return nil, err
		}
		kept := hits[:0]
		for _, h := range hits {
			if tr.inRange(h.Timestamp) {
				kept = append(kept, h)
			}
		}
		if len(kept) >= size || len(hits) < fetch {
			return kept[:min(len(kept), size)], nil
		}
	}
}

// run executes a query and converts its hits: the size best, in score
// order, equal scores in id order, as store/pgstore's recall orders them
// (by score alone, equal scores came in the segments' order, which a
// background merge changes: TestTiesInIDOrder).
//
// Bleve sorts by score alone, one hit past size, and the ties among the
// hits kept are put in id order here: Bleve's own tie-break on _id loads
// the external id of every candidate, which cost the main job's assemble
// p50 at 20K messages 3.32 ms against 2.33 without it (recall's
// candidates grow with the history; 2.31 ms this way, medians of five,
// README). Only when a tie straddles the cut (the hit past size scores as
// the last one kept) do the docs kept depend on the order, and the search
// runs again with Bleve's tie-break.
func (ix *Index) run(ctx context.Context, bq query.Query, size int) ([]index.Hit, error) {
	if size <= 0 {
		return nil, nil
	}
	hits, err := ix.runSorted(ctx, bq, size+1, false)
	if err != nil {
		return nil, err
	}
	if len(hits) > size && hits[size].Score == hits[size-1].Score {
		return ix.runSorted(ctx, bq, size, true)
	}
	hits = hits[:min(len(hits), size)]
	slices.SortStableFunc(hits, func(a, b index.Hit) int {
		if a.Score != b.Score {
			return cmp.Compare(b.Score, a.Score)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return hits, nil
}

// runSorted executes a query for its size best by score, ties by id when
// byID is set (else in the order Bleve meets them), and converts its hits.
func (ix *Index) runSorted(ctx context.Context, bq query.Query, size int, byID bool) ([]index.Hit, error) {
	req := bleve.NewSearchRequestOptions(bq, size, 0, false)
	req.Fields = storedFields(ix.opts.StoreText)
	if byID {
		req.SortBy([]string{"-_score", "_id"})
	} else {
		req.SortBy([]string{"-_score"})
	}

	ix.bmu.RLock()
	defer ix.bmu.RUnlock()
	if ix.isClosed() {
		return nil, index.ErrClosed
	}
	res, err := ix.bi.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("index: search: %w", err)
	}
	hits := make([]index.Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		hits = append(hits, hitFrom(h))
	}
	return hits, nil
}

func termQ(field, v string) *query.TermQuery {
	t := query.NewTermQuery(v)
	t.SetField(field)
	return t
}

func anyTerm(field string, vs []string) query.Query {
	if len(vs) == 1 {
		return termQ(field, vs[0])
	}
	qs := make([]query.Query, len(vs))
	for i, v := range vs {
		qs[i] = termQ(field, v)
	}
	return query.NewDisjunctionQuery(qs)
}

var (
	fieldsWithText = []string{fMeta, fText}
	fieldsNoText   = []string{fMeta}
)

func storedFields(withText bool) []string {
	if withText {
		return fieldsWithText
	}
	return fieldsNoText
}

func hitFrom(h *search.DocumentMatch) index.Hit {
	out := index.Hit{Doc: index.Doc{ID: h.ID}, Score: h.Score}
	if math.IsNaN(out.Score) {
		out.Score = 0
	}
	if m, ok := h.Fields[fMeta].(string); ok {
		decodeMeta([]byte(m), &out)
	}
	out.Text, _ = h.Fields[fText].(string)
	return out
}
