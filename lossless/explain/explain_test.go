package explain

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// stored returns a memstore holding conversation c of record rec, its
// messages msgs (seq 1, 2, ...) with their hash index, and its summaries.
func stored(t *testing.T, c store.ConvID, rec store.Conversation, msgs []core.Message, sums ...dag.Summary) *memstore.Store {
	t.Helper()
	st := memstore.New()
	err := st.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.PutConversation(c, rec); err != nil {
			return err
		}
		for i, m := range msgs {
			seq := uint64(i + 1)
			h := records.HashRaw(m.Raw())
			if err := tx.PutMessage(c, store.Message{Seq: seq, Role: m.Role(), Timestamp: m.Timestamp(), Hash: h, Raw: m.Raw()}); err != nil {
				return err
			}
			if err := tx.PutHash(c, h, seq); err != nil {
				return err
			}
		}
		for _, s := range sums {
			if err := tx.PutSummary(c, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestAssemble: each message gets its part, its tokens (the counter
// given) and, for the tail, its stored seq (TailSeqs over a memstore); the
// parts add up.
func TestAssemble(t *testing.T) {
	sum := core.UserText(`<lcm_summary id="sum_7" depth="0">older things</lcm_summary>`, 1)
	tail := core.UserText("the newest question", 2)
	unstored := core.AssistantText("an answer not stored", 3)
	rec := core.UserText(recalled.Head+"\nzebra]\n</lcm_recall>", 4)
	c := store.ConvID{1}
	older := core.UserText("an older question", 1)
	st := stored(t, c, store.Conversation{Agent: "main", SessionIDs: []string{"s1"}}, []core.Message{older, tail})
	res := core.AssembleResult{Messages: []core.Message{sum, tail, unstored, rec}, SystemPromptAddition: "be brief"}
	tc := core.Chars4{}
	rep := Assemble(res, recalled.Details{Recall: recalled.Report{Status: recalled.Injected, Items: 1}}, 5000, tc)
	if err := st.View(context.Background(), func(r store.Reader) error { return TailSeqs(r, c, rep.Messages) }); err != nil {
		t.Fatal(err)
	}
	want := []ContextMessage{
		{Part: PartSummaries, SummaryID: "sum_7", Tokens: core.CountMessage(tc, sum)},
		{Part: PartTail, Seq: 2, Tokens: core.CountMessage(tc, tail)},
		{Part: PartTail, Tokens: core.CountMessage(tc, unstored)},
		{Part: PartRecall, Tokens: core.CountMessage(tc, rec)},
	}
	if rep.Budget != 5000 || rep.Details.Recall.Items != 1 || rep.SystemPromptAdditionTokens != tc.CountText("be brief") || len(rep.Messages) != len(want) {
		t.Fatalf("report %+v", rep)
	}
	for i, w := range want {
		m := rep.Messages[i]
		if m.Part != w.Part || m.SummaryID != w.SummaryID || m.Seq != w.Seq || m.Tokens != w.Tokens || string(m.Message.Raw()) != string(res.Messages[i].Raw()) {
			t.Errorf("message %d: %+v, want %+v", i, m, w)
		}
	}
	wantParts := []ContextPart{{PartSummaries, 1, want[0].Tokens}, {PartTail, 2, want[1].Tokens + want[2].Tokens},
		{PartRecall, 1, want[3].Tokens}, {PartSystem, 1, rep.SystemPromptAdditionTokens}}
	if !slices.Equal(rep.Parts, wantParts) {
		t.Fatalf("parts %+v, want %+v", rep.Parts, wantParts)
	}
	// Another conversation holds none of them.
	rep = Assemble(res, recalled.Details{}, 5000, tc)
	if err := st.View(context.Background(), func(r store.Reader) error { return TailSeqs(r, store.ConvID{9}, rep.Messages) }); err != nil || rep.Messages[1].Seq != 0 {
		t.Fatalf("another conversation: %+v %v", rep.Messages, err)
	}
}

// TestRecall: the bare ranking first, then what only the gate passed;
// each item with its agent, the prompt's terms it holds and the source
// the engine names its session and cuts its snippet from (the offset of
// the first term); an item the store no longer holds keeps them empty; a
// bad conversation id is an error.
func TestRecall(t *testing.T) {
	c := store.ConvID{2}
	msg := core.UserText("filler", 1)
	msg3 := core.UserText("We saw a Zebra near the build server", 3)
	rec := store.Conversation{Agent: "main", SessionIDs: []string{"old", "s1"}}
	st := stored(t, c, rec, []core.Message{msg, core.AssistantText("ok", 2), msg3},
		dag.Summary{ID: "sum_1", Text: "a summary about servers"})
	item := func(id string, kind string, seq uint64, sid string) recalled.Item {
		return recalled.Item{ID: id, Kind: kind, Conversation: c.String(), Seq: seq, SummaryID: sid}
	}
	m3, s1, gone := item("m3", index.KindMessage, 3, ""), item("s1", index.KindSummary, 0, "sum_1"), item("m8", index.KindMessage, 8, "")
	ranked := []recalled.Item{m3, s1, gone}
	gated := []recalled.Item{s1, item("n4", index.KindMessage, 3, "")}
	ctx := context.Background()
	x := NewRecall("zebra build servers", config.Recall{MinScore: -1})
	var src []Source
	err := st.View(ctx, func(r store.Reader) error {
		var err error
		src, err = Items(r, &x, ranked, gated)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(x.Terms, index.QueryTerms("zebra build servers")) || x.Threshold != 0 {
		t.Fatalf("terms %v threshold %v", x.Terms, x.Threshold)
	}
	var ids []string
	for _, it := range x.Items {
		ids = append(ids, fmt.Sprintf("%s:%v", it.ID, it.Passed))
	}
	if got := strings.Join(ids, " "); got != "m3:false s1:true m8:false n4:true" || len(src) != len(x.Items) {
		t.Fatalf("items %s, %d sources", got, len(src))
	}
	low := "we saw a zebra near the build server"
	if it, s := x.Items[0], src[0]; it.Agent != "main" || !s.HaveRec || s.Conv != c || !slices.Equal(s.Rec.SessionIDs, rec.SessionIDs) ||
		!s.HaveText || s.Text != recalled.IndexedText(msg3) || s.At != strings.Index(low, "zebra") ||
		len(it.MatchedTerms) == 0 || !slices.Contains(it.MatchedTerms, x.Terms[0]) {
		t.Fatalf("message item %+v, source %+v", it, s)
	}
	if it, s := x.Items[1], src[1]; !s.HaveRec || s.Text != "a summary about servers" || s.At != strings.Index("a summary about servers", "server") || it.Agent != "main" {
		t.Fatalf("summary item %+v, source %+v", it, s)
	}
	if it, s := x.Items[2], src[2]; it.Agent != "main" || s.HaveText || len(it.MatchedTerms) != 0 || it.MatchedTerms == nil {
		t.Fatalf("an item the store no longer holds: %+v %+v", it, s)
	}
	if x := NewRecall("", config.Recall{}); x.Threshold != config.DefaultRecallMinScore || x.Terms == nil || x.Items == nil {
		t.Fatalf("default gate: %+v", x)
	}
	err = st.View(ctx, func(r store.Reader) error {
		x := NewRecall("", config.Recall{})
		_, err := Items(r, &x, []recalled.Item{{ID: "bad", Conversation: "zz"}}, nil)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), `bad conversation id "zz"`) {
		t.Fatalf("bad id: %v", err)
	}
}
