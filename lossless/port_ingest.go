package lossless

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/ingest"
	"github.com/lossless-engine/contextengine/store"
)

// ingestPort is the engine as lossless/ingest's Port: what the write path
// needs of it, over its unexported parts.
type ingestPort struct{ e *Engine }

var _ ingest.Port = ingestPort{}

// pending is a message ready to store (ingest.Pending).
type pending = ingest.Pending

func (p ingestPort) Store() store.Store         { return p.e.st }
func (p ingestPort) CheckSpace() error          { return p.e.checkSpace() }
func (p ingestPort) Counter() core.TokenCounter { return p.e.tc }
func (p ingestPort) Hash(raw []byte) store.Hash { return hashMessageRaw(raw) }

func (p ingestPort) Limits() ingest.Limits {
	return ingest.Limits{MaxMessageBytes: p.e.cfg.MaxMessageBytes, LargeContentTokens: p.e.cfg.LargeContentTokens}
}

func (p ingestPort) CachedTokens(h store.Hash) (int, bool) { return p.e.counts.get(h) }
func (p ingestPort) CacheTokens(h store.Hash, n int)       { p.e.counts.put(h, n) }

// LockConv is lockConv; the record is the locked state's.
func (p ingestPort) LockConv(ctx context.Context, c convID) (*convRecord, func(), error) {
	s, err := p.e.lockConv(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	return &s.rec, s.unlock, nil
}

func (p ingestPort) CheckBase(tx store.Tx, c convID, base convRecord) error {
	return p.e.checkBase(tx, c, base)
}

func (p ingestPort) IndexMessages(c convID, agent string, ps []*pending) {
	p.e.indexMessages(c, agent, ps) // recall.go
}

func (p ingestPort) Resolved(key string) (convID, bool)    { return p.e.resolvedGet(key) }
func (p ingestPort) RememberResolved(key string, c convID) { p.e.resolvedPut(key, c) }
func (p ingestPort) ForgetResolved(c convID)               { p.e.forgetResolved(c) }
func (p ingestPort) NewConvID(agent, name string) convID   { return newConvID(agent, name) }

// LockNames holds metaMu and the store's names lock of agent.
func (p ingestPort) LockNames(ctx context.Context, agent string) (func(), error) {
	return p.e.lockNames(ctx, agent)
}

func (p ingestPort) AddSessionID(ctx context.Context, c convID, sessionID, sessionKey string) error {
	return p.e.addSessionID(ctx, c, sessionID, sessionKey)
}

// The write path's functions under the names the rest of the package (and
// its tests) call them by.

// resolve is ingest.Resolve.
func (e *Engine) resolve(ctx context.Context, agent, sessionID, sessionKey string, create bool) (convID, error) {
	return ingest.Resolve(ctx, ingestPort{e}, agent, sessionID, sessionKey, create)
}

// prepare is ingest.Prepare.
func (e *Engine) prepare(ctx context.Context, msgs []core.Message, heartbeat bool) ([]pending, error) {
	return ingest.Prepare(ctx, ingestPort{e}, msgs, heartbeat)
}

// preparePending is ingest.PrepareOne.
func (e *Engine) preparePending(ctx context.Context, p *pending, m core.Message) {
	ingest.PrepareOne(ctx, ingestPort{e}, p, m)
}

// ingestInto is ingest.StoreMessages.
func (e *Engine) ingestInto(ctx context.Context, c convID, ps []pending) (int, error) {
	return ingest.StoreMessages(ctx, ingestPort{e}, c, ps)
}

// largeReference is ingest.LargeReference.
func largeReference(m core.Message, tokens int) []byte {
	return ingest.LargeReference(m, hashRaw(m.Raw()), tokens)
}

var (
	validateMessage = ingest.Validate
	checkSession    = ingest.CheckSession
	writeMessage    = ingest.WriteMessage
	convByName      = ingest.ConvByName
)
