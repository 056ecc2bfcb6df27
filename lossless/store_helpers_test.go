package lossless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/transcript"
	"github.com/lossless-engine/contextengine/store"
)

// testConfig is a config for tests in dir: chars4 counting unless the test
// asks for tiktoken (fast and deterministic).
func testConfig(dir string) config.Config {
	cfg := config.Default()
	cfg.StoreDir = dir
	cfg.Tokenizer = "chars4"
	return cfg
}

// openTest opens an engine in a fresh directory and, when the test ends,
// checks the store's invariants and closes it.
func openTest(t testing.TB, mutate ...func(*config.Config)) *Engine {
	t.Helper()
	return openTestHooked(t, testHooks{}, mutate...)
}

// openTestHooked is openTest with the tests' seams h.
func openTestHooked(t testing.TB, h testHooks, mutate ...func(*config.Config)) *Engine {
	t.Helper()
	cfg := testConfig(t.TempDir())
	for _, f := range mutate {
		f(&cfg)
	}
	e, err := openHooked(context.Background(), cfg, h)
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
		for cr, err := range r.Conversations() {
			if err != nil {
				return err
			}
			if err := checkConv(r, cr.ID, cr.Conversation); err != nil {
				return fmt.Errorf("conversation %s (%v): %w", cr.ID, cr.SessionIDs, err)
			}
		}
		return nil
	})
}

func checkConv(r store.Reader, c convID, rec convRecord) error {
	msgs := map[uint64]bool{}
	var bytes int64
	for m, err := range r.Messages(c, 0, true) {
		if err != nil {
			return fmt.Errorf("message after %d: %w", len(msgs), err)
		}
		seq := m.Seq
		if _, err := core.ParseMessage(m.Raw); err != nil {
			return fmt.Errorf("message %d: %w", seq, err)
		}
		got, err := r.SeqByHash(c, m.Hash)
		if err != nil {
			return fmt.Errorf("message %d: hash index: %w", seq, err)
		}
		if got != seq {
			return fmt.Errorf("message %d: hash index says %d", seq, got)
		}
		if seq >= rec.NextSeq {
			return fmt.Errorf("message %d at or past nextSeq %d", seq, rec.NextSeq)
		}
		msgs[seq] = false
		bytes += int64(len(m.Raw))
	}
	if int64(len(msgs)) != rec.Messages || bytes != rec.Bytes {
		return fmt.Errorf("record says %d messages/%d bytes, store has %d/%d", rec.Messages, rec.Bytes, len(msgs), bytes)
	}
	items, err := readItems(context.Background(), r, c)
	if err != nil {
		return err
	}
	r2 := r
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
		s, err := r2.Summary(c, r.ID)
		if err != nil {
			return fmt.Errorf("summary %q: %w", r.ID, err)
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

// corruptMessageBody makes message seq of c a record whose header decodes
// and whose body does not, through the store interface: its backend's
// encoding (store.MessageEncoder) with an uncompressed body marked as
// compressed (badgerstore's record byte 2), or a compressed body's last
// byte (its checksum) flipped. Reading the body then fails with
// store.ErrCorrupt; its header still reads.
func corruptMessageBody(ctx context.Context, e *Engine, c convID, seq uint64) error {
	enc, ok := e.st.(store.MessageEncoder)
	if !ok {
		return fmt.Errorf("store %T has no MessageEncoder", e.st)
	}
	return e.st.Update(ctx, func(tx store.Tx) error {
		m, err := tx.Message(c, seq)
		if err != nil {
			return err
		}
		m.Encoded = enc.EncodeMessage(m)
		switch m.Encoded[0] {
		case 1:
			m.Encoded[0] = 2
		case 2:
			m.Encoded[len(m.Encoded)-1] ^= 0xff
		default:
			return fmt.Errorf("message %d: record byte %d", seq, m.Encoded[0])
		}
		return tx.PutMessage(c, m)
	})
}

// dumpRecords returns every record of e's store that the store interface
// can enumerate, keyed by a description of the record: the format record,
// names, conversations with their messages, key index, large references,
// items, summaries, order positions and host entries, the entry maps of
// every session id a conversation has had, checkpoints, subagents, their
// aliases, fork snapshots and links. Committed turns and entry indexes by
// entry id are not enumerable and left out. With zeroTimes the
// conversation records' wall-clock times are zeroed. The records scoped to
// each conversation of also (one the caller saw before it was deleted) are
// dumped too, whether or not its record is left.
func dumpRecords(t testing.TB, e *Engine, zeroTimes bool, also ...store.ConvRecord) map[string]string {
	t.Helper()
	out := map[string]string{}
	put := func(v any, k string, a ...any) { out[fmt.Sprintf(k, a...)] = fmt.Sprintf("%+v", v) }
	err := e.st.View(context.Background(), func(r store.Reader) error {
		if m, err := r.Meta(); err == nil {
			put(m, "meta")
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		for n, err := range r.Names() {
			if err != nil {
				return err
			}
			put(n.Conv, "name %s %c %s", n.Agent, n.Kind, n.Value)
		}
		convs := map[convID]store.ConvRecord{}
		for _, cr := range also {
			convs[cr.ID] = cr
		}
		for cr, err := range r.Conversations() {
			if err != nil {
				return err
			}
			rec := cr.Conversation
			if zeroTimes {
				rec.Created, rec.Updated = 0, 0
			}
			put(rec, "conv %s", cr.ID)
			if old, ok := convs[cr.ID]; ok {
				cr.SessionIDs = append(cr.SessionIDs, old.SessionIDs...)
			}
			convs[cr.ID] = cr
		}
		ids := slices.SortedFunc(maps.Keys(convs), func(a, b convID) int { return bytes.Compare(a[:], b[:]) })
		for _, c := range ids {
			rec := convs[c].Conversation
			for m, err := range r.Messages(c, 0, true) {
				if err != nil {
					return err
				}
				m.Raw, m.Encoded = nil, nil
				raw, err := r.Message(c, m.Seq)
				if err != nil {
					return err
				}
				put(fmt.Sprintf("%+v %s", m, raw.Raw), "msg %s %d", c, m.Seq)
				seq, err := r.SeqByHash(c, m.Hash)
				if err != nil {
					return err
				}
				put(seq, "hash %s %x", c, m.Hash)
				if ref, err := r.Large(c, m.Seq); err == nil {
					put(string(ref), "large %s %d", c, m.Seq)
				} else if !errors.Is(err, store.ErrNotFound) {
					return err
				}
			}
			for it, err := range r.Items(c, 0, ^uint64(0), false) {
				if err != nil {
					return err
				}
				put(it, "item %s %d", c, it.Pos)
			}
			for s, err := range r.Summaries(c) {
				if err != nil {
					return err
				}
				put(s, "summary %s %s", c, s.ID)
			}
			for p, err := range r.Orders(c) {
				if err != nil {
					return err
				}
				put(p.Value, "order %s %d", c, p.Key)
			}
			for h, err := range r.HostEntries(c, 0) {
				if err != nil {
					return err
				}
				put(h.HostEntry, "host entry %s %d", c, h.Index)
			}
			for _, sid := range rec.SessionIDs {
				tag := store.FileTag(transcript.FileTag(sid))
				for _, m := range []store.EntryMap{store.EntriesCurrent, store.EntriesPrevious} {
					for p, err := range r.Entries(c, tag, m, 0) {
						if err != nil {
							return err
						}
						put(p.Seq, "entry %s %x %c %d", c, tag, m, p.Index)
					}
				}
				if from, err := r.ReconcileFrom(c, tag); err == nil {
					put(from, "reconcile %s %x", c, tag)
				} else if !errors.Is(err, store.ErrNotFound) {
					return err
				}
			}
			for l, err := range r.SubagentLinks(c) {
				if err != nil {
					return err
				}
				put(l.ChildKey, "sublink %s %x", c, l.ID)
			}
		}
		for cp, err := range r.Checkpoints() {
			if err != nil {
				return err
			}
			if cp.Host != nil {
				put(*cp.Host, "checkpoint host %s %s", cp.Agent, cp.HostConv)
			} else {
				put(*cp.File, "checkpoint file %s %s", cp.Agent, cp.Path)
			}
		}
		for s, err := range r.Subagents() {
			if err != nil {
				return err
			}
			put(s.Subagent, "subagent %x", s.ID)
			if s.ChildSessionID != "" {
				if id, err := r.SubagentByChild(s.Agent, s.ChildSessionID); err == nil {
					put(id, "subalias %s %s", s.Agent, s.ChildSessionID)
				}
			}
		}
		for s, err := range r.ForkSnapshots() {
			if err != nil {
				return err
			}
			for it, err := range r.ForkItems(s) {
				if err != nil {
					return err
				}
				put(it, "fork %x %d", s, it.Pos)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
