package summarize

import (
	"context"
	"time"
)

// KindHost summarizes with the host's own model: OpenClaw's
// runtimeContext.llm.complete, bound to the session's agent and model. The
// host offers it only inside some calls (compact, maintain, bootstrap), so
// the function travels in the call's context (WithHostLLM); a summarization
// outside such a call fails and the Guard falls back to the extractive
// summarizer.
const KindHost = "host"

// HostLLM runs one completion on the host's model.
type HostLLM func(ctx context.Context, system, user string, maxTokens int) (string, error)

type hostLLMKey struct{}

// WithHostLLM returns ctx carrying the host's model for KindHost
// summarizers.
func WithHostLLM(ctx context.Context, f HostLLM) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, hostLLMKey{}, f)
}

// HostLLMFrom returns the host's model ctx carries, or nil.
func HostLLMFrom(ctx context.Context) HostLLM {
	f, _ := ctx.Value(hostLLMKey{}).(HostLLM)
	return f
}

// NewHost returns the KindHost summarizer: prompts as for the model kinds,
// answered by the HostLLM of the call's context, one call per Summarize
// bounded by timeout (default DefaultTimeout).
//
// It makes no retries, and a Guard around it makes none either: the host's
// llm.complete runs OpenClaw's own model stack, which retries and fails
// over by itself, and a second layer of retries would multiply its waits.
// Config.MaxRetries does not apply to it. The Guard charges one spend unit
// per call and the call's tokens to its SpendCap (what the HostLLM reports
// with ReportUsage, else its own count), and a failed call counts once
// toward its circuit breaker. A request whose context carries no HostLLM
// is answered by the Guard's fallback without any charge.
//
// It is the engine's default summarizer under OpenClaw (lossless/config.Config.Host).
func NewHost(timeout time.Duration, maxOutput int) *Model {
	t := timeoutOr(timeout)
	m := &Model{name: KindHost, maxOutput: maxOutput, timeout: t, callTimeout: t, hostOnly: true}
	m.call = func(ctx context.Context, system, user string, maxTokens int) (string, error) {
		f := HostLLMFrom(ctx)
		if f == nil {
			return "", ErrNoHostLLM
		}
		return f(ctx, system, user, maxTokens)
	}
	return m
}
