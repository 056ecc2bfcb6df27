package lossless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// openShared opens n engines on one memstore, each through its own
// memstore.Shared handle: n "processes" sharing one store, as several
// gateways share one PostgreSQL database.
func openShared(t *testing.T, n int, mutate ...func(*config.Config)) []*Engine {
	t.Helper()
	ms := memstore.New()
	cfg := testConfig("")
	for _, f := range mutate {
		f(&cfg)
	}
	var out []*Engine
	for i := 0; i < n; i++ {
		e, err := OpenStore(context.Background(), cfg, memstore.Shared(ms), nil)
		if err != nil {
			t.Fatal(err)
		}
		if e.locker == nil {
			t.Fatal("an engine on memstore.Shared does not see a shared store")
		}
		t.Cleanup(func() { e.Close() })
		out = append(out, e)
	}
	return out
}

// TestOpenStoreOnPlainStoreIsNotShared: an engine on a store without
// store.Locker (memstore.New, as Badger) keeps its single-process mode.
func TestOpenStoreOnPlainStoreIsNotShared(t *testing.T) {
	e, err := OpenStore(context.Background(), testConfig(""), memstore.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.locker != nil {
		t.Fatal("an engine on a plain memstore treats it as shared")
	}
	if _, err := e.Ingest(context.Background(), core.IngestParams{SessionID: "s", Message: core.UserText("hello", 1)}); err != nil {
		t.Fatal(err)
	}
}

// sharedLog records the messages the engines acknowledged, by session.
type sharedLog struct {
	mu    sync.Mutex
	acked map[string][][]byte
}

func (l *sharedLog) add(session string, msgs ...core.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range msgs {
		l.acked[session] = append(l.acked[session], bytes.Clone(m.Raw()))
	}
}

// TestSharedStoreTwoEngines runs two engines ("processes") on one shared
// store at once: both create the same new sessions at the same moment,
// write to the same and to their own conversations (Ingest, IngestBatch,
// CommitTurn), and compact while they write (explicit Compact, which
// waits for the other engine's compaction, and the background compaction
// after each turn, which skips it). Afterwards every acknowledged message
// is stored once, byte for byte, and nothing else is; the store's check
// (dag.Check of every conversation, deep) finds nothing; no two
// compactions of one conversation ever ran at once; and each engine's
// Assemble shows the messages the other wrote last.
//
// Without the shared mode (the conversation's store lock and the re-read
// of its record under it) the engines overwrite each other's messages at
// the same sequence numbers, and the check fails.
func TestSharedStoreTwoEngines(t *testing.T) {
	testSharedEngines(t, openShared(t, 2, sharedTestConfig))
}

// sharedTestConfig makes conversations compact after a few turns.
func sharedTestConfig(c *config.Config) {
	c.FreshTailMessages = 6
	c.LeafChunkTokens = 600
	c.DefaultTokenBudget = 2000
}

// testSharedEngines is TestSharedStoreTwoEngines on engines open on one
// shared store (pgstore_test.go runs it on PostgreSQL).
func testSharedEngines(t *testing.T, engines []*Engine) {
	ctx := context.Background()

	// No two compactions of one conversation at once, across engines.
	var hookMu sync.Mutex
	inFlight := map[convID]int{}
	overlap, runs := 0, 0
	hook := func(e *Engine, c convID) func() {
		hookMu.Lock()
		inFlight[c]++
		runs++
		if inFlight[c] > 1 {
			overlap++
		}
		hookMu.Unlock()
		time.Sleep(time.Millisecond) // widen the window another run would hit
		return func() {
			hookMu.Lock()
			inFlight[c]--
			hookMu.Unlock()
		}
	}
	for _, e := range engines {
		e.cfg.hooks.compactRun = hook
	}

	log := &sharedLog{acked: map[string][][]byte{}}
	shared := []string{"shared-0", "shared-1", "shared-2"}
	const rounds = 40
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	start := make(chan struct{})
	for ei, e := range engines {
		// Writers: per engine, two per shared session and one on its own.
		sessions := append(append(append([]string(nil), shared...), shared...), fmt.Sprintf("own-%d", ei))
		for wi, sid := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start // both engines create the sessions at once
				for i := 0; i < rounds; i++ {
					ts := int64(1_700_000_000_000 + i*1000)
					tag := fmt.Sprintf("e%d w%d %s #%d", ei, wi, sid, i)
					text := tag + ": " + strings.Repeat("words of the shared store test ", 4+i%5)
					var err error
					switch i % 3 {
					case 0:
						m := core.UserText(text, ts)
						var r core.IngestResult
						if r, err = e.Ingest(ctx, core.IngestParams{SessionID: sid, Message: m}); err == nil {
							if !r.Ingested {
								err = fmt.Errorf("%s: a new message was not ingested", tag)
							}
							log.add(sid, m)
						}
					case 1:
						msgs := []core.Message{core.UserText(text+" (q)", ts), core.AssistantText(text+" (a)", ts+1)}
						if err = e.AfterTurn(ctx, core.AfterTurnParams{SessionID: sid, Messages: msgs, TokenBudget: 2000}); err == nil {
							log.add(sid, msgs...)
						}
					case 2:
						msgs := []core.Message{core.UserText(text+" (turn q)", ts), core.AssistantText(text+" (turn a)", ts+1)}
						var r core.CommitTurnResult
						r, err = e.CommitTurn(ctx, core.CommitTurnParams{AdvancementKey: tag, SessionID: sid, Messages: msgs})
						if err == nil {
							if r.Status != core.CommitCommitted {
								err = fmt.Errorf("%s: commit status %q", tag, r.Status)
							}
							log.add(sid, msgs...)
						}
					}
					if err != nil {
						fail(fmt.Errorf("engine %d, %s: %w", ei, tag, err))
						return
					}
				}
			}()
		}
		// A compactor per engine, on the shared sessions, while they are
		// written.
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < rounds/2; i++ {
				sid := shared[i%len(shared)]
				_, err := e.Compact(ctx, core.CompactParams{SessionID: sid, TokenBudget: 1500, Force: i%2 == 0})
				if err != nil && !errors.Is(err, core.ErrUnknownSession) {
					fail(fmt.Errorf("engine %d: compact %s: %w", ei, sid, err))
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, e := range engines {
		e.waitBackground()
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// The last word on each shared session from each engine: the other one
	// must see it in its next Assemble (its cached window is stale).
	for ei, e := range engines {
		for _, sid := range shared {
			m := core.UserText(fmt.Sprintf("last word of engine %d on %s", ei, sid), 1_800_000_000_000+int64(ei))
			if _, err := e.Ingest(ctx, core.IngestParams{SessionID: sid, Message: m}); err != nil {
				t.Fatal(err)
			}
			log.add(sid, m)
		}
	}
	for ei, e := range engines {
		for _, sid := range shared {
			res, err := e.Assemble(ctx, core.AssembleParams{SessionID: sid, TokenBudget: 100_000})
			if err != nil {
				t.Fatal(err)
			}
			var all []byte
			for _, m := range res.Messages {
				all = append(all, m.Raw()...)
			}
			for other := range engines {
				want := fmt.Sprintf("last word of engine %d on %s", other, sid)
				if !bytes.Contains(all, []byte(want)) {
					t.Errorf("engine %d's assemble of %s misses %q", ei, sid, want)
				}
			}
		}
	}

	// Every acknowledged message once, byte for byte, nothing else; read
	// through each engine.
	for ei, e := range engines {
		for sid, want := range log.acked {
			count := map[string]int{}
			for _, raw := range want {
				count[string(raw)]++
			}
			got := 0
			err := e.Messages(ctx, "", sid, func(seq uint64, m core.Message) error {
				got++
				k := string(m.Raw())
				if count[k] == 0 {
					return fmt.Errorf("message %d of %s was never acknowledged, or is there twice: %.80s", seq, sid, k)
				}
				count[k]--
				return nil
			})
			if err != nil {
				t.Fatalf("engine %d: %v", ei, err)
			}
			if got != len(want) {
				t.Errorf("engine %d: session %s has %d messages, %d acknowledged", ei, sid, got, len(want))
			}
		}
	}
	res, err := engines[0].Check(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 || res.Conversations != len(shared)+len(engines) {
		t.Fatalf("check: %d conversations (want %d), problems %+v", res.Conversations, len(shared)+len(engines), res.Problems)
	}
	if err := checkInvariants(engines[0]); err != nil {
		t.Fatal(err)
	}
	infos, err := engines[1].Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	summaries := int64(0)
	for _, in := range infos {
		summaries += in.Summaries
	}
	hookMu.Lock()
	defer hookMu.Unlock()
	if overlap > 0 {
		t.Errorf("%d of %d compactions ran while another compacted the same conversation", overlap, runs)
	}
	if summaries == 0 {
		t.Errorf("no compaction made a summary (%d runs): the test compacts nothing", runs)
	}
	t.Logf("%d compactions, %d summaries, %d conversations", runs, summaries, len(infos))
}

// TestSharedLateCommit: a write of another process that commits after that
// process lost its lock (killed mid-commit: the server still commits what
// it had received) lands between this engine's read of the record under
// the lock and its write. The write must not reuse the late commit's
// sequence number (the attempt fails with ErrConcurrentWrite); the engine
// runs it again itself, so the caller sees success, and it stores the
// message beside the late one, both coming back byte for byte.
func TestSharedLateCommit(t *testing.T) {
	for _, commit := range []bool{false, true} {
		t.Run(map[bool]string{false: "ingest", true: "commit turn"}[commit], func(t *testing.T) { testSharedLateCommit(t, commit) })
	}
}

// testSharedLateCommit is TestSharedLateCommit with B's write an Ingest,
// or a CommitTurn (commit).
func testSharedLateCommit(t *testing.T, commit bool) {
	es := openShared(t, 2)
	a, b := es[0], es[1]
	ctx := context.Background()
	first := core.UserText("first, from A", 1)
	if _, err := a.Ingest(ctx, core.IngestParams{SessionID: "late", Message: first}); err != nil {
		t.Fatal(err)
	}
	late := core.AssistantText("late commit of a killed process", 2)
	fromB := core.UserText("from B, after the late commit", 3)
	fired := false
	b.cfg.hooks.lockConv = func(e *Engine, c convID) {
		if e != b || fired {
			return
		}
		fired = true
		// A's orphaned transaction commits now, without A's lock.
		ps, err := a.prepare(ctx, []core.Message{late}, false)
		if err != nil {
			t.Error(err)
			return
		}
		err = a.st.Update(ctx, func(tx store.Tx) error {
			rec, err := tx.Conversation(c)
			if err != nil {
				return err
			}
			for i := range ps {
				if err := writeMessage(tx, c, &rec, &ps[i]); err != nil {
					return err
				}
			}
			return tx.PutConversation(c, rec)
		})
		if err != nil {
			t.Error(err)
		}
	}
	if commit {
		r, err := b.CommitTurn(ctx, core.CommitTurnParams{SessionID: "late", AdvancementKey: "k1", Messages: []core.Message{fromB}})
		if err != nil || r.Status != core.CommitCommitted {
			t.Fatalf("B's turn commit over the late commit: %+v, %v (a conflict must be retried inside the engine)", r, err)
		}
		if ok, seqs, err := b.TurnCommitted(ctx, "late", "", "k1"); err != nil || !ok || len(seqs) != 1 || seqs[0] != 3 {
			t.Fatalf("the committed turn: %v %v %v; want message 3", ok, seqs, err)
		}
	} else if r, err := b.Ingest(ctx, core.IngestParams{SessionID: "late", Message: fromB}); err != nil || !r.Ingested {
		t.Fatalf("B's ingest over the late commit: %+v, %v (a conflict must be retried inside the engine)", r, err)
	}
	if !fired {
		t.Fatal("the hook never ran")
	}
	var got []string
	if err := a.Messages(ctx, "", "late", func(_ uint64, m core.Message) error {
		got = append(got, string(m.Raw()))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{string(first.Raw()), string(late.Raw()), string(fromB.Raw())}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSharedReplaceLateCommit: a compaction's Replace and a rotation's
// session mapping write the conversation record too; a late commit of
// another process between their read under the lock and their write must
// not be rolled back by it (its sequence numbers reused: a message lost).
// The Replace fails with dag.ErrConflict (the compactor plans again), and
// every message comes back byte for byte afterwards.
func TestSharedReplaceLateCommit(t *testing.T) {
	testReplaceLateCommit(t, openShared(t, 2))
}

// testReplaceLateCommit is TestSharedReplaceLateCommit on two engines of
// one shared store (memstore.Shared, or PostgreSQL).
func testReplaceLateCommit(t *testing.T, es []*Engine) {
	a, b := es[0], es[1]
	ctx := context.Background()
	var sent []core.Message
	for i := 0; i < 4; i++ {
		m := core.UserText(fmt.Sprintf("message %d from A", i), int64(i+1))
		if _, err := a.Ingest(ctx, core.IngestParams{SessionID: "rl", Message: m}); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, m)
	}
	conv, err := a.Conversation(ctx, "", "rl")
	if err != nil {
		t.Fatal(err)
	}
	items, err := conv.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	late := core.AssistantText("late commit of a killed process", 10)
	armed := true
	a.cfg.hooks.lockConv = func(e *Engine, c convID) {
		if e != a || !armed {
			return
		}
		armed = false
		ps, err := b.prepare(ctx, []core.Message{late}, false)
		if err != nil {
			t.Error(err)
			return
		}
		if err := b.st.Update(ctx, func(tx store.Tx) error {
			rec, err := tx.Conversation(c)
			if err != nil {
				return err
			}
			if err := writeMessage(tx, c, &rec, &ps[0]); err != nil {
				return err
			}
			return tx.PutConversation(c, rec)
		}); err != nil {
			t.Error(err)
		}
	}
	s := dag.Summary{ID: "sum-late", Kind: dag.KindLeaf, Text: "two messages", Sources: []dag.Ref{items[0].Ref, items[1].Ref}}
	if err := conv.Replace(ctx, items[:2], s, dag.Item{Tokens: 1}); !errors.Is(err, dag.ErrConflict) || !errors.Is(err, ErrConcurrentWrite) {
		t.Fatalf("replace over a late commit: %v, want dag.ErrConflict wrapping ErrConcurrentWrite", err)
	}
	if armed {
		t.Fatal("the hook never ran")
	}
	next := core.UserText("after the late commit", 20)
	if _, err := a.Ingest(ctx, core.IngestParams{SessionID: "rl", Message: next}); err != nil {
		t.Fatal(err)
	}
	want := append(append(sent, late), next)
	var got []string
	if err := a.Messages(ctx, "", "rl", func(_ uint64, m core.Message) error {
		got = append(got, string(m.Raw()))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var ws []string
	for _, m := range want {
		ws = append(ws, string(m.Raw()))
	}
	if strings.Join(got, "\n") != strings.Join(ws, "\n") {
		t.Fatalf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(ws, "\n"))
	}
}
