package lossless

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
)

func withRecall(c *Config) { on := true; c.Recall.Enabled = &on }

// withoutRecall turns recall off (it is on by default).
func withoutRecall(c *Config) { off := false; c.Recall.Enabled = &off }

// ingestTurns stores texts as alternating user/assistant messages.
func ingestTurns(t testing.TB, e *Engine, sessionID, sessionKey string, texts ...string) {
	t.Helper()
	msgs := make([]core.Message, len(texts))
	for i, s := range texts {
		if i%2 == 0 {
			msgs[i] = core.UserText(s, int64(1700000000000+i*1000))
		} else {
			msgs[i] = core.AssistantText(s, int64(1700000000000+i*1000))
		}
	}
	if _, err := e.IngestBatch(context.Background(), core.IngestBatchParams{SessionID: sessionID, SessionKey: sessionKey, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
}

func recallMessage(res core.AssembleResult) string {
	if len(res.Messages) == 0 {
		return ""
	}
	last := res.Messages[len(res.Messages)-1]
	if !strings.HasPrefix(last.Text(), "<lcm_recall>") {
		return ""
	}
	return last.Text()
}

func TestRecallInAssemble(t *testing.T) {
	e := openTest(t, withRecall)
	ctx := context.Background()
	ingestTurns(t, e, "old", "agent:main:old",
		"Where did we put the staging database credentials?",
		"They are in vault path secret/staging/postgres, rotated every 30 days.",
		"Thanks. And the deploy script?",
		"ops/deploy_staging.sh, run it from the repo root.")
	ingestTurns(t, e, "other", "agent:main:other", "Let us plan the birthday party for Sam.", "Cake at 5pm, balloons are blue.")
	ingestTurns(t, e, "cur", "agent:main:cur", "Good morning", "Good morning! What are we doing today?")
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	p := core.AssembleParams{SessionID: "cur", SessionKey: "agent:main:cur", TokenBudget: 4000,
		Prompt: "where are the staging postgres credentials kept?"}
	res, err := e.Assemble(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	rm := recallMessage(res)
	if rm == "" {
		t.Fatalf("no recall message: %v", res.Messages)
	}
	for _, want := range []string{"secret/staging/postgres", `session="agent:main:old"`, "id=", "[recall "} {
		if !strings.Contains(rm, want) {
			t.Errorf("recall message lacks %q:\n%s", want, rm)
		}
	}
	if strings.Contains(rm, "balloons") {
		t.Errorf("recalled an unrelated turn:\n%s", rm)
	}
	// The context itself is unchanged before the recall message.
	if len(res.Messages) != 3 || res.Messages[0].Text() != "Good morning" {
		t.Fatalf("context: %d messages", len(res.Messages))
	}
	// Counted inside the budget, within the recall share.
	if res.EstimatedTokens > p.TokenBudget || core.CountMessage(e.TokenCounter(), res.Messages[2]) > p.TokenBudget/10 {
		t.Errorf("tokens %d of %d", res.EstimatedTokens, p.TokenBudget)
	}
	// The ranked items are what the message shows.
	items, err := e.Recall(ctx, p, 0)
	if err != nil || len(items) == 0 {
		t.Fatalf("Recall: %v %v", items, err)
	}
	if !strings.Contains(rm, fmt.Sprintf("id=%q", items[0].ID)) {
		t.Errorf("best item %s not rendered:\n%s", items[0].ID, rm)
	}
	if strings.Contains(rm, ToolGrep) {
		t.Errorf("mentions %s, which is not available:\n%s", ToolGrep, rm)
	}
	pg := p
	pg.AvailableTools = []string{ToolGrep}
	if res, err := e.Assemble(ctx, pg); err != nil || !strings.Contains(recallMessage(res), ToolGrep) {
		t.Errorf("grep available but not mentioned: %v", err)
	}
	// citationsMode off: no ids, no citation instruction.
	p.CitationsMode = core.CitationsOff
	res, err = e.Assemble(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	rm = recallMessage(res)
	if rm == "" || strings.Contains(rm, "id=") || strings.Contains(rm, "[recall ") || !strings.Contains(rm, "secret/staging/postgres") {
		t.Errorf("citations off:\n%s", rm)
	}
	// No prompt: plain assemble, no recall.
	p.Prompt = ""
	res, _ = e.Assemble(ctx, p)
	if recallMessage(res) != "" {
		t.Error("recall without a prompt")
	}
	// A brand-new session (never ingested) recalls too.
	res, err = e.Assemble(ctx, core.AssembleParams{SessionID: "new", SessionKey: "agent:main:new", TokenBudget: 4000,
		Prompt:   "what colour were the balloons for Sam's party?",
		Messages: []core.Message{core.UserText("what colour were the balloons for Sam's party?", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if rm := recallMessage(res); !strings.Contains(rm, "balloons are blue") {
		t.Errorf("fresh session recall:\n%v", res.Messages)
	}
}

func TestRecallSkipsWhatIsInContext(t *testing.T) {
	e := openTest(t, withRecall)
	ctx := context.Background()
	var texts []string
	for i := 0; i < 40; i++ {
		texts = append(texts, fmt.Sprintf("turn %d about the zebra project milestone %d", i, i))
	}
	ingestTurns(t, e, "s", "agent:main:s", texts...)
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	// A budget that shows only the last turns: recall finds older ones only.
	p := core.AssembleParams{SessionID: "s", SessionKey: "agent:main:s", TokenBudget: 400, Prompt: "zebra milestone"}
	res, err := e.Assemble(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, m := range res.Messages[:len(res.Messages)-1] {
		shown[m.Text()] = true
	}
	items, err := e.Recall(ctx, p, 50)
	if err != nil || len(items) == 0 {
		t.Fatalf("recall %v %v", items, err)
	}
	conv, err := e.Conversation(ctx, "main", "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		m, err := conv.Message(ctx, it.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if shown[m.Text()] {
			t.Errorf("recalled %q, which is in the assembled context", m.Text())
		}
	}
	// With a budget that shows everything, nothing of the session is recalled.
	p.TokenBudget = 100000
	if _, err := e.Assemble(ctx, p); err != nil {
		t.Fatal(err)
	}
	if items, _ := e.Recall(ctx, p, 50); len(items) != 0 {
		t.Errorf("recalled %d items already in context", len(items))
	}
}

// TestRecallAgentIsolation: two agents with the same words; nothing of one
// is ever returned to the other, by recall, assemble, grep or expand.
func TestRecallAgentIsolation(t *testing.T) {
	e := openTest(t, withRecall, func(c *Config) { c.FreshTailMessages = 2 })
	ctx := context.Background()
	for _, agent := range []string{"alice", "bob"} {
		for s := 0; s < 3; s++ {
			var texts []string
			for i := 0; i < 12; i++ {
				texts = append(texts, fmt.Sprintf("shared secret launch code topic %d marker-%s-%d-%d and some longer filler prose so that the session needs compaction under a small budget", i, agent, s, i))
			}
			ingestTurns(t, e, fmt.Sprintf("%s-%d", agent, s), fmt.Sprintf("agent:%s:s%d", agent, s), texts...)
		}
	}
	// Summaries of bob's first session: indexed under bob, expandable only
	// from bob's conversation.
	res, err := e.Compact(ctx, core.CompactParams{SessionID: "bob-0", SessionKey: "agent:bob:s0", TokenBudget: 300,
		Force: true, CompactionTarget: core.CompactionTargetBudget})
	if err != nil || !res.OK {
		t.Fatalf("compact: %+v %v", res, err)
	}
	conv, err := e.ConversationFor(ctx, "bob", "bob-0", "agent:bob:s0")
	if err != nil {
		t.Fatal(err)
	}
	items, err := conv.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var bobSummaries []string
	for _, it := range items {
		if it.IsSummary() {
			bobSummaries = append(bobSummaries, it.Ref.ID)
		}
	}
	if len(bobSummaries) == 0 {
		t.Fatal("no summary made")
	}
	for _, id := range bobSummaries {
		if page, err := e.ExpandSummary(ctx, ExpandParams{AgentID: "bob", SessionID: "bob-0", SessionKey: "agent:bob:s0", ID: id}); err != nil || len(page.Messages) == 0 {
			t.Fatalf("bob cannot expand his own summary %s: %v", id, err)
		}
		page, err := e.ExpandSummary(ctx, ExpandParams{AgentID: "alice", SessionID: "alice-0", SessionKey: "agent:alice:s0", ID: id})
		if err == nil && len(page.Messages) > 0 {
			t.Fatalf("alice expanded bob's summary %s: %d messages", id, len(page.Messages))
		}
	}
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	// The summaries are indexed (under bob only).
	for agent, want := range map[string]bool{"bob": true, "alice": false} {
		hs, err := e.recaller().ix.Search(ctx, index.Query{Agent: agent, Kind: index.KindSummary, Text: "shared secret launch code", K: 50})
		if err != nil || (len(hs) > 0) != want {
			t.Fatalf("%s's summaries in the index: %d %v", agent, len(hs), err)
		}
	}
	for _, pair := range [][2]string{{"alice", "bob"}, {"bob", "alice"}} {
		me, other := pair[0], pair[1]
		key := "agent:" + me + ":fresh"
		for _, prompt := range []string{"shared secret launch code", "marker " + other, "topic 3", "marker-" + other + "-1-3"} {
			p := core.AssembleParams{SessionID: me + "-fresh", SessionKey: key, TokenBudget: 100000, Prompt: prompt}
			items, err := e.Recall(ctx, p, 100)
			if err != nil {
				t.Fatal(err)
			}
			if prompt == "shared secret launch code" && len(items) < 10 {
				t.Fatalf("%s: only %d items recalled", me, len(items))
			}
			for _, it := range items {
				c, _ := parseConvID(it.Conversation)
				conv := &Conversation{e: e, id: c}
				text := ""
				if it.Kind == "summary" {
					s, err := conv.Summary(ctx, it.SummaryID)
					if err != nil {
						t.Fatal(err)
					}
					text = s.Text
				} else {
					m, err := conv.Message(ctx, it.Seq)
					if err != nil {
						t.Fatal(err)
					}
					text = m.Text()
				}
				if strings.Contains(text, "marker-"+other) {
					t.Fatalf("%s recalled %s's item %q", me, other, text)
				}
			}
			res, err := e.Assemble(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Messages {
				if strings.Contains(m.Text(), "marker-"+other) {
					t.Fatalf("%s's assemble shows %s's message", me, other)
				}
			}
			hits, err := e.Grep(ctx, GrepParams{AgentID: me, SessionKey: key, SessionID: me + "-0", Query: prompt, Scope: ScopeAgent, Limit: 200})
			if err != nil {
				t.Fatal(err)
			}
			if prompt == "shared secret launch code" && len(hits) < 10 {
				t.Fatalf("%s: grep found only %d", me, len(hits))
			}
			for _, h := range hits {
				if strings.Contains(h.Snippet, "marker-"+other) {
					t.Fatalf("%s's grep returned %s's message", me, other)
				}
			}
		}
	}
}

func TestRecallIndexRebuiltFromStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := testConfig(dir)
	open := func(recall bool) *Engine {
		t.Helper()
		c := cfg
		c.Recall.Enabled = &recall
		e, err := Open(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	find := func(e *Engine, prompt, want string) {
		t.Helper()
		if err := e.WaitRecallIndex(ctx); err != nil {
			t.Fatal(err)
		}
		p := core.AssembleParams{SessionID: "q", SessionKey: "agent:main:q", TokenBudget: 10000, Prompt: prompt}
		res, err := e.Assemble(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(recallMessage(res), want) {
			t.Fatalf("%q: recall lacks %q: %v", prompt, want, res.Messages)
		}
	}
	e := open(true)
	ingestTurns(t, e, "a", "agent:main:a", "the wifi password is hunter2-orange", "noted")
	find(e, "wifi password", "hunter2-orange")
	if st := e.RecallStatus(); !st.Enabled || st.Rebuilding || st.Lag != 0 {
		t.Fatalf("status %+v", st)
	}
	e.Close()

	// Missing: the index directory is deleted.
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
	e = open(true)
	find(e, "wifi password", "hunter2-orange")
	e.Close()

	// Stale: messages stored while recall was off are not in the index.
	e = open(false)
	ingestTurns(t, e, "b", "agent:main:b", "the garage door code is 7715", "ok")
	e.Close()
	e = open(true)
	find(e, "garage door code", "7715")
	find(e, "wifi password", "hunter2-orange")
	e.Close()

	// Up to date: reopening does not rebuild.
	e = open(true)
	if st := e.RecallStatus(); st.Rebuilding || st.Rebuilt != 0 {
		t.Fatalf("rebuilt an up-to-date index: %+v", st)
	}
	find(e, "garage door code", "7715")
	e.Close()

	// Corrupt: garbage in every index file.
	filepath.Walk(filepath.Join(dir, "index"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			os.WriteFile(p, []byte("not an index"), 0o644)
		}
		return nil
	})
	e = open(true)
	find(e, "garage door code", "7715")
	e.Close()
}

func TestRecallOff(t *testing.T) {
	e := openTest(t, withoutRecall)
	ingestTurns(t, e, "a", "agent:main:a", "alpha beta", "gamma")
	res, err := e.Assemble(context.Background(), core.AssembleParams{SessionID: "b", SessionKey: "agent:main:b", Prompt: "alpha",
		Messages: []core.Message{core.UserText("alpha", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if recallMessage(res) != "" {
		t.Fatal("recall while off")
	}
	if _, err := os.Stat(filepath.Join(e.Config().StoreDir, "index")); !os.IsNotExist(err) {
		t.Fatalf("index created while recall is off: %v", err)
	}
	if items, err := e.Recall(context.Background(), core.AssembleParams{SessionID: "b", Prompt: "alpha"}, 5); err != nil || items != nil {
		t.Fatalf("Recall while off: %v %v", items, err)
	}
}

// TestRecallOnByDefault: recall is on unless the config says
// "enabled": false, and an engine opened with the defaults recalls in
// Assemble.
func TestRecallOnByDefault(t *testing.T) {
	for raw, want := range map[string]bool{
		``: true, `{}`: true, `{"recall":{}}`: true, `{"recall":{"k":3}}`: true,
		`{"recall":{"enabled":true}}`: true, `{"recall":{"enabled":false}}`: false,
	} {
		c, err := ParseConfig([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if c.RecallEnabled() != want {
			t.Errorf("%s: recall enabled %v, want %v", raw, c.RecallEnabled(), want)
		}
	}
	if _, err := ParseConfig([]byte(`{"recall":{"enabled":"yes"}}`)); err == nil {
		t.Error("a string for recall.enabled accepted")
	}
	e := openTest(t) // the defaults
	ctx := context.Background()
	ingestTurns(t, e, "old", "agent:main:old", "the boat is moored at pier 39 in slot C", "ok")
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if st := e.RecallStatus(); !st.Enabled || st.Rebuilding || st.Error != "" {
		t.Fatalf("status %+v", st)
	}
	res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "new", SessionKey: "agent:main:new", TokenBudget: 4000,
		Prompt: "where is the boat moored?", Messages: []core.Message{core.UserText("where is the boat moored?", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(recallMessage(res), "pier 39") {
		t.Fatalf("default config: no recall: %v", res.Messages)
	}
}

// indexGoroutines counts the goroutines running the recall index: its
// worker, the opening rebuild, and Bleve's own.
func indexGoroutines() int {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "contextengine/index.") || strings.Contains(g, "openRecall") || strings.Contains(g, "blevesearch/") {
			n++
		}
	}
	return n
}

// TestCloseDuringRebuild: Close right after an Open that started a rebuild
// of the recall index waits for it (no index goroutine survives), and the
// interrupted rebuild is redone at the next Open: nothing is lost.
func TestCloseDuringRebuild(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := testConfig(dir)
	withoutRecall(&c)
	e, err := Open(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, 600)
	for i := range texts {
		texts[i] = fmt.Sprintf("turn %d about topic%d", i, i)
	}
	texts[333] = "the spare key is under the blue flowerpot"
	ingestTurns(t, e, "a", "agent:main:a", texts...)
	e.Close()

	before := indexGoroutines()
	for i := 0; i < 3; i++ {
		e, err = Open(ctx, testConfig(dir)) // recall on: the index is missing, rebuilt
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && !e.RecallStatus().Rebuilding {
			t.Log("rebuild finished before the status was read")
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if n := indexGoroutines(); n > before {
			t.Fatalf("%d index goroutines after Close, %d before Open", n, before)
		}
	}
	e, err = Open(ctx, testConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if st := e.RecallStatus(); st.Error != "" || st.Rebuilding {
		t.Fatalf("status %+v", st)
	}
	items, err := e.Recall(ctx, core.AssembleParams{SessionID: "q", SessionKey: "agent:main:q", Prompt: "where is the spare key?"}, 3)
	if err != nil || len(items) == 0 || items[0].Seq != 334 {
		t.Fatalf("recall after interrupted rebuilds: %+v %v", items, err)
	}
}
