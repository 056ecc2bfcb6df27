package lossless

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	"github.com/dgraph-io/badger/v4"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/badgerstore"
)

// Badger-level helpers of the tests that still read or write raw keys
// (issue #16: the engine itself uses only the store interface).

// badgerDB is the engine's Badger database (its store is badgerstore's).
func badgerDB(e *Engine) *badger.DB { return e.st.(*badgerstore.Store).DB() }

func setJSON(txn *badger.Txn, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("lossless: encode: %w", err)
	}
	if err := txn.Set(key, b); err != nil {
		return fmt.Errorf("lossless: write: %w", err)
	}
	return nil
}
func getJSON(txn *badger.Txn, key []byte, v any) error {
	it, err := txn.Get(key)
	if err != nil {
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("lossless: %w", core.ErrNotFound)
		}
		return fmt.Errorf("lossless: read: %w", err)
	}
	return it.Value(func(b []byte) error {
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("lossless: decode record %q: %w", key[:1], err)
		}
		return nil
	})
}

// getValue returns a copy of key's value; a missing key is "lossless: not
// found", wrapping core.ErrNotFound (for the files not yet converted to the
// store interface: issue #16).
func getValue(txn *badger.Txn, key []byte) ([]byte, error) {
	it, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, fmt.Errorf("lossless: %w", core.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("lossless: read: %w", err)
	}
	v, err := it.ValueCopy(nil)
	if err != nil {
		return nil, fmt.Errorf("lossless: read: %w", err)
	}
	return v, nil
}

// itemAt decodes the context item of an item key (a one-byte prefix, an
// 8-byte conversation or subagent id, then the 8-byte position) and its
// value: the item and its flags.
func itemAt(kv *badger.Item) (dag.Item, byte, error) {
	pos, _ := getU64(kv.Key()[9:])
	var item dag.Item
	var flags byte
	err := kv.Value(func(v []byte) error {
		var err error
		item, flags, err = decodeItem(pos, v)
		return err
	})
	return item, flags, err
}

// badgerItemsReverse scans the item records under prefix (a fork
// snapshot's) from seek down, as store.Reader's Items scans a
// conversation's in reverse; the loop breaking ends it. Transitional
// (#16): store.Reader scans a fork snapshot forward only (ForkItems), and
// the fork prefix of a subagent's assemble walks back from its newest item.
func badgerItemsReverse(txn *badger.Txn, prefix, seek []byte) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: true})
		defer it.Close()
		for it.Seek(seek); it.Valid(); it.Next() {
			item, flags, err := itemAt(it.Item())
			if !yield(store.Item{Item: item, Flags: flags}, err) || err != nil {
				return
			}
		}
	}
}

// Key prefixes (store/badgerstore/doc.go has the layout).
const (
	pMeta    = 0x00 // 0x00 "format" -> metaRecord JSON
	pConv    = 'C'  // C conv(8) -> convRecord JSON
	pName    = 'N'  // N agent 0x00 kind:name -> conv(8)
	pMsg     = 'M'  // M conv(8) seq(8) -> message record
	pHash    = 'H'  // H conv(8) hash(16) -> seq(8)
	pItem    = 'I'  // I conv(8) pos(8) -> item record
	pLarge   = 'L'  // L conv(8) seq(8) -> large-content description (text)
	pSummary = 'S'  // S conv(8) id -> summary record
	pCheck   = 'F'  // F agent 0x00 path -> import checkpoint JSON
)

var metaKey = []byte{pMeta, 'f', 'o', 'r', 'm', 'a', 't'}

func convKey(c convID) []byte { return append([]byte{pConv}, c[:]...) }

func nameKey(agent, name string) []byte {
	k := make([]byte, 0, 2+len(agent)+len(name))
	k = append(k, pName)
	k = append(k, agent...)
	k = append(k, 0)
	return append(k, name...)
}

func seqKey(prefix byte, c convID, seq uint64) []byte {
	k := make([]byte, 17)
	k[0] = prefix
	copy(k[1:9], c[:])
	binary.BigEndian.PutUint64(k[9:], seq)
	return k
}

func msgKey(c convID, seq uint64) []byte   { return seqKey(pMsg, c, seq) }
func itemKey(c convID, pos uint64) []byte  { return seqKey(pItem, c, pos) }
func largeKey(c convID, seq uint64) []byte { return seqKey(pLarge, c, seq) }

func hashKey(c convID, h msgHash) []byte {
	k := make([]byte, 25)
	k[0] = pHash
	copy(k[1:9], c[:])
	copy(k[9:], h[:])
	return k
}

func summaryKey(c convID, id string) []byte {
	return append(append([]byte{pSummary}, c[:]...), id...)
}

func checkKey(agent, path string) []byte {
	k := append([]byte{pCheck}, agent...)
	k = append(k, 0)
	return append(k, path...)
}

func convPrefix(prefix byte, c convID) []byte { return append([]byte{prefix}, c[:]...) }

// pOrder is 'O' conv seq(8) -> pos(8): the order position of a message
// placed out of sequence by a reconciliation (store.Reader.Order).
const pOrder = 'O'

// forkItemKey is the Badger key of item pos of sub's fork snapshot (tests
// poke it).
func forkItemKey(s subID, pos uint64) []byte {
	k := make([]byte, 17)
	k[0] = pForkItem
	copy(k[1:9], s[:])
	putU64(k[9:], pos)
	return k
}

// pEntry prefixes the entry maps: E conv tag kind ... (badgerstore's doc.go).
const pEntry = 'E'
