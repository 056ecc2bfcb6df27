package recall

import (
	"context"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"testing"

	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// scanStore counts the conversation records its readers' Conversations
// yield and calls after once each has been yielded.
type scanStore struct {
	store.Store
	read  int
	after func()
}

type scanReader struct {
	store.Reader
	s *scanStore
}

func (s *scanStore) View(ctx context.Context, fn func(store.Reader) error) error {
	return s.Store.View(ctx, func(r store.Reader) error { return fn(scanReader{r, s}) })
}

func (r scanReader) Conversations() iter.Seq2[store.ConvRecord, error] {
	return func(yield func(store.ConvRecord, error) bool) {
		for rec, err := range r.Reader.Conversations() {
			r.s.read++
			if !yield(rec, err) {
				return
			}
			if r.s.after != nil {
				r.s.after()
			}
		}
	}
}

// convStore returns a memstore holding n conversations of 3 messages (by
// their records) and 1 summary each.
func convStore(t *testing.T, n int) *scanStore {
	t.Helper()
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	err := st.Update(context.Background(), func(tx store.Tx) error {
		for i := range n {
			if err := tx.PutConversation(store.ConvID{byte(i + 1)}, store.Conversation{Agent: "a", NextSeq: 4, Summaries: 1}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return &scanStore{Store: st}
}

// TestStoreGenerationCancelled: the open-time scan of the conversation
// records counts every one, and a context cancelled during it stops it
// at the next record with the context's error.
func TestStoreGenerationCancelled(t *testing.T) {
	const n = 20
	st := convStore(t, n)
	gen, err := StoreGeneration(context.Background(), st)
	if err != nil || gen != n*4 || st.read != n {
		t.Fatalf("StoreGeneration = %d, %v after %d records; want %d after %d", gen, err, st.read, n*4, n)
	}

	st.read = 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st.after = func() {
		if st.read == 3 {
			cancel()
		}
	}
	_, err = StoreGeneration(ctx, st)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("StoreGeneration cancelled during its scan: %v, want context.Canceled", err)
	}
	if st.read >= n {
		t.Errorf("the cancelled scan read all %d records", st.read)
	}
}

// TestOpenBleveCancelled: an OpenBleve whose context is cancelled during
// its scan fails with the context's error and leaves no index.
func TestOpenBleveCancelled(t *testing.T) {
	st := convStore(t, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st.after = cancel
	dir := filepath.Join(t.TempDir(), "index")
	r, err := OpenBleve(ctx, dir, st, IndexOptions{})
	if err == nil {
		r.Close()
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("OpenBleve cancelled during its scan: %v, want context.Canceled", err)
	}
	if st.read >= 10 {
		t.Errorf("the cancelled scan read all %d records", st.read)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("index directory after a cancelled open: %v, want none", err)
	}
}
