package lossless

import (
	"context"
	"sync"
)

// keyLocks is a set of locks by key that holds only the keys in use: a
// lock is made when first taken and forgotten when its last holder or
// waiter leaves, so a gateway that serves many conversations or imports
// many files over its life does not keep a lock for each (the maps they
// replaced grew without bound).
type keyLocks[K comparable] struct {
	mu sync.Mutex
	m  map[K]*keyLock
}

// keyLock is one key's lock: a one-slot channel (send to take, receive to
// release, so that waiting honours a context) and its users.
type keyLock struct {
	ch    chan struct{}
	users int
}

// lock takes k's lock, waiting until it is free or ctx is done; the
// returned func releases it.
func (l *keyLocks[K]) lock(ctx context.Context, k K) (func(), error) {
	kl := l.enter(k)
	select {
	case kl.ch <- struct{}{}:
		return l.releaser(k, kl), nil
	case <-ctx.Done():
		l.leave(k, kl)
		return nil, ctx.Err()
	}
}

// wait takes k's lock, waiting as long as it takes (a sync.Mutex's Lock);
// the returned func releases it.
func (l *keyLocks[K]) wait(k K) func() {
	kl := l.enter(k)
	kl.ch <- struct{}{}
	return l.releaser(k, kl)
}

// enter adds a user to k's lock, making it when k has none.
func (l *keyLocks[K]) enter(k K) *keyLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[K]*keyLock{}
	}
	kl := l.m[k]
	if kl == nil {
		kl = &keyLock{ch: make(chan struct{}, 1)}
		l.m[k] = kl
	}
	kl.users++
	return kl
}

// releaser returns the func that releases kl, k's lock, held.
func (l *keyLocks[K]) releaser(k K, kl *keyLock) func() {
	return func() {
		<-kl.ch
		l.leave(k, kl)
	}
}

// leave drops a user of k's lock, and the lock with its last user.
func (l *keyLocks[K]) leave(k K, kl *keyLock) {
	l.mu.Lock()
	if kl.users--; kl.users == 0 {
		delete(l.m, k)
	}
	l.mu.Unlock()
}

// size returns the number of keys held or waited for (tests).
func (l *keyLocks[K]) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
