package lossless

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Transitional (issue #16): Badger helpers that files converted to the
// store interface no longer use but files not converted yet still do.
// They go with the last of their callers.

// pEntry prefixes the entry maps: E conv tag kind ... (doc.go).
const pEntry = 'E'

// entryIndexKey is the key of entry index of file tag's current map:
// E conv tag 'x' index(8) -> seq (reconcile.go).
func entryIndexKey(c convID, tag [8]byte, index int) []byte {
	k := make([]byte, 0, 26)
	k = append(k, pEntry)
	k = append(k, c[:]...)
	k = append(k, tag[:]...)
	k = append(k, 'x')
	var b [8]byte
	putU64(b[:], uint64(index))
	return append(k, b[:]...)
}

// getConvName resolves a name (kind:value) of agent to its conversation
// (store_conv.go, subagent.go; converted code uses store.Reader.ConvByName).
func getConvName(txn *badger.Txn, agent, name string) (convID, bool, error) {
	it, err := txn.Get(nameKey(agent, name))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return convID{}, false, nil
	}
	if err != nil {
		return convID{}, false, fmt.Errorf("lossless: read session map: %w", err)
	}
	var c convID
	err = it.Value(func(v []byte) error {
		if len(v) != len(c) {
			return fmt.Errorf("%w: session map value", errBadRecord)
		}
		copy(c[:], v)
		return nil
	})
	return c, err == nil, err
}

// update is db.Update behind the free-space guard: every write of the
// engine goes through it (or checks checkSpace itself before a write batch
// or a write transaction), so a full disk is an ErrDiskFull error, never a
// SIGBUS.
func (e *Engine) update(fn func(txn *badger.Txn) error) error {
	if err := e.checkSpace(); err != nil {
		return err
	}
	return e.db.Update(fn)
}

// writeBatch is db.NewWriteBatch behind the free-space guard (see update).
//
// update and writeBatch are transitional (issue #16): for the files not
// converted to the store interface yet.
func (e *Engine) writeBatch() (*badger.WriteBatch, error) {
	if err := e.checkSpace(); err != nil {
		return nil, err
	}
	return e.db.NewWriteBatch(), nil
}
