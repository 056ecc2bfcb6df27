package badgerstore

import (
	"context"
	"testing"

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
	})
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
