package lossless

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/store"
)

// Catching up a shared recall index (index.Tracker: PostgreSQL's, whose
// queue of docs is each process's own): a process killed before its queue
// was written leaves messages stored but not indexed, behind their
// conversation's mark. Every engine opening the store indexes what lies
// past each conversation's mark (its opening catch-up, which
// WaitRecallIndex and RecallStatus count as a rebuild), then, every
// defaultCatchUpEvery, the conversations where its own writes found a gap.

// defaultCatchUpEvery is how often an engine catches up the conversations
// whose marks its writes found behind (tests shorten it: hooks.go). A gap
// left by a process whose docs are merely not written yet closes by
// itself meanwhile (the catch-up then finds them written).
const defaultCatchUpEvery = 10 * time.Second

// catchUpBatch is the number of messages read and indexed per step.
const catchUpBatch = 500

// storeRecall is the recall state over a store's own search (OpenStore):
// the store indexes itself, so there is nothing to rebuild, only, when it
// tracks how far it indexed (index.Tracker), what other processes left
// behind to catch up, in the background.
func (e *Engine) storeRecall(ix index.Recall) *recaller {
	ctx, cancel := context.WithCancel(context.Background())
	r := &recaller{ix: ix, rebuild: make(chan struct{}), cancel: cancel}
	tr, ok := ix.(index.Tracker)
	if !ok {
		close(r.rebuild)
		return r
	}
	r.bg = make(chan struct{})
	go func() {
		defer close(r.bg)
		err := e.catchUpRecall(ctx, tr, nil, r)
		r.errMu.Lock()
		r.rebuildErr = err
		r.errMu.Unlock()
		close(r.rebuild)
		if err != nil && ctx.Err() == nil {
			slog.Error("lossless: recall: catching up the messages other processes left unindexed failed (retried on the next open)", "err", err)
		}
		every := defaultCatchUpEvery
		if d := e.cfg.hooks.catchUpEvery; d > 0 {
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
				if err := e.catchUpRecall(ctx, tr, gaps, nil); err != nil && ctx.Err() == nil {
					slog.Warn("lossless: recall: catch-up failed (retried when a write finds the gap again, or on the next open)", "err", err)
				}
			}
		}
	}()
	return r
}

// catchUpRecall indexes, for each conversation (only: those of these ids;
// nil: every one), its messages past its mark in tr, catchUpBatch at a
// time; progress (when set) counts the docs handed to tr.
func (e *Engine) catchUpRecall(ctx context.Context, tr index.Tracker, only []string, progress *recaller) error {
	type conv struct {
		id        convID
		agent     string
		last      uint64
		summaries bool
	}
	var convs []conv
	var ids []string
	add := func(c convID, rec convRecord) {
		if rec.NextSeq > 1 || (only == nil && rec.Summaries > 0) {
			convs = append(convs, conv{c, rec.Agent, max(rec.NextSeq, 1) - 1, only == nil && rec.Summaries > 0})
			ids = append(ids, c.String())
		}
	}
	err := e.st.View(ctx, func(r store.Reader) error {
		if only == nil {
			for rec, err := range r.Conversations() {
				if err != nil {
					return fromStore(err)
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
			rec, err := r.Conversation(c)
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
			docs, through, err := e.messageDocsAfter(ctx, c.id, c.agent, mark)
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
			if err := e.catchUpSummaries(ctx, tr, c.id, c.agent, progress); err != nil {
				return err
			}
		}
	}
	return nil
}

// catchUpSummaries writes the docs of c's summaries that tr lacks, on the
// opening catch-up (no mark tracks a summary's doc: a process killed with
// one in its queue leaves it out), catchUpBatch at a time.
func (e *Engine) catchUpSummaries(ctx context.Context, tr index.Tracker, c convID, agent string, progress *recaller) error {
	var sums []string
	err := e.st.View(ctx, func(r store.Reader) error {
		for s, err := range r.Summaries(c) {
			if err != nil {
				return fromStore(err)
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
			docIDs[i] = summaryDocID(c, id)
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
		err = e.st.View(ctx, func(r store.Reader) error {
			for _, d := range missing {
				s, err := r.Summary(c, summaryOf[d])
				if errors.Is(err, store.ErrNotFound) {
					continue // deleted meanwhile (retention)
				}
				if err != nil {
					return fromStore(err)
				}
				docs = append(docs, summaryDoc(c, agent, s))
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
func (e *Engine) messageDocsAfter(ctx context.Context, c convID, agent string, after uint64) ([]index.Doc, uint64, error) {
	var docs []index.Doc
	through := after
	err := e.st.View(ctx, func(r store.Reader) error {
		n := 0
		for m, err := range r.Messages(c, after+1, true) {
			if err != nil {
				return fromStore(err)
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
