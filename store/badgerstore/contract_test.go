package badgerstore

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/storetest"
)

// raceModelOps is the model case's length under the race detector.
const raceModelOps = 100_000

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
//
// Under the race detector the model case runs raceModelOps operations (its
// -short length) rather than 500 000, which took 15 minutes there on a
// loaded machine, past go test's default timeout; LOSSLESS_STORE_OPS still
// says otherwise.
func TestContract(t *testing.T) {
	if raceEnabled && os.Getenv("LOSSLESS_STORE_OPS") == "" {
		t.Setenv("LOSSLESS_STORE_OPS", strconv.Itoa(raceModelOps))
		t.Logf("race detector: the model case runs %d operations (LOSSLESS_STORE_OPS)", raceModelOps)
	}
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
