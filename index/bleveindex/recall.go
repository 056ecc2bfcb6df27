package bleveindex

import (
	"context"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/lossless-engine/contextengine/index"
)

var _ index.Recall = (*Index)(nil)

// Recall returns up to q.K distinct turns ranked for q.Text: hits without
// those already in context, with near-identical texts collapsed, and the
// neighbours of the best hits ranked in among them (at a decayed share of
// the hit's score, NeighbourOf set); with q.MinRelevance, only what passes
// the relevance gate.
func (ix *Index) Recall(ctx context.Context, q index.RecallQuery) ([]index.Hit, error) {
	if q.Agent == "" && !q.AllAgents {
		return nil, index.ErrNoAgent
	}
	if q.WaitForLag {
		if err := ix.Flush(ctx); err != nil {
			return nil, err
		}
	}
	return index.RankRecall(ctx, bleveRetriever{ix}, ix.Terms(q.Text), q)
}

// bleveRetriever is the Index's Retriever.
type bleveRetriever struct{ ix *Index }

func (r bleveRetriever) Candidates(ctx context.Context, q *index.Query, terms []string, size int) ([]index.Hit, error) {
	return r.ix.search(ctx, q, terms, size)
}

func (r bleveRetriever) Relevance(ctx context.Context, terms []string, hits []index.Hit, agent string) error {
	return r.ix.relevance(ctx, terms, hits, agent)
}

// SubjectRelevance implements index.SubjectRelevancer.
func (r bleveRetriever) SubjectRelevance(ctx context.Context, terms, subject []string, hits []index.Hit, agent string) ([]index.Relevance, error) {
	return r.ix.subjectRelevance(ctx, terms, subject, hits, agent)
}

func (r bleveRetriever) AtPositions(ctx context.Context, agent string, allAgents bool, pos []index.Position) ([]index.Hit, error) {
	return r.ix.byPos(ctx, agent, allAgents, pos)
}

// byPos returns the agent's docs at the given positions.
func (ix *Index) byPos(ctx context.Context, agent string, allAgents bool, keys []index.Position) ([]index.Hit, error) {
	qs := make([]query.Query, len(keys))
	for i, k := range keys {
		qs[i] = termQ(fPos, posKey(k.Session, k.Seq))
	}
	bq := query.NewBooleanQuery(nil, qs, nil)
	if !allAgents {
		bq.AddFilter(termQ(fAgent, agent))
	}
	return ix.run(ctx, bq, len(keys))
}
