package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// reader is the store.Reader of a View or Update: a Badger transaction.
type reader struct {
	txn *badger.Txn
	ctx context.Context
	// done is set when the View or Update function returned.
	done bool
}

var _ store.Reader = (*reader)(nil)

func (r *reader) end() { r.done = true }

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
		var ok bool
		if n, ok = getU64(v); !ok {
			return corrupt("%s (key %x): %d-byte value", what, key, len(v))
		}
		return nil
	})
	return n, err
}

func (r *reader) getJSON(key []byte, what string, v any) error {
	return r.get(key, what, func(b []byte) error { return decodeJSON(what, b, v) })
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
// yielded once, last. Values are not prefetched: item values are small
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
	}
}

// Meta returns the format record.
func (r *reader) Meta() (store.Meta, error) {
	var m store.Meta
	err := r.getJSON(metaKey, "format record", &m)
	return m, err
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
		err := value(kv, "conversation", func(v []byte) error { return decodeJSON("conversation", v, &rec.Conversation) })
		return rec, emit, err
	})
}

// ConvByName resolves a name to its conversation.
func (r *reader) ConvByName(n store.Name) (store.ConvID, error) {
	var c store.ConvID
	err := r.get(nameKey(n), "name", func(v []byte) error {
		if len(v) != len(c) {
			return corrupt("name %s/%c:%s: %d-byte value", n.Agent, n.Kind, n.Value, len(v))
		}
		copy(c[:], v)
		return nil
	})
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
		err := value(kv, "name", func(v []byte) error {
			if len(v) != len(rec.Conv) {
				return corrupt("name %q: %d-byte value", k, len(v))
			}
			copy(rec.Conv[:], v)
			return nil
		})
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
	err := r.get(largeKey(c, seq), "large reference", func(v []byte) error {
		out = bytes.Clone(v)
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
	err := r.get(itemKey(c, pos), "item", func(v []byte) error {
		var err error
		it, err = decodeItem(pos, v)
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
		return itemAt(kv, from, to)
	})
}

// itemAt decodes the item record of an item key (prefix, an 8-byte
// conversation or subagent id, the 8-byte position) when its position is
// within [from, to] (stop otherwise).
func itemAt(kv *badger.Item, from, to uint64) (store.Item, step, error) {
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
	if err := kv.Value(func(v []byte) error { it, derr = decodeItem(pos, v); return nil }); err != nil {
		return store.Item{}, stop, wrapErr("read item", err)
	}
	return it, emit, derr
}

// Summary returns summary id of c.
func (r *reader) Summary(c store.ConvID, id string) (dag.Summary, error) {
	var s dag.Summary
	err := r.get(summaryKey(c, id), "summary", func(v []byte) error {
		var err error
		s, err = decodeSummary(v)
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
			s, err = decodeSummary(v)
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
	var seq uint64
	err := r.get(entryKey(c, tag, byte(m), index), "entry map", func(v []byte) error {
		var ok bool
		if seq, ok = getU64(v); !ok {
			return corrupt("entry map %c, entry %d: %d-byte value", m, index, len(v))
		}
		return nil
	})
	return seq, err
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
			var ok bool
			if p.Seq, ok = getU64(v); !ok {
				return corrupt("entry map %c, entry %d: %d-byte value", m, p.Index, len(v))
			}
			return nil
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
			var ok bool
			if p.Value, ok = getU64(v); !ok {
				return corrupt("order record %d: %d-byte value", p.Key, len(v))
			}
			return nil
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
				err := value(kv, "host checkpoint", func(v []byte) error { return decodeJSON("host checkpoint", v, rec.Host) })
				return rec, emit, err
			}
		}
		rec.Path, rec.File = string(path), new(store.FileCheckpoint)
		err := value(kv, "file checkpoint", func(v []byte) error { return decodeJSON("file checkpoint", v, rec.File) })
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
	err := r.get(subAliasKey(agent, sessionID), "subagent alias", func(v []byte) error {
		if len(v) != len(s) {
			return corrupt("subagent alias %s/%s: %d-byte value", agent, sessionID, len(v))
		}
		copy(s[:], v)
		return nil
	})
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
		err := value(kv, "subagent", func(v []byte) error { return decodeJSON("subagent", v, &rec.Subagent) })
		return rec, emit, err
	})
}

// ForkItems scans a fork snapshot's items in position order.
func (r *reader) ForkItems(s store.SubID) iter.Seq2[store.Item, error] {
	return scan(r, convPrefix(pForkItem, s), nil, false, func(kv *badger.Item) (store.Item, step, error) {
		return itemAt(kv, 0, ^uint64(0))
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
			rec.ChildKey = string(v)
			return nil
		})
		return rec, emit, err
	})
}
