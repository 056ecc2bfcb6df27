package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
)

// Recall is the recall index in PostgreSQL (index.Recall): every process
// sharing the database sees every other's docs once they are written.
//
// Docs are analyzed in Go by package index's own analyzer (AnalyzerChat:
// identifiers, CJK, stemming, stop words) into postings (term, field,
// agent, doc → frequency, field length, time), written in blocks (a row
// per term, field and agent of each write, its postings as arrays: one
// btree range per term and agent), and two tsvectors (text, context), and
// document frequencies are kept in a table; a recall sums the same BM25 as
// the Bleve index's over the postings of the prompt's terms
// (recall_sql.go), reads the rows
// of the best docs only, and package index's RankRecall does the rest
// (date boost, exclusions, relevance gate, neighbours, de-duplication), so
// the ranking is the Bleve index's.
//
// AddGeneration and Delete queue and return; a background goroutine writes
// the queue in batches, one round trip per batch (recall_write.go).
type Recall struct {
	pool *pgxpool.Pool
	opts RecallOptions

	mu         sync.Mutex
	queue      []recallItem
	queueBytes int
	enq, done  uint64 // docs and deletions queued / written (or dropped)
	progress   chan struct{}
	wake       chan struct{}
	closed     bool
	lastErr    error     // the last write error (nil after a write succeeds)
	giveUp     time.Time // set by Close: the worker drops what it cannot write by then
	dropped    int       // docs and deletions dropped at Close

	prev index.TurnMemory // worker only
	wg   sync.WaitGroup
	gaps map[string]bool // conversations whose marks a write found behind (Gaps)

	// beforeBatch, when set (tests), is called by the worker before it
	// writes each batch.
	beforeBatch func()
}

// RecallOptions configure a Recall. The zero value is usable.
type RecallOptions struct {
	// BatchSize is the number of docs written per round trip (default 500).
	BatchSize int
	// MaxLag bounds the docs waiting to be written: AddGeneration blocks
	// while more are pending (default 100,000).
	MaxLag int
	// MaxLagBytes bounds the text waiting to be written (default 16 MiB).
	MaxLagBytes int
	// BM25B is BM25's length normalisation b (default index.DefaultBM25B,
	// the Bleve index's).
	BM25B float64
	// Rank is how candidates are scored: RankBM25 (default, the Bleve
	// index's BM25) or RankTS (PostgreSQL's ts_rank, for comparison).
	Rank string
	// CloseTimeout bounds how long Close keeps retrying to write what is
	// queued when the database fails (default 30 s); what is left is
	// dropped and Close says how much.
	CloseTimeout time.Duration
	// Logf, when set, gets the errors of background writes (which are
	// retried; Err reports the last one).
	Logf func(format string, args ...any)
}

// Ranking functions of RecallOptions.Rank.
const (
	RankBM25 = "bm25"
	RankTS   = "ts_rank"
)

func (o *RecallOptions) fill() error {
	if o.BatchSize <= 0 {
		o.BatchSize = 500
	}
	if o.MaxLag <= 0 {
		o.MaxLag = 100_000
	}
	if o.MaxLagBytes <= 0 {
		o.MaxLagBytes = 16 << 20
	}
	if o.BM25B <= 0 {
		o.BM25B = index.DefaultBM25B
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = 30 * time.Second
	}
	switch o.Rank {
	case "":
		o.Rank = RankBM25
	case RankBM25, RankTS:
	default:
		return fmt.Errorf("pgstore: recall: unknown rank %q (want %q or %q)", o.Rank, RankBM25, RankTS)
	}
	return nil
}

// recallItem is a queued doc, deletion (doc.ID only) or mark (mark set:
// AddMessages' range, written after its docs).
type recallItem struct {
	doc   index.Doc
	isDel bool
	mark  *markRange
}

var (
	_ index.Recall  = (*Recall)(nil)
	_ index.Tracker = (*Recall)(nil)
)

// errRecallClosed is returned by a Recall used after Close.
var errRecallClosed = fmt.Errorf("pgstore: recall: %w", index.ErrClosed)

// OpenRecall opens the recall index in the database of pool (migrated:
// Migrate). The index's terms were written by package index's analyzer
// at one index.FormatVersion: a database written by a newer one is
// refused (core.ErrFormatTooNew), one by an older one too, unless empty.
// The caller keeps ownership of pool (Close does not close it).
func OpenRecall(ctx context.Context, pool *pgxpool.Pool, opts RecallOptions) (*Recall, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	if err := checkAnalyzer(ctx, pool); err != nil {
		return nil, err
	}
	r := &Recall{
		pool:     pool,
		opts:     opts,
		progress: make(chan struct{}),
		wake:     make(chan struct{}, 1),
	}
	r.wg.Add(1)
	go r.worker()
	return r, nil
}

// checkAnalyzer records index.FormatVersion as the analyzer of the terms
// stored, or checks that it is the one recorded.
func checkAnalyzer(ctx context.Context, pool *pgxpool.Pool) error {
	var v *int
	var docs int64
	err := pool.QueryRow(ctx, `UPDATE recall_stats SET analyzer = CASE WHEN analyzer IS NULL OR docs = 0 THEN $1 ELSE analyzer END
		WHERE id = 1 RETURNING analyzer, docs`, index.FormatVersion).Scan(&v, &docs)
	if err != nil {
		return fmt.Errorf("pgstore: recall: check the analyzer version (is the schema migrated?): %w", err)
	}
	switch {
	case v == nil || *v == index.FormatVersion:
		return nil
	case *v > index.FormatVersion:
		return fmt.Errorf("pgstore: recall: terms written by index format %d, this build writes %d: %w", *v, index.FormatVersion, core.ErrFormatTooNew)
	default:
		return fmt.Errorf("pgstore: recall: terms written by index format %d, this build writes %d: the recall index must be rebuilt (%d docs)", *v, index.FormatVersion, docs)
	}
}

// AddGeneration queues docs for writing (the generation delta is
// ignored: the database is the store, the index never lags behind it
// across restarts). It blocks only while more than MaxLag docs or
// MaxLagBytes of text are pending. Docs of one session should be added in
// Seq order: the previous turn's text is indexed as context of the next
// (Doc.Context, when set, wins; a previous turn this process has not
// seen, written before it started or by another process, is read from the
// database).
func (r *Recall) AddGeneration(_ int64, docs ...index.Doc) {
	r.enqueue(docItems(docs, nil), true)
}

// docItems are docs as queue items, then mark's when set.
func docItems(docs []index.Doc, mark *markRange) []recallItem {
	items := make([]recallItem, len(docs), len(docs)+1)
	for i := range docs {
		items[i] = recallItem{doc: docs[i]}
	}
	if mark != nil {
		items = append(items, recallItem{mark: mark})
	}
	return items
}

// Delete queues the deletion of docs by id (in order with AddGeneration;
// an unknown id is no error).
func (r *Recall) Delete(ids ...string) {
	items := make([]recallItem, len(ids))
	for i, id := range ids {
		items[i] = recallItem{doc: index.Doc{ID: id}, isDel: true}
	}
	r.enqueue(items, false)
}

// enqueue queues items, waiting for room first when wait is set.
func (r *Recall) enqueue(items []recallItem, wait bool) {
	if len(items) == 0 {
		return
	}
	r.mu.Lock()
	for wait && !r.closed && (len(r.queue) > r.opts.MaxLag || r.queueBytes > r.opts.MaxLagBytes) {
		ch := r.progress
		r.mu.Unlock()
		<-ch
		r.mu.Lock()
	}
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.queue = append(r.queue, items...)
	for i := range items {
		r.queueBytes += len(items[i].doc.Text) + len(items[i].doc.Context)
	}
	r.enq += uint64(len(items))
	r.mu.Unlock()
	r.signal()
}

func (r *Recall) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Lag returns the number of docs (and deletions) queued but not yet
// written.
func (r *Recall) Lag() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(r.enq - r.done)
}

// Err returns the error of the last background write, nil once a write
// succeeds after it (writes are retried).
func (r *Recall) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// Flush waits until every doc added before the call is written (and so
// searchable by every process), or the context ends (the error then
// names the last write error, if any).
func (r *Recall) Flush(ctx context.Context) error {
	r.mu.Lock()
	target := r.enq
	r.mu.Unlock()
	for {
		r.mu.Lock()
		doneNow := r.done >= target
		closed, ch, last := r.closed, r.progress, r.lastErr
		r.mu.Unlock()
		if doneNow {
			return nil
		}
		if closed {
			return errRecallClosed
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("pgstore: recall: flush: %w (last write error: %v)", ctx.Err(), last)
			}
			return fmt.Errorf("pgstore: recall: flush: %w", ctx.Err())
		case <-ch:
		}
	}
}

func (r *Recall) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// ConversationDocIDs returns the ids of every doc of a conversation, once
// the docs added before the call are written.
func (r *Recall) ConversationDocIDs(ctx context.Context, conversation string) ([]string, error) {
	if r.isClosed() {
		return nil, errRecallClosed
	}
	if err := r.Flush(ctx); err != nil {
		return nil, err
	}
	rows, err := r.pool.Query(ctx, `SELECT id FROM recall_docs WHERE conversation = $1 ORDER BY id`, conversation)
	if err != nil {
		return nil, fmt.Errorf("pgstore: recall: conversation docs: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgstore: recall: conversation docs: %w", err)
	}
	return ids, nil
}

// Recall ranks the turns that best match a prompt (index.RecallQuery), as
// the Bleve index does.
func (r *Recall) Recall(ctx context.Context, q index.RecallQuery) ([]index.Hit, error) {
	if r.isClosed() {
		return nil, errRecallClosed
	}
	if q.Agent == "" && !q.AllAgents {
		return nil, index.ErrNoAgent
	}
	if q.WaitForLag {
		if err := r.Flush(ctx); err != nil {
			return nil, err
		}
	}
	return index.RankRecall(ctx, newRetriever(r), index.QueryTerms(q.Text), q)
}

// Close writes what is queued (retrying for at most
// RecallOptions.CloseTimeout when the database fails), stops the writer
// and returns; later calls fail with an error wrapping index.ErrClosed. It
// does not close the pool. It is idempotent.
func (r *Recall) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.giveUp = time.Now().Add(r.opts.CloseTimeout)
	r.mu.Unlock()
	r.signal()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.progress)
	r.progress = make(chan struct{})
	if r.dropped > 0 {
		return fmt.Errorf("pgstore: recall: close: %d docs or deletions not written: %w", r.dropped, errors.Join(r.lastErr))
	}
	return nil
}
