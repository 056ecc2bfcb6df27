package contextengine

import (
	"context"
	"slices"
	"strings"

	"github.com/lossless-engine/contextengine/core"
)

// Host describes a host runtime: a label used in messages and the
// capabilities it offers (core.Cap* constants).
type Host struct {
	Label        string
	Capabilities []string
}

// Has reports whether h offers capability c.
func (h Host) Has(c string) bool { return slices.Contains(h.Capabilities, c) }

// The hosts of CONTRACT §5.
var (
	// EmbeddedRuntime is OpenClaw's embedded agent runtime.
	EmbeddedRuntime = Host{Label: "embedded runtime", Capabilities: []string{
		core.CapBootstrap, core.CapAssembleBeforePrompt, core.CapAfterTurn, core.CapMaintain,
		core.CapCompact, core.CapRuntimeLLMComplete}}
	// CodexAppServer is the Codex app-server host: the embedded runtime's
	// capabilities plus thread-bootstrap-projection.
	CodexAppServer = Host{Label: "Codex app-server", Capabilities: []string{
		core.CapBootstrap, core.CapAssembleBeforePrompt, core.CapAfterTurn, core.CapMaintain,
		core.CapCompact, core.CapRuntimeLLMComplete, core.CapThreadBootstrapProjection}}
	// GenericCLI is a generic CLI backend.
	GenericCLI = Host{Label: "generic CLI backend", Capabilities: []string{
		core.CapBootstrap, core.CapAfterTurn, core.CapMaintain}}
)

// HostRequirementsError is the fail-closed error of a run whose host lacks
// a capability the engine requires. Its text is exactly OpenClaw's; it
// wraps core.ErrHostRequirements.
type HostRequirementsError struct {
	EngineID           string
	Operation          string
	Host               Host
	Missing            []string
	Required           []string
	UnsupportedMessage string
}

// Error returns OpenClaw's message: Context engine "<id>" cannot run
// operation "<op>" on <host>. Missing host capabilities: <...>. Required
// capabilities: <...>. Host capabilities: <...>. followed by the engine's
// unsupportedMessage, if any.
func (e *HostRequirementsError) Error() string {
	var sb strings.Builder
	sb.WriteString(`Context engine "` + e.EngineID + `" cannot run operation "` + e.Operation + `" on ` + e.Host.Label + ". ")
	sb.WriteString("Missing host capabilities: " + strings.Join(e.Missing, ", ") + ". ")
	sb.WriteString("Required capabilities: " + strings.Join(e.Required, ", ") + ". ")
	sb.WriteString("Host capabilities: " + strings.Join(e.Host.Capabilities, ", ") + ".")
	if e.UnsupportedMessage != "" {
		sb.WriteString(" " + e.UnsupportedMessage)
	}
	return sb.String()
}

// Unwrap returns core.ErrHostRequirements.
func (e *HostRequirementsError) Unwrap() error { return core.ErrHostRequirements }

// CheckHostRequirements checks info.hostRequirements[op] against host and
// returns a *HostRequirementsError when a required capability is missing,
// so that the run fails closed before it starts.
func CheckHostRequirements(info core.Info, op string, host Host) error {
	req, ok := info.HostRequirements[op]
	if !ok {
		return nil
	}
	var missing []string
	for _, c := range req.RequiredCapabilities {
		if !host.Has(c) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &HostRequirementsError{EngineID: info.ID, Operation: op, Host: host, Missing: missing,
		Required: slices.Clone(req.RequiredCapabilities), UnsupportedMessage: req.UnsupportedMessage}
}

// Projection strips the host-added parameters an engine did not accept
// (info.acceptedHostParams). An engine that declares no list (nil) receives
// every parameter, as before the list existed; a declared list, even empty,
// is honoured exactly. The abort signal is the context: when abortSignal is
// not accepted the engine gets a context without cancellation, except for
// compact, which always keeps its abort.
type Projection struct {
	accepted map[string]bool // nil: everything accepted
}

// ProjectionFor returns the projection for info.
func ProjectionFor(info core.Info) Projection {
	if info.AcceptedHostParams == nil {
		return Projection{}
	}
	m := make(map[string]bool, len(info.AcceptedHostParams))
	for _, n := range info.AcceptedHostParams {
		m[n] = true
	}
	return Projection{accepted: m}
}

// Accepts reports whether the host parameter name reaches the engine.
func (p Projection) Accepts(name string) bool { return p.accepted == nil || p.accepted[name] }

// Context returns ctx, or a context without its cancellation when the
// engine did not accept abortSignal and op is not compact.
func (p Projection) Context(ctx context.Context, op string) context.Context {
	if op == OpCompact || p.Accepts(core.HostParamAbortSignal) {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

func (p Projection) common(sessionKey *string, target *[]byte, rs **core.RuntimeSettings, rc **core.RuntimeContext) {
	if sessionKey != nil && !p.Accepts(core.HostParamSessionKey) {
		*sessionKey = ""
	}
	if target != nil && !p.Accepts(core.HostParamSessionTarget) {
		*target = nil
	}
	if rs != nil && !p.Accepts(core.HostParamRuntimeSettings) {
		*rs = nil
	}
	if rc != nil && !p.Accepts(core.HostParamRuntimeContext) {
		*rc = nil
	}
}

// Bootstrap projects bootstrap params.
func (p Projection) Bootstrap(x core.BootstrapParams) core.BootstrapParams {
	p.common(&x.SessionKey, (*[]byte)(&x.SessionTarget), &x.RuntimeSettings, &x.RuntimeContext)
	return x
}

// Maintain projects maintain params.
func (p Projection) Maintain(x core.MaintainParams) core.MaintainParams {
	p.common(&x.SessionKey, (*[]byte)(&x.SessionTarget), &x.RuntimeSettings, &x.RuntimeContext)
	return x
}

// Ingest projects ingest params.
func (p Projection) Ingest(x core.IngestParams) core.IngestParams {
	p.common(&x.SessionKey, nil, nil, nil)
	return x
}

// IngestBatch projects ingestBatch params.
func (p Projection) IngestBatch(x core.IngestBatchParams) core.IngestBatchParams {
	p.common(&x.SessionKey, nil, nil, nil)
	return x
}

// AfterTurn projects afterTurn params.
func (p Projection) AfterTurn(x core.AfterTurnParams) core.AfterTurnParams {
	p.common(&x.SessionKey, (*[]byte)(&x.SessionTarget), &x.RuntimeSettings, &x.RuntimeContext)
	return x
}

// Assemble projects assemble params (prompt included).
func (p Projection) Assemble(x core.AssembleParams) core.AssembleParams {
	p.common(&x.SessionKey, nil, &x.RuntimeSettings, &x.RuntimeContext)
	if !p.Accepts(core.HostParamPrompt) {
		x.Prompt = ""
	}
	return x
}

// Compact projects compact params.
func (p Projection) Compact(x core.CompactParams) core.CompactParams {
	p.common(&x.SessionKey, (*[]byte)(&x.SessionTarget), &x.RuntimeSettings, &x.RuntimeContext)
	return x
}

// CommitTurn projects commitTurn params.
func (p Projection) CommitTurn(x core.CommitTurnParams) core.CommitTurnParams {
	p.common(&x.SessionKey, (*[]byte)(&x.SessionTarget), &x.RuntimeSettings, &x.RuntimeContext)
	return x
}
