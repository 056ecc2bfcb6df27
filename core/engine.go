package core

import (
	"context"
	"encoding/json"
)

// Engine is the required part of the contract: info, ingest, assemble and
// compact. See the package documentation for the optional interfaces.
type Engine interface {
	// Info describes the engine. It must have a non-empty ID and Name.
	Info() Info
	// Ingest stores or indexes one message.
	Ingest(ctx context.Context, p IngestParams) (IngestResult, error)
	// Assemble returns the ordered messages the model sees on this run.
	Assemble(ctx context.Context, p AssembleParams) (AssembleResult, error)
	// Compact summarises older history to free room in the window.
	Compact(ctx context.Context, p CompactParams) (CompactResult, error)
}

// Bootstrapper is implemented by engines that initialise state when a
// session is first seen, for example by importing its transcript.
type Bootstrapper interface {
	Bootstrap(ctx context.Context, p BootstrapParams) (BootstrapResult, error)
}

// Maintainer is implemented by engines that maintain the transcript after
// bootstrap, turns and compaction.
type Maintainer interface {
	Maintain(ctx context.Context, p MaintainParams) (MaintainResult, error)
}

// BatchIngester is implemented by engines that store a whole turn at once.
type BatchIngester interface {
	IngestBatch(ctx context.Context, p IngestBatchParams) (IngestBatchResult, error)
}

// AfterTurner is implemented by engines that persist state after a run.
type AfterTurner interface {
	AfterTurn(ctx context.Context, p AfterTurnParams) error
}

// TurnCommitter is implemented by engines that commit turns atomically and
// idempotently, keyed by AdvancementKey. Such an engine declares
// TranscriptSemantics in its Info.
type TurnCommitter interface {
	CommitTurn(ctx context.Context, p CommitTurnParams) (CommitTurnResult, error)
}

// SubagentSpawner is implemented by engines that set up state for a child
// run. A nil *SubagentPreparation means there is nothing to roll back.
type SubagentSpawner interface {
	PrepareSubagentSpawn(ctx context.Context, p SubagentSpawnParams) (*SubagentPreparation, error)
}

// SubagentEndListener is implemented by engines that clean up when a child
// run ends.
type SubagentEndListener interface {
	OnSubagentEnded(ctx context.Context, p SubagentEndedParams) error
}

// SubagentPreparation is what PrepareSubagentSpawn returns. The host calls
// Rollback when the launch fails after a successful preparation; Rollback
// must be safe to call more than once.
type SubagentPreparation struct {
	Rollback func(ctx context.Context) error
}

// FactoryOptions is what a Factory receives: the engine's own config
// (plugins.entries.<id>.config, raw JSON or nil), the host's directories,
// and which host runs the engine.
type FactoryOptions struct {
	Config       json.RawMessage `json:"config,omitempty"`
	AgentDir     string          `json:"agentDir,omitempty"`
	WorkspaceDir string          `json:"workspaceDir,omitempty"`
	// Host names the host that runs the engine when it says so:
	// HostOpenClaw from the OpenClaw plugin (its bridge's initialize),
	// empty for Go hosts and the CLI. An engine may choose defaults by it
	// (lossless summarizes with the host's own model under OpenClaw).
	Host string `json:"host,omitempty"`
}

// HostOpenClaw is FactoryOptions.Host under OpenClaw: the host offers its
// own model (runtimeContext.llm.complete) in bootstrap, maintain and
// compact.
const HostOpenClaw = "openclaw"

// Factory creates an engine. The host calls it when it resolves the slot.
type Factory func(ctx context.Context, opts FactoryOptions) (Engine, error)

// Capabilities of a host (CONTRACT §2, §5).
const (
	CapBootstrap                 = "bootstrap"
	CapAssembleBeforePrompt      = "assemble-before-prompt"
	CapAfterTurn                 = "after-turn"
	CapMaintain                  = "maintain"
	CapCompact                   = "compact"
	CapRuntimeLLMComplete        = "runtime-llm-complete"
	CapThreadBootstrapProjection = "thread-bootstrap-projection"
)

// Operations named in Info.HostRequirements.
const (
	OpAgentRun      = "agent-run"
	OpManualCompact = "manual-compact"
	OpSubagentSpawn = "subagent-spawn"
)

// Host-added parameter names that an engine may accept (Info.AcceptedHostParams).
const (
	HostParamSessionKey      = "sessionKey"
	HostParamPrompt          = "prompt"
	HostParamRuntimeSettings = "runtimeSettings"
	HostParamSessionTarget   = "sessionTarget"
	HostParamRuntimeContext  = "runtimeContext"
	HostParamAbortSignal     = "abortSignal"
)

// HostParamNames lists every host-added parameter name.
var HostParamNames = []string{HostParamSessionKey, HostParamPrompt, HostParamRuntimeSettings,
	HostParamSessionTarget, HostParamRuntimeContext, HostParamAbortSignal}
