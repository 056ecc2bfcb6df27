package lossless

import (
	"context"
	"fmt"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/dag/storetest"
)

// TestStoreContract runs the dag.Store contract suite against the Badger
// conversation store.
func TestStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (dag.Store, storetest.AppendFunc) {
		e := openTest(t)
		ctx := context.Background()
		c, err := e.resolve(ctx, "main", "contract", "", true)
		if err != nil {
			t.Fatal(err)
		}
		conv := &Conversation{e: e, id: c, Agent: "main"}
		var nonce int
		app := func(ctx context.Context, role, text string, tokens int, ts int64) (uint64, error) {
			// The suite may append the same text twice; a message's key is
			// its bytes, so a nonce field keeps appends distinct.
			nonce++
			fields := map[string]any{"role": role, "content": text, "timestamp": ts, "nonce": nonce}
			if role == core.RoleToolResult {
				fields["toolCallId"], fields["toolName"] = "call", "tool"
			}
			m, err := core.NewMessage(fields)
			if err != nil {
				return 0, err
			}
			ps, _ := e.prepare(context.Background(), []core.Message{m}, false)
			ps[0].Tokens = tokens
			n, err := e.ingestInto(ctx, c, ps)
			if err != nil {
				return 0, err
			}
			if n != 1 {
				return 0, fmt.Errorf("duplicate append")
			}
			return ps[0].Seq, nil
		}
		return conv, app
	})
}
