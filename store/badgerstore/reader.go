package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/lossless-engine/contextengine/third_party/badger"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// reader is the store.Reader of a View or Update: a Badger transaction.
type reader struct {
	txn *badger.Txn
	ctx context.Context
	// s is the store (nil for a reader made outside one, in tests: such a
	// reader accepts records without a checksum).
	s *Store
	// done is set when the View or Update function returned.
	done bool
}

var _ store.Reader = (*reader)(nil)

func (r *reader) end() { r.done = true }

// legacy reports whether records without a checksum (written before
// format 3) are accepted: in a store not created at format 3 or later.
func (r *reader) legacy() bool {
	if r.s == nil {
		return true
	}
	return r.s.legacyOK(r.txn)
}

// get calls fn with key's value, valid only during fn. A missing key is
// store.ErrNotFound; what names the record in errors.
func (r *reader) get(key []byte, what string, fn func(v []byte) error) error {
	if r.done {
		return errEnded
	}
	kv, err := r.txn.Get(key)
	if err != nil {
		if errors.Is(err, badger.ErrKeyNotFound) {
			return &notFoundError{what: what, key: key}
		}
		return wrapErr("read "+what, err)
	}
	var ferr error
	if err := kv.Value(func(v []byte) error { ferr = fn(v); return nil }); err != nil {
		return wrapErr("read "+what, err)
	}
	return ferr
}

// notFoundError is a missing record: store.ErrNotFound, with its message
// formatted only when asked for (the ingest path looks up the key of every
// new message, and almost all of those lookups miss).
type notFoundError struct {
	what string
	key  []byte
}

func (e *notFoundError) Error() string {
	return fmt.Sprintf("badgerstore: %s (key %x): %v", e.what, e.key, store.ErrNotFound)
}

func (e *notFoundError) Unwrap() error { return store.ErrNotFound }

// getU64 reads a record holding one 8-byte integer.
func (r *reader) getU64(key []byte, what string) (uint64, error) {
	var n uint64
	err := r.get(key, what, func(v []byte) error {
		var err error
		n, err = r.u64(key, v)
		return err
	})
	return n, err
}

// u64 decodes the value v, under key, of a record holding one 8-byte
// integer.
func (r *reader) u64(key, v []byte) (uint64, error) {
	b, err := decodeFixed(key, v, 8, r.legacy())
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(b), nil
}

// id8 decodes the value v, under key, of a record holding an 8-byte id.
func (r *reader) id8(key, v []byte, id *[8]byte) error {
	b, err := decodeFixed(key, v, 8, r.legacy())
	if err != nil {
		return err
	}
	copy(id[:], b)
	return nil
}

func (r *reader) getJSON(key []byte, what string, v any) error {
	return r.get(key, what, func(b []byte) error { return decodeJSON(key, b, r.legacy(), v) })
}

// value calls fn with the value of a scanned item, valid only during fn.
func value(kv *badger.Item, what string, fn func(v []byte) error) error {
	var ferr error
	if err := kv.Value(func(v []byte) error { ferr = fn(v); return nil }); err != nil {
		return wrapErr("read "+what, err)
	}
	return ferr
}

// step is what a scan does with a key after decoding it.
type step int8

const (
	emit step = iota // yield the value
	skip             // go on to the next key
	stop             // end the scan (the key is past its range)
)

// scan iterates the keys under prefix from seek (the first key when seek
// is nil; reverse scans always pass seek: Badger's reverse Rewind with a
// prefix finds nothing), decoding each with decode. The Badger iterator is
// closed when the loop breaks; ctx is checked every 256 keys; an error is
// yielded once, last: a damaged table block under the prefix is
// store.ErrCorrupt naming the table (the scan ends there, never going on
// to older versions of the keys in another table). Values are not prefetched: item values are small
// and inline in the tree, and a message read in place is copied once.
func scan[T any](r *reader, prefix, seek []byte, reverse bool, decode func(kv *badger.Item) (T, step, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		if r.done {
			yield(zero, errEnded)
			return
		}
		it := r.txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: reverse})
		defer it.Close()
		if seek == nil {
			it.Rewind()
		} else {
			it.Seek(seek)
		}
		for n := 1; it.Valid(); it.Next() {
			if n++; n%256 == 0 {
				if err := r.ctx.Err(); err != nil {
					yield(zero, fmt.Errorf("badgerstore: scan: %w", err))
					return
				}
			}
			v, st, err := decode(it.Item())
			if err != nil {
				yield(zero, err)
				return
			}
			switch st {
			case skip:
				continue
			case stop:
				return
			}
			if !yield(v, nil) {
				return
			}
		}
		if err := it.Err(); err != nil {
			yield(zero, wrapErr("scan", err))
		}
	}
}

// Meta returns the format record.
func (r *reader) Meta() (store.Meta, error) {
	var m store.Meta
	err := r.get(metaKey, "format record", func(v []byte) error { return decodeMeta(v, &m) })
	return m, err
}

// HasData reports whether the store holds a key besides the format
// record's (store.Reader.HasData). It reads keys only, up to the first
// other one.
func (r *reader) HasData() (bool, error) {
	if r.done {
		return false, errEnded
	}
	it := r.txn.NewIterator(badger.IteratorOptions{})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		if !bytes.Equal(it.Item().Key(), metaKey) {
			return true, nil
		}
	}
	if err := it.Err(); err != nil {
		return false, wrapErr("scan for data", err)
	}
	return false, nil
}

// Conversation returns conversation c's record.
func (r *reader) Conversation(c store.ConvID) (store.Conversation, error) {
	var rec store.Conversation
	err := r.getJSON(convKey(c), "conversation", &rec)
	return rec, err
}

// Conversations scans every conversation record, in id order.
func (r *reader) Conversations() iter.Seq2[store.ConvRecord, error] {
	return scan(r, []byte{pConv}, nil, false, func(kv *badger.Item) (store.ConvRecord, step, error) {
		var rec store.ConvRecord
		k := kv.Key()
		if len(k) != 9 {
			return rec, stop, corrupt("conversation key %x", k)
		}
		copy(rec.ID[:], k[1:])
		err := value(kv, "conversation", func(v []byte) error { return decodeJSON(k, v, r.legacy(), &rec.Conversation) })
		return rec, emit, err
	})
}

// ConvByName resolves a name to its conversation.
func (r *reader) ConvByName(n store.Name) (store.ConvID, error) {
	var c store.ConvID
	key := nameKey(n)
	err := r.get(key, "name", func(v []byte) error { return r.id8(key, v, (*[8]byte)(&c)) })
	return c, err
}

// Names scans every name, in (agent, kind, value) order.
func (r *reader) Names() iter.Seq2[store.NameRecord, error] {
	return scan(r, []byte{pName}, nil, false, func(kv *badger.Item) (store.NameRecord, step, error) {
		var rec store.NameRecord
		k := kv.Key()
		agent, name, ok := bytes.Cut(k[1:], []byte{0})
		if !ok || len(name) < 2 || name[1] != ':' {
			return rec, stop, corrupt("name key %q", k)
		}
		rec.Agent, rec.Kind, rec.Value = string(agent), store.NameKind(name[0]), string(name[2:])
		err := value(kv, "name", func(v []byte) error { return r.id8(k, v, (*[8]byte)(&rec.Conv)) })
		return rec, emit, err
	})
}

// Message returns message seq of c with its raw bytes (a copy, or the
// decompressed body).
func (r *reader) Message(c store.ConvID, seq uint64) (store.Message, error) {
	m := store.Message{Seq: seq}
	err := r.get(msgKey(c, seq), "message", func(v []byte) error { return decodeMsg(v, &m) })
	if err != nil {
		return store.Message{}, err
	}
	return m, nil
}

// MessageHeader returns message seq of c without its raw bytes: the body
// is neither copied nor decompressed.
func (r *reader) MessageHeader(c store.ConvID, seq uint64) (store.Message, error) {
	m := store.Message{Seq: seq}
	err := r.get(msgKey(c, seq), "message", func(v []byte) error {
		_, err := decodeMsgHead(v, &m)
		return err
	})
	if err != nil {
		return store.Message{}, err
	}
	return m, nil
}

// Messages scans c's messages with seq >= from in seq order.
func (r *reader) Messages(c store.ConvID, from uint64, withRaw bool) iter.Seq2[store.Message, error] {
	return scan(r, convPrefix(pMsg, c), msgKey(c, from), false, func(kv *badger.Item) (store.Message, step, error) {
		k := kv.Key()
		if len(k) != 17 {
			return store.Message{}, stop, corrupt("message key %x", k)
		}
		m := store.Message{Seq: binary.BigEndian.Uint64(k[9:])}
		err := value(kv, "message", func(v []byte) error {
			if withRaw {
				return decodeMsg(v, &m)
			}
			_, err := decodeMsgHead(v, &m)
			return err
		})
		return m, emit, err
	})
}

// SeqByHash resolves a message key to its sequence number.
func (r *reader) SeqByHash(c store.ConvID, h store.Hash) (uint64, error) {
	return r.getU64(hashKey(c, h), "message key index")
}

// Large returns the reference text standing for large message seq.
func (r *reader) Large(c store.ConvID, seq uint64) ([]byte, error) {
	var out []byte
	key := largeKey(c, seq)
	err := r.get(key, "large reference", func(v []byte) error {
		b, err := textBody(key, v, r.legacy())
		if err != nil {
			return err
		}
		out = bytes.Clone(b)
		if out == nil {
			out = []byte{}
		}
		return nil
	})
	return out, err
}

// Item returns the context item at pos.
func (r *reader) Item(c store.ConvID, pos uint64) (store.Item, error) {
	var it store.Item
	key := itemKey(c, pos)
	err := r.get(key, "item", func(v []byte) error {
		var err error
		it, err = decodeItem(key, pos, v, r.legacy())
		return err
	})
	return it, err
}

// Items scans c's context items with from <= pos <= to, in position order
// or, when reverse, from the highest down (assemble's budget walk).
func (r *reader) Items(c store.ConvID, from, to uint64, reverse bool) iter.Seq2[store.Item, error] {
	seek := itemKey(c, from)
	if reverse {
		seek = itemKey(c, to)
	}
	return scan(r, convPrefix(pItem, c), seek, reverse, func(kv *badger.Item) (store.Item, step, error) {
		return r.itemAt(kv, from, to)
	})
}

// itemAt decodes the item record of an item key (prefix, an 8-byte
// conversation or subagent id, the 8-byte position) when its position is
// within [from, to] (stop otherwise).
func (r *reader) itemAt(kv *badger.Item, from, to uint64) (store.Item, step, error) {
	k := kv.Key()
	if len(k) != 17 {
		return store.Item{}, stop, corrupt("item key %x", k)
	}
	pos := binary.BigEndian.Uint64(k[9:])
	if pos < from || pos > to {
		return store.Item{}, stop, nil
	}
	var it store.Item
	var derr error
	if err := kv.Value(func(v []byte) error { it, derr = decodeItem(k, pos, v, r.legacy()); return nil }); err != nil {
		return store.Item{}, stop, wrapErr("read item", err)
	}
	return it, emit, derr
}

// Summary returns summary id of c.
func (r *reader) Summary(c store.ConvID, id string) (dag.Summary, error) {
	var s dag.Summary
	key := summaryKey(c, id)
	err := r.get(key, "summary", func(v []byte) error {
		var err error
		s, err = decodeSummary(key, v, r.legacy())
		return err
	})
	return s, err
}

// Summaries scans c's summaries in id order.
func (r *reader) Summaries(c store.ConvID) iter.Seq2[dag.Summary, error] {
	return scan(r, convPrefix(pSummary, c), nil, false, func(kv *badger.Item) (dag.Summary, step, error) {
		var s dag.Summary
		err := value(kv, "summary", func(v []byte) error {
			var err error
			s, err = decodeSummary(kv.Key(), v, r.legacy())
			return err
		})
		return s, emit, err
	})
}

// checkEntryMap refuses a map byte that is not one of a file's maps.
func checkEntryMap(m store.EntryMap) error {
	switch m {
	case store.EntriesCurrent, store.EntriesPrevious:
		return nil
	}
	return fmt.Errorf("badgerstore: unknown entry map %q", byte(m))
}

// EntrySeq returns the message of entry index of file tag's map m.
func (r *reader) EntrySeq(c store.ConvID, tag store.FileTag, m store.EntryMap, index uint64) (uint64, error) {
	if err := checkEntryMap(m); err != nil {
		return 0, err
	}
	return r.getU64(entryKey(c, tag, byte(m), index), "entry map")
}

// EntryIndex returns the entry index of entry id in file tag.
func (r *reader) EntryIndex(c store.ConvID, tag store.FileTag, id string) (uint64, error) {
	return r.getU64(entryIDKey(c, tag, id), "entry id")
}

// Entries scans map m of file tag from index from, in index order.
func (r *reader) Entries(c store.ConvID, tag store.FileTag, m store.EntryMap, from uint64) iter.Seq2[store.EntryPair, error] {
	if err := checkEntryMap(m); err != nil {
		return func(yield func(store.EntryPair, error) bool) { yield(store.EntryPair{}, err) }
	}
	prefix := entryMapPrefix(c, tag, byte(m))
	return scan(r, prefix, entryKey(c, tag, byte(m), from), false, func(kv *badger.Item) (store.EntryPair, step, error) {
		var p store.EntryPair
		k := kv.Key()
		if len(k) != 26 {
			return p, stop, corrupt("entry map key %x", k)
		}
		p.Index = binary.BigEndian.Uint64(k[18:])
		err := value(kv, "entry map", func(v []byte) error {
			var err error
			p.Seq, err = r.u64(k, v)
			return err
		})
		return p, emit, err
	})
}

// ReconcileFrom returns the first sequence number an unreconciled read of
// file tag may have appended.
func (r *reader) ReconcileFrom(c store.ConvID, tag store.FileTag) (uint64, error) {
	return r.getU64(reconcileFromKey(c, tag), "reconcile record")
}

// Order returns the order position of a message a reconciliation moved.
func (r *reader) Order(c store.ConvID, seq uint64) (uint64, error) {
	return r.getU64(orderKey(c, seq), "order record")
}

// Orders scans c's order records in seq order.
func (r *reader) Orders(c store.ConvID) iter.Seq2[store.Pair, error] {
	return scan(r, convPrefix(pOrder, c), nil, false, func(kv *badger.Item) (store.Pair, step, error) {
		var p store.Pair
		k := kv.Key()
		if len(k) != 17 {
			return p, stop, corrupt("order key %x", k)
		}
		p.Key = binary.BigEndian.Uint64(k[9:])
		err := value(kv, "order record", func(v []byte) error {
			var err error
			p.Value, err = r.u64(k, v)
			return err
		})
		return p, emit, err
	})
}

// FileCheckpoint returns an imported file's progress.
func (r *reader) FileCheckpoint(agent, path string) (store.FileCheckpoint, error) {
	var cp store.FileCheckpoint
	err := r.getJSON(checkKey(agent, path), "file checkpoint", &cp)
	return cp, err
}

// HostCheckpoint returns the progress of a host-kept transcript.
func (r *reader) HostCheckpoint(agent string, c store.ConvID) (store.HostCheckpoint, error) {
	var cp store.HostCheckpoint
	err := r.getJSON(hostCheckKey(agent, c), "host checkpoint", &cp)
	return cp, err
}

// Checkpoints scans every checkpoint of every agent, in (agent, path)
// order: a path "host:" followed by a conversation id in hex is a host
// checkpoint, any other a file checkpoint.
func (r *reader) Checkpoints() iter.Seq2[store.CheckpointRecord, error] {
	return scan(r, []byte{pCheck}, nil, false, func(kv *badger.Item) (store.CheckpointRecord, step, error) {
		var rec store.CheckpointRecord
		k := kv.Key()
		agent, path, ok := bytes.Cut(k[1:], []byte{0})
		if !ok {
			return rec, stop, corrupt("checkpoint key %q", k)
		}
		rec.Agent = string(agent)
		if hex, ok := strings.CutPrefix(string(path), hostCheckPrefix); ok {
			if c, ok := store.ParseConvID(hex); ok {
				rec.HostConv, rec.Host = c, new(store.HostCheckpoint)
				err := value(kv, "host checkpoint", func(v []byte) error { return decodeJSON(k, v, r.legacy(), rec.Host) })
				return rec, emit, err
			}
		}
		rec.Path, rec.File = string(path), new(store.FileCheckpoint)
		err := value(kv, "file checkpoint", func(v []byte) error { return decodeJSON(k, v, r.legacy(), rec.File) })
		return rec, emit, err
	})
}

// Turn returns the committed turn of advancement key.
func (r *reader) Turn(c store.ConvID, key string) (store.Turn, error) {
	var t store.Turn
	err := r.getJSON(turnKey(c, key), "turn", &t)
	return t, err
}

// Subagent returns a subagent record.
func (r *reader) Subagent(s store.SubID) (store.Subagent, error) {
	var rec store.Subagent
	err := r.getJSON(subKey(s), "subagent", &rec)
	return rec, err
}

// SubagentByChild resolves a child session id to its subagent.
func (r *reader) SubagentByChild(agent, sessionID string) (store.SubID, error) {
	var s store.SubID
	key := subAliasKey(agent, sessionID)
	err := r.get(key, "subagent alias", func(v []byte) error { return r.id8(key, v, (*[8]byte)(&s)) })
	return s, err
}

// Subagents scans every subagent record in id order.
func (r *reader) Subagents() iter.Seq2[store.SubagentRecord, error] {
	return scan(r, []byte{pSub}, nil, false, func(kv *badger.Item) (store.SubagentRecord, step, error) {
		var rec store.SubagentRecord
		k := kv.Key()
		if len(k) != 9 {
			return rec, skip, nil // as lossless's sweep: not a record
		}
		copy(rec.ID[:], k[1:])
		err := value(kv, "subagent", func(v []byte) error { return decodeJSON(k, v, r.legacy(), &rec.Subagent) })
		return rec, emit, err
	})
}

// ForkItems scans a fork snapshot's items in position order.
func (r *reader) ForkItems(s store.SubID) iter.Seq2[store.Item, error] {
	return scan(r, convPrefix(pForkItem, s), nil, false, func(kv *badger.Item) (store.Item, step, error) {
		return r.itemAt(kv, 0, ^uint64(0))
	})
}

// ForkSnapshots scans the ids of every fork snapshot, in id order, with
// one seek per snapshot (not a step per item).
func (r *reader) ForkSnapshots() iter.Seq2[store.SubID, error] {
	return func(yield func(store.SubID, error) bool) {
		if r.done {
			yield(store.SubID{}, errEnded)
			return
		}
		it := r.txn.NewIterator(badger.IteratorOptions{Prefix: []byte{pForkItem}})
		defer it.Close()
		for it.Rewind(); it.Valid(); {
			if err := r.ctx.Err(); err != nil {
				yield(store.SubID{}, fmt.Errorf("badgerstore: scan: %w", err))
				return
			}
			k := it.Item().Key()
			if len(k) != 17 {
				it.Next() // as lossless's sweep: not an item
				continue
			}
			var s store.SubID
			copy(s[:], k[1:9])
			if !yield(s, nil) {
				return
			}
			next, ok := nextID(s)
			if !ok {
				return
			}
			it.Seek(convPrefix(pForkItem, next))
		}
		if err := it.Err(); err != nil {
			yield(store.SubID{}, wrapErr("scan fork snapshots", err))
		}
	}
}

// nextID returns the 8-byte id after s in key order (false after the last).
func nextID(s [8]byte) ([8]byte, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		s[i]++
		if s[i] != 0 {
			return s, true
		}
	}
	return s, false
}

// SubagentLinks scans the ended children linked to parent, in id order,
// each with the session key the link holds.
func (r *reader) SubagentLinks(parent store.ConvID) iter.Seq2[store.SubagentLinkRecord, error] {
	return scan(r, convPrefix(pSubLink, parent), nil, false, func(kv *badger.Item) (store.SubagentLinkRecord, step, error) {
		var rec store.SubagentLinkRecord
		k := kv.Key()
		if len(k) != 17 {
			return rec, skip, nil // as lossless: not a link
		}
		copy(rec.ID[:], k[9:])
		err := value(kv, "subagent link", func(v []byte) error {
			b, err := textBody(k, v, r.legacy())
			rec.ChildKey = string(b)
			return err
		})
		return rec, emit, err
	})
}

// Get implements store.Reader: point reads, one per ref (store.GetEach),
// in the transaction's snapshot.
func (r *reader) Get(refs []store.Ref) ([]store.Got, error) { return store.GetEach(r, refs) }
