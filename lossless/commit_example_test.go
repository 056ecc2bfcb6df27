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

func openExample(dir string) *lossless.Engine {
	cfg := config.Default()
	cfg.StoreDir = dir
	cfg.Tokenizer = "chars4"
	e, err := lossless.Open(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	return e
}

// Commit a turn durably; a retry with the same advancement key (after a
// lost reply, say) is a duplicate and stores nothing twice.
func ExampleEngine_CommitTurn() {
	dir, _ := os.MkdirTemp("", "lossless-commit")
	defer os.RemoveAll(dir)
	e := openExample(dir)
	defer e.Close()
	ctx := context.Background()

	p := core.CommitTurnParams{
		AdvancementKey: "turn-42",
		SessionID:      "s1",
		Admission:      core.AdmissionAnchor{EntryAnchor: core.EntryAnchor{SessionID: "s1", EntryID: "e1"}, LogicalTurnID: "42", Role: "user"},
		Terminal:       core.EntryAnchor{SessionID: "s1", EntryID: "e2"},
		Messages: []core.Message{
			core.UserText("What is 6*7?", 1700000000000),
			core.AssistantText("42", 1700000001000),
		},
	}
	for i := 0; i < 2; i++ {
		r, err := e.CommitTurn(ctx, p)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(r.Status)
	}
	n := 0
	_ = e.Messages(ctx, "", "s1", func(uint64, core.Message) error { n++; return nil })
	fmt.Println("stored", n)
	fmt.Println(e.Info().TranscriptSemantics.TurnAdvancementIdempotency)
	// Output:
	// committed
	// duplicate
	// stored 2
	// atomic-idempotent-v1
}
