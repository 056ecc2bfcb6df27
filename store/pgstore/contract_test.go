package pgstore

import (
	"context"
	"testing"

	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/storetest"
)

// testDB returns a fresh database's URL. The contract tests open it with
// Options.AsyncCommit: commits that wait for the disk (fsync on a shared
// CI disk) would take most of their time, and nothing they check depends
// on it (no server crashes here).
func testDB(t testing.TB) string { return pgtest.NewDB(t) }

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
		return openTest(t, Options{URL: testDB(t), AsyncCommit: true})
	}, func(t *testing.T, s store.Store) store.Store {
		u := s.(*Store).opts.URL
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return openTest(t, Options{URL: u, AsyncCommit: true})
	}, storetest.ModelOps(100_000)) // each operation is a round trip: 10⁵ fit CI
}

// TestContractReadOnly runs the suite's read-only case: the database
// opened again with Options.ReadOnly.
func TestContractReadOnly(t *testing.T) {
	storetest.RunReadOnly(t, func(t *testing.T) store.Store {
		return openTest(t, Options{URL: testDB(t), AsyncCommit: true})
	}, func(t *testing.T, s store.Store) store.Store {
		u := s.(*Store).opts.URL
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return openTest(t, Options{URL: u, ReadOnly: true})
	})
}
