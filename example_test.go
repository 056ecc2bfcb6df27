package contextengine_test

import (
	"context"
	"errors"
	"fmt"

	contextengine "github.com/lossless-engine/contextengine"
	"github.com/lossless-engine/contextengine/core"
)

// echoEngine is a tiny engine: it remembers nothing and passes messages
// through, adding a line to the system prompt.
type echoEngine struct{}

func (echoEngine) Info() core.Info { return core.Info{ID: "echo", Name: "Echo"} }
func (echoEngine) Ingest(ctx context.Context, p core.IngestParams) (core.IngestResult, error) {
	return core.IngestResult{Ingested: true}, nil
}
func (echoEngine) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	return core.AssembleResult{Messages: p.Messages, EstimatedTokens: core.EstimateChars4(p.Messages),
		SystemPromptAddition: "Echo engine active."}, nil
}
func (echoEngine) Compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	return core.CompactResult{OK: true}, nil
}

func ExampleRegistry_Register() {
	r := contextengine.NewRegistry()
	factory := func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) { return echoEngine{}, nil }
	fmt.Println(r.Register("echo", factory, "echo-plugin"))
	fmt.Println(r.Register("echo", factory, "someone-else"))
	fmt.Println(r.Register("legacy", factory, "echo-plugin"))
	fmt.Println(r.Engines())
	// Output:
	// <nil>
	// contextengine: engine id registered by another owner: "echo" is owned by "echo-plugin", not "someone-else"
	// contextengine: engine id reserved by core: "legacy"
	// [echo legacy]
}

func ExampleRegistry_Open() {
	r := contextengine.NewRegistry()
	_ = r.Register("echo", func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
		return echoEngine{}, nil
	}, "echo-plugin")
	cfg, err := contextengine.ParseConfig([]byte(`{
		// JSON5: comments, unquoted keys, trailing commas
		plugins: { slots: { contextEngine: "echo", }, },
	}`))
	if err != nil {
		panic(err)
	}
	g, err := r.Open(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	res := g.Resolution()
	fmt.Println(g.Info().ID, res.Reason)

	cfg.Plugins.Deny = []string{"echo"}
	g, _ = r.Open(context.Background(), cfg)
	fmt.Println(g.Info().ID, g.Resolution().Reason, g.Resolution().Slot)
	// Output:
	// echo configured
	// legacy denied echo
}

func ExampleCheckHostRequirements() {
	info := core.Info{ID: "lossless", Name: "Lossless", HostRequirements: map[string]core.HostRequirement{
		core.OpAgentRun: {RequiredCapabilities: []string{core.CapAssembleBeforePrompt}},
	}}
	err := contextengine.CheckHostRequirements(info, core.OpAgentRun, contextengine.GenericCLI)
	fmt.Println(errors.Is(err, core.ErrHostRequirements))
	fmt.Println(err)
	// Output:
	// true
	// Context engine "lossless" cannot run operation "agent-run" on generic CLI backend. Missing host capabilities: assemble-before-prompt. Required capabilities: assemble-before-prompt. Host capabilities: bootstrap, after-turn, maintain.
}

func ExampleDriver() {
	r := contextengine.NewRegistry()
	_ = r.Register("echo", func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
		return echoEngine{}, nil
	}, "echo-plugin")
	cfg, _ := contextengine.ParseConfig([]byte(`{plugins: {slots: {contextEngine: "echo"}}}`))
	engine, err := r.Open(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	defer engine.Close()

	// The model: a stand-in that answers with the prompt's length.
	model := func(ctx context.Context, req contextengine.ModelRequest) ([]core.Message, error) {
		last := req.Messages[len(req.Messages)-1]
		return []core.Message{core.AssistantText(fmt.Sprintf("%q has %d bytes (system: %q)",
			last.Text(), len(last.Text()), req.System), 0)}, nil
	}
	d, err := contextengine.NewDriver(contextengine.DriverOptions{Engine: engine, Model: model,
		SessionID: "demo", ContextWindow: 128_000, SystemPrompt: "Be brief."})
	if err != nil {
		panic(err)
	}
	res, err := d.Turn(context.Background(), core.UserText("hello", 0))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.NewMessages[1].Text())
	fmt.Println(len(d.Messages()), d.TokenBudget())
	// Output:
	// "hello" has 5 bytes (system: "Echo engine active.\n\nBe brief.")
	// 2 108000
}

func ExampleSanitize() {
	msgs := []core.Message{
		core.UserText("list files", 0),
		core.AssistantToolCall("call:1", "ls", map[string]string{"path": "."}, 0),
		core.UserText("never mind", 0),
	}
	out, rep := contextengine.Sanitize(msgs)
	fmt.Println(out[1].ToolCalls()[0].ID, out[2].Role(), out[2].ToolCallID(), rep.Synthesized, rep.RenamedIDs)
	// Output:
	// call_1 toolResult call_1 1 1
}
