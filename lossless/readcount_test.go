package lossless

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// storeCounts counts what an engine asks of its store: transactions
// (views, updates, batches) and reads (every Reader call, point read or
// scan, in a View or an Update: on PostgreSQL each is a round trip).
// batched counts the batched reads among them (Reader.Get).
type storeCounts struct {
	views, updates, batches atomic.Int64
	reads, batched          atomic.Int64
}

// snapshot returns the counts as plain numbers.
func (n *storeCounts) snapshot() readCounts {
	return readCounts{views: n.views.Load(), updates: n.updates.Load(), batches: n.batches.Load(),
		reads: n.reads.Load(), batched: n.batched.Load()}
}

// readCounts is a snapshot of storeCounts.
type readCounts struct {
	views, updates, batches, reads, batched int64
}

func (a readCounts) sub(b readCounts) readCounts {
	return readCounts{a.views - b.views, a.updates - b.updates, a.batches - b.batches, a.reads - b.reads, a.batched - b.batched}
}

// countingStore is a store.Store that counts its use (tests only). It
// forwards the optional interfaces the engine looks for: store.Locker
// (countingLocker), store.MessageEncoder, and on a Tx
// store.HashBatchReader and store.FreshWriter (answered with the plain
// methods when the backend lacks them, as the contract allows).
type countingStore struct {
	st store.Store
	n  *storeCounts
}

// countingLocker is a countingStore on a shared backend.
type countingLocker struct {
	*countingStore
	store.Locker
}

// countStore wraps st; the engine on it is shared when st is.
func countStore(st store.Store) (store.Store, *storeCounts) {
	n := &storeCounts{}
	cs := &countingStore{st: st, n: n}
	if l, ok := st.(store.Locker); ok {
		return &countingLocker{cs, l}, n
	}
	return cs, n
}

// withCountingStore swaps e's store for a counting wrapper of it (before
// any call runs) and returns the counts.
func withCountingStore(e *Engine) *storeCounts {
	st, n := countStore(e.st)
	e.st = st
	return n
}

func (s *countingStore) View(ctx context.Context, fn func(store.Reader) error) error {
	s.n.views.Add(1)
	return s.st.View(ctx, func(r store.Reader) error { return fn(&countingReader{r: r, n: s.n}) })
}

func (s *countingStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	s.n.updates.Add(1)
	return s.st.Update(ctx, func(tx store.Tx) error {
		return fn(&countingTx{countingReader: &countingReader{r: tx, n: s.n}, Writer: tx, tx: tx})
	})
}

func (s *countingStore) NewBatch(ctx context.Context) (store.Batch, error) {
	s.n.batches.Add(1)
	return s.st.NewBatch(ctx)
}

func (s *countingStore) MaxTxnBytes() int64                      { return s.st.MaxTxnBytes() }
func (s *countingStore) Sync(ctx context.Context) error          { return s.st.Sync(ctx) }
func (s *countingStore) Size(ctx context.Context) (int64, error) { return s.st.Size(ctx) }
func (s *countingStore) Close() error                            { return s.st.Close() }

// EncodeMessage is the backend's (nil without one: PutMessage encodes).
func (s *countingStore) EncodeMessage(m store.Message) []byte {
	if enc, ok := s.st.(store.MessageEncoder); ok {
		return enc.EncodeMessage(m)
	}
	return nil
}

// countingTx is a counted Tx: its reads are counted, its writes are not.
type countingTx struct {
	*countingReader
	store.Writer
	tx store.Tx
}

func (t *countingTx) SeqsByHash(c store.ConvID, hs []store.Hash) ([]uint64, []bool, error) {
	t.n.reads.Add(1)
	if br, ok := t.tx.(store.HashBatchReader); ok {
		return br.SeqsByHash(c, hs)
	}
	seqs, found := make([]uint64, len(hs)), make([]bool, len(hs))
	for i, h := range hs {
		seq, err := t.tx.SeqByHash(c, h)
		if err == nil {
			seqs[i], found[i] = seq, true
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, nil, err
		}
	}
	return seqs, found, nil
}

func (t *countingTx) PutFreshMessage(c store.ConvID, m store.Message) error {
	if fw, ok := t.tx.(store.FreshWriter); ok {
		return fw.PutFreshMessage(c, m)
	}
	return t.tx.PutMessage(c, m)
}

func (t *countingTx) PutFreshHash(c store.ConvID, h store.Hash, seq uint64) error {
	if fw, ok := t.tx.(store.FreshWriter); ok {
		return fw.PutFreshHash(c, h, seq)
	}
	return t.tx.PutHash(c, h, seq)
}

func (t *countingTx) PutFreshItem(c store.ConvID, it store.Item) error {
	if fw, ok := t.tx.(store.FreshWriter); ok {
		return fw.PutFreshItem(c, it)
	}
	return t.tx.PutItem(c, it)
}

// countingReader counts every read of r.
type countingReader struct {
	r store.Reader
	n *storeCounts
}

func (c *countingReader) read() { c.n.reads.Add(1) }

func (c *countingReader) Meta() (store.Meta, error) { c.read(); return c.r.Meta() }
func (c *countingReader) HasData() (bool, error)    { c.read(); return c.r.HasData() }
func (c *countingReader) Conversation(id store.ConvID) (store.Conversation, error) {
	c.read()
	return c.r.Conversation(id)
}
func (c *countingReader) Conversations() iter.Seq2[store.ConvRecord, error] {
	c.read()
	return c.r.Conversations()
}
func (c *countingReader) ConvByName(n store.Name) (store.ConvID, error) {
	c.read()
	return c.r.ConvByName(n)
}
func (c *countingReader) Names() iter.Seq2[store.NameRecord, error] { c.read(); return c.r.Names() }
func (c *countingReader) Message(id store.ConvID, seq uint64) (store.Message, error) {
	c.read()
	return c.r.Message(id, seq)
}
func (c *countingReader) MessageHeader(id store.ConvID, seq uint64) (store.Message, error) {
	c.read()
	return c.r.MessageHeader(id, seq)
}
func (c *countingReader) Messages(id store.ConvID, from uint64, withRaw bool) iter.Seq2[store.Message, error] {
	c.read()
	return c.r.Messages(id, from, withRaw)
}
func (c *countingReader) SeqByHash(id store.ConvID, h store.Hash) (uint64, error) {
	c.read()
	return c.r.SeqByHash(id, h)
}
func (c *countingReader) Large(id store.ConvID, seq uint64) ([]byte, error) {
	c.read()
	return c.r.Large(id, seq)
}
func (c *countingReader) Item(id store.ConvID, pos uint64) (store.Item, error) {
	c.read()
	return c.r.Item(id, pos)
}
func (c *countingReader) Items(id store.ConvID, from, to uint64, reverse bool) iter.Seq2[store.Item, error] {
	c.read()
	return c.r.Items(id, from, to, reverse)
}
func (c *countingReader) Summary(id store.ConvID, sid string) (dag.Summary, error) {
	c.read()
	return c.r.Summary(id, sid)
}
func (c *countingReader) Summaries(id store.ConvID) iter.Seq2[dag.Summary, error] {
	c.read()
	return c.r.Summaries(id)
}
func (c *countingReader) EntrySeq(id store.ConvID, tag store.FileTag, m store.EntryMap, index uint64) (uint64, error) {
	c.read()
	return c.r.EntrySeq(id, tag, m, index)
}
func (c *countingReader) EntryIndex(id store.ConvID, tag store.FileTag, eid string) (uint64, error) {
	c.read()
	return c.r.EntryIndex(id, tag, eid)
}
func (c *countingReader) Entries(id store.ConvID, tag store.FileTag, m store.EntryMap, from uint64) iter.Seq2[store.EntryPair, error] {
	c.read()
	return c.r.Entries(id, tag, m, from)
}
func (c *countingReader) ReconcileFrom(id store.ConvID, tag store.FileTag) (uint64, error) {
	c.read()
	return c.r.ReconcileFrom(id, tag)
}
func (c *countingReader) HostEntry(id store.ConvID, index uint64) (store.HostEntry, error) {
	c.read()
	return c.r.HostEntry(id, index)
}
func (c *countingReader) HostEntries(id store.ConvID, from uint64) iter.Seq2[store.HostEntryRecord, error] {
	c.read()
	return c.r.HostEntries(id, from)
}
func (c *countingReader) Order(id store.ConvID, seq uint64) (uint64, error) {
	c.read()
	return c.r.Order(id, seq)
}
func (c *countingReader) Orders(id store.ConvID) iter.Seq2[store.Pair, error] {
	c.read()
	return c.r.Orders(id)
}
func (c *countingReader) FileCheckpoint(agent, path string) (store.FileCheckpoint, error) {
	c.read()
	return c.r.FileCheckpoint(agent, path)
}
func (c *countingReader) HostCheckpoint(agent string, id store.ConvID) (store.HostCheckpoint, error) {
	c.read()
	return c.r.HostCheckpoint(agent, id)
}
func (c *countingReader) Checkpoints() iter.Seq2[store.CheckpointRecord, error] {
	c.read()
	return c.r.Checkpoints()
}
func (c *countingReader) Turn(id store.ConvID, key string) (store.Turn, error) {
	c.read()
	return c.r.Turn(id, key)
}
func (c *countingReader) Subagent(s store.SubID) (store.Subagent, error) {
	c.read()
	return c.r.Subagent(s)
}
func (c *countingReader) SubagentByChild(agent, sessionID string) (store.SubID, error) {
	c.read()
	return c.r.SubagentByChild(agent, sessionID)
}
func (c *countingReader) Subagents() iter.Seq2[store.SubagentRecord, error] {
	c.read()
	return c.r.Subagents()
}
func (c *countingReader) ForkItems(s store.SubID) iter.Seq2[store.Item, error] {
	c.read()
	return c.r.ForkItems(s)
}
func (c *countingReader) ForkSnapshots() iter.Seq2[store.SubID, error] {
	c.read()
	return c.r.ForkSnapshots()
}
func (c *countingReader) SubagentLinks(parent store.ConvID) iter.Seq2[store.SubagentLinkRecord, error] {
	c.read()
	return c.r.SubagentLinks(parent)
}

func (c *countingReader) Get(refs []store.Ref) ([]store.Got, error) {
	c.read()
	c.n.batched.Add(1)
	return c.r.Get(refs)
}
