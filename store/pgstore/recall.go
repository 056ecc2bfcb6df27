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
	"github.com/lossless-engine/contextengine/internal/batchq"
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
// the queue in batches, one round trip per batch (recall_write.go). A
// batch failing with an error that may pass (retryable) is retried
// RecallOptions.MaxRetries times; one the database refuses, or that still
// fails, is given up and left to the catch-up (index.Tracker: its
// conversations are Gaps, their marks stay behind), as is what finds the
// queue full with no batch written for RecallOptions.MaxLagWait: neither
// a failing database nor a refused doc holds up the engine's ingest or
// Close for longer than those bounds.
type Recall struct {
	pool *pgxpool.Pool
	opts RecallOptions

	mu sync.Mutex
	// queue holds the docs, deletions and marks waiting to be written
	// (guarded by mu; a batch stays in it until it is written or given
	// up). Its Pushed and Done count docs and deletions queued / written
	// (or dropped).
	queue     *batchq.Queue[recallItem]
	calls     uint64 // enqueues that queued items (recallItem.call)
	closed    bool
	lastErr   error // the last write error (nil after a write succeeds)
	dropped   int   // docs and deletions dropped at Close
	abandoned int   // docs and deletions given up before Close (left to the catch-up)
	// stalled is set when a full queue made no progress for MaxLagWait:
	// until the worker writes a batch again, what finds the queue full is
	// left to the catch-up at once instead of waiting.
	stalled bool

	// ctx bounds every write; Close cancels it CloseTimeout after it is
	// called (the worker then gives up what it has not written).
	ctx    context.Context
	cancel context.CancelFunc

	prev index.TurnMemory // worker only
	wg   sync.WaitGroup
	gaps map[string]bool // conversations whose marks a write found behind (Gaps)

	// beforeBatch, when set (tests), is called by the worker before it
	// writes each batch.
	beforeBatch func()
	// send, when set (tests), writes a batch in place of sendBatch.
	send func(ctx context.Context, b *pgx.Batch, marksAt int) ([]string, error)
}

// RecallOptions configure a Recall. The zero value is usable.
type RecallOptions struct {
	// BatchSize is the number of docs written per round trip (default 500).
	BatchSize int
	// MaxLag bounds the docs waiting to be written: AddGeneration and
	// AddMessages wait while more are pending, as long as the writer
	// makes progress (default 100,000; see MaxLagWait).
	MaxLag int
	// MaxLagBytes bounds the text waiting to be written (default 16 MiB).
	MaxLagBytes int
	// MaxLagWait bounds how long AddGeneration and AddMessages wait for
	// room in a full queue without the writer writing a batch (default
	// 5 s): past it, and until the writer writes a batch again, what they
	// are given is not queued but left to the catch-up (the range of
	// AddMessages is reported by Gaps, and its mark stays behind; the
	// docs of AddGeneration are written by the catch-up of the next
	// engine to open the database), so that a failing database never
	// holds up the caller (the engine ingests under a conversation's
	// lock) for longer.
	MaxLagWait time.Duration
	// MaxRetries is how many times a write failing with an error that may
	// pass by itself (a serialization failure, a deadlock, a lost or
	// refused connection, a timeout) is retried, with backoff from 50 ms
	// to 5 s, before it is given up (default 8: about 15 s). Any other
	// error (the database refused the statement: retrying cannot help) is
	// given up at once. What a write gives up is left to the catch-up as
	// with MaxLagWait, and Err reports the error.
	MaxRetries int
	// BM25B is BM25's length normalisation b (default index.DefaultBM25B,
	// the Bleve index's).
	BM25B float64
	// Rank is how candidates are scored: RankBM25 (default, the Bleve
	// index's BM25) or RankTS (PostgreSQL's ts_rank, for comparison).
	Rank string
	// CloseTimeout bounds how long Close writes what is queued (default
	// 30 s): a write still running then is cancelled, what is left is
	// dropped, and Close says how much.
	CloseTimeout time.Duration
	// Logf, when set, gets the errors of background writes (Err reports
	// the last one).
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
	if o.MaxLagWait <= 0 {
		o.MaxLagWait = 5 * time.Second
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 8
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
	call  uint64 // the enqueue that queued it (its items are contiguous)
}

var (
	_ index.Recall  = (*Recall)(nil)
	_ index.Tracker = (*Recall)(nil)
)

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
	r := &Recall{pool: pool, opts: opts}
	r.queue = batchq.New(&r.mu, batchq.Options[recallItem]{MaxItems: opts.MaxLag, MaxBytes: opts.MaxLagBytes,
		Size: func(it *recallItem) int { return len(it.doc.Text) + len(it.doc.Context) }})
	r.ctx, r.cancel = context.WithCancel(context.Background())
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
// MaxLagBytes of text are pending, for at most MaxLagWait without
// progress. Docs of one session should be added in
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

// enqueue queues items, waiting for room first when wait is set: while
// the queue is full and the worker writes batches, but for at most
// MaxLagWait without one (the queue is then stalled); items that find the
// queue full and stalled are left to the catch-up (abandon).
func (r *Recall) enqueue(items []recallItem, wait bool) {
	if len(items) == 0 {
		return
	}
	r.mu.Lock()
	if wait && !r.closed && r.full() && !r.stalled {
		timer := time.NewTimer(r.opts.MaxLagWait)
		for !r.closed && r.full() && !r.stalled {
			ch := r.queue.ProgressC()
			r.mu.Unlock()
			select {
			case <-ch: // a batch written (or given up): room, or wait anew
				timer.Reset(r.opts.MaxLagWait) // Go 1.23 timers: no stale tick
				r.mu.Lock()
			case <-timer.C:
				r.mu.Lock()
				if !r.stalled && r.full() {
					r.stalled = true
					r.logf("pgstore: recall: the write queue is full and no batch was written for %v: docs are left to the catch-up until one is (last error: %v)", r.opts.MaxLagWait, r.lastErr)
				}
			}
		}
		timer.Stop()
	}
	if r.closed {
		r.mu.Unlock()
		return
	}
	if wait && r.full() && r.stalled {
		r.abandonLocked(items, false)
		r.mu.Unlock()
		return
	}
	r.calls++
	for i := range items {
		items[i].call = r.calls
	}
	r.queue.Push(items...)
	r.mu.Unlock()
}

// full reports whether more than MaxLag docs or MaxLagBytes of text are
// queued (r.mu held).
func (r *Recall) full() bool {
	return r.queue.Full()
}

// abandonLocked leaves items to the catch-up (r.mu held), counting them
// as dropped at Close (atClose) or abandoned before it: the
// conversations of their ranges (AddMessages) are gaps (Gaps), whose
// marks in the database stay behind them, so the engine's catch-up, or
// the next engine's at open, indexes their messages from the store; the
// docs of summaries are written by the next engine's opening catch-up
// (index.Tracker.Missing); a deletion is not written.
func (r *Recall) abandonLocked(items []recallItem, atClose bool) {
	for i := range items {
		if m := items[i].mark; m != nil {
			if r.gaps == nil {
				r.gaps = map[string]bool{}
			}
			r.gaps[m.conv] = true
		}
	}
	if atClose {
		r.dropped += len(items)
	} else {
		r.abandoned += len(items)
	}
}

func (r *Recall) logf(format string, args ...any) {
	if r.opts.Logf != nil {
		r.opts.Logf(format, args...)
	}
}

// Lag returns the number of docs (and deletions) queued but not yet
// written.
func (r *Recall) Lag() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(r.queue.Pushed() - r.queue.Done())
}

// Err returns the error of the last background write, nil once a write
// succeeds after it (writes that may pass are retried, RecallOptions.
// MaxRetries times; what a write gives up is left to the catch-up).
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
	target := r.queue.Pushed()
	r.mu.Unlock()
	for {
		r.mu.Lock()
		doneNow := r.queue.Done() >= target
		closed, ch, last := r.closed, r.queue.ProgressC(), r.lastErr
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

// Close writes what is queued (for at most RecallOptions.CloseTimeout: a
// write still running then is cancelled and the rest dropped), stops the
// writer and returns; later calls fail with an error wrapping
// index.ErrClosed. It does not close the pool. It is idempotent.
func (r *Recall) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.queue.Close() // the worker writes what is queued, then stops
	r.mu.Unlock()
	giveUp := time.AfterFunc(r.opts.CloseTimeout, r.cancel)
	r.wg.Wait()
	giveUp.Stop()
	r.cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queue.Broadcast()
	if r.dropped > 0 {
		return fmt.Errorf("pgstore: recall: close: %d docs or deletions not written: %w", r.dropped, errors.Join(r.lastErr))
	}
	return nil
}
