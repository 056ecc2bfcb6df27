package contextengine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

func TestHostRequirementsErrorText(t *testing.T) {
	info := core.Info{ID: "lossless", Name: "Lossless", HostRequirements: map[string]core.HostRequirement{
		core.OpAgentRun: {RequiredCapabilities: []string{core.CapBootstrap, core.CapAssembleBeforePrompt,
			core.CapAfterTurn, core.CapRuntimeLLMComplete}, UnsupportedMessage: "Use the embedded runtime."},
		core.OpManualCompact: {RequiredCapabilities: []string{core.CapCompact}},
		core.OpSubagentSpawn: {RequiredCapabilities: []string{core.CapThreadBootstrapProjection}},
	}}
	tests := []struct {
		name string
		op   string
		host Host
		want string
	}{
		{"cli lacks two", core.OpAgentRun, GenericCLI,
			`Context engine "lossless" cannot run operation "agent-run" on generic CLI backend. ` +
				`Missing host capabilities: assemble-before-prompt, runtime-llm-complete. ` +
				`Required capabilities: bootstrap, assemble-before-prompt, after-turn, runtime-llm-complete. ` +
				`Host capabilities: bootstrap, after-turn, maintain. Use the embedded runtime.`},
		{"no unsupported message", core.OpManualCompact, GenericCLI,
			`Context engine "lossless" cannot run operation "manual-compact" on generic CLI backend. ` +
				`Missing host capabilities: compact. Required capabilities: compact. ` +
				`Host capabilities: bootstrap, after-turn, maintain.`},
		{"embedded lacks projection", core.OpSubagentSpawn, EmbeddedRuntime,
			`Context engine "lossless" cannot run operation "subagent-spawn" on embedded runtime. ` +
				`Missing host capabilities: thread-bootstrap-projection. Required capabilities: thread-bootstrap-projection. ` +
				`Host capabilities: bootstrap, assemble-before-prompt, after-turn, maintain, compact, runtime-llm-complete.`},
		{"codex has it", core.OpSubagentSpawn, CodexAppServer, ""},
		{"embedded runs agent", core.OpAgentRun, EmbeddedRuntime, ""},
		{"no requirement for op", "other-op", GenericCLI, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckHostRequirements(info, tc.op, tc.host)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error text\n got %v\nwant %s", err, tc.want)
			}
			if !errors.Is(err, core.ErrHostRequirements) {
				t.Fatal("does not wrap core.ErrHostRequirements")
			}
			var he *HostRequirementsError
			if !errors.As(err, &he) || he.EngineID != "lossless" || he.Operation != tc.op {
				t.Fatalf("errors.As: %+v", he)
			}
		})
	}
}

func TestHostCapabilitySets(t *testing.T) {
	all := []string{core.CapBootstrap, core.CapAssembleBeforePrompt, core.CapAfterTurn, core.CapMaintain,
		core.CapCompact, core.CapRuntimeLLMComplete, core.CapThreadBootstrapProjection}
	want := map[string][]bool{
		"embedded": {true, true, true, true, true, true, false},
		"codex":    {true, true, true, true, true, true, true},
		"cli":      {true, false, true, true, false, false, false},
	}
	hosts := map[string]Host{"embedded": EmbeddedRuntime, "codex": CodexAppServer, "cli": GenericCLI}
	for name, h := range hosts {
		for i, c := range all {
			if h.Has(c) != want[name][i] {
				t.Errorf("%s.Has(%s) = %v", name, c, h.Has(c))
			}
		}
	}
}

func TestProjection(t *testing.T) {
	rs := &core.RuntimeSettings{SchemaVersion: 1}
	rc := &core.RuntimeContext{}
	ap := core.AssembleParams{SessionID: "s", SessionKey: "k", Prompt: "q", RuntimeSettings: rs, RuntimeContext: rc}

	all := ProjectionFor(core.Info{ID: "x", Name: "x"})
	if got := all.Assemble(ap); got.SessionKey != "k" || got.Prompt != "q" || got.RuntimeSettings == nil || got.RuntimeContext == nil {
		t.Fatalf("nil acceptedHostParams must pass everything: %+v", got)
	}
	some := ProjectionFor(core.Info{ID: "x", Name: "x", AcceptedHostParams: []string{core.HostParamPrompt}})
	got := some.Assemble(ap)
	if got.Prompt != "q" || got.SessionKey != "" || got.RuntimeSettings != nil || got.RuntimeContext != nil || got.SessionID != "s" {
		t.Fatalf("projection with [prompt] = %+v", got)
	}
	none := ProjectionFor(core.Info{ID: "x", Name: "x", AcceptedHostParams: []string{}})
	cp := none.Compact(core.CompactParams{SessionID: "s", SessionKey: "k", SessionTarget: []byte(`"t"`), Force: true})
	if cp.SessionKey != "" || cp.SessionTarget != nil || !cp.Force || cp.SessionID != "s" {
		t.Fatalf("compact projection = %+v", cp)
	}
	bp := none.Bootstrap(core.BootstrapParams{SessionID: "s", SessionKey: "k", SessionFile: "f"})
	if bp.SessionKey != "" || bp.SessionFile != "f" {
		t.Fatalf("bootstrap projection = %+v", bp)
	}
	// The abort: stripped from other calls, always kept by compact.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if none.Context(ctx, OpAssemble).Err() != nil {
		t.Fatal("abort reached an engine that did not accept abortSignal")
	}
	if none.Context(ctx, OpCompact).Err() == nil {
		t.Fatal("compact lost its abort")
	}
	withAbort := ProjectionFor(core.Info{AcceptedHostParams: []string{core.HostParamAbortSignal}})
	if withAbort.Context(ctx, OpAssemble).Err() == nil {
		t.Fatal("accepted abortSignal was stripped")
	}
	dctx, dcancel := context.WithTimeout(context.Background(), time.Hour)
	defer dcancel()
	if _, ok := none.Context(dctx, OpIngest).Deadline(); ok {
		t.Fatal("deadline kept without abortSignal")
	}
}
