package summarize_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/summarize"
)

func ExampleNewExtractive() {
	e := summarize.NewExtractive(core.DefaultCounter())
	text := `user: Please move the cache from /tmp/cache to /var/cache/app. Never touch the production bucket.
assistant: I decided to keep the old path as a symlink, so nothing breaks.
assistant: Done: moved 1,204 files; the service at 10.0.0.7:8080 is healthy.
toolResult (bash): listing of 1204 files omitted here, mostly thumbnails and small json blobs of no interest
user: Next, rotate the key in config/secrets.yaml please.`
	out, err := e.Summarize(context.Background(), core.SummarizeRequest{
		Text: text, TargetTokens: 100, Kind: core.SummaryLeaf,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// Goal: Please move the cache from /tmp/cache to /var/cache/app. · Next, rotate the key in config/secrets.yaml please.
	// Constraints: Never touch the production bucket.
	// Done: moved 1,204 files; the service at 10.0.0.7:8080 is healthy.
	// Decisions: I decided to keep the old path as a symlink, so nothing breaks.
}

func ExampleFromConfig() {
	// plugins.entries.lossless.config.summarizer from openclaw.json
	var cfg summarize.Config
	raw := `{"kind": "openai", "model": "qwen3:8b", "baseUrl": "http://localhost:11434/v1", "timeoutMs": 30000}`
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		panic(err)
	}
	s, err := summarize.FromConfig(cfg, core.Chars4{})
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Name()) // no network until Summarize is called

	def, _ := summarize.FromConfig(summarize.Config{}, core.Chars4{})
	fmt.Println(def.Name())
	// Output:
	// openai:qwen3:8b
	// extractive
}
