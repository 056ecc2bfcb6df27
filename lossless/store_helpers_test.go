package lossless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/badgerstore"
)

// testConfig is a config for tests in dir: chars4 counting unless the test
// asks for tiktoken (fast and deterministic).
func testConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.StoreDir = dir
	cfg.Tokenizer = "chars4"
	return cfg
}

// openTest opens an engine in a fresh directory and, when the test ends,
// checks the store's invariants and closes it.
func openTest(t testing.TB, mutate ...func(*Config)) *Engine {
	t.Helper()
	cfg := testConfig(t.TempDir())
	for _, f := range mutate {
		f(&cfg)
	}
	e, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !e.closed.Load() {
			if err := checkInvariants(e); err != nil {
				t.Errorf("invariants: %v", err)
			}
		}
		if err := e.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return e
}

// checkInvariants verifies, for every conversation: the record's counters
// match the stored messages; every message has its hash index entry and
// decodes; every item points at a stored message or summary; every message
// is reachable from the items (directly or through summaries); positions
// are unique and increasing (guaranteed by the key order).
func checkInvariants(e *Engine) error {
	return e.st.View(context.Background(), func(r store.Reader) error {
		txn := badgerstore.TxnOf(r)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{pConv}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var c convID
			copy(c[:], it.Item().Key()[1:])
			var rec convRecord
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &rec) }); err != nil {
				return err
			}
			if err := checkConv(r, c, rec); err != nil {
				return fmt.Errorf("conversation %s (%v): %w", c, rec.SessionIDs, err)
			}
		}
		return nil
	})
}

func checkConv(r store.Reader, c convID, rec convRecord) error {
	txn := badgerstore.TxnOf(r)
	msgs := map[uint64]bool{}
	var bytes int64
	mi := txn.NewIterator(badger.IteratorOptions{Prefix: convPrefix(pMsg, c)})
	for mi.Rewind(); mi.Valid(); mi.Next() {
		seq, _ := getU64(mi.Item().Key()[9:])
		v, err := mi.Item().ValueCopy(nil)
		if err != nil {
			mi.Close()
			return err
		}
		r, err := decodeMsg(v, true)
		if err != nil {
			mi.Close()
			return fmt.Errorf("message %d: %w", seq, err)
		}
		if _, err := core.ParseMessage(r.Raw); err != nil {
			mi.Close()
			return fmt.Errorf("message %d: %w", seq, err)
		}
		hv, err := getValue(txn, hashKey(c, r.Hash))
		if err != nil {
			mi.Close()
			return fmt.Errorf("message %d: hash index: %w", seq, err)
		}
		if got, _ := getU64(hv); got != seq {
			mi.Close()
			return fmt.Errorf("message %d: hash index says %d", seq, got)
		}
		if seq >= rec.NextSeq {
			mi.Close()
			return fmt.Errorf("message %d at or past nextSeq %d", seq, rec.NextSeq)
		}
		msgs[seq] = false
		bytes += int64(len(r.Raw))
	}
	mi.Close()
	if int64(len(msgs)) != rec.Messages || bytes != rec.Bytes {
		return fmt.Errorf("record says %d messages/%d bytes, store has %d/%d", rec.Messages, rec.Bytes, len(msgs), bytes)
	}
	items, err := readItems(context.Background(), r, c)
	if err != nil {
		return err
	}
	var reach func(r dag.Ref) error
	reach = func(r dag.Ref) error {
		if r.Kind == dag.RefMessage {
			seen, ok := msgs[r.Seq]
			if !ok {
				return fmt.Errorf("ref to missing message %d", r.Seq)
			}
			if seen {
				return fmt.Errorf("message %d reachable twice", r.Seq)
			}
			msgs[r.Seq] = true
			return nil
		}
		v, err := getValue(txn, summaryKey(c, r.ID))
		if err != nil {
			return fmt.Errorf("summary %q: %w", r.ID, err)
		}
		s, err := decodeSummary(v)
		if err != nil {
			return err
		}
		for _, src := range s.Sources {
			if err := reach(src); err != nil {
				return err
			}
		}
		return nil
	}
	for _, item := range items {
		if item.Pos >= rec.NextPos {
			return fmt.Errorf("item at %d past nextPos %d", item.Pos, rec.NextPos)
		}
		if err := reach(item.Ref); err != nil {
			return err
		}
	}
	for seq, seen := range msgs {
		if !seen {
			return fmt.Errorf("message %d unreachable from the context items", seq)
		}
	}
	return nil
}

// fileMessages returns the message objects of a transcript file, in order,
// as the file's bytes.
func fileMessages(t testing.TB, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := core.NewTranscriptReader(f, 0, 0, 0)
	var out [][]byte
	for {
		e, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == core.EntryMessage {
			out = append(out, e.Message.Raw())
		}
	}
	return out
}

// storedMessages returns the raw bytes of a session's stored messages.
func storedMessages(t testing.TB, e *Engine, agent, session string) [][]byte {
	t.Helper()
	var out [][]byte
	err := e.Messages(context.Background(), agent, session, func(_ uint64, m core.Message) error {
		out = append(out, m.Raw())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func countMessages(t testing.TB, e *Engine) int64 {
	t.Helper()
	st, err := e.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, a := range st.Agents {
		n += a.Messages
	}
	return n
}

func isConflict(err error) bool { return errors.Is(err, dag.ErrConflict) }
func isNotFound(err error) bool { return errors.Is(err, dag.ErrNotFound) }
