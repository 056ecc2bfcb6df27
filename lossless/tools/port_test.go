package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// fakeConv is a conversation handle of fakePort: only its id is read by
// Grep.
type fakeConv struct {
	dag.Store
	dag.MessageMetaReader
	id store.ConvID
}

func (c *fakeConv) StoreID() store.ConvID { return c.id }
func (c *fakeConv) Message(context.Context, uint64) (core.Message, error) {
	return core.Message{}, errors.New("not in the fake")
}
func (c *fakeConv) MessageByKey(context.Context, string) (uint64, core.Message, error) {
	return 0, core.Message{}, errors.New("not in the fake")
}

// fakePort is a Port over a memstore holding one conversation per session
// id (its conversation id: the session's index + 1).
type fakePort struct {
	st       *memstore.Store
	sessions []string
	entered  int
}

func (p *fakePort) Conversation(_ context.Context, _, sessionID, _ string) (*fakeConv, error) {
	for i, s := range p.sessions {
		if s == sessionID {
			return &fakeConv{id: store.ConvID{7: byte(i + 1)}}, nil
		}
	}
	return nil, core.ErrUnknownSession
}
func (p *fakePort) ConversationByID(_ context.Context, c store.ConvID) (*fakeConv, string, error) {
	if i := int(c[7]) - 1; c == (store.ConvID{7: c[7]}) && i >= 0 && i < len(p.sessions) {
		return &fakeConv{id: c}, "a", nil
	}
	return nil, "", core.ErrNotFound
}
func (p *fakePort) Holding(_ context.Context, c *fakeConv, _ string) (*fakeConv, error) {
	return c, nil
}
func (p *fakePort) LinkedChildren(context.Context, store.ConvID) ([]store.ConvID, error) {
	return nil, nil
}
func (p *fakePort) AgentConversations(context.Context, string) ([]string, error) {
	var ids []string
	for i := range p.sessions {
		ids = append(ids, store.ConvID{7: byte(i + 1)}.String())
	}
	return ids, nil
}
func (p *fakePort) AgentFor(explicit, _ string) string { return explicit }
func (p *fakePort) AgentOfKey(string) string           { return "" }
func (p *fakePort) Enter() (func(), error)             { p.entered++; return func() {}, nil }
func (p *fakePort) View(ctx context.Context, fn func(store.Reader) error) error {
	return p.st.View(ctx, fn)
}
func (p *fakePort) ReadMessage(r store.Reader, c store.ConvID, seq uint64) (store.Message, error) {
	return r.Message(c, seq)
}
func (p *fakePort) Missing(c store.ConvID, from, to uint64) error {
	return fmt.Errorf("%s: %d-%d missing", c, from, to)
}
func (p *fakePort) PlainText(m core.Message) string { return m.Role() + ": " + string(m.Raw()) }
func (p *fakePort) IsLargeRef(string) bool          { return false }

var _ Port[*fakeConv] = (*fakePort)(nil)

// newFakePort stores texts (one message each, timestamps 1, 2, ...) under
// each session.
func newFakePort(t *testing.T, sessions map[string][]string, order ...string) *fakePort {
	t.Helper()
	p := &fakePort{st: memstore.New(), sessions: order}
	err := p.st.Update(context.Background(), func(tx store.Tx) error {
		for i, s := range order {
			c := store.ConvID{7: byte(i + 1)}
			texts := sessions[s]
			if err := tx.PutConversation(c, store.Conversation{Agent: "a", NextSeq: uint64(len(texts) + 1), Messages: int64(len(texts))}); err != nil {
				return err
			}
			for j, text := range texts {
				raw := []byte(`{"role":"user","content":` + strconv.Quote(text) + `}`)
				if err := tx.PutMessage(c, store.Message{Seq: uint64(j + 1), Timestamp: int64(j + 1), Role: "user", Raw: raw}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGrepOverPort: Grep reads what the port gives it — the session's
// conversation, or every conversation of the agent — and its time bounds,
// sorts and limits apply.
func TestGrepOverPort(t *testing.T) {
	ctx := context.Background()
	p := newFakePort(t, map[string][]string{
		"s1": {"a zebra here", "nothing", "zebra zebra again"},
		"s2": {"another zebra"},
	}, "s1", "s2")
	hits, err := Grep(ctx, p, GrepParams{SessionID: "s1", Query: "zebra", Sort: SortRecency})
	if err != nil || len(hits) != 2 || hits[0].Seq != 3 || hits[1].Seq != 1 {
		t.Fatalf("conversation scope: %+v %v", hits, err)
	}
	hits, err = Grep(ctx, p, GrepParams{SessionID: "s1", Query: "zebra", Scope: ScopeAgent, Since: 1, Until: 1})
	if err != nil || len(hits) != 2 || hits[0].Conversation == hits[1].Conversation {
		t.Fatalf("agent scope at time 1: %+v %v", hits, err)
	}
	hits, err = Grep(ctx, p, GrepParams{SessionID: "s1", Query: "zebra", Scope: ScopeAgent, Limit: 1})
	if err != nil || len(hits) != 1 {
		t.Fatalf("limit 1: %+v %v", hits, err)
	}
	if p.entered != 3 {
		t.Errorf("Enter called %d times for 3 searches", p.entered)
	}
	if _, err := Grep(ctx, p, GrepParams{SessionID: "nope", Query: "zebra"}); !errors.Is(err, core.ErrUnknownSession) {
		t.Errorf("unknown session: %v", err)
	}
	if _, err := Grep(ctx, p, GrepParams{SessionID: "s1", Query: "zebra", Sort: "size"}); !errors.Is(err, ErrBadArgs) {
		t.Errorf("bad sort: %v", err)
	}
}

// TestCallOverPort: Call runs the named tool in the call's session, and
// refuses an unknown tool and another agent's history.
func TestCallOverPort(t *testing.T) {
	ctx := context.Background()
	p := newFakePort(t, map[string][]string{"s1": {"the <b>zebra</b> & co"}}, "s1")
	res, err := Call(ctx, p, core.ToolCallParams{Name: NameGrep, AgentID: "a", SessionID: "s1", Arguments: json.RawMessage(`{"query":"zebra"}`)})
	if err != nil || !strings.Contains(res.Text, `"id":"0000000000000001:1"`) || !strings.Contains(res.Text, "<b>zebra</b> & co") {
		t.Fatalf("lcm_grep: %q %v", res.Text, err)
	}
	if _, err := Call(ctx, p, core.ToolCallParams{Name: "lcm_nope", SessionID: "s1"}); !errors.Is(err, ErrBadArgs) {
		t.Errorf("unknown tool: %v", err)
	}
	if _, err := Call(ctx, p, core.ToolCallParams{Name: NameGrep, AgentID: "a", SessionID: "s1", Arguments: json.RawMessage(`{"query":"zebra","agentId":"b"}`)}); !errors.Is(err, ErrBadArgs) {
		t.Errorf("another agent: %v", err)
	}
	if defs := Defs(Tools[*fakeConv](nil)); len(defs) != 3 || defs[0].Name != NameGrep || defs[2].Name != NameExpand {
		t.Errorf("defs: %+v", defs)
	}
}

// TestGrepCoveredBy: a message hit's CoveredBy is the smallest leaf
// covering it (a condensed summary never: its sources are summaries), ""
// for a message no leaf covers; a summary hit has none.
func TestGrepCoveredBy(t *testing.T) {
	ctx := context.Background()
	p := newFakePort(t, map[string][]string{"s1": {"zebra one", "zebra two", "zebra three", "zebra four"}}, "s1")
	c := store.ConvID{7: 1}
	err := p.st.Update(ctx, func(tx store.Tx) error {
		for _, s := range []dag.Summary{
			// In id order (the scan's): the smallest between two larger.
			{ID: "sum_a", Kind: dag.KindLeaf, Sources: []dag.Ref{dag.MessageRef(1), dag.MessageRef(2), dag.MessageRef(3)}, Text: "three turns"},
			{ID: "sum_b", Kind: dag.KindLeaf, Sources: []dag.Ref{dag.MessageRef(2)}, Text: "one turn"},
			{ID: "sum_c", Kind: dag.KindLeaf, Sources: []dag.Ref{dag.MessageRef(2), dag.MessageRef(3)}, Text: "two turns"},
			{ID: "sum_up", Kind: dag.KindCondensed, Depth: 1, Sources: []dag.Ref{dag.SummaryRef("sum_a"), dag.SummaryRef("sum_b")}, Text: "a zebra summary"},
		} {
			if err := tx.PutSummary(c, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := Grep(ctx, p, GrepParams{SessionID: "s1", Query: "zebra", Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"0000000000000001:1": "sum_a", "0000000000000001:2": "sum_b", "0000000000000001:3": "sum_c", "0000000000000001:4": ""}
	got := map[string]string{}
	for _, h := range hits {
		if h.Kind == "summary" {
			if h.SummaryID != "sum_up" || h.CoveredBy != "" || h.ID != "" {
				t.Errorf("summary hit: %+v", h)
			}
			continue
		}
		got[h.ID] = h.CoveredBy
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("covers %v, want %v", got, want)
	}
	// Message hits alone still name their leaves.
	hits, err = Grep(ctx, p, GrepParams{SessionID: "s1", Query: "zebra two", Kind: "message"})
	if err != nil || len(hits) != 1 || hits[0].CoveredBy != "sum_b" {
		t.Fatalf("kind message: %+v %v", hits, err)
	}
}
