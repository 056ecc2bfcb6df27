// Package batchq is the bounded batching queue of the recall indexes
// (index/bleveindex's and store/pgstore's): producers push items and wait
// for room while it holds more than its bounds (items, bytes); one worker
// takes batches off its head, and everyone waiting is woken when a batch
// is done. Closing it lets the worker drain what is queued, then stop.
//
// A Queue is guarded by its owner's mutex (given to New, as for a
// sync.Cond), so that the owner's own state (counters, generation marks,
// errors) changes atomically with the queue: every method is called with
// that mutex held, and those that wait release it meanwhile.
package batchq

import (
	"sync"
)

// Options bound a Queue.
type Options[T any] struct {
	// MaxItems and MaxBytes bound the queue: it is full while it holds
	// more than MaxItems items or more than MaxBytes bytes (0: no bound).
	MaxItems, MaxBytes int
	// Size returns an item's bytes (nil: items weigh nothing).
	Size func(*T) int
}

// Queue is a bounded FIFO of T taken in batches. Make one with New.
type Queue[T any] struct {
	mu       sync.Locker
	opts     Options[T]
	items    []T
	bytes    int
	pushed   uint64
	done     uint64
	closed   bool
	progress chan struct{}
	wake     chan struct{}
}

// New returns an empty queue guarded by mu.
func New[T any](mu sync.Locker, opts Options[T]) *Queue[T] {
	return &Queue[T]{mu: mu, opts: opts, progress: make(chan struct{}), wake: make(chan struct{}, 1)}
}

func (q *Queue[T]) size(it *T) int {
	if q.opts.Size == nil {
		return 0
	}
	return q.opts.Size(it)
}

// Push queues items at the tail and wakes the worker. It does not wait:
// call WaitRoom first to respect the bounds.
func (q *Queue[T]) Push(items ...T) {
	if len(items) == 0 {
		return
	}
	q.items = append(q.items, items...)
	for i := range items {
		q.bytes += q.size(&items[i])
	}
	q.pushed += uint64(len(items))
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Full reports whether the queue holds more than its bounds.
func (q *Queue[T]) Full() bool {
	return q.opts.MaxItems > 0 && len(q.items) > q.opts.MaxItems ||
		q.opts.MaxBytes > 0 && q.bytes > q.opts.MaxBytes
}

// WaitRoom waits while the queue is full, until a batch is done, the
// queue is closed or stop (called with the mutex held) returns true.
func (q *Queue[T]) WaitRoom(stop func() bool) {
	for q.Full() && !q.closed && (stop == nil || !stop()) {
		q.WaitProgress()
	}
}

// Len returns the number of items queued.
func (q *Queue[T]) Len() int { return len(q.items) }

// Bytes returns the bytes queued.
func (q *Queue[T]) Bytes() int { return q.bytes }

// Items returns the queued items, head first (valid until the queue
// changes; the caller may modify them in place).
func (q *Queue[T]) Items() []T { return q.items }

// Pushed and Done return how many items were ever pushed, and how many of
// them were dropped off the head as done: a Flush waits for Done to reach
// the Pushed it saw.
func (q *Queue[T]) Pushed() uint64 { return q.pushed }

// Done: see Pushed.
func (q *Queue[T]) Done() uint64 { return q.done }

// Batch returns a copy of the next batch at the head, left queued (Drop
// takes it off): at least one item when the queue is not empty, at most
// maxItems, and items are added while the batch holds less than maxBytes
// (0: no byte bound).
func (q *Queue[T]) Batch(maxItems, maxBytes int) []T {
	n, nb := 0, 0
	for n < len(q.items) && (maxItems <= 0 || n < maxItems) && (n == 0 || maxBytes <= 0 || nb < maxBytes) {
		nb += q.size(&q.items[n])
		n++
	}
	return append([]T(nil), q.items[:n]...)
}

// Take returns the next batch (as Batch) and takes it off the head at
// once, making room: the caller reports it done with Finish once it is
// applied (Flush waits for that).
func (q *Queue[T]) Take(maxItems, maxBytes int) []T {
	b := q.Batch(maxItems, maxBytes)
	q.remove(len(b))
	return b
}

// Finish counts n items taken by Take done, and wakes everyone waiting for
// progress.
func (q *Queue[T]) Finish(n int) {
	q.done += uint64(n)
	q.Broadcast()
}

// Drop takes the first n items off the head, done, and wakes everyone
// waiting for progress.
func (q *Queue[T]) Drop(n int) {
	n = q.remove(n)
	q.done += uint64(n)
	q.Broadcast()
}

// remove takes the first n items off the head, and returns how many it
// took.
func (q *Queue[T]) remove(n int) int {
	n = min(n, len(q.items))
	for i := range q.items[:n] {
		q.bytes -= q.size(&q.items[i])
	}
	clear(q.items[:n]) // let the dropped items be collected
	q.items = q.items[n:]
	if len(q.items) == 0 {
		q.items = nil
	}
	return n
}

// Broadcast wakes everyone waiting for progress (WaitProgress, ProgressC).
func (q *Queue[T]) Broadcast() {
	close(q.progress)
	q.progress = make(chan struct{})
}

// ProgressC returns a channel closed at the next progress (a Drop, a
// Broadcast, Close): to wait with a timer or a context, release the
// mutex, receive, lock it again.
func (q *Queue[T]) ProgressC() <-chan struct{} { return q.progress }

// WaitProgress releases the mutex until the next progress, then locks it
// again.
func (q *Queue[T]) WaitProgress() {
	ch := q.progress
	q.mu.Unlock()
	<-ch
	q.mu.Lock()
}

// Close marks the queue closed: the worker drains what is queued, then
// WaitWork returns false; waiters for room stop waiting. Push still
// queues (the owner decides what a closed owner accepts).
func (q *Queue[T]) Close() {
	if q.closed {
		return
	}
	q.closed = true
	select {
	case q.wake <- struct{}{}:
	default:
	}
	q.Broadcast()
}

// Closed reports whether Close was called.
func (q *Queue[T]) Closed() bool { return q.closed }

// WaitWork is the worker's wait: it releases the mutex until the queue
// holds items or is closed, and reports whether there is work (false:
// closed and drained, the worker may stop).
func (q *Queue[T]) WaitWork() bool {
	for len(q.items) == 0 && !q.closed {
		q.mu.Unlock()
		<-q.wake
		q.mu.Lock()
	}
	return len(q.items) > 0
}
