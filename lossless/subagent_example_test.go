package lossless_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/lossless-engine/contextengine/core"
)

// Fork a subagent from a parent session: the child's context starts with
// the parent's, and its own messages are stored under the child. When it
// completes, its history is linked to the parent.
func ExampleEngine_PrepareSubagentSpawn() {
	dir, _ := os.MkdirTemp("", "lossless-subagent")
	defer os.RemoveAll(dir)
	e := openExample(dir)
	defer e.Close()
	ctx := context.Background()

	parent := core.IngestBatchParams{SessionID: "p", SessionKey: "agent:main:main", Messages: []core.Message{
		core.UserText("We are refactoring the parser.", 1700000000000),
		core.AssistantText("Understood.", 1700000001000),
	}}
	if _, err := e.IngestBatch(ctx, parent); err != nil {
		log.Fatal(err)
	}
	prep, err := e.PrepareSubagentSpawn(ctx, core.SubagentSpawnParams{
		ParentSessionKey: "agent:main:main", ParentSessionID: "p",
		ChildSessionKey: "agent:main:subagent:1", ChildSessionID: "c",
		ContextMode: core.ContextModeFork, TTLMs: 60000,
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = prep // the host calls prep.Rollback(ctx) if the launch fails

	res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "c", SessionKey: "agent:main:subagent:1", TokenBudget: 10000,
		Messages: []core.Message{core.UserText("Subtask: list the parser's tests.", 1700000002000)}})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range res.Messages {
		fmt.Println(m.Role()+":", m.Text())
	}
	if err := e.OnSubagentEnded(ctx, core.SubagentEndedParams{ChildSessionKey: "agent:main:subagent:1", Reason: core.SubagentCompleted}); err != nil {
		log.Fatal(err)
	}
	info, _, _ := e.Subagent(ctx, "agent:main:subagent:1")
	fmt.Println(info.State, info.EndReason)
	// Output:
	// user: We are refactoring the parser.
	// assistant: Understood.
	// user: Subtask: list the parser's tests.
	// ended completed
}
