package badgerstore

import (
	"context"
	"testing"

	"github.com/lossless-engine/contextengine/third_party/badger"

	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/storetest"
)

func openContract(t *testing.T, o Options) store.Store {
	t.Helper()
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestContract runs the store.Store contract suite (package storetest)
// against Badger.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openContract(t, Options{Dir: t.TempDir()})
	}, func(t *testing.T, s store.Store) store.Store {
		dir := s.(*Store).opts.Dir
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return openContract(t, Options{Dir: dir})
	}, storetest.Corrupt(corruptValues))
}

// corruptValues changes the middle byte of every value but the format
// record's and the messages' in Badger itself (storetest.Corrupt): only
// the records' checksums can tell.
func corruptValues(t *testing.T, st store.Store) store.Store {
	db := st.(*Store).db
	kvs := map[string][]byte{}
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if k := it.Item().Key(); k[0] != pMeta && k[0] != pMsg {
				v, err := it.Item().ValueCopy(nil)
				if err != nil {
					return err
				}
				kvs[string(k)] = v
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(txn *badger.Txn) error {
		for k, v := range kvs {
			v[len(v)/2] ^= 0x20
			if err := txn.Set([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestContractReadOnly runs the suite's read-only case: the store reopened
// with Options.ReadOnly.
func TestContractReadOnly(t *testing.T) {
	storetest.RunReadOnly(t, func(t *testing.T) store.Store {
		return openContract(t, Options{Dir: t.TempDir()})
	}, func(t *testing.T, s store.Store) store.Store {
		dir := s.(*Store).opts.Dir
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return openContract(t, Options{Dir: dir, ReadOnly: true})
	})
}
