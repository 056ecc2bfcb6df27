package badgerstore

import (
	"encoding/binary"
	"iter"

	"github.com/dgraph-io/badger/v4"

	"github.com/lossless-engine/contextengine/store"
)

// Host entry maps: an extension of store.Writer and store.Reader that the
// interface does not have yet. Package lossless keeps, for each entry of a
// host-kept transcript (host.go),
//
//	'E' conv tag 'h' index(8) -> seq(8) key(16) entryId
//
// the message, the key of the entry's own bytes (which differs from the
// message's when the entry holds a reference maintain put there) and the
// host's entry id; store.Writer.PutEntrySeq can only give the message (it
// writes a zero key and an empty id). The
// Tx of Update and the Batch of NewBatch implement HostEntryWriter, the
// Reader of View and the Tx of Update HostEntryReader (found by type
// assertion); EntrySeq and Entries read the message of a host entry as of
// any other map.

// HostEntry is one entry of a host-kept transcript's entry map.
type HostEntry struct {
	Index uint64
	Seq   uint64
	// Hash is the key of the entry's own bytes.
	Hash    store.Hash
	EntryID string
}

// HostEntryWriter writes host entry records.
type HostEntryWriter interface {
	PutHostEntry(c store.ConvID, tag store.FileTag, e HostEntry) error
}

// HostEntryReader scans host entry records.
type HostEntryReader interface {
	HostEntries(c store.ConvID, tag store.FileTag, from uint64) iter.Seq2[HostEntry, error]
}

var (
	_ HostEntryWriter = (*tx)(nil)
	_ HostEntryWriter = (*batch)(nil)
	_ HostEntryReader = (*reader)(nil)
	_ HostEntryReader = (*tx)(nil)
)

// hostEntryMin is the length of a host entry value with an empty id.
const hostEntryMin = 8 + len(store.Hash{})

// PutHostEntry writes entry e.Index of the host map (store.EntriesHost) of
// tag.
func (w *writer) PutHostEntry(c store.ConvID, tag store.FileTag, e HostEntry) error {
	v := make([]byte, 8, hostEntryMin+len(e.EntryID))
	putU64(v, e.Seq)
	v = append(v, e.Hash[:]...)
	v = append(v, e.EntryID...)
	return w.set(entryKey(c, tag, byte(store.EntriesHost), e.Index), v, "host entry map")
}

// HostEntries scans the host map of tag from index from, in index order.
func (r *reader) HostEntries(c store.ConvID, tag store.FileTag, from uint64) iter.Seq2[HostEntry, error] {
	m := byte(store.EntriesHost)
	return scan(r, entryMapPrefix(c, tag, m), entryKey(c, tag, m, from), false, func(kv *badger.Item) (HostEntry, step, error) {
		var e HostEntry
		k := kv.Key()
		if len(k) != 26 {
			return e, stop, corrupt("host entry map key %x", k)
		}
		e.Index = binary.BigEndian.Uint64(k[18:])
		err := value(kv, "host entry map", func(v []byte) error {
			if len(v) < hostEntryMin {
				return corrupt("host entry map, entry %d: %d-byte value", e.Index, len(v))
			}
			e.Seq = binary.BigEndian.Uint64(v)
			copy(e.Hash[:], v[8:hostEntryMin])
			e.EntryID = string(v[hostEntryMin:])
			return nil
		})
		return e, emit, err
	})
}
