package pgstore

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/lossless-engine/contextengine/index"
)

// Marks (index.Tracker): recall_marks holds, per conversation, the last
// message through which every message's doc is written (or has none). A
// write of AddMessages' docs moves it in the same transaction; a process
// killed before its queue was written leaves it behind, and CatchUp
// (driven by the engine, which reads the messages) indexes what lies past
// it.

// markRange is AddMessages' range: conversation conv's messages from..to.
type markRange struct {
	conv     string
	from, to uint64
}

// AddMessages implements index.Tracker.
func (r *Recall) AddMessages(conv string, from, to uint64, docs ...index.Doc) {
	if from == 0 || to < from {
		r.AddGeneration(0, docs...)
		return
	}
	r.enqueue(docItems(docs, &markRange{conv: cleanText(conv), from: from, to: to}), true)
}

// sqlMarks moves the marks of conversations ($1) whose messages $2..$3
// were written: to $3 when at $2-1 or beyond (a conversation without a
// mark is at 0). It returns the conversations whose mark was below $2-1
// (a gap).
const sqlMarks = `
WITH u AS (
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS u(conv, lo, hi)
), up AS (
	UPDATE recall_marks m SET through = u.hi FROM u
	WHERE m.conversation = u.conv AND m.through >= u.lo - 1 AND m.through < u.hi
), ins AS (
	INSERT INTO recall_marks (conversation, through) SELECT conv, hi FROM u WHERE lo <= 1
	ON CONFLICT (conversation) DO NOTHING
)
SELECT u.conv FROM u LEFT JOIN recall_marks m ON m.conversation = u.conv
WHERE coalesce(m.through, 0) < u.lo - 1`

// marksArgs are sqlMarks' parameters for the ranges of a batch, in queue
// order: a conversation's ranges that follow on from one another are one;
// one that does not follow on from the first is left out (its mark stays
// behind it until a catch-up).
func marksArgs(marks []*markRange) []any {
	at := map[string]int{}
	var convs []string
	var lo, hi []int64
	for _, m := range marks {
		i, ok := at[m.conv]
		if !ok {
			at[m.conv] = len(convs)
			convs, lo, hi = append(convs, m.conv), append(lo, seqArg(m.from)), append(hi, seqArg(m.to))
			continue
		}
		if seqArg(m.from) <= hi[i]+1 && seqArg(m.to) > hi[i] {
			hi[i] = seqArg(m.to)
		}
	}
	return []any{convs, lo, hi}
}

func seqArg(s uint64) int64 { return int64(min(s, math.MaxInt64)) }

// noteGaps records conversations whose marks a write found behind.
func (r *Recall) noteGaps(convs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gaps == nil {
		r.gaps = map[string]bool{}
	}
	for _, c := range convs {
		r.gaps[c] = true
	}
}

// Gaps implements index.Tracker.
func (r *Recall) Gaps() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Sorted(maps.Keys(r.gaps))
	clear(r.gaps)
	return out
}

// Marks implements index.Tracker.
func (r *Recall) Marks(ctx context.Context, convs []string) ([]uint64, error) {
	if r.isClosed() {
		return nil, errRecallClosed
	}
	clean := make([]string, len(convs))
	for i, c := range convs {
		clean[i] = cleanText(c)
	}
	rows, err := r.pool.Query(ctx, `SELECT coalesce(m.through, 0) FROM unnest($1::text[]) WITH ORDINALITY u(conv, i)
		LEFT JOIN recall_marks m ON m.conversation = u.conv ORDER BY u.i`, clean)
	if err != nil {
		return nil, fmt.Errorf("pgstore: recall: read marks: %w", err)
	}
	marks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (uint64, error) {
		var v int64
		err := row.Scan(&v)
		return uint64(max(v, 0)), err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: recall: read marks: %w", err)
	}
	return marks, nil
}

// CatchUp implements index.Tracker: the docs not written yet (by id) are
// written, with the contexts they would have had (the previous turn of
// their session, from docs or the database), and the written doc after
// each of them again (its context was an older turn), in one transaction
// with the mark's move to through (never back).
func (r *Recall) CatchUp(ctx context.Context, conv string, through uint64, docs []index.Doc) error {
	if r.isClosed() {
		return errRecallClosed
	}
	ids := make([]string, len(docs))
	for i := range docs {
		ids[i] = cleanText(docs[i].ID)
	}
	rows, err := r.pool.Query(ctx, `SELECT id FROM recall_docs WHERE id = ANY($1::text[])`, ids)
	if err != nil {
		return fmt.Errorf("pgstore: recall: catch up %s: %w", conv, err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("pgstore: recall: catch up %s: %w", conv, err)
	}
	written := make(map[string]bool, len(have))
	for _, id := range have {
		written[id] = true
	}
	// Every doc goes through the turn memory (a written doc is the
	// context of the next); those not written are added with it, and so is
	// a written one that follows one not written in its session: it was
	// written with an older turn as its context.
	all := make([]recallItem, len(docs))
	for i := range docs {
		all[i] = recallItem{doc: docs[i]}
	}
	var mem index.TurnMemory
	prev, err := r.previousTurns(ctx, &mem, all)
	if err != nil {
		return fmt.Errorf("pgstore: recall: catch up %s: %w", conv, err)
	}
	var items []recallItem
	afterMissing := map[[2]string]bool{}
	for i := range all {
		d := all[i].doc
		if prev != nil && prev[i] != "" {
			d.Context = prev[i]
		}
		d.Context = mem.Context(&d)
		k := [2]string{d.Agent, d.Session}
		if !written[ids[i]] || afterMissing[k] {
			items = append(items, recallItem{doc: d})
		}
		afterMissing[k] = !written[ids[i]]
	}
	b, _ := buildBatch(&index.TurnMemory{}, items, nil)
	b.Queue(`INSERT INTO recall_marks (conversation, through) VALUES ($1, $2)
		ON CONFLICT (conversation) DO UPDATE SET through = greatest(recall_marks.through, EXCLUDED.through)`, cleanText(conv), seqArg(through))
	if err := r.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("pgstore: recall: catch up %s through %d: %w", conv, through, err)
	}
	return nil
}

// Missing implements index.Tracker.
func (r *Recall) Missing(ctx context.Context, ids []string) ([]string, error) {
	if r.isClosed() {
		return nil, errRecallClosed
	}
	clean := make([]string, len(ids))
	for i, id := range ids {
		clean[i] = cleanText(id)
	}
	rows, err := r.pool.Query(ctx, `SELECT u.i FROM unnest($1::text[]) WITH ORDINALITY u(id, i)
		WHERE NOT EXISTS (SELECT 1 FROM recall_docs d WHERE d.id = u.id) ORDER BY u.i`, clean)
	if err != nil {
		return nil, fmt.Errorf("pgstore: recall: missing docs: %w", err)
	}
	at, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("pgstore: recall: missing docs: %w", err)
	}
	out := make([]string, len(at))
	for i, j := range at {
		out[i] = ids[j-1]
	}
	return out, nil
}
