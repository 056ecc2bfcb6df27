package memstore

import (
	"testing"

	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/storetest"
)

func open(t *testing.T) store.Store {
	s := New()
	t.Cleanup(func() { s.Close() })
	return s
}

// reopen closes s and opens a new handle on its data: what a persistent
// backend's reopen is, minus the persistence.
func reopen(t *testing.T, s store.Store) store.Store {
	s.Close()
	r := &Store{db: s.(*Store).db}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestContract(t *testing.T) {
	storetest.Run(t, open, reopen)
}

// TestContractNoReopen runs the suite as an in-memory backend would, with
// no reopen (the reopen cases skip).
func TestContractNoReopen(t *testing.T) {
	if testing.Short() {
		t.Skip("TestContract covers it")
	}
	storetest.Run(t, open, nil)
}

func TestReadOnly(t *testing.T) {
	storetest.RunReadOnly(t, open, func(t *testing.T, s store.Store) store.Store {
		return NewReadOnly(s.(*Store))
	})
}
