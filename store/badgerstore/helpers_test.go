package badgerstore

import (
	"context"
	"errors"
	"testing"

	"github.com/lossless-engine/contextengine/store"
)

// openTest opens a store in a fresh t.TempDir() (unless o.Dir is set) and,
// when the test ends, checks that every record it holds decodes (verify)
// and closes it.
func openTest(t testing.TB, o Options) *Store {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			verify(t, s)
		}
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// verify reads every record family of s through the Reader: a record that
// does not decode fails the test. Tests that corrupt records on purpose
// delete them before they end.
func verify(t testing.TB, s *Store) {
	t.Helper()
	err := s.View(context.Background(), func(r store.Reader) error {
		if _, err := r.Meta(); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		var convs []store.ConvID
		for c, err := range r.Conversations() {
			if err != nil {
				return err
			}
			convs = append(convs, c.ID)
		}
		for _, err := range r.Names() {
			if err != nil {
				return err
			}
		}
		for _, err := range r.Checkpoints() {
			if err != nil {
				return err
			}
		}
		var subs []store.SubID
		for sub, err := range r.Subagents() {
			if err != nil {
				return err
			}
			subs = append(subs, sub.ID)
		}
		for sub, err := range r.ForkSnapshots() {
			if err != nil {
				return err
			}
			subs = append(subs, sub)
		}
		for _, sub := range subs {
			for _, err := range r.ForkItems(sub) {
				if err != nil {
					return err
				}
			}
		}
		for _, c := range convs {
			for _, err := range r.Messages(c, 0, true) {
				if err != nil {
					return err
				}
			}
			for _, err := range r.Items(c, 0, ^uint64(0), false) {
				if err != nil {
					return err
				}
			}
			for _, err := range r.Summaries(c) {
				if err != nil {
					return err
				}
			}
			for _, err := range r.Orders(c) {
				if err != nil {
					return err
				}
			}
			for _, err := range r.SubagentLinks(c) {
				if err != nil {
					return err
				}
			}
			for _, err := range r.HostEntries(c, 0) {
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrClosed) {
		t.Errorf("verify: %v", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr fails unless err wraps target.
func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
	}
}

// collect gathers a scan's values, failing on an error.
func collect[T any](t testing.TB, seq func(func(T, error) bool)) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		out = append(out, v)
	}
	return out
}

func update(t testing.TB, s *Store, fn func(tx store.Tx) error) {
	t.Helper()
	must(t, s.Update(context.Background(), fn))
}

func view(t testing.TB, s *Store, fn func(r store.Reader) error) {
	t.Helper()
	must(t, s.View(context.Background(), fn))
}
