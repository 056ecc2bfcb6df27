package pgstore

import (
	"context"
	"testing"

	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/storetest"
)

func openTest(t testing.TB, o Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestContract runs the store.Store contract suite (package storetest)
// against PostgreSQL, a fresh database per store; reopen closes the store
// and opens its database again.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openTest(t, Options{URL: pgtest.NewDB(t)})
	}, func(t *testing.T, s store.Store) store.Store {
		u := s.(*Store).opts.URL
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return openTest(t, Options{URL: u})
	})
}

// TestContractReadOnly runs the suite's read-only case: the database
// opened again with Options.ReadOnly.
func TestContractReadOnly(t *testing.T) {
	storetest.RunReadOnly(t, func(t *testing.T) store.Store {
		return openTest(t, Options{URL: pgtest.NewDB(t)})
	}, func(t *testing.T, s store.Store) store.Store {
		u := s.(*Store).opts.URL
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return openTest(t, Options{URL: u, ReadOnly: true})
	})
}
