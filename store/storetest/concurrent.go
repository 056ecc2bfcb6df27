package storetest

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/store"
)

// checkConv checks the invariant every ingest Update keeps: the record
// counts the messages and items it has, and nothing is stored at or past
// NextSeq. A View that sees part of an Update breaks it.
func checkConv(r store.Reader, c store.ConvID) error {
	conv, err := r.Conversation(c)
	if errors.Is(err, store.ErrNotFound) {
		conv = store.Conversation{}
	} else if err != nil {
		return err
	}
	var n int64
	for m, err := range r.Messages(c, 0, false) {
		if err != nil {
			return err
		}
		if m.Seq >= conv.NextSeq {
			return fmt.Errorf("conversation %s: message %d at or past NextSeq %d (part of an Update seen)", c, m.Seq, conv.NextSeq)
		}
		n++
	}
	if n != conv.Messages {
		return fmt.Errorf("conversation %s: %d messages, the record counts %d (part of an Update seen)", c, n, conv.Messages)
	}
	var items int64
	for it, err := range r.Items(c, 0, math.MaxUint64, true) {
		if err != nil {
			return err
		}
		if it.Pos >= conv.NextPos {
			return fmt.Errorf("conversation %s: item at %d at or past NextPos %d", c, it.Pos, conv.NextPos)
		}
		items++
	}
	if items != conv.Messages {
		return fmt.Errorf("conversation %s: %d items, the record counts %d messages", c, items, conv.Messages)
	}
	return nil
}

// checkWritten checks, after concurrent writers, that conversation c holds
// each of raws once, in a contiguous sequence, indexed by key and item.
func checkWritten(r store.Reader, c store.ConvID, raws map[string]bool) error {
	if err := checkConv(r, c); err != nil {
		return err
	}
	conv, err := r.Conversation(c)
	if err != nil {
		return err
	}
	if conv.Messages != int64(len(raws)) || conv.NextSeq != uint64(len(raws)) {
		return fmt.Errorf("conversation %s: record counts %d messages, NextSeq %d; want %d", c, conv.Messages, conv.NextSeq, len(raws))
	}
	seen := map[string]bool{}
	next := uint64(0)
	var bytes int64
	for m, err := range r.Messages(c, 0, true) {
		if err != nil {
			return err
		}
		if m.Seq != next {
			return fmt.Errorf("conversation %s: message %d after %d", c, m.Seq, next-1)
		}
		next++
		if !raws[string(m.Raw)] || seen[string(m.Raw)] {
			return fmt.Errorf("conversation %s: message %d %q unknown or stored twice", c, m.Seq, m.Raw)
		}
		seen[string(m.Raw)] = true
		bytes += int64(len(m.Raw))
		if seq, err := r.SeqByHash(c, hashOf(m.Raw)); err != nil || seq != m.Seq {
			return fmt.Errorf("conversation %s: SeqByHash of message %d = %d, %v", c, m.Seq, seq, err)
		}
		if it, err := r.Item(c, m.Seq*65536); err != nil || it.Ref.Seq != m.Seq {
			return fmt.Errorf("conversation %s: item at %d = %+v, %v; want message %d", c, m.Seq*65536, it, err, m.Seq)
		}
	}
	if len(seen) != len(raws) || bytes != conv.Bytes {
		return fmt.Errorf("conversation %s: %d of %d messages stored, %d bytes (record %d)", c, len(seen), len(raws), bytes, conv.Bytes)
	}
	return nil
}

func testConcurrent(t *testing.T, open OpenFunc) {
	writers, perWriter := 8, 40
	if !testing.Short() {
		perWriter = 150
	}
	// run starts writers on the conversations conv(g) gives, each holding
	// that conversation's mutex around its Updates (as the engine does),
	// and two readers checking the invariant of a conversation in Views
	// meanwhile; it returns each conversation's raws.
	run := func(t *testing.T, s store.Store, conv func(g int) store.ConvID) map[store.ConvID]map[string]bool {
		var mus sync.Map
		raws := map[store.ConvID]map[string]bool{}
		for g := range writers {
			mus.LoadOrStore(conv(g), new(sync.Mutex))
			if raws[conv(g)] == nil {
				raws[conv(g)] = map[string]bool{}
			}
			for i := range perWriter {
				raws[conv(g)][string(rawOf(g, i))] = true
			}
		}
		ctx := t.Context()
		var stop atomic.Bool
		var views atomic.Int64
		errs := make(chan error, writers+2)
		var readers, wg sync.WaitGroup
		for rd := range 2 {
			readers.Add(1)
			go func() {
				defer readers.Done()
				for i := 0; !stop.Load(); i++ {
					c := conv((rd + i) % writers)
					if err := s.View(ctx, func(r store.Reader) error { return checkConv(r, c) }); err != nil {
						errs <- fmt.Errorf("reader: %w", err)
						return
					}
					views.Add(1)
				}
			}()
		}
		for g := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := conv(g)
				m, _ := mus.Load(c)
				mu := m.(*sync.Mutex)
				for i := range perWriter {
					raw := rawOf(g, i)
					dup := i > 0 && i%5 == 0 // also deliver the previous message again
					mu.Lock()
					err := s.Update(ctx, func(tx store.Tx) error {
						// Let the other writers run meanwhile: a backend whose
						// Updates overwrite each other loses some here.
						runtime.Gosched()
						if _, stored, err := appendMessage(tx, c, raw); err != nil || !stored {
							return errors.Join(err, fmt.Errorf("a new message was found stored"))
						}
						runtime.Gosched()
						if dup {
							if _, stored, err := appendMessage(tx, c, rawOf(g, i-1)); err != nil || stored {
								return errors.Join(err, fmt.Errorf("a message delivered again was stored again"))
							}
						}
						return nil
					})
					mu.Unlock()
					if err != nil {
						errs <- fmt.Errorf("writer %d, message %d: %w", g, i, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		stop.Store(true)
		readers.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		t.Logf("%d Updates by %d writers, %d Views meanwhile", writers*perWriter, writers, views.Load())
		return raws
	}
	t.Run("OneConversation", func(t *testing.T) {
		s := open(t)
		raws := run(t, s, func(int) store.ConvID { return cA })
		view(t, s, func(r store.Reader) error { return checkWritten(r, cA, raws[cA]) })
	})
	t.Run("ManyConversations", func(t *testing.T) {
		s := open(t)
		conv := func(g int) store.ConvID { return convID(byte(g), 0xff) }
		raws := run(t, s, conv)
		view(t, s, func(r store.Reader) error {
			var errs []error
			for c, rs := range raws {
				errs = append(errs, checkWritten(r, c, rs))
			}
			recs, err := all(r.Conversations())
			if err != nil || len(recs) != writers {
				errs = append(errs, fmt.Errorf("Conversations(): %d records, %v; want %d", len(recs), err, writers))
			}
			return errors.Join(errs...)
		})
	})
	t.Run("ViewIsSnapshot", func(t *testing.T) { testViewIsSnapshot(t, open(t)) })
}

func rawOf(g, i int) []byte {
	return fmt.Appendf(nil, `{"role":"user","content":"writer %d, message %d","timestamp":%d}`, g, i, 1_700_000_000_000+i)
}

// testViewIsSnapshot commits an Update while a View runs: the View keeps
// reading the state of its start (a backend that makes Updates wait for
// Views passes too).
func testViewIsSnapshot(t *testing.T, s store.Store) {
	ctx := t.Context()
	update(t, s, func(tx store.Tx) error {
		_, _, err := appendMessage(tx, cA, rawOf(0, 0))
		return err
	})
	done := make(chan error, 1)
	committed := false
	view(t, s, func(r store.Reader) error {
		before := snapshotReader(r, cA)
		go func() {
			done <- s.Update(ctx, func(tx store.Tx) error {
				_, _, err := appendMessage(tx, cA, rawOf(0, 1))
				if err == nil {
					err = tx.DeleteItem(cA, 0)
				}
				return err
			})
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Update during a View: %v", err)
			}
			committed = true
		case <-time.After(200 * time.Millisecond): // Updates wait for Views
		}
		if after := snapshotReader(r, cA); !sameSnapshot(before, after) {
			t.Errorf("a View saw an Update committed after its start:\nbefore %+v\n after %+v", before, after)
		}
		return nil
	})
	if !committed {
		if err := <-done; err != nil {
			t.Fatalf("Update after a View: %v", err)
		}
	}
	view(t, s, func(r store.Reader) error {
		if c, err := r.Conversation(cA); err != nil || c.Messages != 2 {
			t.Errorf("after the Update: %+v, %v; want 2 messages", c, err)
		}
		return nil
	})
}

func snapshotReader(r store.Reader, c store.ConvID) convSnapshot {
	var cs convSnapshot
	cs.conv, cs.convErr = r.Conversation(c)
	cs.msgs, _ = all(r.Messages(c, 0, true))
	cs.items, _ = all(r.Items(c, 0, math.MaxUint64, false))
	cs.sums, _ = all(r.Summaries(c))
	return cs
}
