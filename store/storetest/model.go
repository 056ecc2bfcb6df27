package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// The model test's key universe: few keys per family, so that reads hit
// records and gaps alike, with numeric keys across byte boundaries and
// string keys that are prefixes of each other. Each list is sorted as the
// store sorts it.
var (
	mConvs    = []store.ConvID{convID(0), convID(1), convID(1, 0), convID(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)}
	mSeqs     = []uint64{0, 1, 2, 3, 4, 5, 6, 7, 255, 256, 257, 65535, 65536, 1 << 32, 1 << 63, math.MaxUint64}
	mBounds   = []uint64{0, 1, 4, 8, 254, 256, 258, 65536, 1<<32 - 1, 1<<32 + 1, math.MaxUint64 - 1, math.MaxUint64}
	mHashes   = []store.Hash{{}, {1}, {0: 1, 15: 1}, {15: 1}, {0xff}, {0: 0xff, 15: 0xff}}
	mSumIDs   = []string{"a", "a0", "aa", "b", "sum_1", "sum_10", "sum_2"}
	mTags     = []store.FileTag{fileTag(1), fileTag(1, 0)}
	mMaps     = []store.EntryMap{store.EntriesPrevious, store.EntriesCurrent}
	mEntryIDs = []string{"e1", "e10", "e2", "ü"}
	mTurnKeys = []string{"k1", "k10", "k2"}
	mAgents   = []string{"ma", "main", "main2"}
	mKinds    = []store.NameKind{store.NameSessionKey, store.NameSessionID}
	mValues   = []string{"s1", "s1:x", "s2"}
	mPaths    = []string{"/a.jsonl", "/a.jsonl.1", "/b"}
	mSubs     = []store.SubID{subID(1), subID(2), subID(1, 0), subID(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)}
	mChildren = []string{"c1", "c10", "c2"}
)

type cseq struct {
	c   store.ConvID
	seq uint64
}

type chash struct {
	c store.ConvID
	h store.Hash
}

type cstr struct {
	c store.ConvID
	s string
}

type centry struct {
	c     store.ConvID
	tag   store.FileTag
	m     store.EntryMap
	index uint64
}

type cid struct {
	c   store.ConvID
	tag store.FileTag
	id  string
}

type ctag struct {
	c   store.ConvID
	tag store.FileTag
}

type agentConv struct {
	agent string
	c     store.ConvID
}

type subPos struct {
	s   store.SubID
	pos uint64
}

type convSub struct {
	c store.ConvID
	s store.SubID
}

// model is what the store should hold, in Go maps, with an undo log for
// the writes of the open transaction.
type model struct {
	meta      map[struct{}]store.Meta
	convs     map[store.ConvID]store.Conversation
	names     map[store.Name]store.ConvID
	msgs      map[cseq]store.Message
	hashes    map[chash]uint64
	large     map[cseq][]byte
	items     map[cseq]store.Item
	sums      map[cstr]dag.Summary
	entries   map[centry]uint64
	entryIDs  map[cid]uint64
	reconcile map[ctag]uint64
	hosts     map[cseq]store.HostEntry
	orders    map[cseq]uint64
	fileCPs   map[[2]string]store.FileCheckpoint
	hostCPs   map[agentConv]store.HostCheckpoint
	turns     map[cstr]store.Turn
	subs      map[store.SubID]store.Subagent
	children  map[[2]string]store.SubID
	forks     map[subPos]store.Item
	links     map[convSub]string // the child's session key

	undo []func()
}

func newModel() *model {
	return &model{meta: map[struct{}]store.Meta{}, convs: map[store.ConvID]store.Conversation{}, names: map[store.Name]store.ConvID{},
		msgs: map[cseq]store.Message{}, hashes: map[chash]uint64{}, large: map[cseq][]byte{}, items: map[cseq]store.Item{},
		sums: map[cstr]dag.Summary{}, entries: map[centry]uint64{}, entryIDs: map[cid]uint64{}, reconcile: map[ctag]uint64{},
		hosts: map[cseq]store.HostEntry{}, orders: map[cseq]uint64{}, fileCPs: map[[2]string]store.FileCheckpoint{}, hostCPs: map[agentConv]store.HostCheckpoint{},
		turns: map[cstr]store.Turn{}, subs: map[store.SubID]store.Subagent{}, children: map[[2]string]store.SubID{},
		forks: map[subPos]store.Item{}, links: map[convSub]string{}}
}

func mset[K comparable, V any](m *model, mp map[K]V, k K, v V) {
	old, had := mp[k]
	m.undo = append(m.undo, func() {
		if had {
			mp[k] = old
		} else {
			delete(mp, k)
		}
	})
	mp[k] = v
}

func mdel[K comparable, V any](m *model, mp map[K]V, k K) {
	old, had := mp[k]
	if !had {
		return
	}
	m.undo = append(m.undo, func() { mp[k] = old })
	delete(mp, k)
}

// mdelConv deletes the keys of conversation c from a scoped family.
func mdelConv[K comparable, V any](m *model, mp map[K]V, conv func(K) store.ConvID, c store.ConvID) {
	for k := range mp {
		if conv(k) == c {
			mdel(m, mp, k)
		}
	}
}

func (m *model) commit() { m.undo = m.undo[:0] }

func (m *model) rollback() {
	for i := len(m.undo) - 1; i >= 0; i-- {
		m.undo[i]()
	}
	m.undo = m.undo[:0]
}

func (m *model) deleteConversationData(c store.ConvID) {
	mdelConv(m, m.msgs, func(k cseq) store.ConvID { return k.c }, c)
	mdelConv(m, m.hashes, func(k chash) store.ConvID { return k.c }, c)
	mdelConv(m, m.large, func(k cseq) store.ConvID { return k.c }, c)
	mdelConv(m, m.items, func(k cseq) store.ConvID { return k.c }, c)
	mdelConv(m, m.sums, func(k cstr) store.ConvID { return k.c }, c)
	mdelConv(m, m.entries, func(k centry) store.ConvID { return k.c }, c)
	mdelConv(m, m.entryIDs, func(k cid) store.ConvID { return k.c }, c)
	mdelConv(m, m.reconcile, func(k ctag) store.ConvID { return k.c }, c)
	mdelConv(m, m.hosts, func(k cseq) store.ConvID { return k.c }, c)
	mdelConv(m, m.orders, func(k cseq) store.ConvID { return k.c }, c)
	mdelConv(m, m.turns, func(k cstr) store.ConvID { return k.c }, c)
}

// writeOp is one write, to the store and to the model.
type writeOp struct {
	desc  string
	apply func(w store.Writer) error
	model func(m *model)
	// prefix: the write deletes by prefix (not used in model batches: a
	// backend may resolve a batch's prefix delete when it is called).
	prefix bool
}

// readOp is one read, checked against the model.
type readOp struct {
	desc  string
	check func(r store.Reader, m *model) error
}

// sim applies random operations to a store and a model.
type sim struct {
	t     *testing.T
	s     store.Store
	enc   store.MessageEncoder // the store's, or nil
	rng   *rand.Rand
	seed  uint64
	m     *model
	ops   int
	steps int
	trace []string
	stats map[string]int
}

func (s *sim) log(desc string) {
	s.ops++
	if len(s.trace) == 40 {
		copy(s.trace, s.trace[1:])
		s.trace = s.trace[:39]
	}
	s.trace = append(s.trace, desc)
}

func (s *sim) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("seed %d (replay: LOSSLESS_TEST_SEED=%d), operation %d: %s\nlast operations, oldest first:\n  %s",
		s.seed, s.seed, s.ops, fmt.Sprintf(format, args...), strings.Join(s.trace, "\n  "))
}

func pick[T any](r *rand.Rand, v []T) T { return v[r.IntN(len(v))] }

func (s *sim) str(n int) string {
	const alphabet = "abcxyz019 :/_-\"\\\nüß世界✓"
	runes := []rune(alphabet)
	var b strings.Builder
	for range s.rng.IntN(n + 1) {
		b.WriteRune(pick(s.rng, runes))
	}
	return b.String()
}

func (s *sim) bytes() []byte {
	switch s.rng.IntN(8) {
	case 0:
		return nil
	case 1, 2: // compressible, over 256 bytes
		return bytes.Repeat([]byte(s.str(8)+"lorem ipsum "), 20+s.rng.IntN(60))
	case 3: // any byte values
		b := make([]byte, s.rng.IntN(600))
		for i := range b {
			b[i] = byte(s.rng.Uint32())
		}
		return b
	}
	return fmt.Appendf(nil, `{"role":"user","content":%q}`, s.str(40))
}

func (s *sim) i64() int64 { return s.rng.Int64N(1 << 50) }

func (s *sim) u64() uint64 {
	if s.rng.IntN(2) == 0 {
		return pick(s.rng, mSeqs)
	}
	return s.rng.Uint64()
}

func (s *sim) strs(n int) []string {
	if s.rng.IntN(4) == 0 {
		return nil
	}
	out := make([]string, s.rng.IntN(n+1))
	for i := range out {
		out[i] = s.str(12)
	}
	return out
}

func (s *sim) conversation() store.Conversation {
	return store.Conversation{Agent: pick(s.rng, mAgents), Key: s.str(10), SessionIDs: s.strs(3), Created: s.i64(), Updated: s.i64(),
		NextSeq: s.u64(), NextPos: s.u64(), Messages: s.i64(), Bytes: s.i64(), Summaries: s.i64(), Tokens: s.i64(),
		Retiring: s.rng.IntN(2) == 0, RefusedSummaries: s.i64()}
}

func (s *sim) message(seq uint64) store.Message {
	var h store.Hash
	for i := range h {
		h[i] = byte(s.rng.Uint32())
	}
	return store.Message{Seq: seq, Flags: byte(s.rng.Uint32()), Tokens: s.rng.IntN(1 << 20), Timestamp: s.i64(),
		Role: pick(s.rng, []string{"user", "assistant", "toolResult", "system", ""}), Hash: h, Raw: s.bytes()}
}

// encoded returns m as PutMessage gets it: half the time with Encoded set,
// by the store's MessageEncoder or, for a store without one (which ignores
// Encoded), to bytes that are no record.
func (s *sim) encoded(m store.Message) store.Message {
	if s.rng.IntN(2) == 0 {
		return m
	}
	if s.enc != nil {
		m.Encoded = s.enc.EncodeMessage(m)
	} else {
		m.Encoded = []byte("not an encoding of this backend")
	}
	return m
}

func (s *sim) hostEntry() store.HostEntry {
	var h store.Hash
	for i := range h {
		h[i] = byte(s.rng.Uint32())
	}
	return store.HostEntry{Seq: s.u64(), Key: h, EntryID: s.str(10)}
}

func (s *sim) item(pos uint64) store.Item {
	it := store.Item{Item: dag.Item{Pos: pos, Tokens: s.rng.IntN(1 << 20), Timestamp: s.i64()}, Flags: byte(s.rng.IntN(16))}
	if s.rng.IntN(3) == 0 {
		it.Ref, it.Depth = dag.SummaryRef(pick(s.rng, mSumIDs)), s.rng.IntN(5)
	} else {
		it.Ref, it.Depth, it.Role = dag.MessageRef(s.u64()), -1, pick(s.rng, []string{"user", "assistant", "toolResult"})
	}
	return it
}

func (s *sim) summary(id string) dag.Summary {
	sum := dag.Summary{ID: id, Kind: pick(s.rng, []string{dag.KindLeaf, dag.KindCondensed}), Depth: s.rng.IntN(4), Text: s.str(60),
		Tokens: s.rng.IntN(1000), Earliest: s.i64(), Latest: s.i64(), DescendantCount: s.rng.IntN(100),
		DescendantTokens: s.rng.IntN(10000), CreatedAt: s.i64(), Method: pick(s.rng, []string{"normal", "aggressive", "refused", ""})}
	if sum.Method == dag.MethodRefused {
		sum.Refused = s.str(40)
	}
	for range s.rng.IntN(5) {
		if s.rng.IntN(2) == 0 {
			sum.Sources = append(sum.Sources, dag.MessageRef(s.u64()))
		} else {
			sum.Sources = append(sum.Sources, dag.SummaryRef(pick(s.rng, mSumIDs)))
		}
	}
	return sum
}

func (s *sim) turn() store.Turn {
	t := store.Turn{LogicalTurnID: s.str(8), AdmissionEntryID: s.str(8), TerminalEntryID: s.str(8), Stored: s.rng.IntN(10), CommittedAt: s.i64()}
	for range s.rng.IntN(5) {
		t.Seqs = append(t.Seqs, s.u64())
	}
	return t
}

func (s *sim) fileCheckpoint() store.FileCheckpoint {
	return store.FileCheckpoint{SessionID: s.str(8), Conv: s.str(16), Offset: s.i64(), Line: s.rng.IntN(1000), Index: s.rng.IntN(1000),
		MtimeNs: s.i64(), HeadHash: s.str(8), PrefixHash: s.str(8), TailStart: s.i64(), TailHash: s.str(8), Reconcile: s.u64()}
}

func (s *sim) hostCheckpoint() store.HostCheckpoint {
	return store.HostCheckpoint{Conv: s.str(16), Cursor: s.str(10), Entries: s.u64(), Imported: s.rng.IntN(1000), Skipped: s.rng.IntN(10)}
}

func (s *sim) subagent() store.Subagent {
	return store.Subagent{Agent: pick(s.rng, mAgents), ChildSessionKey: s.str(10), ChildSessionID: s.str(10), ParentAgent: s.str(5),
		ParentKey: s.str(10), ParentSessionID: s.str(10), ParentConv: s.str(16), Mode: s.str(5), State: s.str(5), EndReason: s.str(5),
		Created: s.i64(), ExpiresAt: s.i64(), EndedAt: s.i64(), SnapshotItems: s.rng.IntN(100), SnapshotTokens: s.rng.IntN(10000), Token: s.str(10)}
}

func (s *sim) name() store.Name {
	return store.Name{Agent: pick(s.rng, mAgents), Kind: pick(s.rng, mKinds), Value: pick(s.rng, mValues)}
}

// copyOf is a deep copy of v, so that the store and the model never share
// a slice.
func copyOf[T any](v T) T { return canon(v).(T) }

// write returns a random write; prefix deletes only when prefix is set.
func (s *sim) write(prefix bool) writeOp {
	r := s.rng
	c, seq := pick(r, mConvs), pick(r, mSeqs)
	tag, mp := pick(r, mTags), pick(r, mMaps)
	sid := pick(r, mSubs)
	n := 42
	if prefix {
		n = 45
	}
	switch r.IntN(n) {
	case 0:
		v := store.Meta{Format: r.IntN(10), Engine: s.str(6), Tokenizer: s.str(6)}
		return writeOp{desc: fmt.Sprintf("PutMeta(%+v)", v), apply: func(w store.Writer) error { return w.PutMeta(v) },
			model: func(m *model) { mset(m, m.meta, struct{}{}, v) }}
	case 1, 2:
		v := s.conversation()
		return writeOp{desc: fmt.Sprintf("PutConversation(%s)", c), apply: func(w store.Writer) error { return w.PutConversation(c, copyOf(v)) },
			model: func(m *model) { mset(m, m.convs, c, v) }}
	case 3:
		return writeOp{desc: fmt.Sprintf("DeleteConversation(%s)", c), apply: func(w store.Writer) error { return w.DeleteConversation(c) },
			model: func(m *model) { mdel(m, m.convs, c) }}
	case 4:
		nm := s.name()
		return writeOp{desc: fmt.Sprintf("PutName(%+v, %s)", nm, c), apply: func(w store.Writer) error { return w.PutName(nm, c) },
			model: func(m *model) { mset(m, m.names, nm, c) }}
	case 5:
		nm := s.name()
		return writeOp{desc: fmt.Sprintf("DeleteName(%+v)", nm), apply: func(w store.Writer) error { return w.DeleteName(nm) },
			model: func(m *model) { mdel(m, m.names, nm) }}
	case 6, 7, 8:
		v := s.message(seq)
		put := s.encoded(copyOf(v))
		return writeOp{desc: fmt.Sprintf("PutMessage(%s, %d, %d raw bytes, %d encoded)", c, seq, len(v.Raw), len(put.Encoded)),
			apply: func(w store.Writer) error { return w.PutMessage(c, put) },
			model: func(m *model) { mset(m, m.msgs, cseq{c, seq}, v) }}
	case 9:
		return writeOp{desc: fmt.Sprintf("DeleteMessage(%s, %d)", c, seq), apply: func(w store.Writer) error { return w.DeleteMessage(c, seq) },
			model: func(m *model) { mdel(m, m.msgs, cseq{c, seq}) }}
	case 10:
		h, v := pick(r, mHashes), s.u64()
		return writeOp{desc: fmt.Sprintf("PutHash(%s, %x, %d)", c, h, v), apply: func(w store.Writer) error { return w.PutHash(c, h, v) },
			model: func(m *model) { mset(m, m.hashes, chash{c, h}, v) }}
	case 11:
		h := pick(r, mHashes)
		return writeOp{desc: fmt.Sprintf("DeleteHash(%s, %x)", c, h), apply: func(w store.Writer) error { return w.DeleteHash(c, h) },
			model: func(m *model) { mdel(m, m.hashes, chash{c, h}) }}
	case 12:
		v := s.bytes()
		return writeOp{desc: fmt.Sprintf("PutLarge(%s, %d, %d bytes)", c, seq, len(v)), apply: func(w store.Writer) error { return w.PutLarge(c, seq, copyOf(v)) },
			model: func(m *model) { mset(m, m.large, cseq{c, seq}, v) }}
	case 13:
		return writeOp{desc: fmt.Sprintf("DeleteLarge(%s, %d)", c, seq), apply: func(w store.Writer) error { return w.DeleteLarge(c, seq) },
			model: func(m *model) { mdel(m, m.large, cseq{c, seq}) }}
	case 14, 15, 16:
		v := s.item(seq)
		return writeOp{desc: fmt.Sprintf("PutItem(%s, %+v)", c, v), apply: func(w store.Writer) error { return w.PutItem(c, v) },
			model: func(m *model) { mset(m, m.items, cseq{c, seq}, v) }}
	case 17, 18:
		return writeOp{desc: fmt.Sprintf("DeleteItem(%s, %d)", c, seq), apply: func(w store.Writer) error { return w.DeleteItem(c, seq) },
			model: func(m *model) { mdel(m, m.items, cseq{c, seq}) }}
	case 19:
		v := s.summary(pick(r, mSumIDs))
		return writeOp{desc: fmt.Sprintf("PutSummary(%s, %q)", c, v.ID), apply: func(w store.Writer) error { return w.PutSummary(c, copyOf(v)) },
			model: func(m *model) { mset(m, m.sums, cstr{c, v.ID}, v) }}
	case 20:
		id := pick(r, mSumIDs)
		return writeOp{desc: fmt.Sprintf("DeleteSummary(%s, %q)", c, id), apply: func(w store.Writer) error { return w.DeleteSummary(c, id) },
			model: func(m *model) { mdel(m, m.sums, cstr{c, id}) }}
	case 21, 22:
		v := s.u64()
		return writeOp{desc: fmt.Sprintf("PutEntrySeq(%s, %x, %c, %d, %d)", c, tag, mp, seq, v),
			apply: func(w store.Writer) error { return w.PutEntrySeq(c, tag, mp, seq, v) },
			model: func(m *model) { mset(m, m.entries, centry{c, tag, mp, seq}, v) }}
	case 23:
		return writeOp{desc: fmt.Sprintf("DeleteEntrySeq(%s, %x, %c, %d)", c, tag, mp, seq),
			apply: func(w store.Writer) error { return w.DeleteEntrySeq(c, tag, mp, seq) },
			model: func(m *model) { mdel(m, m.entries, centry{c, tag, mp, seq}) }}
	case 24:
		id, v := pick(r, mEntryIDs), s.u64()
		return writeOp{desc: fmt.Sprintf("PutEntryIndex(%s, %x, %q, %d)", c, tag, id, v),
			apply: func(w store.Writer) error { return w.PutEntryIndex(c, tag, id, v) },
			model: func(m *model) { mset(m, m.entryIDs, cid{c, tag, id}, v) }}
	case 25:
		v := s.u64()
		return writeOp{desc: fmt.Sprintf("PutReconcileFrom(%s, %x, %d)", c, tag, v),
			apply: func(w store.Writer) error { return w.PutReconcileFrom(c, tag, v) },
			model: func(m *model) { mset(m, m.reconcile, ctag{c, tag}, v) }}
	case 26:
		return writeOp{desc: fmt.Sprintf("DeleteReconcileFrom(%s, %x)", c, tag),
			apply: func(w store.Writer) error { return w.DeleteReconcileFrom(c, tag) },
			model: func(m *model) { mdel(m, m.reconcile, ctag{c, tag}) }}
	case 27:
		v := s.u64()
		return writeOp{desc: fmt.Sprintf("PutOrder(%s, %d, %d)", c, seq, v), apply: func(w store.Writer) error { return w.PutOrder(c, seq, v) },
			model: func(m *model) { mset(m, m.orders, cseq{c, seq}, v) }}
	case 28:
		return writeOp{desc: fmt.Sprintf("DeleteOrder(%s, %d)", c, seq), apply: func(w store.Writer) error { return w.DeleteOrder(c, seq) },
			model: func(m *model) { mdel(m, m.orders, cseq{c, seq}) }}
	case 29:
		k, v := [2]string{pick(r, mAgents), pick(r, mPaths)}, s.fileCheckpoint()
		if r.IntN(3) == 0 {
			return writeOp{desc: fmt.Sprintf("DeleteFileCheckpoint(%q, %q)", k[0], k[1]),
				apply: func(w store.Writer) error { return w.DeleteFileCheckpoint(k[0], k[1]) },
				model: func(m *model) { mdel(m, m.fileCPs, k) }}
		}
		return writeOp{desc: fmt.Sprintf("PutFileCheckpoint(%q, %q)", k[0], k[1]),
			apply: func(w store.Writer) error { return w.PutFileCheckpoint(k[0], k[1], v) },
			model: func(m *model) { mset(m, m.fileCPs, k, v) }}
	case 30:
		k, v := agentConv{pick(r, mAgents), c}, s.hostCheckpoint()
		if r.IntN(3) == 0 {
			return writeOp{desc: fmt.Sprintf("DeleteHostCheckpoint(%q, %s)", k.agent, c),
				apply: func(w store.Writer) error { return w.DeleteHostCheckpoint(k.agent, c) },
				model: func(m *model) { mdel(m, m.hostCPs, k) }}
		}
		return writeOp{desc: fmt.Sprintf("PutHostCheckpoint(%q, %s)", k.agent, c),
			apply: func(w store.Writer) error { return w.PutHostCheckpoint(k.agent, c, v) },
			model: func(m *model) { mset(m, m.hostCPs, k, v) }}
	case 31:
		key, v := pick(r, mTurnKeys), s.turn()
		return writeOp{desc: fmt.Sprintf("PutTurn(%s, %q)", c, key), apply: func(w store.Writer) error { return w.PutTurn(c, key, copyOf(v)) },
			model: func(m *model) { mset(m, m.turns, cstr{c, key}, v) }}
	case 32:
		v := s.subagent()
		if r.IntN(3) == 0 {
			return writeOp{desc: fmt.Sprintf("DeleteSubagent(%x)", sid), apply: func(w store.Writer) error { return w.DeleteSubagent(sid) },
				model: func(m *model) { mdel(m, m.subs, sid) }}
		}
		return writeOp{desc: fmt.Sprintf("PutSubagent(%x)", sid), apply: func(w store.Writer) error { return w.PutSubagent(sid, v) },
			model: func(m *model) { mset(m, m.subs, sid, v) }}
	case 33:
		k := [2]string{pick(r, mAgents), pick(r, mChildren)}
		if r.IntN(3) == 0 {
			return writeOp{desc: fmt.Sprintf("DeleteSubagentByChild(%q, %q)", k[0], k[1]),
				apply: func(w store.Writer) error { return w.DeleteSubagentByChild(k[0], k[1]) },
				model: func(m *model) { mdel(m, m.children, k) }}
		}
		return writeOp{desc: fmt.Sprintf("PutSubagentByChild(%q, %q, %x)", k[0], k[1], sid),
			apply: func(w store.Writer) error { return w.PutSubagentByChild(k[0], k[1], sid) },
			model: func(m *model) { mset(m, m.children, k, sid) }}
	case 34, 35:
		v := s.item(seq)
		return writeOp{desc: fmt.Sprintf("PutForkItem(%x, %d)", sid, seq), apply: func(w store.Writer) error { return w.PutForkItem(sid, v) },
			model: func(m *model) { mset(m, m.forks, subPos{sid, seq}, v) }}
	case 36:
		key := s.str(12)
		return writeOp{desc: fmt.Sprintf("PutSubagentLink(%s, %x, %q)", c, sid, key),
			apply: func(w store.Writer) error { return w.PutSubagentLink(c, sid, key) },
			model: func(m *model) { mset(m, m.links, convSub{c, sid}, key) }}
	case 37:
		return writeOp{desc: fmt.Sprintf("DeleteSubagentLink(%s, %x)", c, sid), apply: func(w store.Writer) error { return w.DeleteSubagentLink(c, sid) },
			model: func(m *model) { mdel(m, m.links, convSub{c, sid}) }}
	case 38, 39:
		v := s.hostEntry()
		return writeOp{desc: fmt.Sprintf("PutHostEntry(%s, %d, %+v)", c, seq, v),
			apply: func(w store.Writer) error { return w.PutHostEntry(c, seq, v) },
			model: func(m *model) { mset(m, m.hosts, cseq{c, seq}, v) }}
	case 40:
		id := pick(r, mEntryIDs)
		return writeOp{desc: fmt.Sprintf("DeleteEntryIndex(%s, %x, %q)", c, tag, id),
			apply: func(w store.Writer) error { return w.DeleteEntryIndex(c, tag, id) },
			model: func(m *model) { mdel(m, m.entryIDs, cid{c, tag, id}) }}
	case 41:
		key := pick(r, mTurnKeys)
		return writeOp{desc: fmt.Sprintf("DeleteTurn(%s, %q)", c, key), apply: func(w store.Writer) error { return w.DeleteTurn(c, key) },
			model: func(m *model) { mdel(m, m.turns, cstr{c, key}) }}
	case 42:
		return writeOp{desc: fmt.Sprintf("DeleteForkItems(%x)", sid), prefix: true,
			apply: func(w store.Writer) error { return w.DeleteForkItems(sid) },
			model: func(m *model) {
				for k := range m.forks {
					if k.s == sid {
						mdel(m, m.forks, k)
					}
				}
			}}
	case 43:
		return writeOp{desc: fmt.Sprintf("DeleteHostEntries(%s)", c), prefix: true,
			apply: func(w store.Writer) error { return w.DeleteHostEntries(c) },
			model: func(m *model) { mdelConv(m, m.hosts, func(k cseq) store.ConvID { return k.c }, c) }}
	default:
		if r.IntN(4) != 0 { // rarer than the others
			return s.write(prefix)
		}
		return writeOp{desc: fmt.Sprintf("DeleteConversationData(%s)", c), prefix: true,
			apply: func(w store.Writer) error { return w.DeleteConversationData(c) },
			model: func(m *model) { m.deleteConversationData(c) }}
	}
}

// limit is how many records a scan reads before it breaks off (-1: all).
func (s *sim) limit() int {
	if s.rng.IntN(2) == 0 {
		return -1
	}
	return 1 + s.rng.IntN(4)
}

func prefix[T any](v []T, n int) []T {
	if n >= 0 && n < len(v) {
		return v[:n]
	}
	return v
}

func (s *sim) bound() uint64 {
	if s.rng.IntN(2) == 0 {
		return pick(s.rng, mBounds)
	}
	return pick(s.rng, mSeqs)
}

// scanOp checks a scan (broken off after n records) against the model.
func scanOp[T any](desc string, n int, seq func(r store.Reader) iter.Seq2[T, error], want func(m *model) []T) readOp {
	if n >= 0 {
		desc += fmt.Sprintf(" (first %d)", n)
	}
	return readOp{desc: desc, check: func(r store.Reader, m *model) error {
		got, err := firstN(seq(r), n)
		if n < 0 {
			got, err = all(seq(r))
		}
		defer scribble(reflect.ValueOf(got))
		return expectScan(desc, got, err, prefix(want(m), n))
	}}
}

// getOp checks a point read against the model.
func getOp[T any](desc string, get func(r store.Reader) (T, error), want func(m *model) (T, bool)) readOp {
	return readOp{desc: desc, check: func(r store.Reader, m *model) error {
		got, err := get(r)
		w, ok := want(m)
		defer scribble(reflect.ValueOf(&got))
		return expect(desc, got, err, w, ok)
	}}
}

// hashBatchOp checks SeqsByHash of a store.HashBatchReader against the
// model (nothing when the reader has none).
func hashBatchOp(c store.ConvID, hs []store.Hash) readOp {
	desc := fmt.Sprintf("SeqsByHash(%s, %x)", c, hs)
	return readOp{desc: desc, check: func(r store.Reader, m *model) error {
		hr, ok := r.(store.HashBatchReader)
		if !ok {
			return nil
		}
		seqs, found, err := hr.SeqsByHash(c, hs)
		if err != nil {
			return fmt.Errorf("%s: %v", desc, err)
		}
		if len(seqs) != len(hs) || len(found) != len(hs) {
			return fmt.Errorf("%s: %d seqs and %d found for %d keys", desc, len(seqs), len(found), len(hs))
		}
		for i, h := range hs {
			want, ok := m.hashes[chash{c, h}]
			if found[i] != ok || (ok && seqs[i] != want) {
				return fmt.Errorf("%s: key %d (%x) = %d, found %v; want %d, found %v", desc, i, h, seqs[i], found[i], want, ok)
			}
		}
		return nil
	}}
}

func lookup[K comparable, V any](mp map[K]V, k K) (V, bool) {
	v, ok := mp[k]
	return v, ok
}

// scribble changes every byte, string and number reachable through the
// slices and pointers of v: a store that handed out its own copy would
// change.
func scribble(v reflect.Value) {
	switch v.Kind() {
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := v.Bytes()
			for i := range b {
				b[i] ^= 0xa5
			}
			return
		}
		for i := range v.Len() {
			scribble(v.Index(i))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			scribble(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			scribble(v.Field(i))
		}
	case reflect.Uint8, reflect.Uint64, reflect.Uint:
		if v.CanSet() {
			v.SetUint(v.Uint() ^ 0xa5)
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(v.String() + "~")
		}
	}
}

// read returns a random read.
func (s *sim) read() readOp {
	r := s.rng
	c, seq := pick(r, mConvs), pick(r, mSeqs)
	tag, mp := pick(r, mTags), pick(r, mMaps)
	sid := pick(r, mSubs)
	switch r.IntN(32) {
	case 0:
		return getOp("Meta()", func(r store.Reader) (store.Meta, error) { return r.Meta() },
			func(m *model) (store.Meta, bool) { return lookup(m.meta, struct{}{}) })
	case 1:
		return getOp(fmt.Sprintf("Conversation(%s)", c), func(r store.Reader) (store.Conversation, error) { return r.Conversation(c) },
			func(m *model) (store.Conversation, bool) { return lookup(m.convs, c) })
	case 2:
		return scanOp("Conversations()", s.limit(), func(r store.Reader) iter.Seq2[store.ConvRecord, error] { return r.Conversations() },
			func(m *model) (out []store.ConvRecord) {
				for _, c := range mConvs {
					if v, ok := m.convs[c]; ok {
						out = append(out, store.ConvRecord{ID: c, Conversation: v})
					}
				}
				return out
			})
	case 3:
		nm := s.name()
		return getOp(fmt.Sprintf("ConvByName(%+v)", nm), func(r store.Reader) (store.ConvID, error) { return r.ConvByName(nm) },
			func(m *model) (store.ConvID, bool) { return lookup(m.names, nm) })
	case 4:
		return scanOp("Names()", s.limit(), func(r store.Reader) iter.Seq2[store.NameRecord, error] { return r.Names() }, modelNames)
	case 5, 6:
		return getOp(fmt.Sprintf("Message(%s, %d)", c, seq), func(r store.Reader) (store.Message, error) { return r.Message(c, seq) },
			func(m *model) (store.Message, bool) { return lookup(m.msgs, cseq{c, seq}) })
	case 7:
		return getOp(fmt.Sprintf("MessageHeader(%s, %d)", c, seq), func(r store.Reader) (store.Message, error) {
			h, err := r.MessageHeader(c, seq)
			if err == nil && h.Raw != nil {
				return h, fmt.Errorf("MessageHeader returned %d raw bytes", len(h.Raw))
			}
			return h, err
		}, func(m *model) (store.Message, bool) {
			v, ok := m.msgs[cseq{c, seq}]
			v.Raw = nil
			return v, ok
		})
	case 8, 9:
		from, withRaw := s.bound(), r.IntN(2) == 0
		return scanOp(fmt.Sprintf("Messages(%s, %d, %t)", c, from, withRaw), s.limit(),
			func(r store.Reader) iter.Seq2[store.Message, error] {
				return func(yield func(store.Message, error) bool) {
					for m, err := range r.Messages(c, from, withRaw) {
						if err == nil && !withRaw && m.Raw != nil {
							err = fmt.Errorf("message %d: %d raw bytes without withRaw", m.Seq, len(m.Raw))
						}
						if !yield(m, err) {
							return
						}
					}
				}
			},
			func(m *model) (out []store.Message) {
				for _, seq := range mSeqs {
					if v, ok := m.msgs[cseq{c, seq}]; ok && seq >= from {
						if !withRaw {
							v.Raw = nil
						}
						out = append(out, v)
					}
				}
				return out
			})
	case 10:
		if r.IntN(2) == 0 {
			hs := make([]store.Hash, 1+r.IntN(2*len(mHashes)))
			for i := range hs {
				hs[i] = pick(r, mHashes)
			}
			return hashBatchOp(c, hs)
		}
		h := pick(r, mHashes)
		return getOp(fmt.Sprintf("SeqByHash(%s, %x)", c, h), func(r store.Reader) (uint64, error) { return r.SeqByHash(c, h) },
			func(m *model) (uint64, bool) { return lookup(m.hashes, chash{c, h}) })
	case 11:
		return getOp(fmt.Sprintf("Large(%s, %d)", c, seq), func(r store.Reader) ([]byte, error) { return r.Large(c, seq) },
			func(m *model) ([]byte, bool) { return lookup(m.large, cseq{c, seq}) })
	case 12:
		return getOp(fmt.Sprintf("Item(%s, %d)", c, seq), func(r store.Reader) (store.Item, error) { return r.Item(c, seq) },
			func(m *model) (store.Item, bool) { return lookup(m.items, cseq{c, seq}) })
	case 13, 14, 15:
		from, to, rev := s.bound(), s.bound(), r.IntN(2) == 0
		if r.IntN(4) != 0 && from > to {
			from, to = to, from
		}
		return scanOp(fmt.Sprintf("Items(%s, %d, %d, %t)", c, from, to, rev), s.limit(),
			func(r store.Reader) iter.Seq2[store.Item, error] { return r.Items(c, from, to, rev) },
			func(m *model) (out []store.Item) {
				for _, pos := range mSeqs {
					if v, ok := m.items[cseq{c, pos}]; ok && pos >= from && pos <= to {
						out = append(out, v)
					}
				}
				if rev {
					slices.Reverse(out)
				}
				return out
			})
	case 16:
		id := pick(r, mSumIDs)
		return getOp(fmt.Sprintf("Summary(%s, %q)", c, id), func(r store.Reader) (dag.Summary, error) { return r.Summary(c, id) },
			func(m *model) (dag.Summary, bool) { return lookup(m.sums, cstr{c, id}) })
	case 17:
		return scanOp(fmt.Sprintf("Summaries(%s)", c), s.limit(), func(r store.Reader) iter.Seq2[dag.Summary, error] { return r.Summaries(c) },
			func(m *model) (out []dag.Summary) {
				for _, id := range mSumIDs {
					if v, ok := m.sums[cstr{c, id}]; ok {
						out = append(out, v)
					}
				}
				return out
			})
	case 18:
		return getOp(fmt.Sprintf("EntrySeq(%s, %x, %c, %d)", c, tag, mp, seq),
			func(r store.Reader) (uint64, error) { return r.EntrySeq(c, tag, mp, seq) },
			func(m *model) (uint64, bool) { return lookup(m.entries, centry{c, tag, mp, seq}) })
	case 19:
		id := pick(r, mEntryIDs)
		return getOp(fmt.Sprintf("EntryIndex(%s, %x, %q)", c, tag, id),
			func(r store.Reader) (uint64, error) { return r.EntryIndex(c, tag, id) },
			func(m *model) (uint64, bool) { return lookup(m.entryIDs, cid{c, tag, id}) })
	case 20:
		from := s.bound()
		return scanOp(fmt.Sprintf("Entries(%s, %x, %c, %d)", c, tag, mp, from), s.limit(),
			func(r store.Reader) iter.Seq2[store.EntryPair, error] { return r.Entries(c, tag, mp, from) },
			func(m *model) (out []store.EntryPair) {
				for _, index := range mSeqs {
					if v, ok := m.entries[centry{c, tag, mp, index}]; ok && index >= from {
						out = append(out, store.EntryPair{Index: index, Seq: v})
					}
				}
				return out
			})
	case 21:
		return getOp(fmt.Sprintf("ReconcileFrom(%s, %x)", c, tag), func(r store.Reader) (uint64, error) { return r.ReconcileFrom(c, tag) },
			func(m *model) (uint64, bool) { return lookup(m.reconcile, ctag{c, tag}) })
	case 22:
		if r.IntN(2) == 0 {
			return getOp(fmt.Sprintf("Order(%s, %d)", c, seq), func(r store.Reader) (uint64, error) { return r.Order(c, seq) },
				func(m *model) (uint64, bool) { return lookup(m.orders, cseq{c, seq}) })
		}
		return scanOp(fmt.Sprintf("Orders(%s)", c), s.limit(), func(r store.Reader) iter.Seq2[store.Pair, error] { return r.Orders(c) },
			func(m *model) (out []store.Pair) {
				for _, seq := range mSeqs {
					if v, ok := m.orders[cseq{c, seq}]; ok {
						out = append(out, store.Pair{Key: seq, Value: v})
					}
				}
				return out
			})
	case 23:
		agent, path := pick(r, mAgents), pick(r, mPaths)
		if r.IntN(2) == 0 {
			return getOp(fmt.Sprintf("FileCheckpoint(%q, %q)", agent, path),
				func(r store.Reader) (store.FileCheckpoint, error) { return r.FileCheckpoint(agent, path) },
				func(m *model) (store.FileCheckpoint, bool) { return lookup(m.fileCPs, [2]string{agent, path}) })
		}
		return getOp(fmt.Sprintf("HostCheckpoint(%q, %s)", agent, c),
			func(r store.Reader) (store.HostCheckpoint, error) { return r.HostCheckpoint(agent, c) },
			func(m *model) (store.HostCheckpoint, bool) { return lookup(m.hostCPs, agentConv{agent, c}) })
	case 24:
		return scanOp("Checkpoints() (as a set)", -1, func(r store.Reader) iter.Seq2[store.CheckpointRecord, error] {
			return sortedScan(r.Checkpoints(), sortedCheckpoints)
		}, modelCheckpoints)
	case 25:
		key := pick(r, mTurnKeys)
		return getOp(fmt.Sprintf("Turn(%s, %q)", c, key), func(r store.Reader) (store.Turn, error) { return r.Turn(c, key) },
			func(m *model) (store.Turn, bool) { return lookup(m.turns, cstr{c, key}) })
	case 26:
		if r.IntN(2) == 0 {
			return getOp(fmt.Sprintf("Subagent(%x)", sid), func(r store.Reader) (store.Subagent, error) { return r.Subagent(sid) },
				func(m *model) (store.Subagent, bool) { return lookup(m.subs, sid) })
		}
		return scanOp("Subagents()", s.limit(), func(r store.Reader) iter.Seq2[store.SubagentRecord, error] { return r.Subagents() },
			func(m *model) (out []store.SubagentRecord) {
				for _, s := range mSubs {
					if v, ok := m.subs[s]; ok {
						out = append(out, store.SubagentRecord{ID: s, Subagent: v})
					}
				}
				return out
			})
	case 27:
		k := [2]string{pick(r, mAgents), pick(r, mChildren)}
		return getOp(fmt.Sprintf("SubagentByChild(%q, %q)", k[0], k[1]),
			func(r store.Reader) (store.SubID, error) { return r.SubagentByChild(k[0], k[1]) },
			func(m *model) (store.SubID, bool) { return lookup(m.children, k) })
	case 28:
		if r.IntN(2) == 0 {
			return scanOp(fmt.Sprintf("ForkItems(%x)", sid), s.limit(), func(r store.Reader) iter.Seq2[store.Item, error] { return r.ForkItems(sid) },
				func(m *model) (out []store.Item) {
					for _, pos := range mSeqs {
						if v, ok := m.forks[subPos{sid, pos}]; ok {
							out = append(out, v)
						}
					}
					return out
				})
		}
		return scanOp("ForkSnapshots()", s.limit(), func(r store.Reader) iter.Seq2[store.SubID, error] { return r.ForkSnapshots() }, modelSnapshots)
	case 29:
		return linksOp(c)
	case 30:
		return getOp(fmt.Sprintf("HostEntry(%s, %d)", c, seq), func(r store.Reader) (store.HostEntry, error) { return r.HostEntry(c, seq) },
			func(m *model) (store.HostEntry, bool) { return lookup(m.hosts, cseq{c, seq}) })
	default:
		from := s.bound()
		return hostEntriesOp(c, from, s.limit())
	}
}

// linksOp checks SubagentLinks(c) against the model, as a set.
func linksOp(c store.ConvID) readOp {
	return scanOp(fmt.Sprintf("SubagentLinks(%s) (as a set)", c), -1, func(r store.Reader) iter.Seq2[store.SubagentLinkRecord, error] {
		return sortedScan(r.SubagentLinks(c), sortedLinks)
	}, func(m *model) (out []store.SubagentLinkRecord) {
		for _, s := range mSubs {
			if key, ok := m.links[convSub{c, s}]; ok {
				out = append(out, store.SubagentLinkRecord{ID: s, ChildKey: key})
			}
		}
		return out
	})
}

// hostEntriesOp checks HostEntries(c, from) against the model.
func hostEntriesOp(c store.ConvID, from uint64, n int) readOp {
	return scanOp(fmt.Sprintf("HostEntries(%s, %d)", c, from), n,
		func(r store.Reader) iter.Seq2[store.HostEntryRecord, error] { return r.HostEntries(c, from) },
		func(m *model) (out []store.HostEntryRecord) {
			for _, index := range mSeqs {
				if v, ok := m.hosts[cseq{c, index}]; ok && index >= from {
					out = append(out, store.HostEntryRecord{Index: index, HostEntry: v})
				}
			}
			return out
		})
}

// sortedScan yields a scan's records sorted (for scans whose order the
// interface leaves open), then its error if any.
func sortedScan[T any](seq iter.Seq2[T, error], sorted func([]T) []T) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		got, err := all(seq)
		for _, v := range sorted(got) {
			if !yield(v, nil) {
				return
			}
		}
		if err != nil {
			var zero T
			yield(zero, err)
		}
	}
}

func modelNames(m *model) (out []store.NameRecord) {
	for _, a := range mAgents {
		for _, k := range mKinds {
			for _, v := range mValues {
				n := store.Name{Agent: a, Kind: k, Value: v}
				if c, ok := m.names[n]; ok {
					out = append(out, store.NameRecord{Name: n, Conv: c})
				}
			}
		}
	}
	return out
}

func modelCheckpoints(m *model) []store.CheckpointRecord {
	var out []store.CheckpointRecord
	for k, v := range m.fileCPs {
		out = append(out, store.CheckpointRecord{Agent: k[0], Path: k[1], File: &v})
	}
	for k, v := range m.hostCPs {
		out = append(out, store.CheckpointRecord{Agent: k.agent, HostConv: k.c, Host: &v})
	}
	return sortedCheckpoints(out)
}

func modelSnapshots(m *model) (out []store.SubID) {
	for _, s := range mSubs {
		for _, pos := range mSeqs {
			if _, ok := m.forks[subPos{s, pos}]; ok {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// everything returns reads of every key of the universe and every scan.
func everything() []readOp {
	var ops []readOp
	add := func(op readOp) { ops = append(ops, op) }
	for _, c := range mConvs {
		add(getOp(fmt.Sprintf("Conversation(%s)", c), func(r store.Reader) (store.Conversation, error) { return r.Conversation(c) },
			func(m *model) (store.Conversation, bool) { return lookup(m.convs, c) }))
		for _, seq := range mSeqs {
			k := cseq{c, seq}
			add(getOp(fmt.Sprintf("Message(%s, %d)", c, seq), func(r store.Reader) (store.Message, error) { return r.Message(c, seq) },
				func(m *model) (store.Message, bool) { return lookup(m.msgs, k) }))
			add(getOp(fmt.Sprintf("Large(%s, %d)", c, seq), func(r store.Reader) ([]byte, error) { return r.Large(c, seq) },
				func(m *model) ([]byte, bool) { return lookup(m.large, k) }))
			add(getOp(fmt.Sprintf("Item(%s, %d)", c, seq), func(r store.Reader) (store.Item, error) { return r.Item(c, seq) },
				func(m *model) (store.Item, bool) { return lookup(m.items, k) }))
			add(getOp(fmt.Sprintf("Order(%s, %d)", c, seq), func(r store.Reader) (uint64, error) { return r.Order(c, seq) },
				func(m *model) (uint64, bool) { return lookup(m.orders, k) }))
			add(getOp(fmt.Sprintf("HostEntry(%s, %d)", c, seq), func(r store.Reader) (store.HostEntry, error) { return r.HostEntry(c, seq) },
				func(m *model) (store.HostEntry, bool) { return lookup(m.hosts, k) }))
			for _, tag := range mTags {
				for _, mp := range mMaps {
					add(getOp(fmt.Sprintf("EntrySeq(%s, %x, %c, %d)", c, tag, mp, seq),
						func(r store.Reader) (uint64, error) { return r.EntrySeq(c, tag, mp, seq) },
						func(m *model) (uint64, bool) { return lookup(m.entries, centry{c, tag, mp, seq}) }))
				}
			}
		}
		for _, h := range mHashes {
			add(getOp(fmt.Sprintf("SeqByHash(%s, %x)", c, h), func(r store.Reader) (uint64, error) { return r.SeqByHash(c, h) },
				func(m *model) (uint64, bool) { return lookup(m.hashes, chash{c, h}) }))
		}
		add(hashBatchOp(c, mHashes))
		for _, id := range mSumIDs {
			add(getOp(fmt.Sprintf("Summary(%s, %q)", c, id), func(r store.Reader) (dag.Summary, error) { return r.Summary(c, id) },
				func(m *model) (dag.Summary, bool) { return lookup(m.sums, cstr{c, id}) }))
		}
		for _, key := range mTurnKeys {
			add(getOp(fmt.Sprintf("Turn(%s, %q)", c, key), func(r store.Reader) (store.Turn, error) { return r.Turn(c, key) },
				func(m *model) (store.Turn, bool) { return lookup(m.turns, cstr{c, key}) }))
		}
		for _, tag := range mTags {
			add(getOp(fmt.Sprintf("ReconcileFrom(%s, %x)", c, tag), func(r store.Reader) (uint64, error) { return r.ReconcileFrom(c, tag) },
				func(m *model) (uint64, bool) { return lookup(m.reconcile, ctag{c, tag}) }))
			for _, id := range mEntryIDs {
				add(getOp(fmt.Sprintf("EntryIndex(%s, %x, %q)", c, tag, id),
					func(r store.Reader) (uint64, error) { return r.EntryIndex(c, tag, id) },
					func(m *model) (uint64, bool) { return lookup(m.entryIDs, cid{c, tag, id}) }))
			}
			for _, mp := range mMaps {
				add(scanOp(fmt.Sprintf("Entries(%s, %x, %c, 0)", c, tag, mp), -1,
					func(r store.Reader) iter.Seq2[store.EntryPair, error] { return r.Entries(c, tag, mp, 0) },
					func(m *model) (out []store.EntryPair) {
						for _, index := range mSeqs {
							if v, ok := m.entries[centry{c, tag, mp, index}]; ok {
								out = append(out, store.EntryPair{Index: index, Seq: v})
							}
						}
						return out
					}))
			}
		}
		for _, agent := range mAgents {
			add(getOp(fmt.Sprintf("HostCheckpoint(%q, %s)", agent, c),
				func(r store.Reader) (store.HostCheckpoint, error) { return r.HostCheckpoint(agent, c) },
				func(m *model) (store.HostCheckpoint, bool) { return lookup(m.hostCPs, agentConv{agent, c}) }))
		}
	}
	for _, a := range mAgents {
		for _, k := range mKinds {
			for _, v := range mValues {
				n := store.Name{Agent: a, Kind: k, Value: v}
				add(getOp(fmt.Sprintf("ConvByName(%+v)", n), func(r store.Reader) (store.ConvID, error) { return r.ConvByName(n) },
					func(m *model) (store.ConvID, bool) { return lookup(m.names, n) }))
			}
		}
		for _, p := range mPaths {
			add(getOp(fmt.Sprintf("FileCheckpoint(%q, %q)", a, p),
				func(r store.Reader) (store.FileCheckpoint, error) { return r.FileCheckpoint(a, p) },
				func(m *model) (store.FileCheckpoint, bool) { return lookup(m.fileCPs, [2]string{a, p}) }))
		}
		for _, ch := range mChildren {
			add(getOp(fmt.Sprintf("SubagentByChild(%q, %q)", a, ch),
				func(r store.Reader) (store.SubID, error) { return r.SubagentByChild(a, ch) },
				func(m *model) (store.SubID, bool) { return lookup(m.children, [2]string{a, ch}) }))
		}
	}
	for _, sid := range mSubs {
		add(getOp(fmt.Sprintf("Subagent(%x)", sid), func(r store.Reader) (store.Subagent, error) { return r.Subagent(sid) },
			func(m *model) (store.Subagent, bool) { return lookup(m.subs, sid) }))
	}
	add(getOp("Meta()", func(r store.Reader) (store.Meta, error) { return r.Meta() },
		func(m *model) (store.Meta, bool) { return lookup(m.meta, struct{}{}) }))
	add(scanOp("Names()", -1, func(r store.Reader) iter.Seq2[store.NameRecord, error] { return r.Names() }, modelNames))
	add(scanOp("ForkSnapshots()", -1, func(r store.Reader) iter.Seq2[store.SubID, error] { return r.ForkSnapshots() }, modelSnapshots))
	add(scanOp("Conversations()", -1, func(r store.Reader) iter.Seq2[store.ConvRecord, error] { return r.Conversations() },
		func(m *model) (out []store.ConvRecord) {
			for _, c := range mConvs {
				if v, ok := m.convs[c]; ok {
					out = append(out, store.ConvRecord{ID: c, Conversation: v})
				}
			}
			return out
		}))
	add(scanOp("Subagents()", -1, func(r store.Reader) iter.Seq2[store.SubagentRecord, error] { return r.Subagents() },
		func(m *model) (out []store.SubagentRecord) {
			for _, s := range mSubs {
				if v, ok := m.subs[s]; ok {
					out = append(out, store.SubagentRecord{ID: s, Subagent: v})
				}
			}
			return out
		}))
	add(scanOp("Checkpoints() (as a set)", -1, func(r store.Reader) iter.Seq2[store.CheckpointRecord, error] {
		return sortedScan(r.Checkpoints(), sortedCheckpoints)
	}, modelCheckpoints))
	for _, sid := range mSubs {
		add(scanOp(fmt.Sprintf("ForkItems(%x)", sid), -1, func(r store.Reader) iter.Seq2[store.Item, error] { return r.ForkItems(sid) },
			func(m *model) (out []store.Item) {
				for _, pos := range mSeqs {
					if v, ok := m.forks[subPos{sid, pos}]; ok {
						out = append(out, v)
					}
				}
				return out
			}))
	}
	for _, c := range mConvs {
		add(linksOp(c))
		add(hostEntriesOp(c, 0, -1))
		add(scanOp(fmt.Sprintf("Summaries(%s)", c), -1, func(r store.Reader) iter.Seq2[dag.Summary, error] { return r.Summaries(c) },
			func(m *model) (out []dag.Summary) {
				for _, id := range mSumIDs {
					if v, ok := m.sums[cstr{c, id}]; ok {
						out = append(out, v)
					}
				}
				return out
			}))
		add(scanOp(fmt.Sprintf("Orders(%s)", c), -1, func(r store.Reader) iter.Seq2[store.Pair, error] { return r.Orders(c) },
			func(m *model) (out []store.Pair) {
				for _, seq := range mSeqs {
					if v, ok := m.orders[cseq{c, seq}]; ok {
						out = append(out, store.Pair{Key: seq, Value: v})
					}
				}
				return out
			}))
		add(scanOp(fmt.Sprintf("Messages(%s, 0, true)", c), -1, func(r store.Reader) iter.Seq2[store.Message, error] { return r.Messages(c, 0, true) },
			func(m *model) (out []store.Message) {
				for _, seq := range mSeqs {
					if v, ok := m.msgs[cseq{c, seq}]; ok {
						out = append(out, v)
					}
				}
				return out
			}))
		add(scanOp(fmt.Sprintf("Items(%s, 0, max, true)", c), -1,
			func(r store.Reader) iter.Seq2[store.Item, error] { return r.Items(c, 0, math.MaxUint64, true) },
			func(m *model) (out []store.Item) {
				for _, pos := range slices.Backward(mSeqs) {
					if v, ok := m.items[cseq{c, pos}]; ok {
						out = append(out, v)
					}
				}
				return out
			}))
	}
	return ops
}

func (s *sim) checkRead(r store.Reader, op readOp) {
	s.t.Helper()
	s.log(op.desc)
	if err := op.check(r, s.m); err != nil {
		s.fatalf("%v", err)
	}
}

// checkAll compares every key and the main scans with the model.
func (s *sim) checkAll() {
	s.t.Helper()
	ops := everything()
	err := s.s.View(context.Background(), func(r store.Reader) error {
		for _, op := range ops {
			if err := op.check(r, s.m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.fatalf("full comparison after %d steps: %v", s.steps, err)
	}
}

// update runs an Update of random writes and reads, ending as end says:
// "commit", "fail" (fn returns an error) or "cancel" (ctx cancelled
// within fn).
func (s *sim) update(end string) {
	s.t.Helper()
	n := 1 + s.rng.IntN(6)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.log("Update begins (" + end + ")")
	var werr error
	err := s.s.Update(ctx, func(tx store.Tx) error {
		for range n {
			op := s.write(true)
			s.log(op.desc)
			if err := op.apply(tx); err != nil {
				werr = fmt.Errorf("%s: %w", op.desc, err)
				return werr
			}
			op.model(s.m)
			if s.rng.IntN(3) == 0 {
				s.checkRead(tx, s.read())
			}
		}
		switch end {
		case "fail":
			return errBoom
		case "cancel":
			cancel()
		}
		return nil
	})
	switch {
	case werr != nil:
		s.fatalf("a write in an Update: %v", werr)
	case end == "commit" && err != nil:
		s.fatalf("Update: %v", err)
	case end == "fail" && !errors.Is(err, errBoom):
		s.fatalf("Update whose fn failed = %v, want fn's error", err)
	case end == "cancel" && !errors.Is(err, context.Canceled):
		s.fatalf("Update whose ctx was cancelled = %v, want an error wrapping context.Canceled", err)
	}
	if end == "commit" {
		s.m.commit()
	} else {
		s.m.rollback()
	}
	s.stats["update "+end]++
}

func (s *sim) view() {
	s.t.Helper()
	n := 1 + s.rng.IntN(5)
	err := s.s.View(context.Background(), func(r store.Reader) error {
		for range n {
			s.checkRead(r, s.read())
		}
		return nil
	})
	if err != nil {
		s.fatalf("View: %v", err)
	}
	s.stats["view"]++
}

func (s *sim) batch() {
	s.t.Helper()
	b, err := s.s.NewBatch(context.Background())
	if err != nil {
		s.fatalf("NewBatch: %v", err)
	}
	defer b.Cancel()
	s.log("NewBatch")
	var ops []writeOp
	for range 1 + s.rng.IntN(10) {
		op := s.write(false)
		s.log("batch " + op.desc)
		if err := op.apply(b); err != nil {
			s.fatalf("batch %s: %v", op.desc, err)
		}
		ops = append(ops, op)
		if s.rng.IntN(4) == 0 { // not visible before Flush
			s.view()
		}
	}
	if s.rng.IntN(5) == 0 {
		s.log("Cancel")
		b.Cancel()
		s.stats["batch cancelled"]++
		return
	}
	s.log("Flush")
	if err := b.Flush(); err != nil {
		s.fatalf("Flush: %v", err)
	}
	for _, op := range ops {
		op.model(s.m)
	}
	s.m.commit()
	s.stats["batch flushed"]++
}

func envInt(t *testing.T, name string) (int64, bool) {
	v := os.Getenv(name)
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n, true
}

// testModel applies a seeded random sequence of operations to the store
// and to the model, comparing every read, and everything every 2000 steps
// and at the end: 100 000 operations under -short or the race detector
// (which runs the model about ten times slower: 500 000 took 15 minutes
// there on a loaded machine), 500 000 otherwise, unless the backend's
// ModelOps or LOSSLESS_STORE_OPS says otherwise.
func testModel(t *testing.T, st store.Store, defaultOps int) {
	ops := 100_000
	if !testing.Short() && !raceEnabled {
		ops = 500_000
	}
	if defaultOps > 0 {
		ops = defaultOps
	}
	if n, ok := envInt(t, "LOSSLESS_STORE_OPS"); ok {
		ops = int(n)
	}
	seed := uint64(time.Now().UnixNano())
	if n, ok := envInt(t, "LOSSLESS_TEST_SEED"); ok {
		seed = uint64(n)
	}
	t.Logf("seed %d, %d operations (replay: LOSSLESS_TEST_SEED=%d; size: LOSSLESS_STORE_OPS)", seed, ops, seed)
	enc, _ := st.(store.MessageEncoder)
	s := &sim{t: t, s: st, enc: enc, rng: rand.New(rand.NewPCG(seed, 0x5eed)), seed: seed, m: newModel(), stats: map[string]int{}}
	start := time.Now()
	for s.ops < ops {
		switch p := s.rng.IntN(100); {
		case p < 30:
			s.update("commit")
		case p < 40:
			s.update("fail")
		case p < 43:
			s.update("cancel")
		case p < 85:
			s.view()
		default:
			s.batch()
		}
		s.steps++
		if s.steps%2000 == 0 {
			s.checkAll()
		}
	}
	s.checkAll()
	t.Logf("%d operations in %d steps, %v: %v", s.ops, s.steps, time.Since(start).Round(time.Millisecond), s.stats)
}
