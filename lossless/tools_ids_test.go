package lossless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/internal/recall"
	"github.com/lossless-engine/contextengine/lossless/tools"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// idFixture stores, for agent main: session s1, 60 turns (turn 10 about a
// zebra, the last about a quokka), compacted with a fresh tail of 6, so
// the zebra is summarised and the quokka is not; session s2, 40 turns
// (turn 5 about a zebra too), compacted. Agent other's session o1, 40
// turns, compacted, has a zebra of its own (its first turn).
func idFixture(t *testing.T, e *Engine) {
	t.Helper()
	e.SetSummarizer(markSummarizer{})
	ctx := context.Background()
	turns := func(n int, ts0 int64, special map[int]string) []core.Message {
		var msgs []core.Message
		for i := 0; i < n; i++ {
			text, ok := special[i]
			if !ok {
				text = fmt.Sprintf("turn %d about routine things %s", i, strings.Repeat("filler ", 20))
			}
			msgs = append(msgs, textMsg([]string{core.RoleUser, core.RoleAssistant}[i%2], text, ts0+int64(i)*60_000))
		}
		return msgs
	}
	ingest := func(p core.IngestBatchParams) {
		t.Helper()
		if _, err := e.IngestBatch(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	ingest(core.IngestBatchParams{SessionID: "s1", Messages: turns(60, 1_700_000_000_000, map[int]string{
		10: "we saw a zebra near the build server", 59: "a quokka smiled at the deploy"})})
	ingest(core.IngestBatchParams{SessionID: "s2", Messages: turns(40, 1_710_000_000_000, map[int]string{
		5: "a second zebra, in the staging logs"})})
	ingest(core.IngestBatchParams{SessionID: "o1", SessionKey: "agent:other:main", Messages: turns(40, 1_720_000_000_000, map[int]string{
		0: "the other agent's zebra"})})
	for _, p := range []core.CompactParams{{SessionID: "s1"}, {SessionID: "s2"}, {SessionID: "o1", SessionKey: "agent:other:main"}} {
		p.TokenBudget, p.Force = 3000, true
		res, err := e.Compact(ctx, p)
		if err != nil || !res.Compacted {
			t.Fatalf("fixture compaction of %s: %+v %v", p.SessionID, res, err)
		}
	}
}

// toolHit is a hit of lcm_grep's output.
type toolHit struct {
	Kind, ID, Conversation, SummaryID, CoveredBy, Role, Snippet string
}

// expandOut is lcm_expand's output.
type expandOut struct {
	ID       string `json:"id"`
	Messages []struct {
		Seq     uint64          `json:"seq"`
		Message json.RawMessage `json:"message"`
	} `json:"messages"`
	Tokens     int    `json:"tokens"`
	Offset     int    `json:"offset"`
	Total      int    `json:"total"`
	NextCursor string `json:"nextCursor"`
}

func (o expandOut) seqs() []uint64 {
	var out []uint64
	for _, m := range o.Messages {
		out = append(out, m.Seq)
	}
	return out
}

// TestGrepMessageHitsOpen: lcm_grep's message hits carry the message's id
// and the leaf summary covering it (none in the fresh tail), and
// lcm_describe and lcm_expand given either return the hit message —
// through CallTool on the real engine, over Badger and over memstore.
func TestGrepMessageHitsOpen(t *testing.T) {
	for _, backend := range []string{"badger", "memstore"} {
		t.Run(backend, func(t *testing.T) {
			var e *Engine
			if backend == "badger" {
				e = openTest(t, func(c *config.Config) { c.FreshTailMessages = 6 })
			} else {
				cfg := testConfig("")
				cfg.FreshTailMessages = 6
				var err error
				if e, err = OpenStore(context.Background(), cfg, memstore.New(), nil); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { e.Close() })
			}
			idFixture(t, e)
			testMessageHitsOpen(t, e)
		})
	}
}

func testMessageHitsOpen(t *testing.T, e *Engine) {
	ctx := context.Background()
	call := func(name string, args any) (string, error) {
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.CallTool(ctx, core.ToolCallParams{Name: name, Arguments: raw, SessionID: "s1"})
		return res.Text, err
	}
	mustCall := func(name string, args any) string {
		t.Helper()
		out, err := call(name, args)
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return out
	}
	grep := func(args map[string]any) []toolHit {
		t.Helper()
		out := mustCall(ToolGrep, args)
		var res struct{ Hits []toolHit }
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("grep output %s: %v", out, err)
		}
		return res.Hits
	}
	expand := func(args map[string]any) expandOut {
		t.Helper()
		out := mustCall(ToolExpand, args)
		var page expandOut
		if err := json.Unmarshal([]byte(out), &page); err != nil {
			t.Fatalf("expand output %s: %v", out, err)
		}
		return page
	}
	describeMsg := func(id string) tools.MessageDescription {
		t.Helper()
		out := mustCall(ToolDescribe, map[string]any{"id": id})
		var d tools.MessageDescription
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("describe output %s: %v", out, err)
		}
		return d
	}
	conv1 := mustConv(t, e, "s1")
	s1 := conv1.id
	stored := storedMessages(t, e, "", "s1")

	// A summarised message: its id and its leaf.
	hits := grep(map[string]any{"query": "zebra build"})
	if len(hits) != 1 || hits[0].Kind != "message" {
		t.Fatalf("zebra: %+v", hits)
	}
	zebra := hits[0]
	c, seq, ok := ParseMessageID(zebra.ID)
	if !ok || c != s1 || !strings.Contains(string(stored[seq-1]), "zebra near the build") {
		t.Fatalf("hit id %q does not name s1's zebra message", zebra.ID)
	}
	if zebra.CoveredBy == "" {
		t.Fatalf("the summarised zebra has no coveredBy: %+v", zebra)
	}
	leaf, err := conv1.Summary(ctx, zebra.CoveredBy)
	if err != nil || leaf.Depth != 0 || !slices.Contains(leaf.Sources, dag.MessageRef(seq)) {
		t.Fatalf("coveredBy %s is not a leaf covering message %d: %+v %v", zebra.CoveredBy, seq, leaf, err)
	}
	// The model's view of a message hit: the id stands for conversation
	// and seq.
	if out := mustCall(ToolGrep, map[string]any{"query": "zebra build"}); strings.Contains(out, `"conversation"`) || strings.Contains(out, `"seq"`) {
		t.Errorf("a message hit repeats its id's conversation and seq: %s", out)
	}

	// lcm_expand of the leaf: the message among the leaf's.
	page := expand(map[string]any{"id": zebra.CoveredBy, "maxTokens": 100000})
	if !slices.Contains(page.seqs(), seq) || !strings.Contains(mustCall(ToolExpand, map[string]any{"id": zebra.CoveredBy, "maxTokens": 100000}), string(stored[seq-1])) {
		t.Fatalf("expand of coveredBy %s lacks message %d: %v", zebra.CoveredBy, seq, page.seqs())
	}
	// lcm_expand of the message id: the message, verbatim, and its
	// neighbours on both sides.
	page = expand(map[string]any{"id": zebra.ID})
	got := page.seqs()
	if !slices.Contains(got, seq) || !slices.Contains(got, seq-1) || !slices.Contains(got, seq+1) || page.Offset != int(got[0]-1) || page.Total != len(stored) {
		t.Fatalf("expand %s: seqs %v offset %d total %d", zebra.ID, got, page.Offset, page.Total)
	}
	for i, s := range got {
		if i > 0 && s != got[i-1]+1 {
			t.Fatalf("expand %s: not consecutive: %v", zebra.ID, got)
		}
		if string(page.Messages[i].Message) != string(stored[s-1]) {
			t.Fatalf("expand %s: message %d not verbatim", zebra.ID, s)
		}
	}
	if page.Tokens > tools.DefaultMessageExpandTokens {
		t.Fatalf("expand %s: %d tokens over the default %d", zebra.ID, page.Tokens, tools.DefaultMessageExpandTokens)
	}
	// (Paging a message id by maxTokens and its cursor is lossless/tools'
	// TestExpand.)
	// lcm_describe of the message id: the message and its leaf.
	d := describeMsg(zebra.ID)
	if d.Seq != seq || d.Conversation != s1.String() || !strings.Contains(d.Text, "zebra near the build") || d.CoveredBy != zebra.CoveredBy || d.Active {
		t.Fatalf("describe %s: %+v", zebra.ID, d)
	}
	sd, err := e.DescribeSummary(ctx, "", "s1", "", zebra.CoveredBy)
	if err != nil || !slices.Equal(d.Ancestors, sd.Ancestors) {
		t.Fatalf("describe %s: ancestors %v, its leaf's %v (%v)", zebra.ID, d.Ancestors, sd.Ancestors, err)
	}

	// A message of the fresh tail: an id, no leaf; it opens all the same.
	hits = grep(map[string]any{"query": "quokka"})
	if len(hits) != 1 || hits[0].CoveredBy != "" || hits[0].ID == "" {
		t.Fatalf("quokka: %+v", hits)
	}
	quokka := hits[0]
	_, qseq, _ := ParseMessageID(quokka.ID)
	if qseq != uint64(len(stored)) {
		t.Fatalf("quokka id %s: want the last message %d", quokka.ID, len(stored))
	}
	if d := describeMsg(quokka.ID); !d.Active || d.CoveredBy != "" || !strings.Contains(d.Text, "quokka smiled") {
		t.Fatalf("describe %s: %+v", quokka.ID, d)
	}
	page = expand(map[string]any{"id": quokka.ID})
	if got := page.seqs(); got[len(got)-1] != qseq || len(got) < 2 || page.NextCursor != "" {
		t.Fatalf("expand %s: %v next %q", quokka.ID, got, page.NextCursor)
	}

	// Scope agent: s2's hit, opened from s1 — its message id and its leaf
	// (held by s2, not by s1).
	hits = grep(map[string]any{"query": "zebra", "scope": "agent"})
	var other toolHit
	for _, h := range hits {
		if strings.Contains(h.Snippet, "second zebra") {
			other = h
		}
		if strings.Contains(h.Snippet, "other agent") {
			t.Fatalf("agent scope found another agent's message: %+v", h)
		}
	}
	s2 := mustConv(t, e, "s2").id
	if c, _, _ := ParseMessageID(other.ID); c != s2 || other.CoveredBy == "" {
		t.Fatalf("s2's zebra: %+v", other)
	}
	if page := expand(map[string]any{"id": other.ID}); !strings.Contains(string(page.Messages[slices.Index(page.seqs(), 6)].Message), "second zebra") {
		t.Fatalf("expand %s from s1: %v", other.ID, page.seqs())
	}
	if !strings.Contains(mustCall(ToolExpand, map[string]any{"id": other.CoveredBy, "maxTokens": 100000}), "second zebra") {
		t.Fatalf("expand of s2's leaf %s from s1 lacks its zebra", other.CoveredBy)
	}
	if d := describeMsg(other.ID); d.CoveredBy != other.CoveredBy || !strings.Contains(d.Text, "second zebra") {
		t.Fatalf("describe %s from s1: %+v", other.ID, d)
	}

	// Another agent's message is not found, nor is a message beyond the
	// conversation's; a message id is refused by DescribeSummary.
	o1, err := e.Conversation(ctx, "other", "o1")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{MessageID(o1.id, 1), MessageID(s1, uint64(len(stored)+1)), MessageID(store.ConvID{1, 2, 3}, 1)} {
		for _, tool := range []string{ToolExpand, ToolDescribe} {
			if out, err := call(tool, map[string]any{"id": id}); !errors.Is(err, dag.ErrNotFound) {
				t.Errorf("%s %s: want not found, got %.200s %v", tool, id, out, err)
			}
		}
	}
	// Nor is another agent's summary.
	items, err := o1.Items(ctx)
	if err != nil || !items[0].IsSummary() {
		t.Fatalf("o1 is not compacted: %v", err)
	}
	for _, tool := range []string{ToolExpand, ToolDescribe} {
		if out, err := call(tool, map[string]any{"id": items[0].Ref.ID}); !errors.Is(err, dag.ErrNotFound) {
			t.Errorf("%s of agent other's summary %s from s1: want not found, got %.200s %v", tool, items[0].Ref.ID, out, err)
		}
	}
	if _, err := e.DescribeSummary(ctx, "", "s1", "", zebra.ID); !errors.Is(err, ErrBadToolArgs) {
		t.Errorf("DescribeSummary of a message id: %v", err)
	}
	if _, err := e.DescribeMessage(ctx, "", "s1", "", zebra.CoveredBy); !errors.Is(err, ErrBadToolArgs) {
		t.Errorf("DescribeMessage of a summary id: %v", err)
	}
}

// TestMessageIDIsRecallCitation: the tools' message id is the recall
// block's citation of a turn (one form of id for one message), and the
// engine's MessageID and ParseMessageID are the tools'. (What
// ParseMessageID refuses is lossless/tools' TestMessageIDRoundTrip.)
func TestMessageIDIsRecallCitation(t *testing.T) {
	c := store.ConvID{0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3}
	for _, seq := range []uint64{1, 42, 1 << 40} {
		id := MessageID(c, seq)
		if id != recall.MessageDocID(c, seq) || id != tools.MessageID(c, seq) {
			t.Fatalf("MessageID %q, recall's %q, the tools' %q", id, recall.MessageDocID(c, seq), tools.MessageID(c, seq))
		}
		if gc, gs, ok := ParseMessageID(id); !ok || gc != c || gs != seq {
			t.Fatalf("ParseMessageID(%q) = %v %d %v", id, gc, gs, ok)
		}
	}
	if _, _, ok := ParseMessageID("sum_abc"); ok {
		t.Error("ParseMessageID accepted a summary id")
	}
}
