package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// Info describes an engine (CONTRACT §2 "info").
type Info struct {
	ID                  string                     `json:"id"`
	Name                string                     `json:"name"`
	Version             string                     `json:"version,omitempty"`
	OwnsCompaction      bool                       `json:"ownsCompaction,omitempty"`
	TurnMaintenanceMode string                     `json:"turnMaintenanceMode,omitempty"` // "foreground" | "background"
	AcceptedHostParams  []string                   `json:"acceptedHostParams,omitempty"`
	TranscriptSemantics *TranscriptSemantics       `json:"transcriptSemantics,omitempty"`
	HostRequirements    map[string]HostRequirement `json:"hostRequirements,omitempty"`
}

// Validate reports whether info satisfies the contract: non-empty ID and Name.
func (i Info) Validate() error {
	if i.ID == "" {
		return wrapf(ErrInvalidEngine, "info.id is empty")
	}
	if i.Name == "" {
		return wrapf(ErrInvalidEngine, "info.name is empty")
	}
	return nil
}

// Turn maintenance modes.
const (
	MaintenanceForeground = "foreground"
	MaintenanceBackground = "background"
)

// TranscriptSemantics is declared by engines that implement CommitTurn.
type TranscriptSemantics struct {
	CurrentTurnFence           string `json:"currentTurnFence,omitempty"`
	TurnAdvancementIdempotency string `json:"turnAdvancementIdempotency,omitempty"`
}

// The transcript semantics an engine implementing TurnCommitter declares.
const (
	FenceBeforeCurrentTurnEntryV1 = "before-current-turn-entry-v1"
	AdvancementAtomicIdempotentV1 = "atomic-idempotent-v1"
)

// HostRequirement lists the capabilities an engine needs for one operation.
type HostRequirement struct {
	RequiredCapabilities []string `json:"requiredCapabilities"`
	UnsupportedMessage   string   `json:"unsupportedMessage,omitempty"`
}

// RuntimeSettings describes the runtime of a run (schemaVersion 1). Unknown
// values are null in OpenClaw's JSON and nil here.
type RuntimeSettings struct {
	SchemaVersion          int                     `json:"schemaVersion"`
	Runtime                *RuntimeInfo            `json:"runtime,omitempty"`
	Model                  *RuntimeModel           `json:"model,omitempty"`
	ContextEngineSelection *ContextEngineSelection `json:"contextEngineSelection,omitempty"`
	ExecutionHost          *ExecutionHost          `json:"executionHost,omitempty"`
	Limits                 *RuntimeLimits          `json:"limits,omitempty"`
	Diagnostics            *RuntimeDiagnostics     `json:"diagnostics,omitempty"`
}

// RuntimeInfo is RuntimeSettings.runtime.
type RuntimeInfo struct {
	Host      *string `json:"host"`
	Mode      *string `json:"mode"` // normal | fallback | degraded
	HarnessID *string `json:"harnessId"`
	RuntimeID *string `json:"runtimeId"`
}

// RuntimeModel is RuntimeSettings.model.
type RuntimeModel struct {
	Requested *string `json:"requested"`
	Resolved  *string `json:"resolved"`
	Provider  *string `json:"provider"`
	Family    *string `json:"family"`
}

// ContextEngineSelection is RuntimeSettings.contextEngineSelection.
type ContextEngineSelection struct {
	SelectedID *string `json:"selectedId"`
	Source     *string `json:"source"` // configured | default | unknown
}

// ExecutionHost is RuntimeSettings.executionHost.
type ExecutionHost struct {
	ID    *string `json:"id"`
	Label *string `json:"label"`
}

// RuntimeLimits is RuntimeSettings.limits.
type RuntimeLimits struct {
	PromptTokenBudget *int `json:"promptTokenBudget"`
	MaxOutputTokens   *int `json:"maxOutputTokens"`
}

// RuntimeDiagnostics is RuntimeSettings.diagnostics.
type RuntimeDiagnostics struct {
	FallbackReason *string `json:"fallbackReason"`
	DegradedReason *string `json:"degradedReason"`
}

// RuntimeContext is the open runtimeContext map. Values holds every key as
// raw JSON (known keys: cwd, tokenBudget, currentTokenCount, promptCache,
// sessionTarget). The two host callbacks are Go functions, absent from JSON;
// a host that offers them sets them (the bridge turns them into calls back
// to OpenClaw).
type RuntimeContext struct {
	Values map[string]json.RawMessage

	// RewriteTranscriptEntries asks the host to rewrite transcript entries.
	RewriteTranscriptEntries func(ctx context.Context, req RewriteRequest) (RewriteResult, error)
	// LLMComplete runs a completion on the host's model.
	LLMComplete func(ctx context.Context, req LLMRequest) (LLMResponse, error)
	// ReadTranscript reads a page of the session's transcript kept by the
	// host (OpenClaw's SQLite store, read through its plugin SDK).
	ReadTranscript HostTranscriptReader
}

// MarshalJSON encodes the Values map.
func (r RuntimeContext) MarshalJSON() ([]byte, error) {
	if r.Values == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(r.Values)
}

// UnmarshalJSON decodes any JSON object into Values.
func (r *RuntimeContext) UnmarshalJSON(b []byte) error {
	return json.Unmarshal(b, &r.Values)
}

// Int returns the integer value of key, if present and numeric.
func (r *RuntimeContext) Int(key string) (int, bool) {
	if r == nil {
		return 0, false
	}
	raw, ok := r.Values[key]
	if !ok {
		return 0, false
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, false
	}
	return int(f), true
}

// String returns the string value of key, if present and a string.
func (r *RuntimeContext) String(key string) (string, bool) {
	if r == nil {
		return "", false
	}
	raw, ok := r.Values[key]
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// TranscriptRewrite replaces one transcript entry's message.
type TranscriptRewrite struct {
	EntryID string  `json:"entryId"`
	Message Message `json:"message"`
}

// RewriteRequest is the argument of runtimeContext.rewriteTranscriptEntries.
type RewriteRequest struct {
	Replacements []TranscriptRewrite `json:"replacements"`
	// AllowedRewriteSuffixEntryIDs, when set, must cover every entry of the
	// active branch from the first replacement onward; otherwise the host
	// rewrites nothing (reason "rewrite suffix guard failed"). An engine
	// passes the entries it read, so that a transcript that changed since
	// is left alone.
	AllowedRewriteSuffixEntryIDs []string `json:"allowedRewriteSuffixEntryIds,omitempty"`
}

// RewriteResult is what rewriteTranscriptEntries reports.
type RewriteResult struct {
	Changed          bool `json:"changed"`
	BytesFreed       int  `json:"bytesFreed"`
	RewrittenEntries int  `json:"rewrittenEntries"`
	// Reason says why nothing was rewritten (optional).
	Reason string `json:"reason,omitempty"`
}

// LLMRequest is the argument of runtimeContext.llm.complete.
type LLMRequest struct {
	System    string    `json:"system,omitempty"`
	Messages  []Message `json:"messages"`
	MaxTokens int       `json:"maxTokens,omitempty"`
}

// LLMResponse is what llm.complete returns (OpenClaw also returns the
// provider and model, which the engine does not read).
type LLMResponse struct {
	Text string `json:"text"`
	// Usage is the host's count of the call's tokens, when it gives one.
	Usage *LLMUsage `json:"usage,omitempty"`
}

// LLMUsage is LLMResponse.Usage: OpenClaw's usage of one llm.complete
// (its other fields, such as totalTokens and costUsd, are not read).
type LLMUsage struct {
	InputTokens  int `json:"inputTokens,omitempty"`
	OutputTokens int `json:"outputTokens,omitempty"`
	// CacheReadTokens and CacheWriteTokens are prompt tokens read from or
	// written to the provider's prompt cache, when it reports them apart.
	CacheReadTokens  int `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int `json:"cacheWriteTokens,omitempty"`
}

// BootstrapParams are the arguments of Bootstrap.
type BootstrapParams struct {
	SessionID       string           `json:"sessionId"`
	SessionKey      string           `json:"sessionKey,omitempty"`
	SessionTarget   json.RawMessage  `json:"sessionTarget,omitempty"`
	SessionFile     string           `json:"sessionFile"`
	RuntimeSettings *RuntimeSettings `json:"runtimeSettings,omitempty"`
	RuntimeContext  *RuntimeContext  `json:"runtimeContext,omitempty"`
}

// BootstrapResult is what Bootstrap returns.
type BootstrapResult struct {
	Bootstrapped     bool   `json:"bootstrapped"`
	ImportedMessages int    `json:"importedMessages,omitempty"`
	Reason           string `json:"reason,omitempty"`
}

// Reasons the host passes to Maintain.
const (
	MaintainReasonBootstrap  = "bootstrap"
	MaintainReasonTurn       = "turn"
	MaintainReasonCompaction = "compaction"
)

// MaintainParams are the arguments of Maintain (bootstrap's, plus the
// reason the host calls it; the abort signal is the context).
type MaintainParams struct {
	SessionID       string           `json:"sessionId"`
	SessionKey      string           `json:"sessionKey,omitempty"`
	SessionTarget   json.RawMessage  `json:"sessionTarget,omitempty"`
	SessionFile     string           `json:"sessionFile"`
	Reason          string           `json:"reason,omitempty"`
	RuntimeSettings *RuntimeSettings `json:"runtimeSettings,omitempty"`
	RuntimeContext  *RuntimeContext  `json:"runtimeContext,omitempty"`
}

// MaintainResult is what Maintain returns.
type MaintainResult struct {
	Changed          bool   `json:"changed"`
	BytesFreed       int    `json:"bytesFreed"`
	RewrittenEntries int    `json:"rewrittenEntries"`
	Reason           string `json:"reason,omitempty"`
}

// IngestParams are the arguments of Ingest.
type IngestParams struct {
	SessionID   string  `json:"sessionId"`
	SessionKey  string  `json:"sessionKey,omitempty"`
	Message     Message `json:"message"`
	IsHeartbeat bool    `json:"isHeartbeat,omitempty"`
}

// IngestResult is what Ingest returns; Ingested is false for a duplicate or
// a no-op.
type IngestResult struct {
	Ingested bool `json:"ingested"`
}

// IngestBatchParams are the arguments of IngestBatch.
type IngestBatchParams struct {
	SessionID   string    `json:"sessionId"`
	SessionKey  string    `json:"sessionKey,omitempty"`
	Messages    []Message `json:"messages"`
	IsHeartbeat bool      `json:"isHeartbeat,omitempty"`
}

// IngestBatchResult is what IngestBatch returns.
type IngestBatchResult struct {
	IngestedCount int `json:"ingestedCount"`
}

// AfterTurnParams are the arguments of AfterTurn. Messages is the whole
// session view; the first PrePromptMessageCount existed before this prompt.
type AfterTurnParams struct {
	SessionID             string           `json:"sessionId"`
	SessionKey            string           `json:"sessionKey,omitempty"`
	SessionTarget         json.RawMessage  `json:"sessionTarget,omitempty"`
	SessionFile           string           `json:"sessionFile"`
	Messages              []Message        `json:"messages"`
	PrePromptMessageCount int              `json:"prePromptMessageCount"`
	AutoCompactionSummary string           `json:"autoCompactionSummary,omitempty"`
	IsHeartbeat           bool             `json:"isHeartbeat,omitempty"`
	TokenBudget           int              `json:"tokenBudget,omitempty"`
	RuntimeSettings       *RuntimeSettings `json:"runtimeSettings,omitempty"`
	RuntimeContext        *RuntimeContext  `json:"runtimeContext,omitempty"`
}

// NewMessages returns the messages added by this prompt.
func (p AfterTurnParams) NewMessages() []Message {
	n := p.PrePromptMessageCount
	if n < 0 {
		n = 0
	}
	if n > len(p.Messages) {
		n = len(p.Messages)
	}
	return p.Messages[n:]
}

// Citation modes.
const (
	CitationsAuto = "auto"
	CitationsOn   = "on"
	CitationsOff  = "off"
)

// AssembleParams are the arguments of Assemble.
type AssembleParams struct {
	SessionID       string           `json:"sessionId"`
	SessionKey      string           `json:"sessionKey,omitempty"`
	Messages        []Message        `json:"messages"`
	TokenBudget     int              `json:"tokenBudget,omitempty"`
	AvailableTools  []string         `json:"availableTools,omitempty"`
	CitationsMode   string           `json:"citationsMode,omitempty"`
	Model           string           `json:"model,omitempty"`
	Prompt          string           `json:"prompt,omitempty"`
	RuntimeSettings *RuntimeSettings `json:"runtimeSettings,omitempty"`
	RuntimeContext  *RuntimeContext  `json:"runtimeContext,omitempty"`
}

// HasTool reports whether name is among AvailableTools.
func (p AssembleParams) HasTool(name string) bool {
	for _, t := range p.AvailableTools {
		if t == name {
			return true
		}
	}
	return false
}

// Prompt authorities (AssembleResult.PromptAuthority).
const (
	PromptAuthorityAssembled              = "assembled"
	PromptAuthorityPreassemblyMayOverflow = "preassembly_may_overflow"
)

// Projection modes (ContextProjection.Mode).
const (
	ProjectionPerTurn         = "per_turn"
	ProjectionThreadBootstrap = "thread_bootstrap"
)

// ContextProjection tells hosts with persistent backend threads how the
// assembled context relates to the thread.
type ContextProjection struct {
	Mode        string `json:"mode"`
	Epoch       string `json:"epoch,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
}

// AssembleResult is what Assemble returns.
type AssembleResult struct {
	Messages             []Message          `json:"messages"`
	EstimatedTokens      int                `json:"estimatedTokens"`
	SystemPromptAddition string             `json:"systemPromptAddition,omitempty"`
	PromptAuthority      string             `json:"promptAuthority,omitempty"`
	ContextProjection    *ContextProjection `json:"contextProjection,omitempty"`
	// Cut, when set, says the budget could not hold the whole context:
	// older items were left out of the window (an extension of this
	// project's; OpenClaw ignores it, logs and tools may read it).
	Cut *AssembleCut `json:"cut,omitempty"`
}

// AssembleCut says what an assemble left out to keep within its budget.
type AssembleCut struct {
	// Budget is the budget the call had (the engine's, after the host's
	// own share when the host said it).
	Budget int `json:"budget"`
	// NextTokens is the size of the newest item left out, in the engine's
	// count (0 when only the host's count cut the window).
	NextTokens int `json:"nextTokens,omitempty"`
	// References is the number of tool results of the current turn shown
	// by their reference (the stored original's id, size and a
	// description: lcm_expand returns it) because they did not fit.
	References int `json:"references,omitempty"`
	// HostTrimmed is the number of messages removed from the oldest end
	// so that the host's own estimate of the window fits Budget.
	HostTrimmed int `json:"hostTrimmed,omitempty"`
	// Reason says it in words.
	Reason string `json:"reason"`
}

// Compaction targets (CompactParams.CompactionTarget).
const (
	CompactionTargetBudget    = "budget"
	CompactionTargetThreshold = "threshold"
)

// CompactParams are the arguments of Compact (the abort is the context).
type CompactParams struct {
	SessionID          string           `json:"sessionId"`
	SessionKey         string           `json:"sessionKey"`
	AgentID            string           `json:"agentId,omitempty"`
	SessionTarget      json.RawMessage  `json:"sessionTarget,omitempty"`
	SessionFile        string           `json:"sessionFile,omitempty"`
	TokenBudget        int              `json:"tokenBudget,omitempty"`
	Force              bool             `json:"force,omitempty"`
	CurrentTokenCount  int              `json:"currentTokenCount,omitempty"`
	CompactionTarget   string           `json:"compactionTarget,omitempty"`
	CustomInstructions string           `json:"customInstructions,omitempty"`
	RuntimeSettings    *RuntimeSettings `json:"runtimeSettings,omitempty"`
	RuntimeContext     *RuntimeContext  `json:"runtimeContext,omitempty"`
}

// CompactResult is what Compact returns. Compacted is true only when tokens
// went down.
type CompactResult struct {
	OK        bool            `json:"ok"`
	Compacted bool            `json:"compacted"`
	Reason    string          `json:"reason,omitempty"`
	Result    *CompactOutcome `json:"result,omitempty"`
}

// CompactOutcome is CompactResult.result. When compaction rotated the
// transcript, SessionID, SessionFile and SessionTarget name the successor.
type CompactOutcome struct {
	Summary          string `json:"summary,omitempty"`
	FirstKeptEntryID string `json:"firstKeptEntryId,omitempty"`
	TokensBefore     int    `json:"tokensBefore"`
	// TokensAfter is always sent (OpenClaw records a finite value, which
	// keeps its preflight from compacting again).
	TokensAfter   int             `json:"tokensAfter"`
	Details       json.RawMessage `json:"details,omitempty"`
	SessionID     string          `json:"sessionId,omitempty"`
	SessionTarget json.RawMessage `json:"sessionTarget,omitempty"`
	SessionFile   string          `json:"sessionFile,omitempty"`
}

// EntryAnchor identifies one transcript entry in a turn commit.
type EntryAnchor struct {
	AgentID               string          `json:"agentId"`
	SessionID             string          `json:"sessionId"`
	SessionKey            string          `json:"sessionKey"`
	StorePath             string          `json:"storePath"`
	Generation            GenerationToken `json:"generation"`
	EntryID               string          `json:"entryId"`
	RawSeq                int64           `json:"rawSeq"`
	EffectiveParentID     *string         `json:"effectiveParentId"`
	ActiveMessagePosition int64           `json:"activeMessagePosition"`
	IdempotencyKey        string          `json:"idempotencyKey,omitempty"`
}

// AdmissionAnchor is the anchor of the admitted user entry of a turn.
type AdmissionAnchor struct {
	EntryAnchor
	LogicalTurnID string `json:"logicalTurnId"`
	Role          string `json:"role"` // always "user"
}

// CommitTurnParams are the arguments of CommitTurn.
type CommitTurnParams struct {
	AdvancementKey  string           `json:"advancementKey"`
	Admission       AdmissionAnchor  `json:"admission"`
	Terminal        EntryAnchor      `json:"terminal"`
	Messages        []Message        `json:"messages"`
	SessionID       string           `json:"sessionId"`
	SessionKey      string           `json:"sessionKey,omitempty"`
	SessionTarget   json.RawMessage  `json:"sessionTarget,omitempty"`
	RuntimeSettings *RuntimeSettings `json:"runtimeSettings,omitempty"`
	RuntimeContext  *RuntimeContext  `json:"runtimeContext,omitempty"`
	IsHeartbeat     bool             `json:"isHeartbeat,omitempty"`
}

// Commit statuses.
const (
	CommitCommitted = "committed"
	CommitDuplicate = "duplicate"
)

// CommitTurnResult is what CommitTurn returns.
type CommitTurnResult struct {
	Status string `json:"status"`
}

// Subagent context modes.
const (
	ContextModeIsolated = "isolated"
	ContextModeFork     = "fork"
)

// SubagentSpawnParams are the arguments of PrepareSubagentSpawn.
type SubagentSpawnParams struct {
	ParentSessionKey  string `json:"parentSessionKey"`
	ChildSessionKey   string `json:"childSessionKey"`
	ContextMode       string `json:"contextMode,omitempty"`
	ParentSessionID   string `json:"parentSessionId,omitempty"`
	ParentSessionFile string `json:"parentSessionFile,omitempty"`
	ChildSessionID    string `json:"childSessionId,omitempty"`
	ChildSessionFile  string `json:"childSessionFile,omitempty"`
	TTLMs             int64  `json:"ttlMs,omitempty"`
}

// Reasons a subagent ended.
const (
	SubagentDeleted   = "deleted"
	SubagentCompleted = "completed"
	SubagentSwept     = "swept"
	SubagentReleased  = "released"
)

// SubagentEndedParams are the arguments of OnSubagentEnded.
type SubagentEndedParams struct {
	ChildSessionKey string `json:"childSessionKey"`
	Reason          string `json:"reason"`
}

// GenerationToken is a transcript generation in an entry anchor. OpenClaw
// 2026.9.6 sends an opaque string token (32 hex digits); a number (older or
// other hosts) is accepted too and kept as its decimal text. It encodes as a
// JSON string.
type GenerationToken string

// UnmarshalJSON accepts a JSON string, a number or null.
func (g *GenerationToken) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return wrapf(ErrInvalidMessage, "empty generation")
	case string(b) == "null":
		*g = ""
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("core: generation: %w", err)
		}
		*g = GenerationToken(s)
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("core: generation %s is neither a string nor a number: %w", b, err)
		}
		*g = GenerationToken(n.String())
	}
	return nil
}
