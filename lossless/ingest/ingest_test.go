package ingest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// fakePort is the write path's Port over an in-memory store, with one
// plain lock for every conversation.
type fakePort struct {
	st       *memstore.Store
	limits   Limits
	mu       sync.Mutex // the conversations' lock
	recs     map[store.ConvID]*store.Conversation
	counts   map[store.Hash]int
	resolved map[string]store.ConvID
	indexed  []uint64
	// conflicts is how many CheckBase calls fail with ErrConcurrentWrite.
	conflicts int
}

func newFake() *fakePort {
	return &fakePort{st: memstore.New(), limits: Limits{MaxMessageBytes: 1 << 20, LargeContentTokens: 1000},
		recs: map[store.ConvID]*store.Conversation{}, counts: map[store.Hash]int{}, resolved: map[string]store.ConvID{}}
}

func (f *fakePort) Store() store.Store                    { return f.st }
func (f *fakePort) CheckSpace() error                     { return nil }
func (f *fakePort) Limits() Limits                        { return f.limits }
func (f *fakePort) Counter() core.TokenCounter            { return core.Chars4{} }
func (f *fakePort) CachedTokens(h store.Hash) (int, bool) { n, ok := f.counts[h]; return n, ok }
func (f *fakePort) CacheTokens(h store.Hash, n int)       { f.counts[h] = n }
func (f *fakePort) Hash(raw []byte) store.Hash            { return hashOf(raw) }

func (f *fakePort) LockConv(ctx context.Context, c store.ConvID) (*store.Conversation, func(), error) {
	f.mu.Lock()
	rec, ok := f.recs[c]
	if !ok {
		rec = new(store.Conversation)
		err := f.st.View(ctx, func(r store.Reader) error {
			var err error
			*rec, err = r.Conversation(c)
			return err
		})
		if err != nil {
			f.mu.Unlock()
			return nil, nil, err
		}
		f.recs[c] = rec
	}
	return rec, f.mu.Unlock, nil
}

func (f *fakePort) CheckBase(tx store.Tx, c store.ConvID, base store.Conversation) error {
	if f.conflicts > 0 {
		f.conflicts--
		return fmt.Errorf("conversation %s: %w", c, ErrConcurrentWrite)
	}
	return nil
}

func (f *fakePort) IndexMessages(c store.ConvID, agent string, ps []*Pending) {
	for _, p := range ps {
		f.indexed = append(f.indexed, p.Seq)
	}
}

func (f *fakePort) Resolved(key string) (store.ConvID, bool)    { c, ok := f.resolved[key]; return c, ok }
func (f *fakePort) RememberResolved(key string, c store.ConvID) { f.resolved[key] = c }
func (f *fakePort) ForgetResolved(c store.ConvID) {
	for k, v := range f.resolved {
		if v == c {
			delete(f.resolved, k)
		}
	}
}
func (f *fakePort) LockNames(ctx context.Context, agent string) (func(), error) {
	return func() {}, nil
}

func (f *fakePort) NewConvID(agent, name string) store.ConvID {
	h := sha256.Sum256([]byte(agent + "\x00" + name))
	var c store.ConvID
	copy(c[:], h[:8])
	return c
}

func (f *fakePort) AddSessionID(ctx context.Context, c store.ConvID, sessionID, sessionKey string) error {
	return f.st.Update(ctx, func(tx store.Tx) error {
		rec, err := tx.Conversation(c)
		if err != nil {
			return err
		}
		rec.SessionIDs = append(rec.SessionIDs, sessionID)
		delete(f.recs, c)
		return tx.PutConversation(c, rec)
	})
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

// TestMessagesDedup: a batch is stored once, a repeat within it and a
// second delivery store nothing, sequence numbers and order positions run
// on, and the recall index is handed exactly the new ones.
func TestMessagesDedup(t *testing.T) {
	ctx := context.Background()
	f := newFake()
	a, b := user(t, "a", 1), user(t, "b", 2)
	n, err := Messages(ctx, f, "main", "s1", "", []core.Message{a, b, a}, false)
	if err != nil || n != 2 {
		t.Fatalf("first batch: stored %d, %v; want 2", n, err)
	}
	n, err = Messages(ctx, f, "main", "s1", "", []core.Message{b, user(t, "c", 3)}, false)
	if err != nil || n != 1 {
		t.Fatalf("second batch: stored %d, %v; want 1", n, err)
	}
	if fmt.Sprint(f.indexed) != "[1 2 3]" {
		t.Errorf("indexed %v, want [1 2 3]", f.indexed)
	}
	c, err := Resolve(ctx, f, "main", "s1", "", false)
	if err != nil {
		t.Fatal(err)
	}
	err = f.st.View(ctx, func(r store.Reader) error {
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

// TestMessagesRefused: an invalid message refuses the whole batch before
// anything is written, as does an empty session id.
func TestMessagesRefused(t *testing.T) {
	ctx := context.Background()
	f := newFake()
	f.limits.MaxMessageBytes = 100
	big := user(t, strings.Repeat("x", 200), 1)
	if _, err := Messages(ctx, f, "main", "s", "", []core.Message{user(t, "ok", 1), big}, false); !errors.Is(err, core.ErrTooLarge) {
		t.Errorf("oversized message: %v, want ErrTooLarge", err)
	}
	if _, err := Messages(ctx, f, "main", "", "", []core.Message{user(t, "ok", 1)}, false); !errors.Is(err, core.ErrEmptySessionID) {
		t.Errorf("empty session id: %v, want ErrEmptySessionID", err)
	}
	if _, err := Resolve(ctx, f, "main", "s", "", false); !errors.Is(err, core.ErrUnknownSession) {
		t.Errorf("a refused batch made its conversation: %v", err)
	}
}

// TestLargeFlagged: a message over LargeContentTokens gets its reference
// message and the reference's count.
func TestLargeFlagged(t *testing.T) {
	f := newFake()
	f.limits.LargeContentTokens = 10
	ps, err := Prepare(context.Background(), f, []core.Message{user(t, strings.Repeat("x", 400), 1), user(t, "hi", 2)}, true)
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

// TestCommitTurnOnce: a turn is committed once; its key again is a
// duplicate that stores nothing; a conflict is retried.
func TestCommitTurnOnce(t *testing.T) {
	ctx := context.Background()
	f := newFake()
	f.conflicts = 2
	p := core.CommitTurnParams{SessionID: "s", AdvancementKey: "k1", Messages: []core.Message{user(t, "q", 1), user(t, "a", 2)}}
	res, got, err := CommitTurn(ctx, f, "main", "s", "", p)
	if err != nil || res.Status != core.CommitCommitted || got.Stored != 2 || got.Agent != "main" {
		t.Fatalf("commit: %+v %+v %v", res, got, err)
	}
	res, got, err = CommitTurn(ctx, f, "main", "s", "", p)
	if err != nil || res.Status != core.CommitDuplicate || got.Stored != 0 {
		t.Fatalf("again: %+v %+v %v", res, got, err)
	}
	c, err := Resolve(ctx, f, "main", "s", "", false)
	if err != nil {
		t.Fatal(err)
	}
	ok, seqs, err := TurnCommitted(ctx, f.st, c, "k1")
	if err != nil || !ok || fmt.Sprint(seqs) != "[1 2]" {
		t.Errorf("TurnCommitted: %v %v %v", ok, seqs, err)
	}
	if ok, _, err := TurnCommitted(ctx, f.st, c, "k2"); err != nil || ok {
		t.Errorf("an unknown key is committed: %v %v", ok, err)
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

// TestCheckName: invalid UTF-8 and NUL bytes are refused with the byte
// they are at.
func TestCheckName(t *testing.T) {
	for _, c := range []struct{ v, want string }{
		{"ok", ""},
		{"a\xffb", "sessionId is not valid UTF-8 (byte 1 of 3)"},
		{"ab\x00", "sessionId holds a NUL byte (byte 2 of 3)"},
	} {
		err := CheckName("sessionId", c.v)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.v, err)
		case c.want != "" && (err == nil || !errors.Is(err, core.ErrInvalidSessionID) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: %v, want %q", c.v, err, c.want)
		}
	}
}
