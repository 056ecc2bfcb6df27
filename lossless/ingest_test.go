package lossless

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/store"
)

func turn(i int) []core.Message {
	ts := int64(1_700_000_000_000 + i*1000)
	return []core.Message{
		core.UserText(fmt.Sprintf("question %d: what is in file%d.go?", i, i), ts),
		core.AssistantToolCall(fmt.Sprintf("call-%d", i), "read", map[string]string{"path": fmt.Sprintf("file%d.go", i)}, ts+1),
		core.ToolResult(fmt.Sprintf("call-%d", i), "read", fmt.Sprintf("package main // file %d", i), false, ts+2),
		core.AssistantText(fmt.Sprintf("file%d.go holds package main", i), ts+3),
	}
}

func TestIngestIdempotent(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	batch := turn(1)
	for round := 0; round < 3; round++ {
		r, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s1", Messages: batch})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if round == 0 {
			want = len(batch)
		}
		if r.IngestedCount != want {
			t.Fatalf("round %d: ingested %d, want %d", round, r.IngestedCount, want)
		}
	}
	for _, m := range batch {
		r, err := e.Ingest(ctx, core.IngestParams{SessionID: "s1", Message: m})
		if err != nil || r.Ingested {
			t.Fatalf("re-ingest one: %v %v", r, err)
		}
	}
	// afterTurn with the whole session view, twice, and with
	// prePromptMessageCount 0 (everything "new"): nothing twice.
	all := append(append([]core.Message{}, batch...), turn(2)...)
	for round := 0; round < 2; round++ {
		for _, pre := range []int{len(batch), 0} {
			if err := e.AfterTurn(ctx, core.AfterTurnParams{SessionID: "s1", Messages: all, PrePromptMessageCount: pre}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := countMessages(t, e); got != int64(len(all)) {
		t.Fatalf("stored %d messages, want %d", got, len(all))
	}
	got := storedMessages(t, e, "", "s1")
	for i := range all {
		if string(got[i]) != string(all[i].Raw()) {
			t.Fatalf("message %d: %s != %s", i, got[i], all[i].Raw())
		}
	}
	// The same bytes in another conversation are another message.
	r, err := e.Ingest(ctx, core.IngestParams{SessionID: "s2", Message: batch[0]})
	if err != nil || !r.Ingested {
		t.Fatalf("other session: %v %v", r, err)
	}
}

func TestImportTwiceIdempotent(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := testutil.PiMono(t)[1]
	r1, err := e.Import(ctx, "", path)
	if err != nil {
		t.Fatal(err)
	}
	n1 := countMessages(t, e)
	r2, err := e.Import(ctx, "", path)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Imported != 0 || !r2.Resumed || countMessages(t, e) != n1 {
		t.Fatalf("second import: %+v, count %d -> %d", r2, n1, countMessages(t, e))
	}
	// A replay of the file's messages through ingest and afterTurn is no-op too.
	msgs := make([]core.Message, 0)
	for _, raw := range fileMessages(t, path) {
		msgs = append(msgs, mustParse(t, raw))
	}
	r, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: r1.SessionID, Messages: msgs})
	if err != nil || r.IngestedCount != 0 {
		t.Fatalf("replay batch: %v %v", r, err)
	}
	if err := e.AfterTurn(ctx, core.AfterTurnParams{SessionID: r1.SessionID, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	if countMessages(t, e) != n1 {
		t.Fatalf("count changed after replay: %d -> %d", n1, countMessages(t, e))
	}
}

func mustParse(t testing.TB, raw []byte) core.Message {
	t.Helper()
	m, err := core.ParseMessage(raw)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestIngestBadInput(t *testing.T) {
	e := openTest(t, func(c *config.Config) { c.MaxMessageBytes = 64 << 10 })
	ctx := context.Background()
	good := turn(1)
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: good}); err != nil {
		t.Fatal(err)
	}
	big := core.UserText(strings.Repeat("x", 64<<10+10), 1)
	unknown := core.MustParseMessage(`{"role":"wizard","content":"abracadabra"}`)
	cases := []struct {
		name    string
		session string
		msgs    []core.Message
		want    error
	}{
		{"zero message (not valid JSON upstream)", "s", []core.Message{{}}, core.ErrInvalidMessage},
		{"too large", "s", []core.Message{big}, core.ErrTooLarge},
		{"empty session id", "", good, core.ErrEmptySessionID},
		{"one bad message refuses the batch", "s", append(turn(2), core.Message{}), core.ErrInvalidMessage},
	}
	for _, c := range cases {
		_, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: c.session, Messages: c.msgs})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "lossless: ") {
			t.Errorf("%s: error %q lacks the package prefix", c.name, err)
		}
	}
	if _, err := core.ParseMessage([]byte("{not json")); !errors.Is(err, core.ErrInvalidMessage) {
		t.Errorf("invalid JSON: %v", err)
	}
	if _, err := core.ParseMessage([]byte("{\"role\":\"user\",\"content\":\"\xff\"}")); !errors.Is(err, core.ErrInvalidMessage) {
		t.Errorf("invalid UTF-8: %v", err)
	}
	// A role outside the contract is a documented acceptance: stored verbatim.
	if res, err := e.Ingest(ctx, core.IngestParams{SessionID: "u", Message: unknown}); err != nil || !res.Ingested {
		t.Fatalf("unknown role: %+v, %v", res, err)
	}
	if u := storedMessages(t, e, "", "u"); len(u) != 1 || string(u[0]) != string(unknown.Raw()) {
		t.Fatalf("unknown role stored as %q", u)
	}
	// Nothing stored was lost or changed.
	got := storedMessages(t, e, "", "s")
	if len(got) != len(good) {
		t.Fatalf("stored %d, want %d", len(got), len(good))
	}
	for i := range good {
		if string(got[i]) != string(good[i].Raw()) {
			t.Fatalf("message %d changed", i)
		}
	}
}

func TestConversationSurvivesSessionIDChange(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	key := "agent:coder:main"
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "old", SessionKey: key, Messages: turn(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "new", SessionKey: key, Messages: turn(2)}); err != nil {
		t.Fatal(err)
	}
	infos, err := e.Sessions(ctx, "coder")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Messages != 8 || strings.Join(infos[0].SessionIDs, ",") != "old,new" || infos[0].Key != key {
		t.Fatalf("sessions: %+v", infos)
	}
	if other, _ := e.Sessions(ctx, "main"); len(other) != 0 {
		t.Fatalf("agent main has %+v", other)
	}
	for _, id := range []string{"old", "new"} {
		if got := storedMessages(t, e, "coder", id); len(got) != 8 {
			t.Fatalf("via %s: %d messages", id, len(got))
		}
	}
}

func TestAgentResolution(t *testing.T) {
	e := openTest(t, func(c *config.Config) { c.AgentID = "def" })
	cases := []struct{ explicit, key, want string }{
		{"x", "agent:y:z", "y"}, // the session key wins, so every method meets in one conversation
		{"x", "other", "x"},
		{"", "agent:y:z", "y"},
		{"", "agent:y", "def"},
		{"", "other", "def"},
		{"", "", "def"},
	}
	for _, c := range cases {
		if got := e.agentFor(c.explicit, c.key); got != c.want {
			t.Errorf("agentFor(%q, %q) = %q, want %q", c.explicit, c.key, got, c.want)
		}
	}
}

func TestHeartbeatStoredButFlagged(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	hb := core.UserText("HEARTBEAT", 5)
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: turn(1)}); err != nil {
		t.Fatal(err)
	}
	if r, err := e.Ingest(ctx, core.IngestParams{SessionID: "s", Message: hb, IsHeartbeat: true}); err != nil || !r.Ingested {
		t.Fatal(r, err)
	}
	if got := storedMessages(t, e, "", "s"); len(got) != 5 || string(got[4]) != string(hb.Raw()) {
		t.Fatalf("heartbeat not stored: %d", len(got))
	}
	res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Messages {
		if m.Text() == "HEARTBEAT" {
			t.Fatal("heartbeat message assembled")
		}
	}
	if len(res.Messages) != 4 {
		t.Fatalf("assembled %d", len(res.Messages))
	}
}

func TestLargeContent(t *testing.T) {
	e := openTest(t, func(c *config.Config) { c.LargeContentTokens = 1000 })
	ctx := context.Background()
	var rows []string
	rows = append(rows, "id,name,score")
	for i := 0; i < 2000; i++ {
		rows = append(rows, fmt.Sprintf("%d,user%d,%d", i, i, i*7))
	}
	csv := strings.Join(rows, "\n")
	msgs := []core.Message{
		core.UserText("load the csv", 1),
		core.AssistantToolCall("c1", "read", map[string]string{"path": "a.csv"}, 2),
		core.ToolResult("c1", "read", csv, false, 3),
		core.AssistantText("done", 4),
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 4 {
		t.Fatalf("assembled %d", len(res.Messages))
	}
	ref := res.Messages[2]
	if ref.Role() != core.RoleToolResult || ref.ToolCallID() != "c1" || !strings.Contains(ref.Text(), "CSV: 2000 rows, 3 columns") ||
		!strings.Contains(ref.Text(), LargeRefPrefix) {
		t.Fatalf("reference: %s", ref.Raw())
	}
	if res.EstimatedTokens > 1000 {
		t.Fatalf("estimated %d tokens: the large content was not replaced", res.EstimatedTokens)
	}
	// The full content is retrievable by the id in the reference.
	i := strings.Index(ref.Text(), LargeRefPrefix)
	id := strings.Fields(ref.Text()[i:])[0]
	id = strings.TrimRight(id, ",")
	conv, err := e.Conversation(ctx, "", "s")
	if err != nil {
		t.Fatal(err)
	}
	_, full, err := conv.MessageByKey(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if full.Text() != csv {
		t.Fatal("full content differs")
	}
	// That a reference is the same bytes every time is
	// lossless/internal/ingest's TestLargeReferenceDeterministic.
}

// TestResolveOneTransaction: a new conversation's record carries its first
// session id from the transaction that makes it; a record left without it
// (a process stopped between the two writes of an older version) is
// repaired at the next resolution.
func TestResolveOneTransaction(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	c, err := e.resolve(ctx, "main", "sess-new", "agent:main:new", true)
	if err != nil {
		t.Fatal(err)
	}
	rec := readRecord(t, e, c)
	if len(rec.SessionIDs) != 1 || rec.SessionIDs[0] != "sess-new" {
		t.Fatalf("new conversation's session ids %v", rec.SessionIDs)
	}
	// The state an older version could leave: names mapped, the id missing.
	orphan := newConvID("main", "s:sess-old")
	if err := e.st.Update(ctx, func(tx store.Tx) error {
		if err := tx.PutConversation(orphan, convRecord{Agent: "main", Created: 1, Updated: 1, NextSeq: 1, NextPos: posStep}); err != nil {
			return err
		}
		return tx.PutName(store.Name{Agent: "main", Kind: store.NameSessionID, Value: "sess-old"}, orphan)
	}); err != nil {
		t.Fatal(err)
	}
	got, err := e.resolve(ctx, "main", "sess-old", "", true)
	if err != nil || got != orphan {
		t.Fatalf("resolve: %v %v", got, err)
	}
	if rec := readRecord(t, e, orphan); len(rec.SessionIDs) != 1 || rec.SessionIDs[0] != "sess-old" {
		t.Fatalf("the missing session id was not repaired: %v", rec.SessionIDs)
	}
}

func readRecord(t *testing.T, e *Engine, c convID) convRecord {
	t.Helper()
	var rec convRecord
	if err := e.st.View(context.Background(), func(r store.Reader) error {
		var err error
		rec, err = r.Conversation(c)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return rec
}
