package retention

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

const day = 24 * 3600 * 1000

// putConvs stores conversations of agent a, each named by its key unless
// the key is "" (an orphan).
func putConvs(t *testing.T, st store.Store, convs ...conv) {
	t.Helper()
	err := st.Update(context.Background(), func(tx store.Tx) error {
		for _, c := range convs {
			rec := store.Conversation{Agent: "a", Key: c.key, Created: c.updated, Updated: c.updated, Messages: 1, Bytes: c.bytes}
			if err := tx.PutConversation(c.id, rec); err != nil {
				return err
			}
			if c.key != "" {
				if err := tx.PutName(store.Name{Agent: "a", Kind: store.NameSessionKey, Value: c.key}, c.id); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

type conv = struct {
	id      store.ConvID
	key     string
	updated int64
	bytes   int64
}

// plan is Plan over a snapshot of st.
func plan(t *testing.T, st store.Store, l Limits, now time.Time, o Options) map[store.ConvID]string {
	t.Helper()
	var cs []Candidate
	err := st.View(context.Background(), func(r store.Reader) error {
		var err error
		cs, err = Plan(r, l, now, o)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[store.ConvID]string{}
	for _, c := range cs {
		out[c.ID] = c.Reason
	}
	return out
}

// TestPlan: over a memstore, a pass plans an orphan, a conversation past
// the age limit and, over the size limit, the agent's oldest ones but
// never its newest; a Retiring one whatever the limits, and with
// InterruptedOnly only that.
func TestPlan(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	ms := now.UnixMilli()
	st := memstore.New()
	old, fresh, newer, newest, orphan := store.ConvID{7: 1}, store.ConvID{7: 2}, store.ConvID{7: 3}, store.ConvID{7: 4}, store.ConvID{7: 5}
	putConvs(t, st, conv{old, "k-old", ms - 11*day, 10}, conv{fresh, "k-fresh", ms - 3*day, 10},
		conv{newer, "k-newer", ms - 2*day, 10}, conv{newest, "k-newest", ms - day, 10}, conv{orphan, "", ms, 10})

	got := plan(t, st, Limits{MaxAgeDays: 10}, now, Options{})
	if len(got) != 2 || got[old] != "age" || got[orphan] != "orphan" {
		t.Errorf("age plan: %v", got)
	}
	got = plan(t, st, Limits{MaxBytesPerAgent: 5}, now, Options{})
	if len(got) != 4 || got[old] != "size" || got[fresh] != "size" || got[newer] != "size" || got[orphan] != "orphan" {
		t.Errorf("size plan: %v (the newest is kept)", got)
	}
	if got := plan(t, st, Limits{MaxAgeDays: 10}, now, Options{InterruptedOnly: true}); len(got) != 0 {
		t.Errorf("interrupted-only plan with nothing Retiring: %v", got)
	}
	if err := st.Update(context.Background(), func(tx store.Tx) error {
		rec, err := tx.Conversation(fresh)
		if err != nil {
			return err
		}
		rec.Retiring = true
		return tx.PutConversation(fresh, rec)
	}); err != nil {
		t.Fatal(err)
	}
	if got := plan(t, st, Limits{}, now, Options{InterruptedOnly: true}); len(got) != 1 || got[fresh] != "interrupted" {
		t.Errorf("interrupted-only plan: %v", got)
	}
	if retiring, err := AnyRetiring(context.Background(), st); err != nil || !retiring {
		t.Errorf("AnyRetiring: %v %v", retiring, err)
	}
}

// TestResultAdd: a candidate counts its messages and bytes, named by its
// key, else its latest session id.
func TestResultAdd(t *testing.T) {
	var r Result
	r.Add(Candidate{ID: store.ConvID{1}, Rec: store.Conversation{Agent: "a", Key: "k", SessionIDs: []string{"s"}, Messages: 2, Bytes: 5}, Reason: "age"})
	r.Add(Candidate{ID: store.ConvID{2}, Rec: store.Conversation{Agent: "a", SessionIDs: []string{"s1", "s2"}, Messages: 1, Bytes: 7}, Reason: "orphan"})
	if len(r.Deleted) != 2 || r.Deleted[0].Session != "k" || r.Deleted[1].Session != "s2" || r.Deleted[1].Reason != "orphan" || r.Messages != 3 || r.Bytes != 12 {
		t.Errorf("Result = %+v", r)
	}
}

// TestDeleteSteps: Recheck refuses a conversation written to since the
// decision or gone; DeleteData then DeleteRecord leave nothing of the
// conversation (its names and checkpoints included) and everything of
// another.
func TestDeleteSteps(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	gone, kept := store.ConvID{7: 1}, store.ConvID{7: 2}
	putConvs(t, st, conv{gone, "k-gone", 5, 10}, conv{kept, "k-kept", 5, 10})
	err := st.Update(ctx, func(tx store.Tx) error {
		for _, c := range []store.ConvID{gone, kept} {
			raw := []byte(`{"role":"user","content":"x"}`)
			if err := tx.PutMessage(c, store.Message{Seq: 1, Role: "user", Raw: raw}); err != nil {
				return err
			}
			if err := tx.PutName(store.Name{Agent: "a", Kind: store.NameSessionID, Value: "sid-" + c.String()}, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = st.View(ctx, func(r store.Reader) error {
		if _, err := Recheck(r, gone, 4); !errors.Is(err, ErrChanged) {
			t.Errorf("Recheck after a write: %v, want ErrChanged", err)
		}
		if _, err := Recheck(r, store.ConvID{7: 9}, 5); !errors.Is(err, ErrGone) {
			t.Errorf("Recheck of a missing conversation: %v, want ErrGone", err)
		}
		rec, err := Recheck(r, gone, 5)
		if err != nil || rec.Key != "k-gone" {
			t.Errorf("Recheck = %+v, %v", rec, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func(context.Context, store.Store, store.Batch, store.ConvID) error{DeleteData, DeleteRecord} {
		b, err := st.NewBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := step(ctx, st, b, gone); err != nil {
			t.Fatal(err)
		}
		b.Cancel()
	}
	err = st.View(ctx, func(r store.Reader) error {
		if _, err := r.Conversation(gone); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted record: %v", err)
		}
		if _, err := r.MessageHeader(gone, 1); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted message: %v", err)
		}
		if _, err := r.MessageHeader(kept, 1); err != nil {
			t.Errorf("kept message: %v", err)
		}
		names := 0
		for n, err := range r.Names() {
			if err != nil {
				return err
			}
			if n.Conv != kept {
				t.Errorf("name %+v left", n)
			}
			names++
		}
		if names != 2 {
			t.Errorf("%d names left, want the kept conversation's 2", names)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSchedule: no limit, or the pass turned off, runs only the
// interrupted deletions; the interval is IntervalMinutes units, the
// default for 0.
func TestSchedule(t *testing.T) {
	tm := Timing{Unit: time.Second, DefaultIntervalMinutes: 60}
	for _, c := range []struct {
		l           Limits
		every       time.Duration
		interrupted bool
	}{
		{Limits{}, time.Minute, true},
		{Limits{MaxAgeDays: 1, IntervalMinutes: -1}, -time.Second, true},
		{Limits{MaxAgeDays: 1}, time.Minute, false},
		{Limits{MaxBytesPerAgent: 1, IntervalMinutes: 5}, 5 * time.Second, false},
	} {
		every, interrupted := Schedule(c.l, tm)
		if every != c.every || interrupted != c.interrupted {
			t.Errorf("Schedule(%+v) = %v, %v; want %v, %v", c.l, every, interrupted, c.every, c.interrupted)
		}
	}
}

// TestLoop: a loop runs its passes at its pace until stopped, a once loop
// one pass; Stop cancels the passes' context and waits for Exit; a nil
// loop stops at once.
func TestLoop(t *testing.T) {
	var nilLoop *Loop
	nilLoop.Stop()

	l := NewLoop(time.Millisecond, time.Millisecond, false)
	passes := make(chan struct{})
	go func() {
		defer l.Exit()
		for l.Next() {
			passes <- struct{}{}
		}
	}()
	<-passes
	<-passes
	go func() { // a pass blocked sending is let go once stopped
		for range passes {
		}
	}()
	l.Stop()
	if l.Context().Err() == nil {
		t.Error("Stop left the passes' context live")
	}
	l.Stop() // again: a no-op
	close(passes)

	once := NewLoop(time.Millisecond, time.Hour, true)
	n := 0
	go func() {
		defer once.Exit()
		for once.Next() {
			n++
		}
	}()
	select {
	case <-once.done:
	case <-time.After(10 * time.Second):
		t.Fatal("a once loop did not end after its pass")
	}
	if n != 1 {
		t.Errorf("once loop: %d passes, want 1", n)
	}
	once.Stop()

	idle := NewLoop(time.Hour, time.Hour, false)
	go func() {
		defer idle.Exit()
		for idle.Next() {
			t.Error("a pass before its time")
		}
	}()
	idle.Stop() // returns at once, not after the hour
}

// TestNeeded: without a limit, the loop is needed only for a Retiring
// conversation.
func TestNeeded(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	if !Needed(ctx, st, false) || Needed(ctx, st, true) {
		t.Error("Needed over an empty store: want true with limits, false without")
	}
	putConvs(t, st, conv{store.ConvID{1}, "k", 5, 1})
	if err := st.Update(ctx, func(tx store.Tx) error {
		return tx.PutConversation(store.ConvID{1}, store.Conversation{Agent: "a", Retiring: true})
	}); err != nil {
		t.Fatal(err)
	}
	if !Needed(ctx, st, true) {
		t.Error("Needed with a Retiring conversation: false")
	}
}

// TestPlanAgesByMessageTime: a conversation ages by its last message's own
// timestamp (an imported history of two months ago is old on the day it
// is stored, one of yesterday is not), and one whose messages carry no
// plausible time (none, or 1970) by its last write.
func TestPlanAgesByMessageTime(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	at := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	const d = 24 * time.Hour
	st := memstore.New()
	put := func(id store.ConvID, times ...int64) {
		t.Helper()
		err := st.Update(ctx, func(tx store.Tx) error {
			key := "k" + id.String()
			rec := store.Conversation{Agent: "a", Key: key, Created: now.UnixMilli(), Updated: now.UnixMilli(), Messages: int64(len(times)), NextSeq: uint64(len(times)) + 1}
			if err := tx.PutConversation(id, rec); err != nil {
				return err
			}
			for i, ts := range times {
				raw := []byte(`{"role":"user","content":"x"}`)
				if err := tx.PutMessage(id, store.Message{Seq: uint64(i + 1), Timestamp: ts, Role: "user", Raw: raw}); err != nil {
					return err
				}
			}
			return tx.PutName(store.Name{Agent: "a", Kind: store.NameSessionKey, Value: key}, id)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	old, recent, noTime := store.ConvID{7: 1}, store.ConvID{7: 2}, store.ConvID{7: 3}
	put(old, at(70*d), at(65*d), at(60*d))
	put(recent, at(3*d), at(1*d))
	put(noTime, 0, 42) // no timestamp, then one in 1970 (implausible)
	limits := Limits{MaxAgeDays: 30}
	if got := plan(t, st, limits, now, Options{}); len(got) != 1 || got[old] != "age" {
		t.Errorf("plan at now: %v, want the old import by age", got)
	}
	if got := plan(t, st, limits, now.Add(30*d), Options{}); len(got) != 2 || got[recent] != "age" {
		t.Errorf("plan a month later: %v, want the recent import too", got)
	}
	if got := plan(t, st, limits, now.Add(31*d), Options{}); len(got) != 3 || got[noTime] != "age" {
		t.Errorf("plan 31 days after the writes: %v, want the one without a time too", got)
	}
}
