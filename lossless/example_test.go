package lossless_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// Open a store, ingest a turn, replay it (stored once), and assemble.
func Example() {
	dir, _ := os.MkdirTemp("", "lossless-example")
	defer os.RemoveAll(dir)
	cfg := config.Default()
	cfg.StoreDir = dir
	cfg.Tokenizer = "chars4"
	ctx := context.Background()
	e, err := lossless.Open(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	msgs := []core.Message{
		core.UserText("What is 2+2?", 1700000000000),
		core.AssistantText("4", 1700000001000),
	}
	for i := 0; i < 2; i++ {
		r, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s1", SessionKey: "agent:main:s1", Messages: msgs})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("ingested", r.IngestedCount)
	}
	out, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s1", SessionKey: "agent:main:s1", TokenBudget: 1000})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range out.Messages {
		fmt.Printf("%s: %s\n", m.Role(), m.Text())
	}
	fmt.Println("tokens", out.EstimatedTokens)
	// Output:
	// ingested 2
	// ingested 0
	// user: What is 2+2?
	// assistant: 4
	// tokens 4
}

// Import an OpenClaw session file; a second run reads only what was
// appended.
func ExampleEngine_Import() {
	dir, _ := os.MkdirTemp("", "lossless-example")
	defer os.RemoveAll(dir)
	path := dir + "/session.jsonl"
	_ = os.WriteFile(path, []byte(`{"type":"session","version":4,"id":"abc","timestamp":"2026-01-01T00:00:00Z"}
{"type":"message","id":"1","message":{"role":"user","content":"hello","timestamp":1}}
`), 0o644)
	cfg := config.Default()
	cfg.StoreDir = dir + "/store"
	cfg.Tokenizer = "chars4"
	e, err := lossless.Open(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	r, _ := e.Import(context.Background(), "main", path)
	fmt.Println(r.SessionID, r.Imported, r.Resumed)
	r, _ = e.Import(context.Background(), "main", path)
	fmt.Println(r.SessionID, r.Imported, r.Resumed)
	// Output:
	// abc 1 false
	// abc 0 true
}
