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
	tid                 map[string]int32    // term → recall_terms.tid (present terms)
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
		p.df, p.ctxDF, p.tid = map[string]uint64{}, map[string]uint64{}, map[string]int32{}
	}
	var dfs, ctxDFs []int64
	var tids []int32
	var total, tt, ct int64
	err := p.r.pool.QueryRow(ctx, `SELECT s.docs, s.text_terms, s.ctx_terms,
		coalesce(f.df, '{}'), coalesce(f.ctx_df, '{}'), coalesce(f.tid, '{}')
		FROM recall_stats s, (SELECT array_agg(coalesce(t.df, 0) ORDER BY u.o) AS df,
			array_agg(coalesce(t.ctx_df, 0) ORDER BY u.o) AS ctx_df, array_agg(coalesce(t.tid, 0) ORDER BY u.o) AS tid
			FROM unnest($1::text[]) WITH ORDINALITY u(term, o) LEFT JOIN recall_terms t ON t.term = u.term) f
		WHERE s.id = 1`, missing).Scan(&total, &tt, &ct, &dfs, &ctxDFs, &tids)
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
		if tids[i] != 0 {
			p.tid[t] = tids[i]
		}
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
	// docs, rounded up (index/bleveindex/bm25.go); 0 turns length normalisation off.
	bnText, bnCtx := 0.0, 0.0
	if p.total > 0 {
		if avg := math.Ceil(float64(p.textTerms) / float64(p.total)); avg > 0 {
			bnText = b / avg
		}
		if avg := math.Ceil(float64(p.ctxTerms) / float64(p.total)); avg > 0 {
			bnCtx = b / avg
		}
	}
	// The clauses: each kept term in the text, the first nctx in the
	// context too, with their weights and length normalisations.
	var tids []int32
	var fields []int16
	var ws, bns []float64
	for i, t := range kept {
		tids, fields, ws, bns = append(tids, p.tid[t]), append(fields, 0), append(ws, tw[i]), append(bns, bnText)
	}
	for i, t := range kept[:nctx] {
		tids, fields, ws, bns = append(tids, p.tid[t]), append(fields, 1), append(ws, cw[i]), append(bns, bnCtx)
	}
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	blocks, postings, docWhere, ok := filterSQL(q, &args)
	if !ok {
		return nil, nil
	}
	relTerms := arg(terms[:min(len(terms), 64)]) // index.ComputeRelevance reads at most 64
	clauses := `unnest(` + arg(tids) + `::int[], ` + arg(fields) + `::int2[], ` + arg(ws) + `::float8[], ` + arg(bns) + `::float8[]) q(tid, field, w, bn)`
	// s: each matching doc's score, from the postings of the clauses'
	// terms alone (an index range per term and agent).
	var s string
	switch p.r.opts.Rank {
	case RankTS:
		// Text terms weigh A (1), context terms B (0.5).
		s = `SELECT d.key AS doc, ts_rank('{0, 0, 0.5, 1}', d.text_tsv || d.ctx_tsv, ` + arg(tsqueryLiteral(kept)) + `::tsquery) AS score
			FROM (SELECT DISTINCT p.doc FROM ` + clauses + ` JOIN recall_blocks b ON b.tid = q.tid AND b.field = q.field` + blocks + `
				CROSS JOIN LATERAL unnest(b.docs, b.ts) p(doc, ts) WHERE true` + postings + `) m
			JOIN recall_docs d ON d.key = m.doc`
	default:
		s = strings.NewReplacer(
			"$CLAUSES", clauses, "$BLOCKS", blocks, "$FILTER", postings,
			"$K1", arg(index.BM25K1), "$B1", arg(1-b), "$N", arg(float64(len(kept)+nctx)),
		).Replace(sqlBM25Scores)
	}
	// The best size docs, ties by id (as the scan of tsvectors did): when
	// no filter needs the docs' rows, only those scoring at least the
	// size-th best score are read. The terms of the prompt each of them
	// holds (the relevance gate's matches) are cut from its tsvectors
	// (setweight marks them D, ts_filter keeps those) once the best are
	// chosen.
	n := arg(size)
	cut := ""
	if docWhere == "" {
		cut = ` AND s.score >= coalesce((SELECT score FROM s ORDER BY score DESC OFFSET ` + n + ` - 1 LIMIT 1), '-Infinity')`
	}
	sql := `WITH s AS MATERIALIZED (` + s + `)
		SELECT ` + hitColumns + `, b.score,
			tsvector_to_array(ts_filter(setweight(d.text_tsv, 'D', ` + relTerms + `::text[]), '{d}')),
			tsvector_to_array(ts_filter(setweight(d.ctx_tsv, 'D', ` + relTerms + `::text[]), '{d}'))
		FROM (SELECT s.doc, s.score, d.id FROM s JOIN recall_docs d ON d.key = s.doc
			WHERE true` + cut + docWhere + `
			ORDER BY s.score DESC, d.id LIMIT ` + n + `) b
		JOIN recall_docs d ON d.key = b.doc
		ORDER BY b.score DESC, b.id`
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

// sqlBM25Scores scores the docs matching the clauses ($CLAUSES: term id,
// field, weight w, b over the field's average length bn) from their
// postings, unnested from the blocks of the clauses' terms ($BLOCKS:
// conditions on the block b; $FILTER: on the posting p): per clause matched, w × BM25's
// frequency part with k1 $K1, 1-b $B1 and the field length, summed, times
// the share of the $N clauses matched. The field length is Bleve's: the
// inverse square of its norm, 1/sqrt(length) stored as a float32. The placeholders are replaced by
// parameter numbers (longest names first).
const sqlBM25Scores = `SELECT p.doc, sum(q.w * sqrt(p.tf) * $K1::float8
			/ (sqrt(p.tf) + $K1::float8 * ($B1::float8 + q.bn / ((1 / sqrt(p.len))::float4::float8 ^ 2)))) * count(*) / $N::float8 AS score
		FROM $CLAUSES JOIN recall_blocks b ON b.tid = q.tid AND b.field = q.field$BLOCKS
		CROSS JOIN LATERAL unnest(b.docs, b.tf, b.len, b.ts) p(doc, tf, len, ts)
		WHERE true$FILTER
		GROUP BY p.doc`

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
// their SQL (" AND ..."): those on the blocks (b: agent), on the postings
// (p: time), and
// those on the docs' rows (d: conversations, sessions, kind); false when
// q can match nothing.
func filterSQL(q *index.Query, args *[]any) (blocks, postings, docs string, ok bool) {
	var bs, ps, ds strings.Builder
	arg := func(v any) string {
		*args = append(*args, v)
		return "$" + strconv.Itoa(len(*args))
	}
	if !q.AllAgents {
		bs.WriteString(" AND b.agent = " + arg(q.Agent))
	}
	if q.Since != 0 || q.Until != 0 {
		lo, hi := q.Since, q.Until
		if hi == 0 {
			hi = math.MaxInt64
		}
		if lo > hi {
			return "", "", "", false
		}
		ps.WriteString(" AND p.ts BETWEEN " + arg(lo) + " AND " + arg(hi))
	}
	if len(q.Spans) > 0 {
		var from, to []int64
		for _, sp := range q.Spans {
			if sp.From < sp.To {
				from, to = append(from, sp.From), append(to, sp.To)
			}
		}
		if len(from) == 0 {
			return "", "", "", false
		}
		ps.WriteString(" AND EXISTS (SELECT 1 FROM unnest(" + arg(from) + "::bigint[], " + arg(to) + "::bigint[]) sp(f, t) WHERE p.ts >= sp.f AND p.ts < sp.t)")
	}
	if len(q.Conversations) > 0 {
		ds.WriteString(" AND d.conversation = ANY(" + arg(q.Conversations) + "::text[])")
	}
	if q.ExcludeConversation != "" {
		ds.WriteString(" AND d.conversation <> " + arg(q.ExcludeConversation))
	}
	if len(q.Sessions) > 0 {
		ds.WriteString(" AND d.session = ANY(" + arg(q.Sessions) + "::text[])")
	}
	if len(q.ExcludeSessions) > 0 {
		ds.WriteString(" AND d.session <> ALL(" + arg(q.ExcludeSessions) + "::text[])")
	}
	if q.Kind != "" {
		ds.WriteString(" AND d.kind = " + arg(q.Kind))
	}
	return bs.String(), ps.String(), ds.String(), true
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

// SubjectRelevance implements index.SubjectRelevancer: the subject's
// relevance from what the prompt's measure read (its presence look-ups,
// a round trip each, not repeated).
func (p *pgRetriever) SubjectRelevance(ctx context.Context, terms, subject []string, hits []index.Hit, agent string) ([]index.Relevance, error) {
	return index.ComputeSubjectRelevance(ctx, p, terms, subject, hits, agent)
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

// AgentHas implements index.RelevanceSource: one lookup in the term's
// postings, which counts as the term's document frequency in steps (the
// Bleve index walks postings; a term commoner than the budget counts as
// present unread).
func (p *pgRetriever) AgentHas(ctx context.Context, term, agent string, budget int) (bool, int, error) {
	steps := int(min(p.df[term], uint64(math.MaxInt32)))
	if steps >= budget {
		return true, budget, nil
	}
	tid, ok := p.tid[term]
	if !ok {
		return false, max(steps, 1), nil
	}
	var has bool
	err := p.r.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM recall_blocks WHERE tid = $1 AND field = 0 AND agent = $2)`,
		tid, agent).Scan(&has)
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
