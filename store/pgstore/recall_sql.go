package pgstore

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/lossless-engine/contextengine/index"
)

// pgRetriever is the index.Retriever of one recall: it reads the totals
// and the document frequencies of the prompt's terms once, and keeps, for
// each candidate, which of the prompt's terms it holds (the relevance
// gate's matches, returned with the candidates).
type pgRetriever struct {
	r *Recall

	loaded              bool
	total               uint64
	textTerms, ctxTerms uint64
	df, ctxDF           map[string]uint64
	holds               map[string]docTerms // candidate id → prompt terms it holds
}

// docTerms are the prompt's terms a doc holds in its text and context.
type docTerms struct{ text, ctx []string }

func newRetriever(r *Recall) *pgRetriever {
	return &pgRetriever{r: r, holds: map[string]docTerms{}}
}

// load reads the totals and the frequencies of terms not yet read.
func (p *pgRetriever) load(ctx context.Context, terms []string) error {
	var missing []string
	for _, t := range terms {
		if _, ok := p.df[t]; !ok {
			missing = append(missing, t)
		}
	}
	if p.loaded && len(missing) == 0 {
		return nil
	}
	if p.df == nil {
		p.df, p.ctxDF = map[string]uint64{}, map[string]uint64{}
	}
	var dfs, ctxDFs []int64
	var total, tt, ct int64
	err := p.r.pool.QueryRow(ctx, `SELECT s.docs, s.text_terms, s.ctx_terms,
		ARRAY(SELECT coalesce(t.df, 0) FROM unnest($1::text[]) WITH ORDINALITY u(term, o) LEFT JOIN recall_terms t ON t.term = u.term ORDER BY u.o),
		ARRAY(SELECT coalesce(t.ctx_df, 0) FROM unnest($1::text[]) WITH ORDINALITY u(term, o) LEFT JOIN recall_terms t ON t.term = u.term ORDER BY u.o)
		FROM recall_stats s WHERE s.id = 1`, missing).Scan(&total, &tt, &ct, &dfs, &ctxDFs)
	if err != nil {
		return fmt.Errorf("pgstore: recall: term statistics: %w", err)
	}
	if !p.loaded {
		p.total, p.textTerms, p.ctxTerms = uint64(max(total, 0)), uint64(max(tt, 0)), uint64(max(ct, 0))
		p.loaded = true
	}
	for i, t := range missing {
		p.df[t] = uint64(max(dfs[i], 0))
		p.ctxDF[t] = uint64(max(ctxDFs[i], 0))
	}
	return nil
}

// Candidates implements index.Retriever: the docs matching q and any of
// the pruned terms, scored as the Bleve index scores them (bm25.go of
// package index: per term, boost × IDF² × query norm × BM25's frequency
// part with the field length over the average, summed and multiplied by
// the share of the query's clauses the doc matches), or by ts_rank.
func (p *pgRetriever) Candidates(ctx context.Context, q *index.Query, terms []string, size int) ([]index.Hit, error) {
	if err := p.load(ctx, terms); err != nil {
		return nil, err
	}
	dfs := make([]uint64, len(terms))
	for i, t := range terms {
		dfs[i] = p.df[t]
	}
	kept, keptDF, nctx := index.PruneTerms(terms, dfs, p.total)
	if len(kept) == 0 {
		return nil, nil
	}
	boost := index.ContextBoost()
	if boost <= 0 {
		nctx = 0
	}
	// Clause weights, as Bleve's: idf × (query norm × boost × idf), the
	// query norm being 1/sqrt of the sum of (boost × idf)² over clauses.
	tw := make([]float64, len(kept))
	cw := make([]float64, nctx)
	sumSq := 0.0
	for i, t := range kept {
		idf := index.TermIDF(p.total, keptDF[i])
		tw[i] = idf * idf
		sumSq += idf * idf
		if i < nctx {
			cidf := index.TermIDF(p.total, p.ctxDF[t])
			cw[i] = boost * cidf * cidf
			sumSq += (boost * cidf) * (boost * cidf)
		}
	}
	if sumSq > 0 {
		norm := 1 / math.Sqrt(sumSq)
		for i := range tw {
			tw[i] *= norm
		}
		for i := range cw {
			cw[i] *= norm
		}
	}
	b := p.r.opts.BM25B
	// Bleve's average field length: the field's distinct terms over the
	// docs, rounded up (index/bm25.go); 0 turns length normalisation off.
	bnText, bnCtx := 0.0, 0.0
	if p.total > 0 {
		if avg := math.Ceil(float64(p.textTerms) / float64(p.total)); avg > 0 {
			bnText = b / avg
		}
		if avg := math.Ceil(float64(p.ctxTerms) / float64(p.total)); avg > 0 {
			bnCtx = b / avg
		}
	}
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	relTerms := arg(terms[:min(len(terms), 64)]) // index.ComputeRelevance reads at most 64
	match := `d.text_tsv @@ ` + arg(tsqueryLiteral(kept)) + `::tsquery`
	if nctx > 0 {
		match = `(` + match + ` OR d.ctx_tsv @@ ` + arg(tsqueryLiteral(kept[:nctx])) + `::tsquery)`
	}
	var score string
	switch p.r.opts.Rank {
	case RankTS:
		// Text terms weigh A (1), context terms B (0.5).
		score = `(SELECT ts_rank('{0, 0, 0.5, 1}', d.text_tsv || d.ctx_tsv, ` + arg(tsqueryLiteral(kept)) + `::tsquery) AS score)`
	default:
		score = strings.NewReplacer(
			"$TW", arg(tw), "$T", arg(kept), "$CW", arg(cw), "$C", arg(kept[:nctx]),
			"$K1", arg(index.BM25K1), "$B1", arg(1-b), "$BT", arg(bnText), "$BC", arg(bnCtx),
			"$N", arg(float64(len(kept)+nctx)),
		).Replace(sqlBM25Score)
	}
	where, ok := filterSQL(q, &args)
	if !ok {
		return nil, nil
	}
	// f holds each match's text and context cut to the prompt's terms
	// (setweight marks them D, ts_filter keeps those: done in C, where
	// unnesting the whole tsvector row by row cost ten times more), read
	// once (OFFSET 0 keeps the planner from inlining it into each use).
	sql := `SELECT ` + hitColumns + `, s.score, tsvector_to_array(f.tt), tsvector_to_array(f.ct)
		FROM recall_docs d
		CROSS JOIN LATERAL (SELECT ts_filter(setweight(d.text_tsv, 'D', ` + relTerms + `::text[]), '{d}') AS tt,
			ts_filter(setweight(d.ctx_tsv, 'D', ` + relTerms + `::text[]), '{d}') AS ct OFFSET 0) f
		CROSS JOIN LATERAL ` + score + ` s
		WHERE ` + match + where + `
		ORDER BY s.score DESC, d.id LIMIT ` + arg(size)
	rows, err := p.r.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("pgstore: recall: search: %w", err)
	}
	var hits []index.Hit
	for rows.Next() {
		var h index.Hit
		var dt docTerms
		if err := scanHit(rows, &h, &h.Score, &dt.text, &dt.ctx); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pgstore: recall: search: %w", err)
		}
		if math.IsNaN(h.Score) {
			h.Score = 0
		}
		p.holds[h.ID] = dt
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: recall: search: %w", err)
	}
	return hits, nil
}

// sqlBM25Score is a doc's score: the BM25 parts of its matched text terms
// ($T, weights $TW, field length text_len; f.tt is its text's tsvector cut
// to the prompt's terms) and context terms ($C, $CW, ctx_len; f.ct), with k1 $K1, 1-b $B1 and b over the average field length
// $BT, $BC, summed, times the share of the $N clauses it matches. A
// term's frequency is its number of positions (tsvectorLiteral). The
// placeholders are replaced by parameter numbers (longest names first).
const sqlBM25Score = `(
	SELECT coalesce(sum(x.sc), 0) * count(*) / $N::float8 AS score FROM (
		SELECT q.w * sqrt(cardinality(u.positions)) * $K1::float8
			/ (sqrt(cardinality(u.positions)) + $K1::float8 * ($B1::float8 + $BT::float8 * d.text_len)) AS sc
		FROM unnest(f.tt) u JOIN unnest($T::text[], $TW::float8[]) q(term, w) ON u.lexeme = q.term
		UNION ALL
		SELECT q.w * sqrt(cardinality(u.positions)) * $K1::float8
			/ (sqrt(cardinality(u.positions)) + $K1::float8 * ($B1::float8 + $BC::float8 * d.ctx_len))
		FROM unnest(f.ct) u JOIN unnest($C::text[], $CW::float8[]) q(term, w) ON u.lexeme = q.term
	) x)`

// hitColumns are the columns scanHit reads first.
const hitColumns = `d.id, d.agent, d.conversation, d.session, d.role, d.kind, d.seq, d.ts, d.text, d.text_key`

// scanHit scans hitColumns into h, then extra.
func scanHit(rows pgx.Rows, h *index.Hit, extra ...any) error {
	var seq, key int64
	dest := append([]any{&h.ID, &h.Agent, &h.Conversation, &h.Session, &h.Role, &h.Kind, &seq, &h.Timestamp, &h.Text, &key}, extra...)
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	h.Seq = uint64(seq)
	h.SetTextKey(uint64(key))
	return nil
}

// filterSQL appends to args the parameters of q's filters and returns
// their SQL (" AND ..."); false when q can match nothing.
func filterSQL(q *index.Query, args *[]any) (string, bool) {
	var sb strings.Builder
	arg := func(v any) string {
		*args = append(*args, v)
		return "$" + strconv.Itoa(len(*args))
	}
	if !q.AllAgents {
		sb.WriteString(" AND d.agent = " + arg(q.Agent))
	}
	if len(q.Conversations) > 0 {
		sb.WriteString(" AND d.conversation = ANY(" + arg(q.Conversations) + "::text[])")
	}
	if q.ExcludeConversation != "" {
		sb.WriteString(" AND d.conversation <> " + arg(q.ExcludeConversation))
	}
	if len(q.Sessions) > 0 {
		sb.WriteString(" AND d.session = ANY(" + arg(q.Sessions) + "::text[])")
	}
	if len(q.ExcludeSessions) > 0 {
		sb.WriteString(" AND d.session <> ALL(" + arg(q.ExcludeSessions) + "::text[])")
	}
	if q.Kind != "" {
		sb.WriteString(" AND d.kind = " + arg(q.Kind))
	}
	if q.Since != 0 || q.Until != 0 {
		lo, hi := q.Since, q.Until
		if hi == 0 {
			hi = math.MaxInt64
		}
		if lo > hi {
			return "", false
		}
		sb.WriteString(" AND d.ts BETWEEN " + arg(lo) + " AND " + arg(hi))
	}
	if len(q.Spans) > 0 {
		var from, to []int64
		for _, sp := range q.Spans {
			if sp.From < sp.To {
				from, to = append(from, sp.From), append(to, sp.To)
			}
		}
		if len(from) == 0 {
			return "", false
		}
		sb.WriteString(" AND EXISTS (SELECT 1 FROM unnest(" + arg(from) + "::bigint[], " + arg(to) + "::bigint[]) sp(f, t) WHERE d.ts >= sp.f AND d.ts < sp.t)")
	}
	return sb.String(), true
}

// tsqueryLiteral is the OR of terms as a tsquery's text form ("" for
// none).
func tsqueryLiteral(terms []string) string {
	var sb strings.Builder
	for i, t := range terms {
		if i > 0 {
			sb.WriteString(" | ")
		}
		writeLexeme(&sb, t)
	}
	return sb.String()
}

// Relevance implements index.Retriever with package index's measure, from
// the frequencies loaded and the terms the candidates hold.
func (p *pgRetriever) Relevance(ctx context.Context, terms []string, hits []index.Hit, agent string) error {
	return index.ComputeRelevance(ctx, p, terms, hits, agent)
}

// TermStats implements index.RelevanceSource.
func (p *pgRetriever) TermStats(ctx context.Context, terms []string) (uint64, []uint64, error) {
	if err := p.load(ctx, terms); err != nil {
		return 0, nil, err
	}
	dfs := make([]uint64, len(terms))
	for i, t := range terms {
		dfs[i] = p.df[t]
	}
	return p.total, dfs, nil
}

// Holds implements index.RelevanceSource from the terms each candidate
// was returned with.
func (p *pgRetriever) Holds(_ context.Context, term string, context bool, hits []index.Hit, has []bool) error {
	for i := range hits {
		dt, ok := p.holds[hits[i].ID]
		if !ok {
			continue
		}
		list := dt.text
		if context {
			list = dt.ctx
		}
		for _, t := range list {
			if t == term {
				has[i] = true
				break
			}
		}
	}
	return nil
}

// AgentHas implements index.RelevanceSource: one indexed lookup, which
// counts as the term's document frequency in steps (the Bleve index walks
// postings; a term commoner than the budget counts as present unread).
func (p *pgRetriever) AgentHas(ctx context.Context, term, agent string, budget int) (bool, int, error) {
	steps := int(min(p.df[term], uint64(math.MaxInt32)))
	if steps >= budget {
		return true, budget, nil
	}
	var has bool
	// The term's docs first (the GIN index), then their agents: planned
	// as one EXISTS, PostgreSQL scanned the table for the first match
	// (seconds at 100K docs when there is none).
	err := p.r.pool.QueryRow(ctx, `WITH m AS MATERIALIZED (SELECT agent FROM recall_docs WHERE text_tsv @@ $2::tsquery)
		SELECT EXISTS (SELECT 1 FROM m WHERE agent = $1)`,
		agent, tsqueryLiteral([]string{term})).Scan(&has)
	if err != nil {
		return false, 0, fmt.Errorf("pgstore: recall: term presence: %w", err)
	}
	return has, max(steps, 1), nil
}

// AtPositions implements index.Retriever.
func (p *pgRetriever) AtPositions(ctx context.Context, agent string, allAgents bool, pos []index.Position) ([]index.Hit, error) {
	sessions := make([]string, len(pos))
	seqs := make([]int64, len(pos))
	for i, ps := range pos {
		sessions[i], seqs[i] = cleanText(ps.Session), int64(ps.Seq)
	}
	sql := `SELECT ` + hitColumns + ` FROM recall_docs d
		JOIN unnest($1::text[], $2::bigint[]) p(session, seq) ON d.session = p.session AND d.seq = p.seq`
	args := []any{sessions, seqs}
	if !allAgents {
		sql += ` WHERE d.agent = $3`
		args = append(args, agent)
	}
	rows, err := p.r.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("pgstore: recall: neighbours: %w", err)
	}
	var hits []index.Hit
	for rows.Next() {
		var h index.Hit
		if err := scanHit(rows, &h); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pgstore: recall: neighbours: %w", err)
		}
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: recall: neighbours: %w", err)
	}
	return hits, nil
}
