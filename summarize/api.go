package summarize

import (
	"context"
	"fmt"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// Kinds of summarizer accepted by Config.Kind.
const (
	KindExtractive = "extractive" // the embedded deterministic summarizer (default)
	KindOpenAI     = "openai"     // an OpenAI-compatible chat-completions endpoint
	KindAnthropic  = "anthropic"  // the Anthropic Messages API
)

// Config selects and configures a summarizer. It is read from
// plugins.entries.lossless.config.summarizer; the zero value means the
// extractive summarizer. Durations are in milliseconds; zero means the
// documented default.
type Config struct {
	// Kind is KindExtractive (default when empty), KindOpenAI or KindAnthropic.
	Kind string `json:"kind,omitempty"`
	// Model is the model name (required for the model kinds).
	Model string `json:"model,omitempty"`
	// BaseURL overrides the provider's endpoint (vLLM, llama.cpp, Ollama, a proxy).
	BaseURL string `json:"baseUrl,omitempty"`
	// APIKey is the key itself; prefer APIKeyEnv.
	APIKey string `json:"apiKey,omitempty"`
	// APIKeyEnv names the environment variable holding the key (default
	// OPENAI_API_KEY or ANTHROPIC_API_KEY).
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	// TimeoutMs bounds one model call (default 60000).
	TimeoutMs int `json:"timeoutMs,omitempty"`
	// MaxRetries is the number of retries after a failed call (default 2; -1 for none).
	MaxRetries int `json:"maxRetries,omitempty"`
	// MaxOutputTokens caps the model's answer (default: the request's target, at least 256).
	MaxOutputTokens int `json:"maxOutputTokens,omitempty"`
	// MaxCallsPerWindow is the spend guard's limit of model calls per window
	// for the whole process (default 60; -1 for unlimited).
	MaxCallsPerWindow int `json:"maxCallsPerWindow,omitempty"`
	// WindowMs is the spend guard's window (default 60000).
	WindowMs int `json:"windowMs,omitempty"`
	// BreakerFailures is the number of consecutive failures that opens the
	// circuit breaker (default 5).
	BreakerFailures int `json:"breakerFailures,omitempty"`
	// BreakerCooldownMs is how long the breaker stays open before a trial
	// call (default 60000).
	BreakerCooldownMs int `json:"breakerCooldownMs,omitempty"`
}

// OpenAIConfig configures NewOpenAI.
type OpenAIConfig struct {
	Model           string        // model name (required)
	BaseURL         string        // endpoint, e.g. http://localhost:11434/v1 (default OpenAI's)
	APIKey          string        // key; when empty, read from APIKeyEnv
	APIKeyEnv       string        // environment variable holding the key (default OPENAI_API_KEY)
	Timeout         time.Duration // per-call timeout (default 60s)
	MaxOutputTokens int           // answer cap (default: request target, at least 256)
}

// AnthropicConfig configures NewAnthropic.
type AnthropicConfig struct {
	Model           string        // model name (required)
	BaseURL         string        // endpoint (default Anthropic's)
	APIKey          string        // key; when empty, read from APIKeyEnv
	APIKeyEnv       string        // environment variable holding the key (default ANTHROPIC_API_KEY)
	Timeout         time.Duration // per-call timeout (default 60s)
	MaxOutputTokens int           // answer cap (default: request target, at least 256)
}

// Model is a summarizer backed by a language model. It makes exactly one
// call per Summarize (no retries of its own): wrap it in a Guard.
type Model struct {
	name string
	call func(ctx context.Context, system, user string, maxTokens int) (string, error)
}

// Name returns "openai:<model>" or "anthropic:<model>".
func (m *Model) Name() string { return m.name }

// Summarize asks the model for a summary of req.Text.
func (m *Model) Summarize(ctx context.Context, req core.SummarizeRequest) (string, error) {
	return "", fmt.Errorf("summarize: %s: not implemented yet: %w", m.name, core.ErrSummarizerFailed)
}

// NewOpenAI returns a summarizer for an OpenAI-compatible endpoint.
func NewOpenAI(cfg OpenAIConfig) (*Model, error) {
	return &Model{name: "openai:" + cfg.Model}, nil
}

// NewAnthropic returns a summarizer for the Anthropic Messages API.
func NewAnthropic(cfg AnthropicConfig) (*Model, error) {
	return &Model{name: "anthropic:" + cfg.Model}, nil
}

// GuardOptions configures a Guard. Zero fields take the documented defaults.
type GuardOptions struct {
	// Timeout bounds one attempt (default 60s).
	Timeout time.Duration
	// MaxRetries is the number of retries after a failed attempt (default 2;
	// negative for none).
	MaxRetries int
	// Spend limits model calls; nil means DefaultSpend, shared by the process.
	Spend *SpendGuard
	// BreakerFailures opens the breaker after this many consecutive failures (default 5).
	BreakerFailures int
	// BreakerCooldown is how long the breaker stays open (default 60s).
	BreakerCooldown time.Duration
}

// Guard wraps a model summarizer with a timeout, retries, output checks, a
// spend guard and a circuit breaker, and falls back to another summarizer
// (normally the extractive one) on failure.
type Guard struct {
	inner, fallback core.Summarizer
	opts            GuardOptions
}

// NewGuard returns a Guard around inner, falling back to fallback.
func NewGuard(inner core.Summarizer, fallback core.Summarizer, opts GuardOptions) *Guard {
	return &Guard{inner: inner, fallback: fallback, opts: opts}
}

// Name returns the inner summarizer's name.
func (g *Guard) Name() string { return g.inner.Name() }

// Summarize runs inner, then fallback on failure.
func (g *Guard) Summarize(ctx context.Context, req core.SummarizeRequest) (string, error) {
	if s, err := g.inner.Summarize(ctx, req); err == nil {
		return s, nil
	}
	return g.fallback.Summarize(ctx, req)
}

// SpendGuard limits model calls per time window. One instance is shared by
// every Guard that uses it.
type SpendGuard struct{}

// DefaultSpend is the process-wide spend guard used when GuardOptions.Spend is nil.
var DefaultSpend = &SpendGuard{}

// FromConfig builds the summarizer cfg describes. Model kinds are wrapped in
// a Guard that falls back to the extractive summarizer.
func FromConfig(cfg Config, tc core.TokenCounter) (core.Summarizer, error) {
	ext := NewExtractive(tc)
	switch cfg.Kind {
	case "", KindExtractive:
		return ext, nil
	case KindOpenAI:
		m, err := NewOpenAI(OpenAIConfig{Model: cfg.Model, BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, APIKeyEnv: cfg.APIKeyEnv})
		if err != nil {
			return nil, err
		}
		return NewGuard(m, ext, GuardOptions{}), nil
	case KindAnthropic:
		m, err := NewAnthropic(AnthropicConfig{Model: cfg.Model, BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, APIKeyEnv: cfg.APIKeyEnv})
		if err != nil {
			return nil, err
		}
		return NewGuard(m, ext, GuardOptions{}), nil
	}
	return nil, fmt.Errorf("summarize: unknown summarizer kind %q (want extractive, openai or anthropic)", cfg.Kind)
}
