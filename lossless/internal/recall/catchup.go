package recall

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Catching up a shared recall index (index.Tracker: PostgreSQL's, whose
// queue of docs is each process's own): a process killed before its queue
// was written leaves messages stored but not indexed, behind their
// conversation's mark. Every engine opening the store indexes what lies
// past each conversation's mark (its opening catch-up, which
// WaitRecallIndex and RecallStatus count as a rebuild), then, every
// DefaultCatchUpEvery, the conversations where its own writes found a gap.

// DefaultCatchUpEvery is how often an engine catches up the conversations
// whose marks its writes found behind (tests shorten it:
// IndexOptions.CatchUpEvery). A gap
// left by a process whose docs are merely not written yet closes by
// itself meanwhile (the catch-up then finds them written).
const DefaultCatchUpEvery = 10 * time.Second

// catchUpBatch is the number of messages read and indexed per step.
const catchUpBatch = 500

// OverStore is the recall index over a store's own search (the engine's
// OpenStore):
// the store indexes itself, so there is nothing to rebuild, only, when it
// tracks how far it indexed (index.Tracker), what other processes left
// behind to catch up, in the background.
func OverStore(st store.Store, ix index.Recall, o IndexOptions) *Index {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Index{st: st, o: o, ix: ix, rebuild: make(chan struct{}), cancel: cancel}
	tr, ok := ix.(index.Tracker)
	if !ok {
		close(r.rebuild)
		return r
	}
	r.bg = make(chan struct{})
	go func() {
		defer close(r.bg)
		err := r.catchUp(ctx, tr, nil, r)
		r.errMu.Lock()
		r.rebuildErr = err
		r.errMu.Unlock()
		close(r.rebuild)
		if err != nil && ctx.Err() == nil {
			slog.Error("lossless: recall: catching up the messages other processes left unindexed failed (retried on the next open)", "err", err)
		}
		every := DefaultCatchUpEvery
		if d := o.CatchUpEvery; d > 0 {
			every = d
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if gaps := tr.Gaps(); len(gaps) > 0 {
				if err := r.catchUp(ctx, tr, gaps, nil); err != nil && ctx.Err() == nil {
					slog.Warn("lossless: recall: catch-up failed (retried when a write finds the gap again, or on the next open)", "err", err)
				}
			}
		}
	}()
	return r
}

// catchUp indexes, for each conversation (only: those of these ids;
// nil: every one), its messages past its mark in tr, catchUpBatch at a
// time; progress (when set) counts the docs handed to tr.
func (r *Index) catchUp(ctx context.Context, tr index.Tracker, only []string, progress *Index) error {
	type conv struct {
		id        store.ConvID
		agent     string
		last      uint64
		summaries bool
	}
	var convs []conv
	var ids []string
	add := func(c store.ConvID, rec store.Conversation) {
		if rec.NextSeq > 1 || (only == nil && rec.Summaries > 0) {
			convs = append(convs, conv{c, rec.Agent, max(rec.NextSeq, 1) - 1, only == nil && rec.Summaries > 0})
			ids = append(ids, c.String())
		}
	}
	err := r.st.View(ctx, func(rd store.Reader) error {
		if only == nil {
			for rec, err := range rd.Conversations() {
				if err != nil {
					return records.FromStore(err)
				}
				add(rec.ID, rec.Conversation)
			}
			return nil
		}
		for _, s := range only {
			c, ok := store.ParseConvID(s)
			if !ok {
				continue
			}
			rec, err := rd.Conversation(c)
			if err != nil {
				continue // deleted meanwhile
			}
			add(c, rec)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("lossless: recall: catch up: %w", err)
	}
	if len(convs) == 0 {
		return nil
	}
	marks, err := tr.Marks(ctx, ids)
	if err != nil {
		return fmt.Errorf("lossless: recall: catch up: %w", err)
	}
	for i, c := range convs {
		for mark := marks[i]; mark < c.last; {
			docs, through, err := r.messageDocsAfter(ctx, c.id, c.agent, mark)
			if err != nil {
				return err
			}
			if through <= mark {
				break // nothing past the mark (deleted meanwhile)
			}
			if err := tr.CatchUp(ctx, ids[i], through, docs); err != nil {
				return fmt.Errorf("lossless: recall: catch up: %w", err)
			}
			if progress != nil {
				progress.rebuildDone.Add(int64(len(docs)))
			}
			mark = through
		}
		if c.summaries {
			if err := r.catchUpSummaries(ctx, tr, c.id, c.agent, progress); err != nil {
				return err
			}
		}
	}
	return nil
}

// catchUpSummaries writes the docs of c's summaries that tr lacks, on the
// opening catch-up (no mark tracks a summary's doc: a process killed with
// one in its queue leaves it out), catchUpBatch at a time.
func (r *Index) catchUpSummaries(ctx context.Context, tr index.Tracker, c store.ConvID, agent string, progress *Index) error {
	var sums []string
	err := r.st.View(ctx, func(rd store.Reader) error {
		for s, err := range rd.Summaries(c) {
			if err != nil {
				return records.FromStore(err)
			}
			sums = append(sums, s.ID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("lossless: recall: catch up the summaries of %s: %w", c, err)
	}
	for len(sums) > 0 {
		chunk := sums[:min(len(sums), catchUpBatch)]
		sums = sums[len(chunk):]
		docIDs := make([]string, len(chunk))
		summaryOf := make(map[string]string, len(chunk))
		for i, id := range chunk {
			docIDs[i] = SummaryDocID(c, id)
			summaryOf[docIDs[i]] = id
		}
		missing, err := tr.Missing(ctx, docIDs)
		if err != nil {
			return fmt.Errorf("lossless: recall: catch up the summaries of %s: %w", c, err)
		}
		if len(missing) == 0 {
			continue
		}
		var docs []index.Doc
		err = r.st.View(ctx, func(rd store.Reader) error {
			for _, d := range missing {
				s, err := rd.Summary(c, summaryOf[d])
				if errors.Is(err, store.ErrNotFound) {
					continue // deleted meanwhile (retention)
				}
				if err != nil {
					return records.FromStore(err)
				}
				docs = append(docs, SummaryDoc(c, agent, s))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("lossless: recall: catch up the summaries of %s: %w", c, err)
		}
		// Through 0: a summary moves no conversation's mark.
		if err := tr.CatchUp(ctx, c.String(), 0, docs); err != nil {
			return fmt.Errorf("lossless: recall: catch up the summaries of %s: %w", c, err)
		}
		if progress != nil {
			progress.rebuildDone.Add(int64(len(docs)))
		}
	}
	return nil
}

// messageDocsAfter reads up to catchUpBatch messages of c after seq after
// and returns their docs (messages without one, heartbeats, have none)
// and the last seq read (after when none).
func (r *Index) messageDocsAfter(ctx context.Context, c store.ConvID, agent string, after uint64) ([]index.Doc, uint64, error) {
	var docs []index.Doc
	through := after
	err := r.st.View(ctx, func(rd store.Reader) error {
		n := 0
		for m, err := range rd.Messages(c, after+1, true) {
			if err != nil {
				return records.FromStore(err)
			}
			if d, ok := messageDoc(c, agent, m.Seq, m); ok {
				docs = append(docs, d)
			}
			through = m.Seq
			if n++; n == catchUpBatch {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, after, fmt.Errorf("lossless: recall: catch up: read %s: %w", c, err)
	}
	return docs, through, nil
}
