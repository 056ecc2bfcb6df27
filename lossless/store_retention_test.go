package lossless

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/store"
)

func TestRetention(t *testing.T) {
	e := openTest(t, func(c *config.Config) {
		c.Retention.MaxAgeDays = 30
		c.Retention.MaxBytesPerAgent = 3000
	})
	ctx := context.Background()
	ingest := func(session string, turns int) {
		t.Helper()
		for i := 0; i < turns; i++ {
			if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: session, SessionKey: "agent:a:" + session, Messages: turn(i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ingest("old", 2)
	ingest("big1", 4)
	ingest("big2", 4)
	ingest("recent", 1)
	// Nothing is old yet at the messages' time (turn's timestamps: age is
	// by message time); the agent is over its byte cap.
	// The conversations, to look for their records once they are deleted.
	var convs []store.ConvRecord
	if err := e.st.View(ctx, func(r store.Reader) error {
		for cr, err := range r.Conversations() {
			if err != nil {
				return err
			}
			convs = append(convs, cr)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	then := time.UnixMilli(1_700_000_000_000)
	res, err := e.Retain(ctx, then)
	if err != nil {
		t.Fatal(err)
	}
	infos, _ := e.Sessions(ctx, "a")
	var total int64
	for _, in := range infos {
		total += in.Bytes
	}
	if total > 3000 && len(infos) > 1 {
		t.Fatalf("still %d bytes in %d conversations after %+v", total, len(infos), res)
	}
	for _, d := range res.Deleted {
		if d.Reason != "size" {
			t.Fatalf("deleted %+v", d)
		}
	}
	// A month and a bit later everything is old.
	res, err = e.Retain(ctx, then.Add(31*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if infos, _ := e.Sessions(ctx, ""); len(infos) != 0 {
		t.Fatalf("left %+v after %+v", infos, res)
	}
	// No key of a deleted conversation is left, and the session starts
	// afresh when it comes back.
	for k := range dumpRecords(t, e, false, convs...) {
		if k != "meta" {
			t.Errorf("record %s left", k)
		}
	}
	ingest("old", 1)
	if got := storedMessages(t, e, "a", "old"); len(got) != 4 {
		t.Fatalf("re-created session has %d messages", len(got))
	}
	// An orphan: a conversation no session maps to.
	c, _ := e.resolve(ctx, "a", "old", "agent:a:old", false)
	_ = e.st.Update(ctx, func(tx store.Tx) error {
		_ = tx.DeleteName(store.Name{Agent: "a", Kind: store.NameSessionID, Value: "old"})
		return tx.DeleteName(store.Name{Agent: "a", Kind: store.NameSessionKey, Value: "agent:a:old"})
	})
	e.forgetResolved(c)
	res, err = e.Retain(ctx, time.Time{})
	if err != nil || len(res.Deleted) != 1 || res.Deleted[0].Reason != "orphan" || res.Deleted[0].ID != c.String() {
		t.Fatalf("orphan: %+v %v", res, err)
	}
}

// A message acknowledged between retention's decision and the deletion is
// never deleted: the conversation changed, so it is kept.
func TestRetentionKeepsConversationWrittenAfterDecision(t *testing.T) {
	e := openTest(t, func(c *config.Config) { c.Retention.MaxAgeDays = 1 })
	ctx := context.Background()
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: turn(0)}); err != nil {
		t.Fatal(err)
	}
	late := core.UserText("acknowledged while retention runs", 42)
	e.cfg.hooks.retainBeforeDelete = func() {
		time.Sleep(3 * time.Millisecond) // a later Updated time than the decision's
		if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "s", Message: late}); err != nil {
			t.Error(err)
		}
	}
	res, err := e.Retain(ctx, time.Now().Add(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 0 {
		t.Fatalf("deleted %+v after an acknowledged write", res.Deleted)
	}
	if got := countStored(t, e, "s"); got[string(late.Raw())] != 1 {
		t.Fatalf("the acknowledged message is gone: %d stored", len(got))
	}
}

// TestRetentionRemovesRecallDocs: a conversation deleted by retention
// leaves nothing searchable in the recall index, the other
// conversations' docs stay, and the index's generation still matches the
// store (no rebuild at the next open).
func TestRetentionRemovesRecallDocs(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	ctx := context.Background()
	e, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-60 * 24 * time.Hour).UnixMilli()
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "old", Messages: []core.Message{
		core.UserText("where is the xylophonequartz config?", old),
		core.AssistantText("the xylophonequartz config is in etc", old+1),
	}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // "old" is the least recently written
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "new", Messages: []core.Message{
		core.UserText("where is the marimbaopal config?", time.Now().UnixMilli()),
	}}); err != nil {
		t.Fatal(err)
	}
	r := e.recaller()
	search := func(word string) int {
		t.Helper()
		hits, err := bleveOf(r).Search(ctx, index.Query{Agent: "main", Text: word, WaitForLag: true})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	if search("xylophonequartz") != 2 || search("marimbaopal") != 1 {
		t.Fatal("the index does not hold the ingested messages")
	}
	// A byte cap that the newer conversation alone fits in.
	infos, err := e.Sessions(ctx, "main")
	if err != nil || len(infos) != 2 {
		t.Fatalf("sessions: %+v %v", infos, err)
	}
	e.cfg.Retention.MaxBytesPerAgent = min(infos[0].Bytes, infos[1].Bytes) + 1
	res, err := e.Retain(ctx, time.Now())
	if err != nil || len(res.Deleted) != 1 {
		t.Fatalf("retain: %+v %v", res, err)
	}
	if n := search("xylophonequartz"); n != 0 {
		t.Fatalf("%d docs of the deleted conversation still searchable", n)
	}
	if search("marimbaopal") != 1 {
		t.Fatal("the kept conversation's doc is gone from the index")
	}
	gen, err := e.storeGeneration()
	if err != nil {
		t.Fatal(err)
	}
	indexGen := bleveOf(r).Generation()
	if gen != indexGen {
		t.Fatalf("index generation %d, store %d: the next open would rebuild", indexGen, gen)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if st := e.RecallStatus(); st.Rebuilding {
		t.Fatalf("the index is rebuilt after retention: %+v", st)
	}
}

// TestRetentionRunsOnItsOwn: with a limit set, the open engine applies it
// periodically without a call to Retain; RetainDryRun reports what Retain
// would delete and deletes nothing; Close stops the pass.
func TestRetentionRunsOnItsOwn(t *testing.T) {
	fast := testHooks{retentionFirst: 50 * time.Millisecond, retentionUnit: 10 * time.Millisecond}
	ctx := context.Background()
	e := openTestHooked(t, fast, func(c *config.Config) { c.Retention.MaxBytesPerAgent = 1; c.Retention.IntervalMinutes = 1 })
	for i, s := range []string{"first", "second"} {
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: s, Messages: turn(i)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The first pass, 50 ms after Open, deletes the older conversation.
	deadline := time.Now().Add(10 * time.Second)
	for {
		infos, err := e.Sessions(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) == 1 {
			if infos[0].SessionIDs[0] != "second" {
				t.Fatalf("kept %+v, want the most recent conversation", infos[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no automatic retention pass within 10 s: %d conversations", len(infos))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := e.Close(); err != nil { // stops the pass
		t.Fatal(err)
	}
}

func TestRetainDryRun(t *testing.T) {
	ctx := context.Background()
	e := openTest(t, func(c *config.Config) { c.Retention.MaxBytesPerAgent = 1; c.Retention.IntervalMinutes = -1 })
	for i, s := range []string{"first", "second", "third"} {
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: s, Messages: turn(i)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	plan, err := e.RetainDryRun(ctx, time.Time{})
	if err != nil || len(plan.Deleted) != 2 || plan.Messages != 8 {
		t.Fatalf("dry run: %+v %v (want the two older conversations, 8 messages)", plan, err)
	}
	if infos, _ := e.Sessions(ctx, "main"); len(infos) != 3 {
		t.Fatalf("a dry run deleted: %d conversations left", len(infos))
	}
	res, err := e.Retain(ctx, time.Time{})
	if err != nil || len(res.Deleted) != 2 {
		t.Fatalf("retain: %+v %v", res, err)
	}
	for i := range res.Deleted {
		if res.Deleted[i] != plan.Deleted[i] {
			t.Fatalf("retain deleted %+v, the dry run planned %+v", res.Deleted, plan.Deleted)
		}
	}
	if infos, _ := e.Sessions(ctx, "main"); len(infos) != 1 {
		t.Fatalf("%d conversations left, want 1", len(infos))
	}
}

func TestRetentionConfigValidated(t *testing.T) {
	for _, r := range []config.RetentionConfig{{MaxAgeDays: -1}, {MaxBytesPerAgent: -5}, {IntervalMinutes: -2}} {
		cfg := testConfig(t.TempDir())
		cfg.Retention = r
		if _, err := Open(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "retention") {
			t.Fatalf("retention %+v: err %v, want a retention config error", r, err)
		}
	}
}

// TestRetentionAfterInterruptedDeletion: a conversation whose deletion was
// cut off midway (half its message keys gone, its index docs still there)
// leaves no doc in the recall index once a later pass deletes it.
func TestRetentionAfterInterruptedDeletion(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	var msgs []core.Message
	for i := 0; i < 400; i++ {
		msgs = append(msgs, core.UserText(fmt.Sprintf("note %d about the zanzibarquokka", i), int64(1_700_000_000_000+i)))
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "gone", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "kept", Messages: turn(1)}); err != nil {
		t.Fatal(err)
	}
	c, err := e.resolve(ctx, "main", "gone", "", false)
	if err != nil {
		t.Fatal(err)
	}
	// The interrupted pass: the first 200 message keys deleted, nothing else.
	err = e.st.Update(ctx, func(tx store.Tx) error {
		for seq := uint64(1); seq <= 200; seq++ {
			if err := tx.DeleteMessage(c, seq); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.Retention.MaxBytesPerAgent = 1
	if res, err := e.Retain(ctx, time.Time{}); err != nil || len(res.Deleted) != 1 {
		t.Fatalf("retain: %+v %v", res, err)
	}
	r := e.recaller()
	ids, err := r.Recall().ConversationDocIDs(ctx, c.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 0 {
		t.Fatalf("%d docs of the deleted conversation left in the index (e.g. %s)", len(ids), ids[0])
	}
	hits, err := bleveOf(r).Search(ctx, index.Query{Agent: "main", Text: "zanzibarquokka", WaitForLag: true})
	if err != nil || len(hits) != 0 {
		t.Fatalf("search after retention: %d hits, %v", len(hits), err)
	}
}

// TestInterruptedRetentionIsNotCorruption: a pass stopped after it began
// deleting a conversation leaves the conversation marked, so reads and
// writes say it is being deleted (ErrRetiring, not ErrCorrupt or a short
// list), doctor's check says the same, and the next pass, whatever the
// limits, finishes it; the session can then start afresh.
func TestInterruptedRetentionIsNotCorruption(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	var msgs []core.Message
	for i := 0; i < 300; i++ {
		msgs = append(msgs, core.UserText(fmt.Sprintf("old note %d", i), int64(1_600_000_000_000+i)))
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "gone", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "kept", Messages: turn(1)}); err != nil {
		t.Fatal(err)
	}
	c, err := e.resolve(ctx, "main", "gone", "", false)
	if err != nil {
		t.Fatal(err)
	}
	// The pass is stopped (its context cancelled) right after it decided;
	// then half of the message keys go, as a flushed first batch would.
	pctx, cancel := context.WithCancel(ctx)
	e.cfg.hooks.retainBeforeDelete = cancel
	e.cfg.Retention.MaxAgeDays = 365
	if _, err := e.Retain(pctx, time.Time{}); err == nil {
		t.Fatal("a cancelled pass reported success")
	}
	e.cfg.hooks.retainBeforeDelete = nil
	e.cfg.Retention.MaxAgeDays = 0
	if err := e.st.Update(ctx, func(tx store.Tx) error {
		for seq := uint64(1); seq <= 150; seq++ {
			if err := tx.DeleteMessage(c, seq); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	err = e.Messages(ctx, "", "gone", func(uint64, core.Message) error { return nil })
	if !errors.Is(err, ErrRetiring) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of a conversation a stopped pass began deleting: %v, want ErrRetiring", err)
	}
	if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "gone", Message: core.UserText("new", 2_000_000_000_000)}); !errors.Is(err, ErrRetiring) {
		t.Fatalf("write to it: %v, want ErrRetiring", err)
	}
	res, err := e.Check(ctx, false)
	if err != nil || len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Problem, "interrupted retention") || strings.Contains(res.Problems[0].Problem, "invariant") {
		t.Fatalf("check: %+v %v", res.Problems, err)
	}
	// No limit is set now: the next pass still finishes the deletion.
	rr, err := e.Retain(ctx, time.Time{})
	if err != nil || len(rr.Deleted) != 1 || rr.Deleted[0].Reason != "interrupted" {
		t.Fatalf("next pass: %+v %v", rr, err)
	}
	if res, err := e.Check(ctx, false); err != nil || len(res.Problems) != 0 {
		t.Fatalf("check after the pass: %+v %v", res.Problems, err)
	}
	if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "gone", Message: core.UserText("new", 2_000_000_000_000)}); err != nil {
		t.Fatalf("the session afresh: %v", err)
	}
	if n := len(storedMessages(t, e, "", "gone")); n != 1 {
		t.Fatalf("the session afresh holds %d messages, want 1", n)
	}
	if n := len(storedMessages(t, e, "", "kept")); n == 0 {
		t.Fatal("the other conversation lost its messages")
	}
}

// TestOpenFinishesInterruptedRetention: with no retention limit set, an
// engine opened on a store where a stopped pass left a conversation partly
// deleted finishes that deletion on its own (and deletes nothing else).
func TestOpenFinishesInterruptedRetention(t *testing.T) {
	fast := testHooks{retentionFirst: 20 * time.Millisecond}
	ctx := context.Background()
	dir := t.TempDir()
	cfg := testConfig(dir)
	e, err := openHooked(ctx, cfg, fast)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"gone", "kept", "orphan-to-be"} {
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: s, Messages: turn(1)}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := e.resolve(ctx, "main", "gone", "", false)
	if err != nil {
		t.Fatal(err)
	}
	// A pass marks "gone" and is stopped before it deletes anything.
	if err := e.st.Update(ctx, func(tx store.Tx) error {
		rec, err := tx.Conversation(c)
		if err != nil {
			return err
		}
		rec.Retiring = true
		return tx.PutConversation(c, rec)
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2, err := openHooked(ctx, cfg, fast) // no limit set
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		infos, err := e2.Sessions(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) == 2 {
			for _, in := range infos {
				if in.SessionIDs[0] == "gone" {
					t.Fatalf("the wrong conversation was deleted: %+v", infos)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the interrupted deletion was not finished within 30 s: %d conversations", len(infos))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
