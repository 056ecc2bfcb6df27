package badgerstore

import (
	"crypto/sha256"
	"encoding/binary"
	"iter"

	"github.com/lossless-engine/contextengine/third_party/badger"

	"github.com/lossless-engine/contextengine/store"
)

// Host entries (store.HostEntry). Package lossless keeps, for each entry of
// a host-kept transcript (lossless/transcript's host.go),
//
//	'E' conv hostTag 'h' index(8) -> seq(8) key(16) entryId
//
// an entry map of the file tag hostTag, the same for every conversation:
// the map's kind byte is 'h', which no file's map uses.

// hostTag is package lossless's hostTag: the first 8 bytes of
// SHA-256("host-transcript").
var hostTag = func() store.FileTag {
	s := sha256.Sum256([]byte("host-transcript"))
	return store.FileTag(s[:8])
}()

// hostKind is the kind byte of the host entry map.
const hostKind = 'h'

// hostEntryMin is the length of a host entry value with an empty id.
const hostEntryMin = 8 + len(store.Hash{})

func hostEntryPrefix(c store.ConvID) []byte { return entryMapPrefix(c, hostTag, hostKind) }

func hostEntryKey(c store.ConvID, index uint64) []byte {
	return entryKey(c, hostTag, hostKind, index)
}

// encodeHostEntry encodes a host entry under key, checked: recordChecked,
// seq(8), key(16), the entry id, the checksum (before format 3: without
// the first byte and the checksum).
func encodeHostEntry(key []byte, e *store.HostEntry) []byte {
	v := newChecked(hostEntryMin + len(e.EntryID))
	v = binary.BigEndian.AppendUint64(v, e.Seq)
	v = append(v, e.Key[:]...)
	return seal(key, append(v, e.EntryID...))
}

// decodeHostEntry decodes host entry v under key: a checked record, or
// (when legacy) one written before format 3, which starts with the high
// byte of a sequence number, 0.
func decodeHostEntry(key, v []byte, legacy bool) (store.HostEntry, error) {
	body, err := recordBody(key, v, legacy, len(v) > 0 && v[0] == 0)
	if err != nil {
		return store.HostEntry{}, err
	}
	if len(v) > 0 && v[0] == 0 {
		body = v // a format-2 entry has no first byte of its own
	}
	if len(body) < hostEntryMin {
		return store.HostEntry{}, corruptAt(key, "%d-byte value", len(v))
	}
	e := store.HostEntry{Seq: binary.BigEndian.Uint64(body), EntryID: string(body[hostEntryMin:])}
	copy(e.Key[:], body[8:hostEntryMin])
	return e, nil
}

// PutHostEntry writes entry index of c's host-kept transcript.
func (w *writer) PutHostEntry(c store.ConvID, index uint64, e store.HostEntry) error {
	key := hostEntryKey(c, index)
	return w.set(key, encodeHostEntry(key, &e), "host entry")
}

// DeleteHostEntries deletes every entry of c's host-kept transcript (by
// prefix: in a batch, those committed when it is called).
func (w *writer) DeleteHostEntries(c store.ConvID) error {
	return w.deletePrefix(hostEntryPrefix(c), "host entries")
}

// HostEntry returns entry index of c's host-kept transcript.
func (r *reader) HostEntry(c store.ConvID, index uint64) (store.HostEntry, error) {
	var e store.HostEntry
	key := hostEntryKey(c, index)
	err := r.get(key, "host entry", func(v []byte) error {
		var err error
		e, err = decodeHostEntry(key, v, r.legacy())
		return err
	})
	return e, err
}

// HostEntries scans c's host-kept transcript's entries from index from, in
// index order.
func (r *reader) HostEntries(c store.ConvID, from uint64) iter.Seq2[store.HostEntryRecord, error] {
	return scan(r, hostEntryPrefix(c), hostEntryKey(c, from), false, func(kv *badger.Item) (store.HostEntryRecord, step, error) {
		var rec store.HostEntryRecord
		k := kv.Key()
		if len(k) != 26 {
			return rec, stop, corrupt("host entry key %x", k)
		}
		rec.Index = binary.BigEndian.Uint64(k[18:])
		err := value(kv, "host entry", func(v []byte) error {
			var err error
			rec.HostEntry, err = decodeHostEntry(k, v, r.legacy())
			return err
		})
		return rec, emit, err
	})
}
