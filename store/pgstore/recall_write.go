package pgstore

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/internal/retry"
)

// worker writes the queue in batches until Close (then until the queue is
// empty or RecallOptions.CloseTimeout has passed).
func (r *Recall) worker() {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		if !r.queue.WaitWork() {
			r.mu.Unlock()
			return // closed, and what was queued is written or dropped
		}
		if r.ctx.Err() != nil {
			// Close gave up: drop the rest without building batches.
			r.abandonLocked(r.queue.Items(), true)
			r.finishLocked(r.queue.Len(), false)
			r.mu.Unlock()
			continue
		}
		items := r.queue.Batch(r.opts.BatchSize, 0)
		n := len(items)
		r.mu.Unlock()

		// The rows are built once (the turn memory moves on), then retried
		// as they are. The previous turns the memory lacks are read first
		// (without them if that fails).
		var prev []string
		if err := r.attempt(n, func(ctx context.Context) (err error) {
			prev, err = r.previousTurns(ctx, &r.prev, items)
			return err
		}); err != nil {
			prev = nil
		}
		b, marksAt := buildBatch(&r.prev, items, prev)
		if r.beforeBatch != nil {
			r.beforeBatch()
		}
		err := r.attempt(n, func(ctx context.Context) error {
			send := r.send
			if send == nil {
				send = func(ctx context.Context, b *pgx.Batch, marksAt int) ([]string, error) {
					return sendBatch(ctx, r.pool, b, marksAt)
				}
			}
			gaps, err := send(ctx, b, marksAt)
			if len(gaps) > 0 {
				r.noteGaps(gaps)
			}
			return err
		})
		r.mu.Lock()
		if err != nil {
			// Given up: the items are left to the catch-up.
			r.abandonLocked(items, r.closed)
			r.splitRangeLocked(items, n)
			r.logf("pgstore: recall: gave up writing %d docs, left to the catch-up: %v", n, err)
		}
		r.finishLocked(n, err == nil)
		r.mu.Unlock()
	}
}

// splitRangeLocked keeps the mark of a range whose first docs were the
// end of a batch given up (items, the first n of the queue) from moving
// past them when the rest of the range is written (r.mu held): the mark
// item of that range, further in the queue, is made one that never moves
// a mark (its range then starts after its end: sqlMarks reports a gap),
// so the catch-up indexes the whole range.
func (r *Recall) splitRangeLocked(items []recallItem, n int) {
	last := items[len(items)-1]
	if last.mark != nil {
		return
	}
	queued := r.queue.Items()
	for i := n; i < len(queued) && queued[i].call == last.call; i++ {
		if m := queued[i].mark; m != nil {
			queued[i].mark = &markRange{conv: m.conv, from: m.to + 1, to: m.to}
			if r.gaps == nil {
				r.gaps = map[string]bool{}
			}
			r.gaps[m.conv] = true
			return
		}
	}
}

// finishLocked takes the first n items off the queue, written (ok) or
// given up, and wakes those waiting for progress (r.mu held). A batch
// written ends a stall.
func (r *Recall) finishLocked(n int, ok bool) {
	if ok {
		r.stalled = false
	}
	r.queue.Drop(n) // wakes Flush and the enqueues waiting for room
}

// attempt runs f (with a minute's timeout, and cancelled when Close gives
// up) until it succeeds, retrying an error that may pass by itself
// (retryable) at most RecallOptions.MaxRetries times with backoff, and
// returns the error it gave up on (nil: f succeeded). Errors go to lastErr
// and Logf.
func (r *Recall) attempt(n int, f func(ctx context.Context) error) error {
	backoff := retry.Backoff{First: 50 * time.Millisecond, Max: 5 * time.Second}
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
		err := f(ctx)
		cancel()
		r.mu.Lock()
		if err == nil {
			r.lastErr = nil
			r.mu.Unlock()
			return nil
		}
		closing := r.ctx.Err() != nil
		if closing {
			err = fmt.Errorf("%w (Close gave up after %v)", err, r.opts.CloseTimeout)
		}
		r.lastErr = fmt.Errorf("pgstore: recall: write %d docs: %w", n, err)
		last := r.lastErr
		r.mu.Unlock()
		r.logf("%v", last)
		if closing || !retryable(err) || try >= r.opts.MaxRetries {
			return last
		}
		if !retry.Wait(r.ctx, backoff.Delay(try)) {
			return last
		}
	}
}

// previousTurns reads, for each doc of items whose context is the
// previous turn of its session and the turn memory does not hold it (it
// was written before this process started, or by another process), that
// turn's text: the doc of its agent and session with the highest Seq
// below its own, summaries aside. The result is parallel to items ("":
// none, or not needed); nil when nothing was needed.
func (r *Recall) previousTurns(ctx context.Context, mem *index.TurnMemory, items []recallItem) ([]string, error) {
	var at []int
	var agents, sessions []string
	var seqs []int64
	asked := map[[2]string]bool{}
	for i := range items {
		d := &items[i].doc
		k := [2]string{d.Agent, d.Session}
		if items[i].isDel || items[i].mark != nil || d.Context != "" || asked[k] || mem.Remembers(d) {
			continue
		}
		asked[k] = true // later turns of the session in items follow this one
		if d.Seq == 0 {
			continue
		}
		at = append(at, i)
		agents, sessions, seqs = append(agents, cleanText(d.Agent)), append(sessions, cleanText(d.Session)), append(seqs, int64(min(d.Seq, math.MaxInt64)))
	}
	if len(at) == 0 {
		return nil, nil
	}
	rows, err := r.pool.Query(ctx, `SELECT u.i, p.text
		FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY u(agent, session, seq, i)
		CROSS JOIN LATERAL (SELECT d.text FROM recall_docs d
			WHERE d.session = u.session AND d.seq < u.seq AND d.agent = u.agent AND d.kind <> $4
			ORDER BY d.seq DESC LIMIT 1) p`, agents, sessions, seqs, index.KindSummary)
	if err != nil {
		return nil, fmt.Errorf("previous turns: %w", err)
	}
	out := make([]string, len(items))
	for rows.Next() {
		var i int64
		var text string
		if err := rows.Scan(&i, &text); err != nil {
			rows.Close()
			return nil, fmt.Errorf("previous turns: %w", err)
		}
		out[at[i-1]] = index.TurnContext(text)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("previous turns: %w", err)
	}
	return out, nil
}

// buildBatch turns queued items into one pipelined, implicitly
// transactional batch (mem: the turn memory giving docs their context;
// prev: previousTurns): lock the stats row (writers of every process take
// turns), then each run of deletions or additions in queue order (an
// addition replaces the doc of the same id), then the marks of the items'
// ranges (sqlMarks, at marksAt; -1: none).
func buildBatch(mem *index.TurnMemory, items []recallItem, prev []string) (b *pgx.Batch, marksAt int) {
	b = &pgx.Batch{}
	b.Queue(`SELECT 1 FROM recall_stats WHERE id = 1 FOR UPDATE`)
	var marks []*markRange
	for i := 0; i < len(items); {
		if items[i].mark != nil {
			marks = append(marks, items[i].mark)
			i++
			continue
		}
		j := i
		for j < len(items) && items[j].mark == nil && items[j].isDel == items[i].isDel {
			j++
		}
		run := items[i:j]
		if run[0].isDel {
			ids := make([]string, len(run))
			for k := range run {
				ids[k] = cleanText(run[k].doc.ID)
			}
			b.Queue(sqlDeleteDocs, ids)
		} else {
			var rows recallRows
			seen := make(map[string]int, len(run))
			for k := range run {
				d := &run[k].doc
				if prev != nil && prev[i+k] != "" {
					dc := *d
					dc.Context = prev[i+k]
					d = &dc
				}
				cx := mem.Context(d)
				id := cleanText(d.ID)
				if at, ok := seen[id]; ok { // the last one wins
					rows.set(at, d, id, cx)
					continue
				}
				seen[id] = rows.add(d, id, cx)
			}
			b.Queue(sqlDeleteDocs, rows.id)
			b.Queue(sqlInsertDocs, rows.args()...)
		}
		i = j
	}
	marksAt = -1
	if len(marks) > 0 {
		marksAt = b.Len()
		b.Queue(sqlMarks, marksArgs(marks)...)
	}
	return b, marksAt
}

// sendBatch runs b (buildBatch) and returns the conversations its marks
// statement (at marksAt) found behind.
func sendBatch(ctx context.Context, pool *pgxpool.Pool, b *pgx.Batch, marksAt int) ([]string, error) {
	br := pool.SendBatch(ctx, b)
	defer br.Close()
	var gaps []string
	for i := range b.Len() {
		if i != marksAt {
			if _, err := br.Exec(); err != nil {
				return nil, err
			}
			continue
		}
		rows, err := br.Query()
		if err != nil {
			return nil, err
		}
		if gaps, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return nil, err
		}
	}
	return gaps, br.Close()
}

// sqlDeleteDocs deletes docs by id ($1) and their postings (found from
// their tsvectors' terms: each in the block of its term, field and agent
// with the greatest first doc at or below it; a block left empty is
// deleted), and takes their terms off the document frequencies and
// totals.
const sqlDeleteDocs = `
WITH d AS (
	DELETE FROM recall_docs WHERE id = ANY($1::text[]) RETURNING key, agent, text_tsv, ctx_tsv
), x AS (
	SELECT d.key, d.agent, u.term, 0::int2 AS field FROM d, unnest(tsvector_to_array(d.text_tsv)) u(term)
	UNION ALL
	SELECT d.key, d.agent, u.term, 1::int2 FROM d, unnest(tsvector_to_array(d.ctx_tsv)) u(term)
), c AS (
	SELECT term, count(*) FILTER (WHERE field = 0) AS df, count(*) FILTER (WHERE field = 1) AS ctx_df
	FROM x GROUP BY term
), t AS (
	UPDATE recall_terms r SET df = r.df - c.df, ctx_df = r.ctx_df - c.ctx_df
	FROM c WHERE r.term = c.term
	RETURNING r.term, r.tid, r.df, r.ctx_df
), g AS (
	SELECT b.tid, b.field, b.agent, b.first_doc, array_agg(x.key) AS gone
	FROM x JOIN t ON t.term = x.term
	CROSS JOIN LATERAL (SELECT b.tid, b.field, b.agent, b.first_doc FROM recall_blocks b
		WHERE b.tid = t.tid AND b.field = x.field AND b.agent = x.agent COLLATE "C" AND b.first_doc <= x.key
		ORDER BY b.first_doc DESC LIMIT 1) b
	GROUP BY b.tid, b.field, b.agent, b.first_doc
), k AS (
	SELECT g.tid, g.field, g.agent, g.first_doc,
		array_agg(u.doc ORDER BY u.i) FILTER (WHERE u.doc <> ALL (g.gone)) AS docs,
		array_agg(u.tf ORDER BY u.i) FILTER (WHERE u.doc <> ALL (g.gone)) AS tf,
		array_agg(u.len ORDER BY u.i) FILTER (WHERE u.doc <> ALL (g.gone)) AS len,
		array_agg(u.ts ORDER BY u.i) FILTER (WHERE u.doc <> ALL (g.gone)) AS ts
	FROM g JOIN recall_blocks b ON b.tid = g.tid AND b.field = g.field AND b.agent = g.agent AND b.first_doc = g.first_doc
	CROSS JOIN LATERAL unnest(b.docs, b.tf, b.len, b.ts) WITH ORDINALITY u(doc, tf, len, ts, i)
	GROUP BY g.tid, g.field, g.agent, g.first_doc
), ku AS (
	UPDATE recall_blocks b SET first_doc = k.docs[1], docs = k.docs, tf = k.tf, len = k.len, ts = k.ts
	FROM k WHERE b.tid = k.tid AND b.field = k.field AND b.agent = k.agent AND b.first_doc = k.first_doc AND k.docs IS NOT NULL
), kd AS (
	DELETE FROM recall_blocks b USING k
	WHERE b.tid = k.tid AND b.field = k.field AND b.agent = k.agent AND b.first_doc = k.first_doc AND k.docs IS NULL
)
UPDATE recall_stats SET
	docs = docs - (SELECT count(*) FROM d),
	text_terms = text_terms - (SELECT count(*) FROM t JOIN c ON t.term = c.term WHERE c.df > 0 AND t.df = 0),
	ctx_terms = ctx_terms - (SELECT count(*) FROM t JOIN c ON t.term = c.term WHERE c.ctx_df > 0 AND t.ctx_df = 0)
WHERE id = 1`

// sqlAddTerms adds the document frequencies of c (term, df, ctx_df) to
// recall_terms, returning the terms' rows.
const sqlAddTerms = `INSERT INTO recall_terms AS r (term, df, ctx_df)
	SELECT term, df, ctx_df FROM c ORDER BY term
	ON CONFLICT (term) DO UPDATE SET df = r.df + EXCLUDED.df, ctx_df = r.ctx_df + EXCLUDED.ctx_df
	RETURNING r.term, r.tid, r.df, r.ctx_df`

// sqlAddStats adds the docs inserted (n) and the terms new to them (t,
// against c) to the totals.
const sqlAddStats = `UPDATE recall_stats SET
	docs = docs + (SELECT count(*) FROM n),
	text_terms = text_terms + (SELECT count(*) FROM t JOIN c ON t.term = c.term WHERE c.df > 0 AND t.df = c.df),
	ctx_terms = ctx_terms + (SELECT count(*) FROM t JOIN c ON t.term = c.term WHERE c.ctx_df > 0 AND t.ctx_df = c.ctx_df)
WHERE id = 1`

// sqlDocRows inserts docs given as parallel arrays ($1-$15,
// recallRows.args) in their order.
const sqlDocRows = `INSERT INTO recall_docs (id, agent, conversation, session, role, kind, seq, ts, text, context, text_key, text_len, ctx_len, text_tsv, ctx_tsv)
	SELECT id, agent, conv, sess, role, kind, seq, ts, txt, cx, tk, tl, cl, tt::tsvector, ct::tsvector
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[],
		$9::text[], $10::text[], $11::bigint[], $12::int[], $13::int[], $14::text[], $15::text[]) WITH ORDINALITY
		AS u(id, agent, conv, sess, role, kind, seq, ts, txt, cx, tk, tl, cl, tt, ct, o)
	ORDER BY o`

// sqlInsertDocs inserts docs (parallel arrays $1-$15, recallRows.args)
// in their order (their keys ascend with it), adds their terms ($16-$18:
// each term of the docs once, with the docs holding it in text and in
// context) to the document frequencies and totals, and writes their
// postings as one block per term, field and agent ($19-$23: the term's
// place in $16, the field, the agent, the block's first and last posting
// in $24-$27: the doc's place in $1, the frequency, the field's length,
// the doc's time; a block's postings in doc order).
const sqlInsertDocs = `
WITH n AS (
	` + sqlDocRows + `
	RETURNING key, id
), k AS (
	SELECT array_agg(n.key ORDER BY u.o) AS keys FROM n JOIN unnest($1::text[]) WITH ORDINALITY u(id, o) ON u.id = n.id
), c AS (
	SELECT * FROM unnest($16::text[], $17::bigint[], $18::bigint[]) AS c(term, df, ctx_df)
), t AS (
	` + sqlAddTerms + `
), p AS (
	INSERT INTO recall_blocks (tid, field, agent, first_doc, docs, tf, len, ts)
	SELECT t.tid, b.field, b.agent, k.keys[($24::int[])[b.lo]],
		ARRAY(SELECT k.keys[d.o] FROM unnest(($24::int[])[b.lo:b.hi]) WITH ORDINALITY d(o, i) ORDER BY d.i),
		($25::int[])[b.lo:b.hi], ($26::int[])[b.lo:b.hi], ($27::bigint[])[b.lo:b.hi]
	FROM unnest($19::int[], $20::int2[], $21::text[], $22::int[], $23::int[]) AS b(term, field, agent, lo, hi)
	JOIN t ON t.term = ($16::text[])[b.term] CROSS JOIN k
)
` + sqlAddStats

// recallRows are docs as parallel column arrays (sqlInsertDocs).
type recallRows struct {
	id, agent, conv, sess, role, kind []string
	seq, ts                           []int64
	text, cx                          []string
	key                               []int64
	textLen, ctxLen                   []int32
	textTSV, ctxTSV                   []string
	textTF, ctxTF                     []map[string]int // the terms' frequencies (postings)
	// analyzed are the texts analyzed so far: a turn's context is most
	// often the text of the previous turn, analyzed just before.
	analyzed map[string]analysis
}

// analysis is a text's terms and length (index.DocTerms).
type analysis struct {
	freqs  map[string]int
	length int
}

// terms analyzes s (clipped: clipAnalyzed), once per distinct text.
func (w *recallRows) terms(s string) (map[string]int, int) {
	s = clipAnalyzed(s)
	if a, ok := w.analyzed[s]; ok {
		return a.freqs, a.length
	}
	freqs, n := index.DocTerms(s)
	if w.analyzed == nil {
		w.analyzed = map[string]analysis{}
	}
	w.analyzed[s] = analysis{freqs, n}
	return freqs, n
}

func (w *recallRows) add(d *index.Doc, id, cx string) int {
	w.id = append(w.id, "")
	w.agent = append(w.agent, "")
	w.conv = append(w.conv, "")
	w.sess = append(w.sess, "")
	w.role = append(w.role, "")
	w.kind = append(w.kind, "")
	w.seq = append(w.seq, 0)
	w.ts = append(w.ts, 0)
	w.text = append(w.text, "")
	w.cx = append(w.cx, "")
	w.key = append(w.key, 0)
	w.textLen = append(w.textLen, 0)
	w.ctxLen = append(w.ctxLen, 0)
	w.textTSV = append(w.textTSV, "")
	w.ctxTSV = append(w.ctxTSV, "")
	w.textTF = append(w.textTF, nil)
	w.ctxTF = append(w.ctxTF, nil)
	i := len(w.id) - 1
	w.set(i, d, id, cx)
	return i
}

// set fills row i with d (id cleaned, cx its context).
func (w *recallRows) set(i int, d *index.Doc, id, cx string) {
	kind := d.Kind
	if kind == "" {
		kind = index.KindMessage
	}
	text := cleanText(d.Text)
	cx = cleanText(cx)
	tf, tl := w.terms(text)
	cf, cl := w.terms(cx)
	w.id[i] = id
	w.agent[i] = cleanText(d.Agent)
	w.conv[i] = cleanText(d.Conversation)
	w.sess[i] = cleanText(d.Session)
	w.role[i] = cleanText(d.Role)
	w.kind[i] = kind
	w.seq[i] = int64(d.Seq)
	w.ts[i] = d.Timestamp
	w.text[i] = text
	w.cx[i] = cx
	w.key[i] = int64(index.TextKey(d.Text))
	w.textLen[i] = int32(min(tl, 1<<30))
	w.ctxLen[i] = int32(min(cl, 1<<30))
	w.textTSV[i] = tsvectorLiteral(tf, 'A')
	w.ctxTSV[i] = tsvectorLiteral(cf, 'B')
	w.textTF[i], w.ctxTF[i] = tf, cf
}

// args are sqlInsertDocs' parameters.
func (w *recallRows) args() []any {
	// The terms, each with the docs holding it (in doc order) per field.
	type posting struct{ doc, tf int32 }
	type termPostings struct {
		at       int32 // place in terms
		postings [2][]posting
	}
	byTerm := map[string]*termPostings{}
	var terms []string
	var df, ctxDF []int64
	for i := range w.id {
		for f, freqs := range [2]map[string]int{w.textTF[i], w.ctxTF[i]} {
			for t, n := range freqs {
				if !indexable(t) {
					continue
				}
				tp := byTerm[t]
				if tp == nil {
					tp = &termPostings{at: int32(len(terms) + 1)}
					byTerm[t] = tp
					terms, df, ctxDF = append(terms, t), append(df, 0), append(ctxDF, 0)
				}
				tp.postings[f] = append(tp.postings[f], posting{int32(i + 1), int32(min(n, math.MaxInt32))})
				if f == 0 {
					df[tp.at-1]++
				} else {
					ctxDF[tp.at-1]++
				}
			}
		}
	}
	// A block per term, field and agent: its postings are a range of the
	// flat arrays.
	var (
		bTerm, bLo, bHi []int32
		bField          []int16
		bAgent          []string
		pDoc, pTF, pLen []int32
		pTS             []int64
		agents          = map[string][]posting{}
		order           []string
	)
	for _, t := range terms {
		tp := byTerm[t]
		for f, ps := range tp.postings {
			if len(ps) == 0 {
				continue
			}
			clear(agents)
			order = order[:0]
			for _, p := range ps {
				a := w.agent[p.doc-1]
				if _, ok := agents[a]; !ok {
					order = append(order, a)
				}
				agents[a] = append(agents[a], p)
			}
			for _, a := range order {
				bTerm, bField, bAgent = append(bTerm, tp.at), append(bField, int16(f)), append(bAgent, a)
				bLo = append(bLo, int32(len(pDoc)+1))
				for _, p := range agents[a] {
					l := w.textLen[p.doc-1]
					if f == 1 {
						l = w.ctxLen[p.doc-1]
					}
					pDoc, pTF, pLen, pTS = append(pDoc, p.doc), append(pTF, p.tf), append(pLen, l), append(pTS, w.ts[p.doc-1])
				}
				bHi = append(bHi, int32(len(pDoc)))
			}
		}
	}
	return []any{w.id, w.agent, w.conv, w.sess, w.role, w.kind, w.seq, w.ts, w.text, w.cx, w.key, w.textLen, w.ctxLen, w.textTSV, w.ctxTSV,
		terms, df, ctxDF, bTerm, bField, bAgent, bLo, bHi, pDoc, pTF, pLen, pTS}
}

// cleanText makes s storable as PostgreSQL text: valid UTF-8, without NUL.
func cleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	return s
}

// maxAnalyzedBytes caps the text analyzed into a tsvector (PostgreSQL
// caps a tsvector at 1 MB): the first 256 KiB of a huge tool output are
// searchable, the rest is stored but not indexed.
const maxAnalyzedBytes = 256 << 10

func clipAnalyzed(s string) string {
	if len(s) <= maxAnalyzedBytes {
		return s
	}
	n := maxAnalyzedBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// PostgreSQL's limits on a tsvector's lexemes: bytes per lexeme, positions
// per lexeme.
const (
	maxLexemeBytes = 2046
	maxPositions   = 256
)

// tsvectorLiteral writes term frequencies as a tsvector's text form: each
// term with positions 1..frequency (capped at maxPositions) labelled
// weight ("'term':1A,2A"), so that the number of positions is the
// frequency BM25 reads (recall_sql.go). Terms are sorted (a stable text).
func tsvectorLiteral(freqs map[string]int, weight byte) string {
	if len(freqs) == 0 {
		return ""
	}
	terms := make([]string, 0, len(freqs))
	for t := range freqs {
		if indexable(t) {
			terms = append(terms, t)
		}
	}
	sort.Strings(terms)
	var sb strings.Builder
	for i, t := range terms {
		if i > 0 {
			sb.WriteByte(' ')
		}
		writeLexeme(&sb, t)
		sb.WriteByte(':')
		for p := 1; p <= min(freqs[t], maxPositions); p++ {
			if p > 1 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.Itoa(p))
			sb.WriteByte(weight)
		}
	}
	return sb.String()
}

// indexable reports whether a term fits a tsvector's lexeme (it is then
// indexed: in the tsvector and in the postings).
func indexable(t string) bool { return len(t) > 0 && len(t) <= maxLexemeBytes }

// writeLexeme writes t quoted for a tsvector or tsquery literal.
func writeLexeme(sb *strings.Builder, t string) {
	sb.WriteByte('\'')
	for i := 0; i < len(t); i++ {
		switch c := t[i]; c {
		case '\'':
			sb.WriteString("''")
		case '\\':
			sb.WriteString(`\\`)
		default:
			sb.WriteByte(c)
		}
	}
	sb.WriteByte('\'')
}
