package explore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// openTest opens an engine (chars/4 counter) in a fresh directory and,
// when the test ends, checks the store (lossless.Engine.Check, deep) and
// closes it.
func openTest(t testing.TB, mutate ...func(*config.Config)) *lossless.Engine {
	t.Helper()
	cfg := config.Default()
	cfg.StoreDir = t.TempDir()
	cfg.Tokenizer = core.CounterChars4
	for _, f := range mutate {
		f(&cfg)
	}
	e, err := lossless.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		res, err := e.Check(context.Background(), true)
		if err != nil || len(res.Problems) > 0 {
			t.Errorf("check: %+v %v", res.Problems, err)
		}
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

func withoutRecall(c *config.Config) { off := false; c.Recall.Enabled = &off }

// markSummarizer marks its summaries (SUMMARYMARK) and keeps them short.
type markSummarizer struct{}

func (markSummarizer) Name() string { return "mark" }
func (markSummarizer) Summarize(_ context.Context, req core.SummarizeRequest) (string, error) {
	return "SUMMARYMARK " + core.Truncate(core.Chars4{}, req.Text, req.TargetTokens/4), nil
}

func textMsg(role, text string, ts int64) core.Message {
	if role == core.RoleUser {
		return core.UserText(text, ts)
	}
	return core.AssistantText(text, ts)
}

// toolFixture (package lossless's, through the public API): session s1
// with 80 messages (message 10 mentions a zebra, message 30 an "error
// 404", an odd-bytes message with spacing and HTML characters), compacted;
// session s2 of the same agent mentions a zebra.
func toolFixture(t *testing.T) *lossless.Engine {
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

func mustConv(t *testing.T, e *lossless.Engine, sid string) *lossless.Conversation {
	t.Helper()
	c, err := e.Conversation(context.Background(), "", sid)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
