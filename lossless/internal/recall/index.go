package recall

// The recall index's lifecycle (issue #6): opened beside the store (Bleve,
// in <StoreDir>/index) and rebuilt from it when missing, stale or corrupt,
// or a store's own search (PostgreSQL) caught up with what other
// processes left unindexed (catchup.go); fed by the engine's writes;
// waited for, compacted and closed.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/index/bleveindex"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/store"
)

// Index is the engine's recall index (an index.Recall over its store) and
// its state: the opening rebuild or catch-up, and the window text keys
// recall excludes by. Its methods are safe for concurrent use.
type Index struct {
	st store.Store
	o  IndexOptions
	// ix counts the store's generation itself (index.AddGeneration): the
	// engine holds no lock of its own while ix.Add waits for room in a
	// full queue. It is the Bleve index (*bleveindex.Index) unless a backend
	// brings its own search.
	ix index.Recall

	rebuild chan struct{} // closed when the opening rebuild (or catch-up) ends
	cancel  context.CancelFunc
	// bg, when set, is closed when the background catch-up of a shared
	// store's recall ends (catchup.go).
	bg chan struct{}
	// rebuildDone counts the docs the rebuild has indexed (those of an
	// interrupted rebuild it resumed included).
	rebuildDone atomic.Int64
	errMu       sync.Mutex
	rebuildErr  error // under errMu

	// keys caches the text keys of each conversation's last window.
	keys WindowKeys
}

// IndexOptions tune an Index (the engine's test hooks; the zero value is
// the default).
type IndexOptions struct {
	// MaxLag is bleveindex.Options.MaxLag (0: the index's default);
	// BeforeBatch is bleveindex.Options.BeforeBatch.
	MaxLag      int
	BeforeBatch func()
	// Rebuild, when set, is called before the rebuild indexes each doc
	// read from the store (n: the docs before it).
	Rebuild func(ctx context.Context, n int)
	// CatchUpEvery replaces DefaultCatchUpEvery (0: the default).
	CatchUpEvery time.Duration
}

// Recall returns the index itself.
func (r *Index) Recall() index.Recall { return r.ix }

// StoreGeneration counts what the index holds when up to date: messages
// plus summaries over all conversations. It reads every conversation
// record: a done ctx stops it with an error wrapping ctx.Err().
func StoreGeneration(ctx context.Context, st store.Store) (uint64, error) {
	var gen uint64
	err := st.View(ctx, func(r store.Reader) error {
		for rec, err := range r.Conversations() {
			if err != nil {
				return fmt.Errorf("lossless: recall: conversation record: %w", records.FromStore(err))
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lossless: recall: count the store's generation: %w", err)
			}
			if rec.NextSeq > 0 {
				gen += rec.NextSeq - 1
			}
			gen += uint64(rec.Summaries)
		}
		return nil
	})
	return gen, err
}

// OpenBleve opens the Bleve recall index in dir over store st, before any
// write to st (the generation it counts from is exact), and rebuilds it
// from st in the background when it is missing, stale or corrupt (recall
// searches what the old index holds meanwhile). ctx bounds the open only
// (its scan of the conversation records: a done ctx stops it with an error
// wrapping ctx.Err()); the rebuild runs until Close.
func OpenBleve(ctx context.Context, dir string, st store.Store, o IndexOptions) (*Index, error) {
	gen, err := StoreGeneration(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("lossless: recall: %w", err)
	}
	ix, err := bleveindex.Open(dir, bleveindex.Options{Generation: gen, MaxLag: o.MaxLag, BeforeBatch: o.BeforeBatch})
	if err != nil {
		return nil, fmt.Errorf("lossless: recall: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background()) // the rebuild's: ended by Close
	r := &Index{st: st, o: o, ix: ix, rebuild: make(chan struct{}), cancel: cancel}
	if !ix.NeedsRebuild() {
		close(r.rebuild)
		return r, nil
	}
	reason := ix.RebuildReason()
	resumed := ix.Resumable()
	r.rebuildDone.Store(int64(resumed))
	slog.Info("lossless: rebuilding the recall index from the store (recall searches what the old index holds meanwhile)",
		"reason", reason, "generation", gen, "resumedAfterDocs", resumed)
	source := r.source
	if hook := o.Rebuild; hook != nil {
		source = func(ctx context.Context, after []byte, yield func(index.Doc, []byte) bool) error {
			n := 0
			return r.source(ctx, after, func(d index.Doc, pos []byte) bool {
				hook(ctx, n)
				n++
				return yield(d, pos)
			})
		}
	}
	go func() {
		defer close(r.rebuild)
		start := time.Now()
		err := ix.Rebuild(ctx, source, func(done int) {
			r.rebuildDone.Store(int64(done))
			if done%50_000 < 1000 {
				slog.Info("lossless: recall index rebuild", "docs", done)
			}
		})
		if err != nil && ctx.Err() != nil {
			// Close interrupted it (a short-lived process, e.g. one CLI
			// command): not a failure; the next Open resumes it where it
			// stopped.
			slog.Info("lossless: recall index rebuild interrupted by Close; the next open resumes it", "docs", r.RebuildProgress())
			return
		}
		r.errMu.Lock()
		r.rebuildErr = err
		r.errMu.Unlock()
		if err != nil {
			slog.Error("lossless: recall index rebuild failed", "err", err)
			return
		}
		slog.Info("lossless: recall index rebuilt", "reason", reason, "elapsed", time.Since(start).Round(time.Millisecond))
	}()
	return r, nil
}

// RebuildProgress returns the docs the opening rebuild has indexed so far.
func (r *Index) RebuildProgress() int64 {
	return r.rebuildDone.Load()
}

// Status returns the state of the index.
func (r *Index) Status() recalled.Status {
	st := recalled.Status{Enabled: true, Lag: r.ix.Lag()}
	st.Rebuilding = r.Rebuilding()
	st.Rebuilt = r.rebuildDone.Load()
	r.errMu.Lock()
	if r.rebuildErr != nil {
		st.Error = r.rebuildErr.Error()
	}
	r.errMu.Unlock()
	return st
}

// Wait waits until the opening rebuild (if any) is done and every added
// doc is searchable.
func (r *Index) Wait(ctx context.Context) error {
	if err := r.waitRebuild(ctx); err != nil {
		return err
	}
	return r.ix.Flush(ctx)
}

// Compact merges the index's segments into one (an index that brings no
// Compact, a store's own search, has nothing to merge); see the engine's
// CompactRecallIndex.
func (r *Index) Compact(ctx context.Context) error {
	c, ok := r.ix.(interface{ Compact(context.Context) error })
	if !ok {
		return nil
	}
	if err := c.Compact(ctx); err != nil {
		return fmt.Errorf("lossless: compact the recall index: %w", err)
	}
	return nil
}

// Rebuilding reports whether the opening rebuild of the index still runs
// (recall then searches the old index: what it holds).
func (r *Index) Rebuilding() bool {
	select {
	case <-r.rebuild:
		return false
	default:
		return true
	}
}

// waitRebuild waits until the opening rebuild of the index (if any) ends.
func (r *Index) waitRebuild(ctx context.Context) error {
	select {
	case <-r.rebuild:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("lossless: recall: %w", ctx.Err())
	}
}

// Close closes the index (once, with no call in flight) and returns its
// error (docs it could not write are missing: the next open finds the
// index stale and rebuilds it, but the caller hears of it).
func (r *Index) Close() error {
	r.cancel() // an unfinished rebuild stops; the next open redoes it
	<-r.rebuild
	if r.bg != nil {
		<-r.bg
	}
	if err := r.ix.Close(); err != nil {
		return fmt.Errorf("lossless: close the recall index: %w", err)
	}
	return nil
}

// source yields every stored message and summary (the store is the
// source of truth of the index), from one snapshot: conversations in id
// order, each one's messages in seq order, then its summaries in id order.
// A doc's position is its conversation id, 0 (message) or 1 (summary), and
// the message's seq (8 bytes, big-endian) or the summary's id; with after
// set, it yields the docs after that one (a rebuild resumed). The position
// is the store's order, not its keys: a position written by a rebuild of an
// earlier build (the same bytes) resumes here.
func (r *Index) source(ctx context.Context, after []byte, yield func(index.Doc, []byte) bool) error {
	var from store.ConvID
	var fromKind byte
	var fromRest []byte
	resume := len(after) > 0
	if resume {
		if len(after) < 9 || after[8] > 1 || (after[8] == 0 && len(after) != 17) {
			return fmt.Errorf("lossless: recall: bad rebuild position %x", after)
		}
		copy(from[:], after[:8])
		fromKind, fromRest = after[8], after[9:]
	}
	return r.st.View(ctx, func(rd store.Reader) error {
		var convs []store.ConvID
		var agents []string
		for rec, err := range rd.Conversations() {
			if err != nil {
				return fmt.Errorf("lossless: recall: conversation record: %w", records.FromStore(err))
			}
			if resume && bytes.Compare(rec.ID[:], from[:]) < 0 {
				continue
			}
			convs = append(convs, rec.ID)
			agents = append(agents, rec.Agent)
		}
		pos := make([]byte, 0, 64)
		for i, c := range convs {
			if err := ctx.Err(); err != nil {
				return err
			}
			at := resume && c == from // the conversation the position is in
			msgs, start := true, uint64(0)
			if at {
				seq, _ := getU64(fromRest)
				msgs = fromKind == 0 && seq < math.MaxUint64
				start = seq + 1
			}
			if msgs {
				for m, err := range rd.Messages(c, start, true) {
					if err != nil {
						return records.FromStore(err)
					}
					d, ok := messageDoc(c, agents[i], m.Seq, m)
					pos = append(append(pos[:0], c[:]...), 0)
					pos = binary.BigEndian.AppendUint64(pos, m.Seq)
					if ok && !yield(d, pos) {
						return nil
					}
				}
			}
			for s, err := range rd.Summaries(c) {
				if err != nil {
					return records.FromStore(err)
				}
				if at && fromKind == 1 && s.ID <= string(fromRest) {
					continue
				}
				pos = append(append(append(pos[:0], c[:]...), 1), s.ID...)
				if !yield(SummaryDoc(c, agents[i], s), pos) {
					return nil
				}
			}
		}
		return nil
	})
}

// getU64 reads a big-endian uint64 from b's first 8 bytes.
func getU64(b []byte) (uint64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(b), true
}

// messageDoc is the doc of stored message r (seq of conversation c of
// agent); false for one never indexed (MessageDoc).
func messageDoc(c store.ConvID, agent string, seq uint64, r store.Message) (index.Doc, bool) {
	if r.Flags&store.FlagHeartbeat != 0 {
		return index.Doc{}, false
	}
	m, err := core.ParseMessage(r.Raw)
	if err != nil {
		return index.Doc{}, false
	}
	return MessageDoc(c, agent, seq, r.Role, r.Timestamp, false, m)
}

// AddMessages hands the docs of n messages just committed to conversation
// c to the index (the engine's ingest), first..last their seqs when
// contiguous (those of one write are): a shared store's index
// (index.Tracker) then moves c's mark once their docs are written
// (catchup.go). It waits, holding no lock, while the index queue is full.
func (r *Index) AddMessages(c store.ConvID, n int, first, last uint64, contiguous bool, docs []index.Doc) {
	if tr, ok := r.ix.(index.Tracker); ok && contiguous {
		tr.AddMessages(c.String(), first, last, docs...)
		return
	}
	r.ix.AddGeneration(int64(n), docs...)
}

// Unindex removes conversation c's docs from the index (retention deletes
// c next): every doc the index holds for c, found in the index once what
// was queued before is indexed.
func (r *Index) Unindex(ctx context.Context, c store.ConvID) error {
	if err := r.waitRebuild(ctx); err != nil {
		return err
	}
	ids, err := r.ix.ConversationDocIDs(ctx, c.String())
	if err != nil {
		if errors.Is(err, index.ErrClosed) {
			return nil
		}
		return fmt.Errorf("lossless: retain: recall index: %w", err)
	}
	r.ix.Delete(ids...)
	return nil
}

// Forget takes a deleted conversation's messages and summaries (rec, its
// record) out of the index generation, as StoreGeneration no longer
// counts them.
func (r *Index) Forget(rec store.Conversation) {
	n := uint64(rec.Summaries)
	if rec.NextSeq > 0 {
		n += rec.NextSeq - 1
	}
	r.ix.AddGeneration(-int64(n))
}

// AddSummary hands a summary just committed to conversation c of agent to
// the index.
func (r *Index) AddSummary(c store.ConvID, agent string, s dag.Summary) {
	r.ix.AddGeneration(1, SummaryDoc(c, agent, s))
}
