package lossless

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/lossless-engine/contextengine/core"
)

// Transitional (issue #16): orderPos on a Badger transaction, for
// import.go until it reads through the store interface (orderPosOf in
// reconcile.go). This file goes when no caller is left.

func orderKey(c convID, seq uint64) []byte { return seqKey(pOrder, c, seq) }

// orderPos is orderPosOf on a Badger transaction.
func orderPos(txn *badger.Txn, c convID, seq uint64) (uint64, error) {
	v, err := getValue(txn, orderKey(c, seq))
	if err != nil {
		if errors.Is(err, core.ErrNotFound) {
			return seq * posStep, nil
		}
		return 0, err
	}
	p, ok := getU64(v)
	if !ok {
		return 0, fmt.Errorf("%w: order record", errBadRecord)
	}
	return p, nil
}
