package lossless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/tools"
)

// markSummarizer summarises to a fixed marker plus the input's first words.
type markSummarizer struct{}

func (markSummarizer) Name() string { return "mark" }
func (markSummarizer) Summarize(_ context.Context, req core.SummarizeRequest) (string, error) {
	return "SUMMARYMARK " + core.Truncate(core.Chars4{}, req.Text, req.TargetTokens/4), nil
}

// toolFixture: session s1 with 80 messages (message 10 mentions a zebra,
// message 30 an "error 404", an odd-bytes message with spacing and HTML
// characters), compacted; session s2 of the same agent mentions a zebra.
func toolFixture(t *testing.T) *Engine {
	t.Helper()
	e := openTest(t, func(c *config.Config) { c.FreshTailMessages = 6 })
	e.SetSummarizer(markSummarizer{})
	ctx := context.Background()
	var msgs []core.Message
	for i := 0; i < 80; i++ {
		text := fmt.Sprintf("message %d about routine things %s", i, strings.Repeat("filler ", 20))
		switch i {
		case 10:
			text = "we saw a zebra near the build server"
		case 30:
			text = "the proxy answered error 404 twice"
		}
		msgs = append(msgs, textMsg([]string{core.RoleUser, core.RoleAssistant}[i%2], text, 1_700_000_000_000+int64(i)*60_000))
	}
	odd, err := core.ParseMessage([]byte(`{"role": "user",  "content": "odd <b>bytes</b> & spacing", "timestamp": 1700000000500, "x-extra": {"keep": [1, 2]}}`))
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs[:5], append([]core.Message{odd}, msgs[5:]...)...)
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s1", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s2", Messages: []core.Message{core.UserText("another zebra, elsewhere", 1_800_000_000_000)}}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Compact(ctx, core.CompactParams{SessionID: "s1", TokenBudget: 3000, Force: true})
	if err != nil || !res.Compacted {
		t.Fatalf("fixture compaction: %+v %v", res, err)
	}
	return e
}

// TestGrep: the door searches the session's conversation, or every
// conversation of its agent (scope "agent"), and a hit's seq is the stored
// message's; the matching itself is lossless/tools' (TestGrepMatching).
func TestGrep(t *testing.T) {
	e := toolFixture(t)
	ctx := context.Background()
	hits, err := e.Grep(ctx, tools.GrepParams{SessionID: "s1", Query: "Zebra build"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Kind != "message" || !strings.Contains(hits[0].Snippet, "zebra near the build") || hits[0].Role != core.RoleUser {
		t.Fatalf("words: %+v", hits)
	}
	m, err := mustConv(t, e, "s1").Message(ctx, hits[0].Seq)
	if err != nil || !strings.Contains(m.Text(), "zebra") {
		t.Fatalf("hit seq %d is not the zebra message: %v", hits[0].Seq, err)
	}
	if hits, _ := e.Grep(ctx, tools.GrepParams{SessionID: "s1", Query: "zebra", Scope: tools.ScopeAgent}); len(hits) != 2 {
		t.Fatalf("agent scope: %+v", hits)
	}
	if _, err := e.Grep(ctx, tools.GrepParams{SessionID: "s1", Query: "x", Scope: "galaxy"}); !errors.Is(err, ErrBadToolArgs) {
		t.Fatalf("bad scope: %v", err)
	}
	if _, err := e.Grep(ctx, tools.GrepParams{SessionID: "nope", Query: "zebra"}); !errors.Is(err, core.ErrUnknownSession) {
		t.Fatalf("unknown session: %v", err)
	}
	if hits, _ := e.Grep(ctx, tools.GrepParams{SessionID: "s1", Query: "summarymark", Kind: "summary"}); len(hits) == 0 || hits[0].SummaryID == "" {
		t.Fatalf("summary hits: %+v", hits)
	}
}

func mustConv(t *testing.T, e *Engine, sid string) *Conversation {
	t.Helper()
	c, err := e.Conversation(context.Background(), "", sid)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTools(t *testing.T) {
	e := toolFixture(t)
	ctx := WithToolSession(context.Background(), tools.ToolSession{SessionID: "s1"})
	defs := e.Tools()
	byName := map[string]tools.Tool{}
	for _, tl := range defs {
		var schema map[string]any
		if err := json.Unmarshal(tl.Schema, &schema); err != nil || schema["type"] != "object" || tl.Description == "" {
			t.Fatalf("tool %s: schema %s: %v", tl.Name, tl.Schema, err)
		}
		byName[tl.Name] = tl
	}
	if len(byName) != 3 || byName[ToolGrep].Handler == nil || byName[ToolDescribe].Handler == nil || byName[ToolExpand].Handler == nil {
		t.Fatalf("tools: %v", defs)
	}
	out, err := byName[ToolGrep].Handler(ctx, json.RawMessage(`{"query":"zebra"}`))
	if err != nil || !strings.Contains(out, "zebra near the build") {
		t.Fatalf("grep tool: %s %v", out, err)
	}
	conv := mustConv(t, e, "s1")
	items, _ := conv.Items(context.Background())
	if !items[0].IsSummary() {
		t.Fatal("fixture: first item is not a summary")
	}
	id := items[0].Ref.ID
	out, err = byName[ToolDescribe].Handler(ctx, json.RawMessage(fmt.Sprintf(`{"id":%q}`, id)))
	if err != nil || !strings.Contains(out, "SUMMARYMARK") || !strings.Contains(out, `"active":true`) {
		t.Fatalf("describe tool: %.300s %v", out, err)
	}
	// Expand: every page's messages are the stored bytes, verbatim (the
	// odd message keeps its spacing, HTML characters and unknown field).
	want := storedMessages(t, e, "", "s1")
	var got [][]byte
	cursor := ""
	for {
		args, _ := json.Marshal(map[string]any{"id": id, "maxTokens": 200, "cursor": cursor})
		out, err := byName[ToolExpand].Handler(ctx, args)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Messages []struct {
				Seq     uint64          `json:"seq"`
				Message json.RawMessage `json:"message"`
			} `json:"messages"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal([]byte(out), &page); err != nil {
			t.Fatalf("expand output is not JSON: %v", err)
		}
		for _, m := range page.Messages {
			if !strings.Contains(out, string(want[m.Seq-1])) {
				t.Fatalf("message %d not verbatim in the output", m.Seq)
			}
			got = append(got, m.Message)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("expanded message %d differs", i)
		}
	}
	if !bytes.Contains(bytes.Join(got, nil), []byte(`"content": "odd <b>bytes</b> & spacing"`)) {
		t.Fatal("the odd message lost its bytes")
	}
	for _, bad := range []string{`{"query":""}`, `{"query":"x","bogus":1}`, `[1]`, `{"query":"x","scope":"galaxy"}`} {
		if _, err := byName[ToolGrep].Handler(ctx, json.RawMessage(bad)); !errors.Is(err, ErrBadToolArgs) {
			t.Errorf("grep %s: want ErrBadToolArgs, got %v", bad, err)
		}
	}
	if _, err := byName[ToolExpand].Handler(context.Background(), json.RawMessage(`{"id":"x"}`)); !errors.Is(err, ErrBadToolArgs) {
		t.Errorf("expand without a session: %v", err)
	}
	if _, err := byName[ToolExpand].Handler(ctx, json.RawMessage(fmt.Sprintf(`{"id":%q,"cursor":"junk"}`, id))); err == nil {
		t.Error("expand with a junk cursor succeeded")
	}
}

// TestToolNames: the tools' names are lossless/tools' (the model sees
// those), and the engine's constants name the same tools.
func TestToolNames(t *testing.T) {
	for _, c := range []struct{ engine, tools string }{{ToolGrep, tools.NameGrep}, {ToolDescribe, tools.NameDescribe}, {ToolExpand, tools.NameExpand}} {
		if c.engine != c.tools {
			t.Errorf("engine tool %q, lossless/tools names it %q", c.engine, c.tools)
		}
	}
	if ErrBadToolArgs != tools.ErrBadArgs {
		t.Error("ErrBadToolArgs is not tools.ErrBadArgs")
	}
}

// TestToolsBoundToTheirAgent: a tool call bound to agent main cannot read
// another agent's history by naming it, nor by a session key of that agent.
func TestToolsBoundToTheirAgent(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "x", SessionKey: "agent:secret:main",
		Messages: []core.Message{core.UserText("the vault code is 7781", 1)}}); err != nil {
		t.Fatal(err)
	}
	bound := core.ToolCallParams{AgentID: "main", SessionKey: "agent:main:main", SessionID: "m"}
	for _, args := range []string{
		`{"query":"vault","scope":"agent","agentId":"secret"}`,
		`{"query":"vault","scope":"agent","sessionKey":"agent:secret:main"}`,
	} {
		p := bound
		p.Name, p.Arguments = ToolGrep, json.RawMessage(args)
		res, err := e.CallTool(ctx, p)
		if err == nil || strings.Contains(res.Text, "7781") {
			t.Fatalf("lcm_grep %s from agent main: %q %v", args, res.Text, err)
		}
	}
	// Its own agent's sessions stay reachable.
	p := core.ToolCallParams{Name: ToolGrep, AgentID: "secret", SessionKey: "agent:secret:main", SessionID: "x",
		Arguments: json.RawMessage(`{"query":"vault"}`)}
	if res, err := e.CallTool(ctx, p); err != nil || !strings.Contains(res.Text, "7781") {
		t.Fatalf("lcm_grep in its own agent: %q %v", res.Text, err)
	}
}
