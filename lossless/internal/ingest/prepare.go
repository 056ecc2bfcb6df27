package ingest

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/lru"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Pending is a message ready to store: hashed and counted (Prepare).
type Pending struct {
	// Msg is the message.
	Msg core.Message
	// Hash is its key: the hash of its bytes (records.HashMessageRaw).
	Hash store.Hash
	// Tokens is its token count.
	Tokens int
	// Flags are its record's flags (store.FlagHeartbeat, FlagHidden,
	// FlagLarge).
	Flags byte
	// Rec is the encoded message record (the store's MessageEncoder), made
	// by StoreMessages for the messages it stores, outside the
	// transaction; nil: the store encodes it in PutMessage (CommitTurn's
	// path).
	Rec []byte
	// Ref is the reference message representing large content (FlagLarge)
	// and RefTokens its token count.
	Ref       []byte
	RefTokens int
	// Seq is set by StoreMessages and CommitTurn: the message's sequence
	// number (new or already stored).
	Seq uint64
}

// Preparer is what preparing a message takes: the engine's token
// counter, its cache of counts and the size from which content is large.
type Preparer struct {
	// Counter counts a message's tokens.
	Counter core.TokenCounter
	// Counts caches counts by message key; nil caches nothing.
	Counts *TokenCache
	// LargeContentTokens: a message over it is represented in the context
	// by a reference message (store.FlagLarge).
	LargeContentTokens int
}

// TokenCache caches token counts by message key (an LRU bounded in bytes:
// internal/lru). A miss costs a count, never a wrong one. It is safe for
// concurrent use.
type TokenCache struct{ c *lru.Cache[store.Hash, int] }

// tokenCacheBytes bounds the count cache: about 60,000 counts.
const tokenCacheBytes = 8 << 20

// NewTokenCache returns an empty count cache.
func NewTokenCache() *TokenCache {
	return &TokenCache{lru.New(tokenCacheBytes, 16, func(store.Hash, int) int {
		return len(store.Hash{}) + 8 + lru.EntryOverhead
	})}
}

// Get returns the count cached for the message of key h, if any.
func (c *TokenCache) Get(h store.Hash) (int, bool) {
	if c == nil {
		return 0, false
	}
	return c.c.Get(h)
}

// Put caches n as the count of the message of key h.
func (c *TokenCache) Put(h store.Hash, n int) {
	if c != nil {
		c.c.Add(h, n)
	}
}

// Prepare hashes and counts msgs in parallel across cores (token counting
// is the costly part of ingest), using p's count cache for repeats.
func Prepare(ctx context.Context, p Preparer, msgs []core.Message, heartbeat bool) ([]Pending, error) {
	out := make([]Pending, len(msgs))
	var flags byte
	if heartbeat {
		flags |= store.FlagHeartbeat
	}
	parallelFor(len(msgs), func(i int) {
		out[i].Flags = flags
		PrepareOne(ctx, p, &out[i], msgs[i])
	})
	// Counting stops when ctx is done (a cancelled request is not held by
	// a huge message); what it left is not used.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lossless: count tokens: %w", err)
	}
	return out, nil
}

// PrepareOne hashes and counts one message into pp (the per-message work
// of Prepare and of the import pipeline's workers), with a cheaper hash of
// JSON that is already compact; flags already set on pp are kept. When
// ctx is done it may leave pp incomplete.
func PrepareOne(ctx context.Context, p Preparer, pp *Pending, m core.Message) {
	pp.Msg = m
	pp.Hash = records.HashMessageRaw(m.Raw())
	if n, ok := p.Counts.Get(pp.Hash); ok {
		pp.Tokens = n
	} else {
		n, err := core.CountMessageContext(ctx, p.Counter, m)
		if err != nil {
			return // ctx is done: the caller sees it and drops pp
		}
		pp.Tokens = n
		p.Counts.Put(pp.Hash, pp.Tokens)
	}
	if (m.Role() == core.RoleAssistant && !m.HasVisibleContent()) ||
		(m.Role() == core.RoleBashExecution && m.ExcludeFromContext()) {
		pp.Flags |= store.FlagHidden
	}
	if pp.Tokens > p.LargeContentTokens {
		pp.Flags |= store.FlagLarge
		pp.Ref = records.LargeReference(m, pp.Hash, pp.Tokens)
		if rm, err := core.ParseMessage(pp.Ref); err == nil {
			pp.RefTokens = core.CountMessage(p.Counter, rm)
		}
	}
}

// parallelFor runs fn(0..n-1) across the cores (in line when n < 4).
func parallelFor(n int, fn func(i int)) {
	workers := runtime.GOMAXPROCS(0)
	if n < 4 || workers == 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}
