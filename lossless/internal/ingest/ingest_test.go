package ingest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// fixture is an in-memory store with the engine's side of a write: one
// conversation's record, read under no lock (the tests write alone).
type fixture struct {
	st *memstore.Store
}

func newFixture() *fixture { return &fixture{st: memstore.New()} }

// resolve is ResolveTx in one transaction.
func (f *fixture) resolve(t testing.TB, agent, sessionID, sessionKey string, create bool) (Resolution, error) {
	t.Helper()
	var res Resolution
	err := f.st.Update(context.Background(), func(tx store.Tx) error {
		var err error
		res, err = ResolveTx(tx, agent, sessionID, sessionKey, create)
		return err
	})
	return res, err
}

// record reads c's record.
func (f *fixture) record(t testing.TB, c store.ConvID) store.Conversation {
	t.Helper()
	var rec store.Conversation
	err := f.st.View(context.Background(), func(r store.Reader) error {
		var err error
		rec, err = r.Conversation(c)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// write prepares msgs and stores them in the conversation of session s
// (created if new), as the engine's ingest door does; it returns the
// conversation and the sequence numbers of the messages stored.
func (f *fixture) write(t testing.TB, s string, msgs ...core.Message) (store.ConvID, []uint64) {
	t.Helper()
	ctx := context.Background()
	res, err := f.resolve(t, "main", s, "", true)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := Prepare(ctx, Preparer{Counter: core.Chars4{}, Counts: NewTokenCache(), LargeContentTokens: 1000}, msgs, false)
	if err != nil {
		t.Fatal(err)
	}
	rec := f.record(t, res.Conv)
	stored, err := StoreMessages(ctx, f.st, res.Conv, &rec, false, ps)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.record(t, res.Conv); got.NextSeq != rec.NextSeq || got.Messages != rec.Messages {
		t.Fatalf("the record handed back (%+v) is not the stored one (%+v)", rec, got)
	}
	var seqs []uint64
	for _, p := range stored {
		seqs = append(seqs, p.Seq)
	}
	return res.Conv, seqs
}

// hashOf is the test's message key: SHA-256 of the bytes, first 16.
func hashOf(raw []byte) store.Hash {
	s := sha256.Sum256(raw)
	var h store.Hash
	copy(h[:], s[:16])
	return h
}

func msg(t testing.TB, raw string) core.Message {
	t.Helper()
	m, err := core.ParseMessage([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func user(t testing.TB, text string, ts int) core.Message {
	return msg(t, fmt.Sprintf(`{"role":"user","content":%q,"timestamp":%d}`, text, ts))
}

// TestStoreMessagesDedup: a batch is stored once, a repeat within it and
// a second delivery store nothing, sequence numbers and order positions
// run on, and what StoreMessages returns (what the engine indexes) is
// exactly the new ones.
func TestStoreMessagesDedup(t *testing.T) {
	ctx := context.Background()
	f := newFixture()
	a, b := user(t, "a", 1), user(t, "b", 2)
	_, seqs := f.write(t, "s1", a, b, a)
	if fmt.Sprint(seqs) != "[1 2]" {
		t.Fatalf("first batch stored %v, want [1 2]", seqs)
	}
	c, seqs := f.write(t, "s1", b, user(t, "c", 3))
	if fmt.Sprint(seqs) != "[3]" {
		t.Fatalf("second batch stored %v, want [3]", seqs)
	}
	err := f.st.View(ctx, func(r store.Reader) error {
		rec, err := r.Conversation(c)
		if err != nil {
			return err
		}
		if rec.Messages != 3 || rec.NextSeq != 4 || rec.NextPos != 4*(1<<16) {
			t.Errorf("record %+v, want 3 messages, next 4 at position 4<<16", rec)
		}
		seq, err := r.SeqByHash(c, hashOf(b.Raw()))
		if err != nil || seq != 2 {
			t.Errorf("b's key: seq %d, %v; want 2", seq, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStoreMessagesSeqs: every pending message gets its sequence number,
// the new ones, those already stored and the repeats within the batch.
func TestStoreMessagesSeqs(t *testing.T) {
	ctx := context.Background()
	f := newFixture()
	a, b := user(t, "a", 1), user(t, "b", 2)
	c, _ := f.write(t, "s", a)
	ps, err := Prepare(ctx, Preparer{Counter: core.Chars4{}}, []core.Message{b, a, b}, false)
	if err != nil {
		t.Fatal(err)
	}
	rec := f.record(t, c)
	stored, err := StoreMessages(ctx, f.st, c, &rec, false, ps)
	if err != nil || len(stored) != 1 {
		t.Fatalf("stored %d, %v; want 1", len(stored), err)
	}
	if got := []uint64{ps[0].Seq, ps[1].Seq, ps[2].Seq}; fmt.Sprint(got) != "[2 1 2]" {
		t.Errorf("seqs %v, want [2 1 2]", got)
	}
}

// TestStoreMessagesStaleBase: a write based on a record older than the
// store's (on a shared store: another process wrote meanwhile) is refused
// with ErrConcurrentWrite and stores nothing; on a store of one process a
// base whose next message is stored is refused too (store.ErrCorrupt).
func TestStoreMessagesStaleBase(t *testing.T) {
	ctx := context.Background()
	f := newFixture()
	c, _ := f.write(t, "s", user(t, "a", 1))
	stale := f.record(t, c)
	f.write(t, "s", user(t, "b", 2))
	for _, shared := range []bool{true, false} {
		ps, err := Prepare(ctx, Preparer{Counter: core.Chars4{}}, []core.Message{user(t, "c", 3)}, false)
		if err != nil {
			t.Fatal(err)
		}
		rec := stale
		stored, err := StoreMessages(ctx, f.st, c, &rec, shared, ps)
		want := store.ErrCorrupt
		if shared {
			want = ErrConcurrentWrite
		}
		if !errors.Is(err, want) || len(stored) != 0 {
			t.Errorf("shared %v: stored %d, %v; want %v", shared, len(stored), err, want)
		}
		if !shared && isWriteConflict(err) {
			t.Errorf("a stale record of one process is retried: %v", err)
		}
	}
	if got := f.record(t, c); got.Messages != 2 {
		t.Errorf("%d messages stored, want 2", got.Messages)
	}
}

// TestValidateRefused: an invalid message refuses the whole batch, an
// empty or invalid session id refuses the call before anything is
// written.
func TestValidateRefused(t *testing.T) {
	big := user(t, strings.Repeat("x", 200), 1)
	if err := ValidateAll([]core.Message{user(t, "ok", 1), big}, 100); !errors.Is(err, core.ErrTooLarge) || !strings.Contains(err.Error(), "message 1") {
		t.Errorf("oversized message: %v, want ErrTooLarge of message 1", err)
	}
	if err := ValidateAll([]core.Message{{}}, 100); !errors.Is(err, core.ErrInvalidMessage) {
		t.Errorf("empty message: %v, want ErrInvalidMessage", err)
	}
	ctx := context.Background()
	if err := CheckResolve(ctx, "main", "", ""); !errors.Is(err, core.ErrEmptySessionID) {
		t.Errorf("empty session id: %v, want ErrEmptySessionID", err)
	}
	if err := CheckResolve(ctx, "main", "s", "k\x00"); !errors.Is(err, core.ErrInvalidSessionID) || !strings.Contains(err.Error(), "sessionKey") {
		t.Errorf("NUL in the session key: %v, want ErrInvalidSessionID naming sessionKey", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := CheckResolve(done, "main", "s", ""); !errors.Is(err, context.Canceled) {
		t.Errorf("a done context: %v", err)
	}
}

// TestResolveTx: a new session makes its conversation (keyed by its
// session key when it has one), an unknown one is refused without create,
// a new session id of a known key joins its conversation (AddID) and a
// session id mapped elsewhere moves (Repointed, the old conversation
// Stale).
func TestResolveTx(t *testing.T) {
	f := newFixture()
	if _, err := f.resolve(t, "main", "s1", "", false); !errors.Is(err, core.ErrUnknownSession) {
		t.Fatalf("unknown session: %v, want ErrUnknownSession", err)
	}
	r1, err := f.resolve(t, "main", "s1", "agent:main:k", true)
	if err != nil || r1.AddID || r1.Repointed {
		t.Fatalf("new session: %+v, %v", r1, err)
	}
	if r1.Conv != records.NewConvID("main", "k:agent:main:k") {
		t.Errorf("conversation %s, not the id of its key", r1.Conv)
	}
	if rec := f.record(t, r1.Conv); rec.Agent != "main" || rec.Key != "agent:main:k" || fmt.Sprint(rec.SessionIDs) != "[s1]" || rec.NextSeq != 1 {
		t.Errorf("new record %+v", rec)
	}
	if r, err := f.resolve(t, "main", "s1", "agent:main:k", false); err != nil || r != (Resolution{Conv: r1.Conv}) {
		t.Errorf("again: %+v, %v", r, err)
	}
	r2, err := f.resolve(t, "main", "s2", "agent:main:k", false)
	if err != nil || r2.Conv != r1.Conv || !r2.AddID || r2.Repointed {
		t.Errorf("a new session id of the key: %+v, %v; want AddID to %s", r2, err, r1.Conv)
	}
	other, err := f.resolve(t, "main", "s3", "", true)
	if err != nil || other.Conv == r1.Conv {
		t.Fatalf("another session: %+v, %v", other, err)
	}
	r3, err := f.resolve(t, "main", "s3", "agent:main:k", false)
	if err != nil || r3.Conv != r1.Conv || !r3.AddID || !r3.Repointed || r3.Stale != other.Conv {
		t.Errorf("s3 under the key: %+v, %v; want it moved from %s", r3, err, other.Conv)
	}
	if r, err := f.resolve(t, "other", "s1", "", false); !errors.Is(err, core.ErrUnknownSession) {
		t.Errorf("another agent's session: %+v, %v", r, err)
	}
	// The state an older version could leave: the name mapped, the record
	// without the session id; resolving it asks for the id to be added.
	orphan := records.NewConvID("main", "s:old")
	err = f.st.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.PutConversation(orphan, store.Conversation{Agent: "main", NextSeq: 1, NextPos: records.PosStep}); err != nil {
			return err
		}
		return tx.PutName(store.Name{Agent: "main", Kind: store.NameSessionID, Value: "old"}, orphan)
	})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := f.resolve(t, "main", "old", "", false); err != nil || r != (Resolution{Conv: orphan, AddID: true}) {
		t.Errorf("a record without its session id: %+v, %v; want AddID", r, err)
	}
}

// TestAddSessionID: a session id is added once, with the key when the
// record has none.
func TestAddSessionID(t *testing.T) {
	f := newFixture()
	r, err := f.resolve(t, "main", "s1", "", true)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		err := f.st.Update(context.Background(), func(tx store.Tx) error {
			rec, changed, err := AddSessionID(tx, r.Conv, "s2", "agent:main:k")
			if err == nil && (changed != want || fmt.Sprint(rec.SessionIDs) != "[s1 s2]") {
				t.Errorf("call %d: changed %v, ids %v", i, changed, rec.SessionIDs)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if rec := f.record(t, r.Conv); fmt.Sprint(rec.SessionIDs) != "[s1 s2]" || rec.Key != "agent:main:k" {
		t.Errorf("stored %+v", rec)
	}
	err = f.st.Update(context.Background(), func(tx store.Tx) error {
		_, _, err := AddSessionID(tx, records.NewConvID("main", "none"), "s", "")
		return err
	})
	if !errors.Is(err, core.ErrNotFound) {
		t.Errorf("a missing conversation: %v, want ErrNotFound", err)
	}
}

// TestLargeFlagged: a message over LargeContentTokens gets its reference
// message and the reference's count.
func TestLargeFlagged(t *testing.T) {
	ps, err := Prepare(context.Background(), Preparer{Counter: core.Chars4{}, LargeContentTokens: 10},
		[]core.Message{user(t, strings.Repeat("x", 400), 1), user(t, "hi", 2)}, true)
	if err != nil {
		t.Fatal(err)
	}
	if ps[0].Flags&store.FlagLarge == 0 || ps[0].Ref == nil || ps[0].RefTokens == 0 {
		t.Errorf("large message: flags %b, ref %d bytes, %d tokens", ps[0].Flags, len(ps[0].Ref), ps[0].RefTokens)
	}
	if ps[1].Flags != store.FlagHeartbeat || ps[1].Ref != nil {
		t.Errorf("small heartbeat: flags %b, ref %q", ps[1].Flags, ps[1].Ref)
	}
}

// constCounter counts every text as n tokens.
type constCounter struct{ n int }

func (c constCounter) Name() string { return "const" }

func (c constCounter) CountText(string) int { return c.n }

// TestTokenCache: a count is cached by the message's key and used for the
// same bytes again, whatever the counter says then.
func TestTokenCache(t *testing.T) {
	ctx := context.Background()
	cache := NewTokenCache()
	m := user(t, "hello", 1)
	ps, err := Prepare(ctx, Preparer{Counter: constCounter{7}, Counts: cache, LargeContentTokens: 1000}, []core.Message{m}, false)
	if err != nil {
		t.Fatal(err)
	}
	first := ps[0].Tokens
	if n, ok := cache.Get(hashOf(m.Raw())); !ok || n != first {
		t.Errorf("cached %d, %v; want %d", n, ok, first)
	}
	ps, err = Prepare(ctx, Preparer{Counter: constCounter{1000}, Counts: cache, LargeContentTokens: 1000}, []core.Message{m}, false)
	if err != nil || ps[0].Tokens != first {
		t.Errorf("a repeat counted %d, %v; want the cached %d", ps[0].Tokens, err, first)
	}
	if n, ok := (*TokenCache)(nil).Get(hashOf(m.Raw())); ok || n != 0 {
		t.Errorf("a nil cache holds %d", n)
	}
}

// TestCommitLockedOnce: a turn is committed once; its key again is a
// duplicate that stores nothing; the same key with another message is
// refused (ErrKeyReused).
func TestCommitLockedOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture()
	r, err := f.resolve(t, "main", "s", "", true)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Conv
	commit := func(p core.CommitTurnParams) (core.CommitTurnResult, []*Pending, error) {
		ps, err := Prepare(ctx, Preparer{Counter: core.Chars4{}, LargeContentTokens: 1000}, p.Messages, false)
		if err != nil {
			t.Fatal(err)
		}
		rec := f.record(t, c)
		res, fresh, err := CommitLocked(ctx, f.st, c, &rec, false, p, ps)
		if err == nil && f.record(t, c).NextSeq != rec.NextSeq {
			t.Errorf("the record handed back is not the stored one")
		}
		return res, fresh, err
	}
	p := core.CommitTurnParams{SessionID: "s", AdvancementKey: "k1", Messages: []core.Message{user(t, "q", 1), user(t, "a", 2)}}
	res, fresh, err := commit(p)
	if err != nil || res.Status != core.CommitCommitted || len(fresh) != 2 {
		t.Fatalf("commit: %+v %d %v", res, len(fresh), err)
	}
	res, fresh, err = commit(p)
	if err != nil || res.Status != core.CommitDuplicate || len(fresh) != 0 {
		t.Fatalf("again: %+v %d %v", res, len(fresh), err)
	}
	p2 := p
	p2.Messages = append([]core.Message{user(t, "other", 3)}, p.Messages...)
	if _, _, err := commit(p2); !errors.Is(err, ErrKeyReused) {
		t.Errorf("the key with another message: %v, want ErrKeyReused", err)
	}
	ok, seqs, err := TurnCommitted(ctx, f.st, c, "k1")
	if err != nil || !ok || fmt.Sprint(seqs) != "[1 2]" {
		t.Errorf("TurnCommitted: %v %v %v", ok, seqs, err)
	}
	if ok, _, err := TurnCommitted(ctx, f.st, c, "k2"); err != nil || ok {
		t.Errorf("an unknown key is committed: %v %v", ok, err)
	}
	if rec := f.record(t, c); rec.Messages != 2 {
		t.Errorf("%d messages stored, want 2", rec.Messages)
	}
}

// TestRetry: a conflict is run again up to maxConflictRetries times; any
// other error is returned at once.
func TestRetry(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		err   error
		calls int
	}{
		{ErrConcurrentWrite, maxConflictRetries + 1},
		{fmt.Errorf("commit: %w", store.ErrConflict), maxConflictRetries + 1},
		{errors.New("other"), 1},
		{nil, 1},
	} {
		calls := 0
		_, err := Retry(ctx, func() (int, error) { calls++; return 0, c.err })
		if calls != c.calls || !errors.Is(err, c.err) {
			t.Errorf("%v: %d calls, %v; want %d calls", c.err, calls, err, c.calls)
		}
	}
}
