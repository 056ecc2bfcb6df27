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
	"github.com/lossless-engine/contextengine/lossless/internal/recalled"
	"github.com/lossless-engine/contextengine/store"
)

// fakePort is Port over maps: one stored conversation, conv, whose
// messages are raw (by seq) and summaries sums; ranked and gated are what
// RecallWith returns without and with the gate.
type fakePort struct {
	res     core.AssembleResult
	details recalled.Details
	budget  int
	conv    store.ConvID
	stored  bool
	rec     store.Conversation
	raw     map[uint64][]byte
	sums    map[string]dag.Summary
	ranked  []recalled.Item
	gated   []recalled.Item
	cfg     config.Recall
	views   int
}

func (f *fakePort) AssembleWithDetails(context.Context, core.AssembleParams) (core.AssembleResult, recalled.Details, error) {
	return f.res, f.details, nil
}
func (f *fakePort) Budget(core.AssembleParams) int { return f.budget }
func (f *fakePort) Counter() core.TokenCounter     { return core.Chars4{} }
func (f *fakePort) Conversation(_ context.Context, sid, _ string) (store.ConvID, error) {
	if !f.stored || sid != "s1" {
		return store.ConvID{}, core.ErrUnknownSession
	}
	return f.conv, nil
}
func (f *fakePort) View(_ context.Context, fn func(store.Reader) error) error {
	f.views++
	return fn(fakeReader{f: f})
}
func (f *fakePort) SeqOf(_ store.Reader, c store.ConvID, raw []byte) (uint64, error) {
	for seq, b := range f.raw {
		if c == f.conv && string(b) == string(raw) {
			return seq, nil
		}
	}
	return 0, store.ErrNotFound
}
func (f *fakePort) RecallWith(_ context.Context, _ core.AssembleParams, o recalled.Options) ([]recalled.Item, error) {
	if o.MinScore < 0 {
		return f.ranked, nil
	}
	return f.gated, nil
}
func (f *fakePort) RecallConfig() config.Recall { return f.cfg }
func (f *fakePort) MessageText(_ store.Reader, c store.ConvID, seq uint64) ([]byte, error) {
	if b, ok := f.raw[seq]; ok && c == f.conv {
		return b, nil
	}
	return nil, fmt.Errorf("fake: message %d: %w", seq, store.ErrNotFound)
}
func (f *fakePort) SessionName(c store.ConvID, rec store.Conversation) string {
	return rec.SessionIDs[len(rec.SessionIDs)-1]
}
func (f *fakePort) Snippet(text string, at int) string { return fmt.Sprintf("%d:%s", at, text) }

// fakeReader reads the fake's conversation and summaries (any other read
// panics: the explanations make none).
type fakeReader struct {
	store.Reader
	f *fakePort
}

func (r fakeReader) Conversation(c store.ConvID) (store.Conversation, error) {
	if c != r.f.conv {
		return store.Conversation{}, store.ErrNotFound
	}
	return r.f.rec, nil
}
func (r fakeReader) Summary(c store.ConvID, id string) (dag.Summary, error) {
	if s, ok := r.f.sums[id]; ok && c == r.f.conv {
		return s, nil
	}
	return dag.Summary{}, dag.ErrNotFound
}

// TestAssemble: each message gets its part, its tokens (the port's
// counter) and, for the tail, its stored seq; the parts add up; a
// pass-through call reads nothing.
func TestAssemble(t *testing.T) {
	sum := core.UserText(`<lcm_summary id="sum_7" depth="0">older things</lcm_summary>`, 1)
	tail := core.UserText("the newest question", 2)
	unstored := core.AssistantText("an answer not stored", 3)
	rec := core.UserText(recalled.Head+"\nzebra]\n</lcm_recall>", 4)
	f := &fakePort{budget: 5000, stored: true, conv: store.ConvID{1}, raw: map[uint64][]byte{9: tail.Raw()},
		res: core.AssembleResult{Messages: []core.Message{sum, tail, unstored, rec}, SystemPromptAddition: "be brief"}}
	ctx := context.Background()
	rep, err := Assemble(ctx, f, core.AssembleParams{SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	tc := core.Chars4{}
	want := []ContextMessage{
		{Part: PartSummaries, SummaryID: "sum_7", Tokens: core.CountMessage(tc, sum)},
		{Part: PartTail, Seq: 9, Tokens: core.CountMessage(tc, tail)},
		{Part: PartTail, Tokens: core.CountMessage(tc, unstored)},
		{Part: PartRecall, Tokens: core.CountMessage(tc, rec)},
	}
	if rep.Budget != 5000 || rep.SystemPromptAdditionTokens != tc.CountText("be brief") || len(rep.Messages) != len(want) {
		t.Fatalf("report %+v", rep)
	}
	for i, w := range want {
		m := rep.Messages[i]
		if m.Part != w.Part || m.SummaryID != w.SummaryID || m.Seq != w.Seq || m.Tokens != w.Tokens || string(m.Message.Raw()) != string(f.res.Messages[i].Raw()) {
			t.Errorf("message %d: %+v, want %+v", i, m, w)
		}
	}
	wantParts := []ContextPart{{PartSummaries, 1, want[0].Tokens}, {PartTail, 2, want[1].Tokens + want[2].Tokens},
		{PartRecall, 1, want[3].Tokens}, {PartSystem, 1, rep.SystemPromptAdditionTokens}}
	if !slices.Equal(rep.Parts, wantParts) {
		t.Fatalf("parts %+v, want %+v", rep.Parts, wantParts)
	}
	f.views = 0
	rep, err = Assemble(ctx, f, core.AssembleParams{SessionID: "nowhere"})
	if err != nil || f.views != 0 || rep.Messages[1].Seq != 0 {
		t.Fatalf("pass-through: %d views, %+v %v", f.views, rep.Messages, err)
	}
}

// TestRecall: the bare ranking first, then what only the gate passed;
// each item with its session, the prompt's terms it holds and a snippet at
// the first; an item the store no longer holds keeps them empty; a bad
// conversation id is an error.
func TestRecall(t *testing.T) {
	c := store.ConvID{2}
	msg := core.UserText("We saw a Zebra near the build server", 1)
	f := &fakePort{conv: c, rec: store.Conversation{Agent: "main", SessionIDs: []string{"old", "s1"}},
		raw:  map[uint64][]byte{3: msg.Raw()},
		sums: map[string]dag.Summary{"sum_1": {ID: "sum_1", Text: "a summary about servers"}},
		cfg:  config.Recall{MinScore: -1}}
	item := func(id string, kind string, seq uint64, sid string) recalled.Item {
		return recalled.Item{ID: id, Kind: kind, Conversation: c.String(), Seq: seq, SummaryID: sid}
	}
	m3, s1, gone := item("m3", index.KindMessage, 3, ""), item("s1", index.KindSummary, 0, "sum_1"), item("m8", index.KindMessage, 8, "")
	f.ranked = []recalled.Item{m3, s1, gone}
	f.gated = []recalled.Item{s1, item("n4", index.KindMessage, 3, "")}
	ctx := context.Background()
	x, err := Recall(ctx, f, core.AssembleParams{Prompt: "zebra build servers"}, 8)
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
	if got := strings.Join(ids, " "); got != "m3:false s1:true m8:false n4:true" {
		t.Fatalf("items %s", got)
	}
	low := "we saw a zebra near the build server"
	if it := x.Items[0]; it.Agent != "main" || it.Session != "s1" || it.Snippet != fmt.Sprintf("%d:%s", strings.Index(low, "zebra"), recalled.IndexedText(msg)) ||
		len(it.MatchedTerms) == 0 || !slices.Contains(it.MatchedTerms, x.Terms[0]) {
		t.Fatalf("message item %+v", it)
	}
	if it := x.Items[1]; it.Session != "s1" || it.Snippet != fmt.Sprintf("%d:a summary about servers", strings.Index("a summary about servers", "server")) {
		t.Fatalf("summary item %+v", it)
	}
	if it := x.Items[2]; it.Agent != "main" || it.Snippet != "" || len(it.MatchedTerms) != 0 || it.MatchedTerms == nil {
		t.Fatalf("an item the store no longer holds: %+v", it)
	}
	f.cfg.MinScore = 0
	if x, err := Recall(ctx, f, core.AssembleParams{}, 8); err != nil || x.Threshold != config.DefaultRecallMinScore || x.Terms == nil {
		t.Fatalf("default gate: %+v %v", x, err)
	}
	f.ranked = []recalled.Item{{ID: "bad", Conversation: "zz"}}
	if _, err := Recall(ctx, f, core.AssembleParams{}, 8); err == nil || !strings.Contains(err.Error(), `bad conversation id "zz"`) {
		t.Fatalf("bad id: %v", err)
	}
}
