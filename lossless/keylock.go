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
	l.mu.Lock()
	if l.m == nil {
		l.m = map[K]*keyLock{}
	}
	kl := l.m[k]
	if kl == nil {
		kl = &keyLock{ch: make(chan struct{}, 1)}
		l.m[k] = kl
	}
	kl.users++
	l.mu.Unlock()
	select {
	case kl.ch <- struct{}{}:
		return func() {
			<-kl.ch
			l.leave(k, kl)
		}, nil
	case <-ctx.Done():
		l.leave(k, kl)
		return nil, ctx.Err()
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
