// Package storetest is the contract test suite of store.Store: every backend
// passes it. A backend's test calls Run with a constructor of fresh, empty
// stores and, when its data outlives a Close, a function that reopens it:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s := openMyStore(t, t.TempDir())
//			t.Cleanup(func() { s.Close() })
//			return s
//		}, func(t *testing.T, s store.Store) store.Store {
//			s.Close()
//			return openMyStore(t, s.(*myStore).dir) // and t.Cleanup its Close
//		})
//	}
//
// The suite closes some stores itself, so Close must be idempotent (a second
// Close returns nil or an error wrapping store.ErrClosed). RunReadOnly checks
// a backend's read-only mode.
//
// # Cases
//
//   - RoundTrip, Empty, Order, Bounds, ScanBreak, Copies, HeaderOnly,
//     ReadOwnWrites: every Reader and Writer method, scans in numeric key
//     order, scan bounds, scans broken off, values owned by the caller.
//   - Get: the batched read answers every kind of Ref as the point reads
//     do, in a View and in an Update after its own writes.
//   - Fresh: records written through a store.FreshWriter read back as
//     puts do; one over a stored key fails its transaction whole or
//     overwrites.
//   - Encoded: messages put with Message.Encoded (made by the store's
//     MessageEncoder, or ignored by a store without one) read back as
//     those put without.
//   - Atomic: a failed ingest, a failed commit-turn, a failed summary
//     replacement and an Update with a cancelled context commit nothing.
//   - Idempotent, DeleteConversationData, Batch, TooBig, Closed.
//   - Concurrent: writers on one conversation (serialized by a mutex, as
//     the engine does), writers on many, and Views during Updates that must
//     see each Update whole or not at all.
//   - Reopen: everything written is there after a reopen, byte for byte
//     (skipped when reopen is nil).
//   - Corrupt (with the Corrupt option): a byte changed in every stored
//     record but the format record and the messages makes every read of
//     them fail with store.ErrCorrupt.
//   - Model: a seeded random sequence of operations applied to the backend
//     and to a model made of Go maps, comparing every read. The number of
//     operations is 100 000 with -short, 500 000 without, or
//     LOSSLESS_STORE_OPS; the seed is logged and LOSSLESS_TEST_SEED replays
//     one.
//
// Orders the interface does not specify are not checked: Checkpoints and
// SubagentLinks are compared as sets. Neither is whether a Batch's deletion
// by prefix removes the batch's own earlier writes: the model's batches make
// no deletion by prefix.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"testing"

	"github.com/lossless-engine/contextengine/store"
)

// OpenFunc returns a new, empty store; closing it is the caller's
// (t.Cleanup), and Close may be called again after the suite closed it.
type OpenFunc func(t *testing.T) store.Store

// ReopenFunc closes s and opens its data again.
type ReopenFunc func(t *testing.T, s store.Store) store.Store

// Option changes how Run runs the suite for one backend.
type Option func(*config)

type config struct {
	modelOps int
	corrupt  CorruptFunc
}

// ModelOps sets the model-based random test's operation count when
// LOSSLESS_STORE_OPS does not (default 10⁵ under -short, 5·10⁵ without): a
// backend whose every operation is a round trip to a server runs 10⁵ in
// both, to fit CI.
func ModelOps(n int) Option { return func(c *config) { c.modelOps = n } }

// Run runs every contract case against stores made by open. reopen may be
// nil (an in-memory store): the reopen cases are then skipped.
func Run(t *testing.T, open OpenFunc, reopen ReopenFunc, opts ...Option) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	t.Run("Empty", func(t *testing.T) { testEmpty(t, open(t)) })
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, open) })
	t.Run("Order", func(t *testing.T) { testOrder(t, open(t)) })
	t.Run("Bounds", func(t *testing.T) { testBounds(t, open(t)) })
	t.Run("ScanBreak", func(t *testing.T) { testScanBreak(t, open(t)) })
	t.Run("Copies", func(t *testing.T) { testCopies(t, open(t)) })
	t.Run("HeaderOnly", func(t *testing.T) { testHeaderOnly(t, open(t)) })
	t.Run("Encoded", func(t *testing.T) { testEncoded(t, open(t)) })
	t.Run("ReadOwnWrites", func(t *testing.T) { testReadOwnWrites(t, open(t)) })
	t.Run("Fresh", func(t *testing.T) { testFresh(t, open(t)) })
	t.Run("Get", func(t *testing.T) { testGet(t, open(t)) })
	t.Run("Atomic", func(t *testing.T) { testAtomic(t, open) })
	t.Run("Idempotent", func(t *testing.T) { testIdempotent(t, open(t)) })
	t.Run("DeleteConversationData", func(t *testing.T) { testDeleteConversationData(t, open) })
	t.Run("Batch", func(t *testing.T) { testBatch(t, open) })
	t.Run("TooBig", func(t *testing.T) { testTooBig(t, open(t)) })
	t.Run("OneLargeMessage", func(t *testing.T) { testOneLargeMessage(t, open(t)) })
	t.Run("Closed", func(t *testing.T) { testClosed(t, open(t)) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, open) })
	t.Run("Reopen", func(t *testing.T) {
		if reopen == nil {
			t.Skip("reopen is nil: the backend keeps nothing across a Close (in-memory)")
		}
		testReopen(t, open, reopen)
	})
	t.Run("Model", func(t *testing.T) { testModel(t, open(t), cfg.modelOps) })
	t.Run("Corrupt", func(t *testing.T) {
		if cfg.corrupt == nil {
			t.Skip("no Corrupt option: the backend does not checksum its records")
		}
		testCorrupt(t, open(t), cfg.corrupt)
	})
}

// ReadOnlyFunc returns a read-only store over s's data (it may close s
// first).
type ReadOnlyFunc func(t *testing.T, s store.Store) store.Store

// RunReadOnly checks a read-only store: it reads what was written, and every
// write (Update, Batch) fails with an error wrapping store.ErrReadOnly and
// changes nothing.
func RunReadOnly(t *testing.T, open OpenFunc, readOnly ReadOnlyFunc) {
	testReadOnly(t, open, readOnly)
}

var errBoom = errors.New("storetest: deliberate failure")

// update runs fn in an Update that must succeed.
func update(t testing.TB, s store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

// view runs fn in a View that must succeed.
func view(t testing.TB, s store.Store, fn func(store.Reader) error) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// all collects a scan.
func all[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// firstN collects at most n elements of a scan, breaking it off after them.
func firstN[T any](seq iter.Seq2[T, error], n int) ([]T, error) {
	var out []T
	if n <= 0 {
		return nil, nil
	}
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
		if len(out) == n {
			break
		}
	}
	return out, nil
}

// equal compares records, a nil slice being equal to an empty one (a
// backend may decode either).
func equal(a, b any) bool {
	return reflect.DeepEqual(canon(a), canon(b))
}

func canon(a any) any {
	if a == nil {
		return nil
	}
	return canonValue(reflect.ValueOf(a)).Interface()
}

func canonValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Slice:
		if v.Len() == 0 {
			return reflect.Zero(v.Type())
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		if flat(v.Type().Elem().Kind()) {
			reflect.Copy(out, v)
			return out
		}
		for i := range v.Len() {
			out.Index(i).Set(canonValue(v.Index(i)))
		}
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			if out.Field(i).CanSet() {
				out.Field(i).Set(canonValue(v.Field(i)))
			}
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(canonValue(v.Elem()))
		return p
	}
	return v
}

// flat reports whether values of kind k hold no slices or pointers.
func flat(k reflect.Kind) bool {
	return k >= reflect.Bool && k <= reflect.Complex128 || k == reflect.String
}

// expect compares a read with what it should return: want when ok, else an
// error wrapping store.ErrNotFound.
func expect(what string, got any, err error, want any, ok bool) error {
	switch {
	case !ok && err == nil:
		return fmt.Errorf("%s = %+v, want ErrNotFound", what, got)
	case !ok && !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%s: %v, want an error wrapping ErrNotFound", what, err)
	case ok && err != nil:
		return fmt.Errorf("%s: %v, want %+v", what, err, want)
	case ok && !equal(got, want):
		return fmt.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
	return nil
}

// expectScan compares a scan with what it should yield.
func expectScan[T any](what string, got []T, err error, want []T) error {
	if err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	if len(got) != len(want) || !equal(got, want) {
		return fmt.Errorf("%s: %d records, want %d:\n got %+v\nwant %+v", what, len(got), len(want), got, want)
	}
	return nil
}
