package memstore

import (
	"encoding/binary"
	"fmt"
	"iter"
	"slices"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// Key prefixes, one per family. Integers are 8-byte big-endian so that keys
// sort numerically; a string followed by more key is escaped (esc) so that
// it cannot run into what follows and keeps its order.
const (
	pMeta       = 0x00
	pName       = 'N' // esc(agent) kind value
	pConv       = 'C' // conv
	pMessage    = 'M' // conv seq
	pHash       = 'H' // conv hash
	pLarge      = 'L' // conv seq
	pItem       = 'I' // conv pos
	pSummary    = 'S' // conv id
	pEntry      = 'E' // conv tag map index
	pEntryID    = 'e' // conv tag id
	pReconcile  = 'R' // conv tag
	pHostEntry  = 'h' // conv index
	pOrder      = 'O' // conv seq
	pTurn       = 'T' // conv key
	pCheckpoint = 'F' // esc(agent) 'f' path, or esc(agent) 'h' conv
	pSubagent   = 'G' // sub
	pChild      = 'g' // esc(agent) sessionID
	pFork       = 'Y' // sub pos
	pLink       = 'K' // parent sub
)

// convScoped are the families DeleteConversationData deletes.
var convScoped = []byte{pMessage, pHash, pLarge, pItem, pSummary, pEntry, pEntryID, pReconcile, pHostEntry, pOrder, pTurn}

type key []byte

func k(prefix byte) key { return key{prefix} }

func (b key) id(p []byte) key     { return append(b, p...) }
func (b key) u64(v uint64) key    { return binary.BigEndian.AppendUint64(b, v) }
func (b key) b(c byte) key        { return append(b, c) }
func (b key) str(s string) key    { return append(b, s...) }
func (b key) String() string      { return string(b) }
func (b key) end(v uint64) string { return string(b.u64(v)) + "\x00" } // just after b+v

// esc appends s so that the keys of two strings compare as the strings do
// and s ends where its terminator is: 0x00 is written 0x00 0xff, and the
// terminator is 0x00 0x01.
func (b key) esc(s string) key {
	for i := 0; i < len(s); i++ {
		b = append(b, s[i])
		if s[i] == 0 {
			b = append(b, 0xff)
		}
	}
	return append(b, 0, 1)
}

func kConv(p byte, c store.ConvID) key { return k(p).id(c[:]) }

// Copies: a record is copied on its way in and on its way out, so the
// stored one is never shared with a caller.

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func cloneConv(r store.Conversation) store.Conversation {
	r.SessionIDs = slices.Clone(r.SessionIDs)
	return r
}

// cloneMessage copies m, without Encoded (memstore has no MessageEncoder:
// it ignores Encoded and reads never set it).
func cloneMessage(m store.Message, withRaw bool) store.Message {
	m.Encoded = nil
	if withRaw {
		m.Raw = cloneBytes(m.Raw)
	} else {
		m.Raw = nil
	}
	return m
}

func cloneSummary(s dag.Summary) dag.Summary {
	s.Sources = slices.Clone(s.Sources)
	return s
}

func cloneTurn(t store.Turn) store.Turn {
	t.Seqs = slices.Clone(t.Seqs)
	return t
}

func cloneCheckpoint(r store.CheckpointRecord) store.CheckpointRecord {
	if r.File != nil {
		f := *r.File
		r.File = &f
	}
	if r.Host != nil {
		h := *r.Host
		r.Host = &h
	}
	return r
}

// valueSize is about how many bytes a value would take encoded.
func valueSize(v any) int {
	const hdr = 16
	switch v := v.(type) {
	case store.Meta:
		return hdr + len(v.Engine) + len(v.Tokenizer)
	case store.ConvRecord:
		n := hdr*8 + len(v.Agent) + len(v.Key)
		for _, s := range v.SessionIDs {
			n += len(s) + 2
		}
		return n
	case store.NameRecord:
		return 8
	case store.Message:
		return hdr*2 + len(v.Role) + len(v.Hash) + len(v.Raw)
	case []byte:
		return len(v)
	case store.Item:
		return hdr*3 + len(v.Ref.ID) + len(v.Role)
	case dag.Summary:
		n := hdr*8 + len(v.ID) + len(v.Kind) + len(v.Text) + len(v.Method)
		for _, r := range v.Sources {
			n += 8 + len(r.ID)
		}
		return n
	case store.Turn:
		return hdr*2 + len(v.LogicalTurnID) + len(v.AdmissionEntryID) + len(v.TerminalEntryID) + 8*len(v.Seqs)
	case store.CheckpointRecord:
		n := hdr * 6
		if v.File != nil {
			n += len(v.File.SessionID) + len(v.File.Conv) + len(v.File.HeadHash) + len(v.File.PrefixHash) + len(v.File.TailHash)
		}
		if v.Host != nil {
			n += len(v.Host.Conv) + len(v.Host.Cursor)
		}
		return n
	case store.HostEntryRecord:
		return 8 + len(v.Key) + len(v.EntryID)
	case store.SubagentLinkRecord:
		return len(v.ChildKey)
	case store.SubagentRecord:
		s := v.Subagent
		return hdr*6 + len(s.Agent) + len(s.ChildSessionKey) + len(s.ChildSessionID) + len(s.ParentAgent) +
			len(s.ParentKey) + len(s.ParentSessionID) + len(s.ParentConv) + len(s.Mode) + len(s.State) + len(s.EndReason) + len(s.Token)
	default: // integers, ids, pairs
		return 8
	}
}

// reader reads one root.
type reader struct {
	root     *node
	finished bool
}

var _ store.Reader = (*reader)(nil)

func notFound(format string, args ...any) error {
	return fmt.Errorf("memstore: "+format+": %w", append(args, store.ErrNotFound)...)
}

// lookup returns the value of k as a T.
func lookup[T any](r *reader, k key) (T, bool, error) {
	var zero T
	if r.finished {
		return zero, false, errFinished
	}
	v, ok := get(r.root, string(k))
	if !ok {
		return zero, false, nil
	}
	return v.(T), true, nil
}

// scan yields the values of the keys in [lo, hi) as f maps them, over the
// root of the moment the loop starts.
func scan[T any](r *reader, lo, hi string, reverse bool, f func(k string, v any) (T, bool)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		if r.finished {
			var zero T
			yield(zero, errFinished)
			return
		}
		walk(r.root, lo, hi, reverse, func(n *node) bool {
			t, ok := f(n.key, n.val)
			return !ok || yield(t, nil)
		})
	}
}

func scanPrefix[T any](r *reader, p key, f func(k string, v any) (T, bool)) iter.Seq2[T, error] {
	return scan(r, string(p), prefixEnd(string(p)), false, f)
}

func (r *reader) Meta() (store.Meta, error) {
	m, ok, err := lookup[store.Meta](r, k(pMeta))
	if err == nil && !ok {
		err = notFound("format record")
	}
	return m, err
}

func (r *reader) Conversation(c store.ConvID) (store.Conversation, error) {
	v, ok, err := lookup[store.ConvRecord](r, kConv(pConv, c))
	if err == nil && !ok {
		err = notFound("conversation %s", c)
	}
	return cloneConv(v.Conversation), err
}

func (r *reader) Conversations() iter.Seq2[store.ConvRecord, error] {
	return scanPrefix(r, k(pConv), func(_ string, v any) (store.ConvRecord, bool) {
		c := v.(store.ConvRecord)
		c.Conversation = cloneConv(c.Conversation)
		return c, true
	})
}

func nameKey(n store.Name) key { return k(pName).esc(n.Agent).b(byte(n.Kind)).str(n.Value) }

func (r *reader) ConvByName(n store.Name) (store.ConvID, error) {
	v, ok, err := lookup[store.NameRecord](r, nameKey(n))
	if err == nil && !ok {
		err = notFound("name %q %c %q", n.Agent, n.Kind, n.Value)
	}
	return v.Conv, err
}

func (r *reader) Names() iter.Seq2[store.NameRecord, error] {
	return scanPrefix(r, k(pName), func(_ string, v any) (store.NameRecord, bool) { return v.(store.NameRecord), true })
}

func (r *reader) message(c store.ConvID, seq uint64, withRaw bool) (store.Message, error) {
	m, ok, err := lookup[store.Message](r, kConv(pMessage, c).u64(seq))
	if err == nil && !ok {
		err = notFound("message %d of %s", seq, c)
	}
	return cloneMessage(m, withRaw), err
}

func (r *reader) Message(c store.ConvID, seq uint64) (store.Message, error) {
	return r.message(c, seq, true)
}

func (r *reader) MessageHeader(c store.ConvID, seq uint64) (store.Message, error) {
	return r.message(c, seq, false)
}

func (r *reader) Messages(c store.ConvID, from uint64, withRaw bool) iter.Seq2[store.Message, error] {
	p := kConv(pMessage, c)
	return scan(r, string(p.u64(from)), prefixEnd(string(p)), false, func(_ string, v any) (store.Message, bool) {
		return cloneMessage(v.(store.Message), withRaw), true
	})
}

func (r *reader) SeqByHash(c store.ConvID, h store.Hash) (uint64, error) {
	v, ok, err := lookup[uint64](r, kConv(pHash, c).id(h[:]))
	if err == nil && !ok {
		err = notFound("message key %x of %s", h, c)
	}
	return v, err
}

func (r *reader) Large(c store.ConvID, seq uint64) ([]byte, error) {
	v, ok, err := lookup[[]byte](r, kConv(pLarge, c).u64(seq))
	if err == nil && !ok {
		err = notFound("large reference %d of %s", seq, c)
	}
	return cloneBytes(v), err
}

func (r *reader) Item(c store.ConvID, pos uint64) (store.Item, error) {
	v, ok, err := lookup[store.Item](r, kConv(pItem, c).u64(pos))
	if err == nil && !ok {
		err = notFound("item %d of %s", pos, c)
	}
	return v, err
}

func itemOf(_ string, v any) (store.Item, bool) { return v.(store.Item), true }

func (r *reader) Items(c store.ConvID, from, to uint64, reverse bool) iter.Seq2[store.Item, error] {
	p := kConv(pItem, c)
	return scan(r, string(p.u64(from)), p.end(to), reverse, itemOf)
}

func (r *reader) Summary(c store.ConvID, id string) (dag.Summary, error) {
	v, ok, err := lookup[dag.Summary](r, kConv(pSummary, c).str(id))
	if err == nil && !ok {
		err = notFound("summary %q of %s", id, c)
	}
	return cloneSummary(v), err
}

func (r *reader) Summaries(c store.ConvID) iter.Seq2[dag.Summary, error] {
	return scanPrefix(r, kConv(pSummary, c), func(_ string, v any) (dag.Summary, bool) {
		return cloneSummary(v.(dag.Summary)), true
	})
}

func entryKey(c store.ConvID, tag store.FileTag, m store.EntryMap) key {
	return kConv(pEntry, c).id(tag[:]).b(byte(m))
}

func (r *reader) EntrySeq(c store.ConvID, tag store.FileTag, m store.EntryMap, index uint64) (uint64, error) {
	v, ok, err := lookup[store.EntryPair](r, entryKey(c, tag, m).u64(index))
	if err == nil && !ok {
		err = notFound("entry %d of map %c of file %x of %s", index, m, tag, c)
	}
	return v.Seq, err
}

func (r *reader) EntryIndex(c store.ConvID, tag store.FileTag, id string) (uint64, error) {
	v, ok, err := lookup[uint64](r, kConv(pEntryID, c).id(tag[:]).str(id))
	if err == nil && !ok {
		err = notFound("entry %q of file %x of %s", id, tag, c)
	}
	return v, err
}

func (r *reader) Entries(c store.ConvID, tag store.FileTag, m store.EntryMap, from uint64) iter.Seq2[store.EntryPair, error] {
	p := entryKey(c, tag, m)
	return scan(r, string(p.u64(from)), prefixEnd(string(p)), false, func(_ string, v any) (store.EntryPair, bool) {
		return v.(store.EntryPair), true
	})
}

func (r *reader) ReconcileFrom(c store.ConvID, tag store.FileTag) (uint64, error) {
	v, ok, err := lookup[uint64](r, kConv(pReconcile, c).id(tag[:]))
	if err == nil && !ok {
		err = notFound("reconciliation of file %x of %s", tag, c)
	}
	return v, err
}

func hostEntryKey(c store.ConvID) key { return kConv(pHostEntry, c) }

func (r *reader) HostEntry(c store.ConvID, index uint64) (store.HostEntry, error) {
	v, ok, err := lookup[store.HostEntryRecord](r, hostEntryKey(c).u64(index))
	if err == nil && !ok {
		err = notFound("host entry %d of %s", index, c)
	}
	return v.HostEntry, err
}

func (r *reader) HostEntries(c store.ConvID, from uint64) iter.Seq2[store.HostEntryRecord, error] {
	p := hostEntryKey(c)
	return scan(r, string(p.u64(from)), prefixEnd(string(p)), false, func(_ string, v any) (store.HostEntryRecord, bool) {
		return v.(store.HostEntryRecord), true
	})
}

func (r *reader) Order(c store.ConvID, seq uint64) (uint64, error) {
	v, ok, err := lookup[store.Pair](r, kConv(pOrder, c).u64(seq))
	if err == nil && !ok {
		err = notFound("order of message %d of %s", seq, c)
	}
	return v.Value, err
}

func (r *reader) Orders(c store.ConvID) iter.Seq2[store.Pair, error] {
	return scanPrefix(r, kConv(pOrder, c), func(_ string, v any) (store.Pair, bool) { return v.(store.Pair), true })
}

func fileCheckpointKey(agent, path string) key { return k(pCheckpoint).esc(agent).b('f').str(path) }
func hostCheckpointKey(agent string, c store.ConvID) key {
	return k(pCheckpoint).esc(agent).b('h').id(c[:])
}

func (r *reader) FileCheckpoint(agent, path string) (store.FileCheckpoint, error) {
	v, ok, err := lookup[store.CheckpointRecord](r, fileCheckpointKey(agent, path))
	if err == nil && !ok {
		return store.FileCheckpoint{}, notFound("checkpoint of %q of agent %q", path, agent)
	}
	if err != nil {
		return store.FileCheckpoint{}, err
	}
	return *v.File, nil
}

func (r *reader) HostCheckpoint(agent string, c store.ConvID) (store.HostCheckpoint, error) {
	v, ok, err := lookup[store.CheckpointRecord](r, hostCheckpointKey(agent, c))
	if err == nil && !ok {
		return store.HostCheckpoint{}, notFound("host checkpoint of %s of agent %q", c, agent)
	}
	if err != nil {
		return store.HostCheckpoint{}, err
	}
	return *v.Host, nil
}

func (r *reader) Checkpoints() iter.Seq2[store.CheckpointRecord, error] {
	return scanPrefix(r, k(pCheckpoint), func(_ string, v any) (store.CheckpointRecord, bool) {
		return cloneCheckpoint(v.(store.CheckpointRecord)), true
	})
}

func (r *reader) Turn(c store.ConvID, advKey string) (store.Turn, error) {
	v, ok, err := lookup[store.Turn](r, kConv(pTurn, c).str(advKey))
	if err == nil && !ok {
		err = notFound("turn %q of %s", advKey, c)
	}
	return cloneTurn(v), err
}

func (r *reader) Subagent(s store.SubID) (store.Subagent, error) {
	v, ok, err := lookup[store.SubagentRecord](r, k(pSubagent).id(s[:]))
	if err == nil && !ok {
		err = notFound("subagent %x", s)
	}
	return v.Subagent, err
}

func (r *reader) SubagentByChild(agent, sessionID string) (store.SubID, error) {
	v, ok, err := lookup[store.SubID](r, k(pChild).esc(agent).str(sessionID))
	if err == nil && !ok {
		err = notFound("subagent of child %q of agent %q", sessionID, agent)
	}
	return v, err
}

func (r *reader) Subagents() iter.Seq2[store.SubagentRecord, error] {
	return scanPrefix(r, k(pSubagent), func(_ string, v any) (store.SubagentRecord, bool) {
		return v.(store.SubagentRecord), true
	})
}

func (r *reader) ForkItems(s store.SubID) iter.Seq2[store.Item, error] {
	return scanPrefix(r, k(pFork).id(s[:]), itemOf)
}

func (r *reader) ForkSnapshots() iter.Seq2[store.SubID, error] {
	return func(yield func(store.SubID, error) bool) {
		if r.finished {
			yield(store.SubID{}, errFinished)
			return
		}
		root := r.root
		lo, hi := string(k(pFork)), prefixEnd(string(k(pFork)))
		for {
			n := first(root, lo, hi)
			if n == nil {
				return
			}
			var s store.SubID
			copy(s[:], n.key[1:])
			if !yield(s, nil) {
				return
			}
			lo = prefixEnd(string(k(pFork).id(s[:])))
		}
	}
}

func (r *reader) SubagentLinks(parent store.ConvID) iter.Seq2[store.SubagentLinkRecord, error] {
	return scanPrefix(r, kConv(pLink, parent), func(_ string, v any) (store.SubagentLinkRecord, bool) {
		return v.(store.SubagentLinkRecord), true
	})
}

// kv is where a writer's writes go: a transaction applies them, a batch
// keeps them.
type kv interface {
	put(k string, v any) error
	del(k string) error
	delPrefix(p string) error
}

// writer encodes the records of store.Writer for a kv.
type writer struct{ kv kv }

func (w writer) PutMeta(m store.Meta) error { return w.kv.put(k(pMeta).String(), m) }

func (w writer) PutConversation(c store.ConvID, r store.Conversation) error {
	return w.kv.put(kConv(pConv, c).String(), store.ConvRecord{ID: c, Conversation: cloneConv(r)})
}

func (w writer) DeleteConversation(c store.ConvID) error { return w.kv.del(kConv(pConv, c).String()) }

func (w writer) PutName(n store.Name, c store.ConvID) error {
	return w.kv.put(nameKey(n).String(), store.NameRecord{Name: n, Conv: c})
}

func (w writer) DeleteName(n store.Name) error { return w.kv.del(nameKey(n).String()) }

func (w writer) PutMessage(c store.ConvID, m store.Message) error {
	return w.kv.put(kConv(pMessage, c).u64(m.Seq).String(), cloneMessage(m, true))
}

func (w writer) DeleteMessage(c store.ConvID, seq uint64) error {
	return w.kv.del(kConv(pMessage, c).u64(seq).String())
}

func (w writer) PutHash(c store.ConvID, h store.Hash, seq uint64) error {
	return w.kv.put(kConv(pHash, c).id(h[:]).String(), seq)
}

func (w writer) DeleteHash(c store.ConvID, h store.Hash) error {
	return w.kv.del(kConv(pHash, c).id(h[:]).String())
}

func (w writer) PutLarge(c store.ConvID, seq uint64, ref []byte) error {
	if ref == nil {
		ref = []byte{}
	}
	return w.kv.put(kConv(pLarge, c).u64(seq).String(), cloneBytes(ref))
}

func (w writer) DeleteLarge(c store.ConvID, seq uint64) error {
	return w.kv.del(kConv(pLarge, c).u64(seq).String())
}

func (w writer) PutItem(c store.ConvID, it store.Item) error {
	return w.kv.put(kConv(pItem, c).u64(it.Pos).String(), it)
}

func (w writer) DeleteItem(c store.ConvID, pos uint64) error {
	return w.kv.del(kConv(pItem, c).u64(pos).String())
}

func (w writer) PutSummary(c store.ConvID, s dag.Summary) error {
	return w.kv.put(kConv(pSummary, c).str(s.ID).String(), cloneSummary(s))
}

func (w writer) DeleteSummary(c store.ConvID, id string) error {
	return w.kv.del(kConv(pSummary, c).str(id).String())
}

func (w writer) PutEntrySeq(c store.ConvID, tag store.FileTag, m store.EntryMap, index, seq uint64) error {
	return w.kv.put(entryKey(c, tag, m).u64(index).String(), store.EntryPair{Index: index, Seq: seq})
}

func (w writer) DeleteEntrySeq(c store.ConvID, tag store.FileTag, m store.EntryMap, index uint64) error {
	return w.kv.del(entryKey(c, tag, m).u64(index).String())
}

func (w writer) PutEntryIndex(c store.ConvID, tag store.FileTag, id string, index uint64) error {
	return w.kv.put(kConv(pEntryID, c).id(tag[:]).str(id).String(), index)
}

func (w writer) DeleteEntryIndex(c store.ConvID, tag store.FileTag, id string) error {
	return w.kv.del(kConv(pEntryID, c).id(tag[:]).str(id).String())
}

func (w writer) PutReconcileFrom(c store.ConvID, tag store.FileTag, seq uint64) error {
	return w.kv.put(kConv(pReconcile, c).id(tag[:]).String(), seq)
}

func (w writer) DeleteReconcileFrom(c store.ConvID, tag store.FileTag) error {
	return w.kv.del(kConv(pReconcile, c).id(tag[:]).String())
}

func (w writer) PutHostEntry(c store.ConvID, index uint64, e store.HostEntry) error {
	return w.kv.put(hostEntryKey(c).u64(index).String(), store.HostEntryRecord{Index: index, HostEntry: e})
}

func (w writer) DeleteHostEntries(c store.ConvID) error {
	return w.kv.delPrefix(hostEntryKey(c).String())
}

func (w writer) PutOrder(c store.ConvID, seq, pos uint64) error {
	return w.kv.put(kConv(pOrder, c).u64(seq).String(), store.Pair{Key: seq, Value: pos})
}

func (w writer) DeleteOrder(c store.ConvID, seq uint64) error {
	return w.kv.del(kConv(pOrder, c).u64(seq).String())
}

func (w writer) PutFileCheckpoint(agent, path string, cp store.FileCheckpoint) error {
	return w.kv.put(fileCheckpointKey(agent, path).String(), store.CheckpointRecord{Agent: agent, Path: path, File: &cp})
}

func (w writer) DeleteFileCheckpoint(agent, path string) error {
	return w.kv.del(fileCheckpointKey(agent, path).String())
}

func (w writer) PutHostCheckpoint(agent string, c store.ConvID, cp store.HostCheckpoint) error {
	return w.kv.put(hostCheckpointKey(agent, c).String(), store.CheckpointRecord{Agent: agent, HostConv: c, Host: &cp})
}

func (w writer) DeleteHostCheckpoint(agent string, c store.ConvID) error {
	return w.kv.del(hostCheckpointKey(agent, c).String())
}

func (w writer) PutTurn(c store.ConvID, advKey string, t store.Turn) error {
	return w.kv.put(kConv(pTurn, c).str(advKey).String(), cloneTurn(t))
}

func (w writer) DeleteTurn(c store.ConvID, advKey string) error {
	return w.kv.del(kConv(pTurn, c).str(advKey).String())
}

func (w writer) PutSubagent(s store.SubID, r store.Subagent) error {
	return w.kv.put(k(pSubagent).id(s[:]).String(), store.SubagentRecord{ID: s, Subagent: r})
}

func (w writer) DeleteSubagent(s store.SubID) error { return w.kv.del(k(pSubagent).id(s[:]).String()) }

func (w writer) PutSubagentByChild(agent, sessionID string, s store.SubID) error {
	return w.kv.put(k(pChild).esc(agent).str(sessionID).String(), s)
}

func (w writer) DeleteSubagentByChild(agent, sessionID string) error {
	return w.kv.del(k(pChild).esc(agent).str(sessionID).String())
}

func (w writer) PutForkItem(s store.SubID, it store.Item) error {
	return w.kv.put(k(pFork).id(s[:]).u64(it.Pos).String(), it)
}

func (w writer) DeleteForkItems(s store.SubID) error {
	return w.kv.delPrefix(k(pFork).id(s[:]).String())
}

func (w writer) PutSubagentLink(parent store.ConvID, s store.SubID, childKey string) error {
	return w.kv.put(kConv(pLink, parent).id(s[:]).String(), store.SubagentLinkRecord{ID: s, ChildKey: childKey})
}

func (w writer) DeleteSubagentLink(parent store.ConvID, s store.SubID) error {
	return w.kv.del(kConv(pLink, parent).id(s[:]).String())
}

func (w writer) DeleteConversationData(c store.ConvID) error {
	for _, p := range convScoped {
		if err := w.kv.delPrefix(kConv(p, c).String()); err != nil {
			return err
		}
	}
	return nil
}

// Get implements store.Reader: point reads, one per ref (store.GetEach).
func (r *reader) Get(refs []store.Ref) ([]store.Got, error) { return store.GetEach(r, refs) }

// HasData implements store.Reader: any key but the format record's.
func (r *reader) HasData() (bool, error) {
	if r.finished {
		return false, errFinished
	}
	meta := k(pMeta).String()
	var other func(n *node) bool
	other = func(n *node) bool {
		return n != nil && (n.key != meta || other(n.left) || other(n.right))
	}
	return other(r.root), nil
}
