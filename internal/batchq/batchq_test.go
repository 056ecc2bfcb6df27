package batchq

import (
	"sync"
	"testing"
)

type owner struct {
	mu sync.Mutex
	q  *Queue[string]
}

func newOwner(maxItems, maxBytes int) *owner {
	o := &owner{}
	o.q = New(&o.mu, Options[string]{MaxItems: maxItems, MaxBytes: maxBytes, Size: func(s *string) int { return len(*s) }})
	return o
}

// worker takes batches of at most 3 items until the queue is closed and
// drained, recording what it saw.
func (o *owner) worker(got *[]string, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		o.mu.Lock()
		if !o.q.WaitWork() {
			o.mu.Unlock()
			return
		}
		b := o.q.Batch(3, 0)
		o.mu.Unlock()
		*got = append(*got, b...)
		o.mu.Lock()
		o.q.Drop(len(b))
		o.mu.Unlock()
	}
}

// TestBatch: batches take up to the item bound, and past the first item
// stop at the byte bound; Drop takes them off.
func TestBatch(t *testing.T) {
	o := newOwner(0, 0)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.q.Push("aaaa", "bb", "c", "dddddd", "e")
	if b := o.q.Batch(10, 5); len(b) != 2 || b[0] != "aaaa" || b[1] != "bb" {
		t.Fatalf("batch by bytes: %q", b)
	}
	if b := o.q.Batch(1, 0); len(b) != 1 {
		t.Fatalf("batch by items: %q", b)
	}
	if b := o.q.Batch(10, 1); len(b) != 1 {
		t.Fatalf("a batch holds at least one item, whatever it weighs: %q", b)
	}
	if o.q.Len() != 5 || o.q.Bytes() != 14 {
		t.Fatalf("Batch took items off: %d items, %d bytes", o.q.Len(), o.q.Bytes())
	}
	o.q.Drop(2)
	if o.q.Len() != 3 || o.q.Bytes() != 8 || o.q.Done() != 2 || o.q.Pushed() != 5 {
		t.Fatalf("after Drop(2): %d items, %d bytes, done %d of %d", o.q.Len(), o.q.Bytes(), o.q.Done(), o.q.Pushed())
	}
	if b := o.q.Batch(0, 0); len(b) != 3 || b[0] != "c" {
		t.Fatalf("the rest: %q", b)
	}
}

// TestBounded: producers waiting for room never let the queue grow past
// its bounds by more than one push, with a worker draining it; every
// item arrives once, in order per producer, and Close drains the rest.
func TestBounded(t *testing.T) {
	for _, tc := range []struct{ items, bytes int }{{5, 0}, {0, 20}} {
		o := newOwner(tc.items, tc.bytes)
		var got []string
		var wg sync.WaitGroup
		wg.Add(1)
		go o.worker(&got, &wg)
		var pw sync.WaitGroup
		worst := 0
		for p := range 4 {
			pw.Add(1)
			go func() {
				defer pw.Done()
				for i := range 200 {
					o.mu.Lock()
					o.q.WaitRoom(nil)
					o.q.Push(string(rune('a'+p)) + string(rune('0'+i%10)))
					worst = max(worst, o.q.Len())
					o.mu.Unlock()
				}
			}()
		}
		pw.Wait()
		o.mu.Lock()
		o.q.Close()
		o.mu.Unlock()
		wg.Wait()
		if len(got) != 800 {
			t.Fatalf("%+v: %d items written, want 800 (Close must drain the queue)", tc, len(got))
		}
		bound := tc.items + 1
		if tc.bytes > 0 {
			bound = tc.bytes/2 + 1
		}
		if worst > bound {
			t.Fatalf("%+v: the queue held %d items (bound %d)", tc, worst, bound)
		}
		seen := map[string]int{}
		for _, s := range got {
			seen[s[:1]]++
		}
		for p := range 4 {
			if n := seen[string(rune('a'+p))]; n != 200 {
				t.Fatalf("producer %d: %d items, want 200", p, n)
			}
		}
	}
}

// TestCloseWakesWaiters: a producer waiting for room in a full queue with
// no worker returns once the queue is closed.
func TestCloseWakesWaiters(t *testing.T) {
	o := newOwner(1, 0)
	o.mu.Lock()
	o.q.Push("a", "b")
	o.mu.Unlock()
	done := make(chan struct{})
	go func() {
		o.mu.Lock()
		o.q.WaitRoom(nil)
		o.mu.Unlock()
		close(done)
	}()
	o.mu.Lock()
	o.q.Close()
	o.mu.Unlock()
	<-done
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.q.WaitWork() || o.q.Len() != 2 {
		t.Fatal("a closed queue with items must still hand them to the worker")
	}
	o.q.Drop(2)
	if o.q.WaitWork() {
		t.Fatal("a closed, drained queue has no more work")
	}
}

// TestStopEndsWait: WaitRoom returns when stop says so (an owner's error).
func TestStopEndsWait(t *testing.T) {
	o := newOwner(1, 0)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.q.Push("a", "b")
	failed := false
	go func() {
		o.mu.Lock()
		failed = true
		o.q.Broadcast()
		o.mu.Unlock()
	}()
	o.q.WaitRoom(func() bool { return failed })
	if !failed || !o.q.Full() {
		t.Fatal("WaitRoom returned before stop did, or the queue drained")
	}
}

// TestTakeMakesRoom: Take frees room at once, but Flush's count (Done)
// moves only at Finish.
func TestTakeMakesRoom(t *testing.T) {
	o := newOwner(2, 0)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.q.Push("a", "b", "c")
	if !o.q.Full() {
		t.Fatal("3 items over a bound of 2: not full")
	}
	b := o.q.Take(2, 0)
	if len(b) != 2 || o.q.Full() || o.q.Len() != 1 || o.q.Done() != 0 {
		t.Fatalf("after Take: batch %q, %d left, done %d", b, o.q.Len(), o.q.Done())
	}
	o.q.Finish(len(b))
	if o.q.Done() != 2 || o.q.Pushed() != 3 {
		t.Fatalf("after Finish: done %d of %d", o.q.Done(), o.q.Pushed())
	}
}
