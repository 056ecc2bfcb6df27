package lossless_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/tools"
)

// Compact a long session, then expand one of its summaries back to the
// original messages with the lcm_expand tool.
func ExampleEngine_Compact() {
	dir, _ := os.MkdirTemp("", "lossless-example-")
	defer os.RemoveAll(dir)
	cfg := config.Default()
	cfg.StoreDir, cfg.Tokenizer, cfg.FreshTailMessages = dir, "chars4", 8
	e, err := lossless.Open(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx := context.Background()
	var msgs []core.Message
	for i := 0; i < 100; i++ {
		text := fmt.Sprintf("step %d: ran the tests again; %s", i, strings.Repeat("output line ", 30))
		if i%2 == 0 {
			msgs = append(msgs, core.UserText(text, 1_700_000_000_000+int64(i)*1000))
		} else {
			msgs = append(msgs, core.AssistantText(text, 1_700_000_000_000+int64(i)*1000))
		}
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "demo", Messages: msgs}); err != nil {
		panic(err)
	}
	res, err := e.Compact(ctx, core.CompactParams{SessionID: "demo", TokenBudget: 4000, Force: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("ok:", res.OK, "compacted:", res.Compacted, "fits:", res.Result.TokensAfter <= 4000)

	conv, _ := e.Conversation(ctx, "", "demo")
	items, _ := conv.Items(ctx)
	page, err := e.ExpandSummary(ctx, tools.ExpandParams{SessionID: "demo", ID: items[0].Ref.ID, MaxTokens: 100000})
	if err != nil {
		panic(err)
	}
	fmt.Println("first expanded message is the original:", string(page.Messages[0].Message.Raw()) == string(msgs[0].Raw()))
	// Output:
	// ok: true compacted: true fits: true
	// first expanded message is the original: true
}
