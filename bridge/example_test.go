package bridge_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/lossless-engine/contextengine/bridge"
	"github.com/lossless-engine/contextengine/core"
)

// echoEngine is a toy engine: assemble returns the host's messages.
type echoEngine struct{}

func (echoEngine) Info() core.Info { return core.Info{ID: "echo", Name: "Echo"} }
func (echoEngine) Ingest(context.Context, core.IngestParams) (core.IngestResult, error) {
	return core.IngestResult{Ingested: true}, nil
}
func (echoEngine) Assemble(_ context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	return core.AssembleResult{Messages: p.Messages, EstimatedTokens: len(p.Messages)}, nil
}
func (echoEngine) Compact(context.Context, core.CompactParams) (core.CompactResult, error) {
	return core.CompactResult{OK: true}, nil
}

// Serve an engine over newline-delimited JSON-RPC: initialize creates the
// engine, then lifecycle calls carry OpenClaw's JSON shapes. Messages come
// back byte for byte.
func ExampleServe() {
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"config":{}}}
{"jsonrpc":"2.0","id":2,"method":"assemble","params":{"sessionId":"s","messages":[{"role":"user","content":"<hi> & é"}]}}
`)
	if err := bridge.Serve(context.Background(), in, os.Stdout, bridge.Static(echoEngine{}), bridge.Options{ServerName: "demo"}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"info":{"id":"echo","name":"Echo"},"methods":["assemble","compact","info","ingest"],"server":{"name":"demo"}}}
	// {"jsonrpc":"2.0","id":2,"result":{"messages":[{"role":"user","content":"<hi> & é"}],"estimatedTokens":1}}
}
