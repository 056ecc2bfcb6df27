package lossless

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/lossless/tools"
)

func withRecall(c *config.Config) { on := true; c.Recall.Enabled = &on }

// withoutRecall turns recall off (it is on by default).
func withoutRecall(c *config.Config) { off := false; c.Recall.Enabled = &off }

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

// recallBlockIDs returns the ids of the turns and summaries a recall block
// shows, a run's range ("<conv>:4-6") expanded to its turns.
func recallBlockIDs(rm string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`<item id="([^"]+)"`).FindAllStringSubmatch(rm, -1) {
		id := m[1]
		conv, rng, ok := strings.Cut(id, ":")
		a, b, isRange := strings.Cut(rng, "-")
		if !ok || !isRange {
			ids = append(ids, id)
			continue
		}
		from, err1 := strconv.ParseUint(a, 10, 64)
		to, err2 := strconv.ParseUint(b, 10, 64)
		if err1 != nil || err2 != nil {
			ids = append(ids, id)
			continue
		}
		for seq := from; seq <= to; seq++ {
			ids = append(ids, conv+":"+strconv.FormatUint(seq, 10))
		}
	}
	return ids
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
	if !slices.Contains(recallBlockIDs(rm), items[0].ID) {
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
	for _, m := range res.Messages {
		if !IsRecallMessage(m) {
			shown[m.Text()] = true
		}
	}
	// Every turn holds both words: no hit is specific enough for the
	// relevance gate, and the ranking before it is checked.
	ungated := recalled.Options{K: 50, MinScore: -1}
	items, err := e.RecallWith(ctx, p, ungated)
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
	if items, _ := e.RecallWith(ctx, p, ungated); len(items) != 0 {
		t.Errorf("recalled %d items already in context", len(items))
	}
}

// TestRecallAgentIsolation: two agents with the same words; nothing of one
// is ever returned to the other, by recall, assemble, grep or expand.
func TestRecallAgentIsolation(t *testing.T) {
	e := openTest(t, withRecall, func(c *config.Config) { c.FreshTailMessages = 2 })
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
		if page, err := e.ExpandSummary(ctx, tools.ExpandParams{AgentID: "bob", SessionID: "bob-0", SessionKey: "agent:bob:s0", ID: id}); err != nil || len(page.Messages) == 0 {
			t.Fatalf("bob cannot expand his own summary %s: %v", id, err)
		}
		page, err := e.ExpandSummary(ctx, tools.ExpandParams{AgentID: "alice", SessionID: "alice-0", SessionKey: "agent:alice:s0", ID: id})
		if err == nil && len(page.Messages) > 0 {
			t.Fatalf("alice expanded bob's summary %s: %d messages", id, len(page.Messages))
		}
	}
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	// The summaries are indexed (under bob only).
	for agent, want := range map[string]bool{"bob": true, "alice": false} {
		hs, err := bleveOf(e.recaller()).Search(ctx, index.Query{Agent: agent, Kind: index.KindSummary, Text: "shared secret launch code", K: 50})
		if err != nil || (len(hs) > 0) != want {
			t.Fatalf("%s's summaries in the index: %d %v", agent, len(hs), err)
		}
	}
	for _, pair := range [][2]string{{"alice", "bob"}, {"bob", "alice"}} {
		me, other := pair[0], pair[1]
		key := "agent:" + me + ":fresh"
		for _, prompt := range []string{"shared secret launch code", "marker " + other, "topic 3", "marker-" + other + "-1-3"} {
			p := core.AssembleParams{SessionID: me + "-fresh", SessionKey: key, TokenBudget: 100000, Prompt: prompt}
			// The ranking before the relevance gate (the shared words are
			// in every turn: none passes it).
			items, err := e.RecallWith(ctx, p, recalled.Options{K: 100, MinScore: -1})
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
			hits, err := e.Grep(ctx, tools.GrepParams{AgentID: me, SessionKey: key, SessionID: me + "-0", Query: prompt, Scope: tools.ScopeAgent, Limit: 200})
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

// TestRecallOnByDefault: an engine opened with the defaults recalls in
// Assemble (that recall is on unless the config says "enabled": false is
// lossless/config's TestRecallEnabled).
func TestRecallOnByDefault(t *testing.T) {
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

// gateFixture stores an agent's history for the relevance gate tests: a
// trivia session whose replies share common words with the prompts below
// (as when a model echoes the host's context block), filler sessions on
// other topics, and the current session, which holds the HELIOTROPE-2
// message in its assembled window.
func gateFixture(t *testing.T, e *Engine) core.AssembleParams {
	t.Helper()
	ctx := context.Background()
	ingestTurns(t, e, "trivia", "agent:main:trivia",
		"What is the capital of France?",
		"Big message received. The capital of France is Paris.",
		"Tell me a short joke about compilers.",
		"Message 2 of the session: why did the compiler break up with the linker? Too many unresolved references.")
	topics := []string{"tomato seedlings need warmth", "sourdough starter feeding schedule", "bike chain lubrication",
		"quarterly tax estimate", "flight to Lisbon in May", "dentist appointment moved", "new running shoes",
		"library book overdue", "router firmware update", "birthday gift for Ana"}
	for i, topic := range topics {
		ingestTurns(t, e, fmt.Sprintf("filler-%d", i), fmt.Sprintf("agent:main:filler-%d", i),
			"Can you help me with the "+topic+"?", "Sure, here are a few notes on the "+topic+".",
			"Thanks, that settles the "+topic+".", "Glad to help.")
	}
	ingestTurns(t, e, "cur", "agent:main:cur",
		"Big message 1: the deploy runbook lives in ops/runbook.md, codename HELIOTROPE-1.",
		"Noted, HELIOTROPE-1 is the runbook's codename.")
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	return core.AssembleParams{SessionID: "cur", SessionKey: "agent:main:cur", TokenBudget: 20000,
		Prompt: "Big message 2: the staging cluster's codename is HELIOTROPE-2, keep it in mind."}
}

// TestRecallGateRefusesUnrelated: a prompt whose subject is in the
// assembled window only gets no recall block, although the ranking before
// the gate holds trivia turns that share words with it (the issue's
// "capital of France" and "joke about compilers" recalled for a HELIOTROPE-2
// prompt); a prompt on trivia gets the trivia.
func TestRecallGateRefusesUnrelated(t *testing.T) {
	e := openTest(t, withRecall)
	ctx := context.Background()
	p := gateFixture(t, e)
	res, err := e.Assemble(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if rm := recallMessage(res); rm != "" {
		t.Fatalf("unrelated recall block:\n%s", rm)
	}
	trivia, err := e.Conversation(ctx, "main", "trivia")
	if err != nil {
		t.Fatal(err)
	}
	ungated, err := e.RecallWith(ctx, p, recalled.Options{MinScore: -1})
	if err != nil {
		t.Fatal(err)
	}
	weak := 0
	for _, it := range ungated {
		if it.Conversation == trivia.ID() {
			weak++
			if it.Relevance >= config.DefaultRecallMinScore {
				t.Errorf("trivia item %s passes the gate: relevance %.2f", it.ID, it.Relevance)
			}
		}
	}
	if weak == 0 {
		t.Fatalf("the fixture is too easy: no trivia turn ranked before the gate: %+v", ungated)
	}
	if items, err := e.Recall(ctx, p, 0); err != nil || len(items) != 0 {
		t.Fatalf("Recall past the gate: %+v %v", items, err)
	}
	// A prompt about what the window shows: the trivia turns sharing its
	// common words are far weaker matches than the window's.
	q := p
	q.Prompt = "Which codename did big message 1 give?"
	res, err = e.Assemble(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if rm := recallMessage(res); rm != "" {
		t.Fatalf("recall block for a prompt about the window:\n%s", rm)
	}
	// A clearly relevant prompt passes, from another session.
	p.Prompt = "What was that joke about the compiler and the linker?"
	res, err = e.Assemble(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	rm := recallMessage(res)
	if !strings.Contains(rm, "unresolved references") {
		t.Fatalf("relevant item not recalled:\n%s", rm)
	}
	if strings.Contains(rm, "tomato") || strings.Contains(rm, "HELIOTROPE") {
		t.Errorf("recalled more than the joke:\n%s", rm)
	}
	items, err := e.Recall(ctx, p, 0)
	if err != nil || len(items) == 0 || items[0].Relevance < config.DefaultRecallMinScore {
		t.Fatalf("items %+v %v", items, err)
	}
}

// TestRecallNeverWhatIsInWindow: nothing the assembled window shows is
// recalled: neither the session's own messages in it, nor the same text
// held by another conversation (a forked prefix, a history imported twice,
// messages a host passes through); a relevant message outside it is.
func TestRecallNeverWhatIsInWindow(t *testing.T) {
	e := openTest(t, withRecall)
	ctx := context.Background()
	p := gateFixture(t, e)
	window := "Big message 1: the deploy runbook lives in ops/runbook.md, codename HELIOTROPE-1."
	ingestTurns(t, e, "copy", "agent:main:copy", window,
		"The HELIOTROPE-1 runbook moved to ops/runbook-v2.md on Tuesday.")
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	p.Prompt = "Where does the HELIOTROPE-1 deploy runbook live now?"
	check := func(res core.AssembleResult) {
		t.Helper()
		rm := recallMessage(res)
		if !strings.Contains(rm, "runbook-v2.md") {
			t.Fatalf("the relevant turn outside the window is not recalled:\n%s", rm)
		}
		if strings.Contains(rm, "lives in ops/runbook.md") {
			t.Fatalf("recalled a turn the window shows:\n%s", rm)
		}
	}
	res, err := e.Assemble(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Messages[0].Text() != window {
		t.Fatalf("window %v", rawsOf(res.Messages))
	}
	check(res)
	// Recall without a window (RecallWith) ranks the copy: in Assemble,
	// the window's text is what leaves it out.
	items, err := e.RecallWith(ctx, p, recalled.Options{K: 50})
	if err != nil {
		t.Fatal(err)
	}
	copied := false
	for _, it := range items {
		c, _ := parseConvID(it.Conversation)
		if m, err := (&Conversation{e: e, id: c}).Message(ctx, it.Seq); err == nil && m.Text() == window {
			copied = true
		}
	}
	if !copied {
		t.Fatalf("the fixture is too easy: the copy does not rank: %+v", items)
	}
	// A session the engine does not know: the host's messages pass through
	// and are the window.
	host := []core.Message{core.UserText(window, 1_700_000_500_000)}
	res, err = e.Assemble(ctx, core.AssembleParams{SessionID: "unknown", SessionKey: "agent:main:unknown", TokenBudget: 20000,
		Prompt: p.Prompt, Messages: host})
	if err != nil {
		t.Fatal(err)
	}
	check(res)
}

// TestRecallMessageTimestamp: the recall message carries the newest
// timestamp of the window it follows (never 0, which hosts render as
// 1970); with an empty window, the current time, kept when the host hands
// the message back.
func TestRecallMessageTimestamp(t *testing.T) {
	e := openTest(t, withRecall)
	ctx := context.Background()
	p := gateFixture(t, e)
	p.Prompt = "What was that joke about the compiler and the linker?"
	res, err := e.Assemble(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	n := len(res.Messages)
	if recallMessage(res) == "" {
		t.Fatal("no recall message")
	}
	newest := int64(0)
	for _, m := range res.Messages[:n-1] {
		newest = max(newest, m.Timestamp())
	}
	if ts := res.Messages[n-1].Timestamp(); ts == 0 || ts != newest {
		t.Fatalf("recall timestamp %d, window's newest %d", ts, newest)
	}
	// Nothing in the window: now.
	before := time.Now().UnixMilli()
	q := core.AssembleParams{SessionID: "brand-new", SessionKey: "agent:main:brand-new", TokenBudget: 20000, Prompt: p.Prompt}
	res, err = e.Assemble(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || !IsRecallMessage(res.Messages[0]) {
		t.Fatalf("messages %v", res.Messages)
	}
	ts := res.Messages[0].Timestamp()
	if ts < before || ts > time.Now().UnixMilli() {
		t.Fatalf("recall timestamp %d, not now (%d)", ts, before)
	}
	// Handed back (the host assembling again before the next model call):
	// the same message, byte for byte.
	time.Sleep(2 * time.Millisecond)
	q.Messages = res.Messages
	again, err := e.Assemble(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Messages) != 1 || string(again.Messages[0].Raw()) != string(res.Messages[0].Raw()) {
		t.Fatalf("second assemble:\n%s\nfirst:\n%s", rawsOf(again.Messages), rawsOf(res.Messages))
	}
}

func countRecallMessages(msgs []core.Message) int {
	n := 0
	for _, m := range msgs {
		if IsRecallMessage(m) || strings.Contains(m.Text(), "<lcm_recall>") {
			n++
		}
	}
	return n
}

// TestRecallIdempotentOverItsOutput: the host assembles again with the
// previous output as messages (OpenClaw does before every model call of a
// turn); there is still exactly one recall block, and the output is the
// same bytes. Also when the session is unknown (its messages pass
// through), and when a host stored the recall message in the transcript
// (it is neither shown twice nor indexed).
func TestRecallIdempotentOverItsOutput(t *testing.T) {
	e := openTest(t, withRecall)
	ctx := context.Background()
	p := gateFixture(t, e)
	p.Prompt = "What was that joke about the compiler and the linker?"
	unknown := core.AssembleParams{SessionID: "unknown", SessionKey: "agent:main:unknown", TokenBudget: 20000, Prompt: p.Prompt,
		Messages: []core.Message{core.UserText("hello there", 1_700_000_900_000), core.AssistantText("Hi! How can I help?", 1_700_000_901_000)}}
	for name, p := range map[string]core.AssembleParams{"known": p, "unknown": unknown} {
		first, err := e.Assemble(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if countRecallMessages(first.Messages) != 1 {
			t.Fatalf("%s: first assemble has %d recall blocks", name, countRecallMessages(first.Messages))
		}
		prev := first
		for i := 0; i < 3; i++ {
			q := p
			q.Messages = prev.Messages
			next, err := e.Assemble(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if n := countRecallMessages(next.Messages); n != 1 {
				t.Fatalf("%s: assemble %d over its own output: %d recall blocks\n%s", name, i+2, n, rawsOf(next.Messages))
			}
			if strings.Join(rawsOf(next.Messages), "\n") != strings.Join(rawsOf(first.Messages), "\n") || next.EstimatedTokens != first.EstimatedTokens {
				t.Fatalf("%s: assemble %d differs from the first:\n%s\nfirst:\n%s", name, i+2, rawsOf(next.Messages), rawsOf(first.Messages))
			}
			prev = next
		}
	}
	// A host that stores the recall message as a turn of the session.
	first, err := e.Assemble(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	rm := first.Messages[len(first.Messages)-1]
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "cur", SessionKey: "agent:main:cur",
		Messages: []core.Message{rm, core.AssistantText("Too many unresolved references!", rm.Timestamp()+1)}}); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := e.Assemble(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if n := countRecallMessages(res.Messages); n != 1 {
		t.Fatalf("stored recall message: %d recall blocks\n%s", n, rawsOf(res.Messages))
	}
	hs, err := bleveOf(e.recaller()).Search(ctx, index.Query{Agent: "main", Text: "Recalled by the context engine", K: 10})
	if err != nil || len(hs) != 0 {
		t.Fatalf("the stored recall message is indexed: %+v %v", hs, err)
	}
}

// TestRecallSmallHistory: the end-to-end test's flow on a history of a few
// turns, where every word is rare: a fact said in one session is recalled
// in another, an unrelated prompt gets no block, and a prompt about the
// fact in the session that holds it does not get the fact back.
func TestRecallSmallHistory(t *testing.T) {
	e := openTest(t, withRecall)
	ctx := context.Background()
	fact := "Please remember this for later: the launch codename is HELIOTROPE-7 and the backup site is in Tromsø."
	ingestTurns(t, e, "facts", "agent:main:facts", fact, "Noted (reply 1).",
		"Thanks. Also note that the quarterly budget review happens on Thursdays.", "Noted (reply 2).")
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	assemble := func(key, prompt string) string {
		t.Helper()
		res, err := e.Assemble(ctx, core.AssembleParams{SessionID: key, SessionKey: "agent:main:" + key, TokenBudget: 20000, Prompt: prompt,
			Messages: []core.Message{core.UserText(prompt, 1_700_000_100_000)}})
		if err != nil {
			t.Fatal(err)
		}
		return recallMessage(res)
	}
	q := "Which launch codename did we agree on earlier? I think it started with HELIOTROPE."
	if rm := assemble("recall", q); !strings.Contains(rm, "HELIOTROPE-7") {
		t.Fatalf("the fact is not recalled:\n%s", rm)
	}
	ingestTurns(t, e, "recall", "agent:main:recall", q, "Noted (reply 3).")
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	// (A prompt of the few words such a history has, "thanks, noted", still
	// passes: in six turns, no word is common.)
	for _, p := range []string{"Describe a sunset over the ocean in one short sentence.", "What is 2 + 2?", "Write a haiku about autumn rain."} {
		if rm := assemble("recall", p); rm != "" {
			t.Errorf("%q: recall block:\n%s", p, rm)
		}
	}
	if rm := assemble("facts", "Remind me of the HELIOTROPE launch codename, please."); strings.Contains(rm, "Tromsø") {
		t.Errorf("the fact in the window recalled again:\n%s", rm)
	}
}

// TestRecallMinScoreConfig: recall.minScore in the config moves the gate;
// a negative value turns it off, and the unrelated trivia comes back.
func TestRecallMinScoreConfig(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"recall":{"minScore":-1}}`))
	if err != nil || cfg.Recall.MinScore != -1 {
		t.Fatalf("recall.minScore not parsed: %+v %v", cfg.Recall, err)
	}
	e := openTest(t, withRecall, func(c *config.Config) { c.Recall.MinScore = -1 })
	p := gateFixture(t, e)
	items, err := e.Recall(context.Background(), p, 0)
	if err != nil || len(items) == 0 {
		t.Fatalf("with the gate off, nothing recalled: %+v %v", items, err)
	}
}
