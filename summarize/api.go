package summarize

import (
	"fmt"
	"strings"
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
// extractive summarizer (the engine's default under OpenClaw is KindHost:
// see lossless/config.Config.Summarizer). Durations are in milliseconds; zero
// means the documented default.
type Config struct {
	// Kind is KindExtractive (default when empty), KindOpenAI, KindAnthropic
	// or KindHost.
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
	// TimeoutMs bounds one HTTP request to the model, each of the SDK's
	// retries having its own (default 60000); for KindHost, one call of the
	// host's model.
	TimeoutMs int `json:"timeoutMs,omitempty"`
	// MaxRetries is the number of retries the provider's SDK makes after a
	// retryable failure (HTTP 408, 409, 429, 5xx, a connection error),
	// waiting as the server's Retry-After asks (a wait over 30 s is not
	// retried) or backing off exponentially (default 2; -1 for none). It does
	// not apply to KindHost, whose host retries by itself.
	MaxRetries int `json:"maxRetries,omitempty"`
	// MaxOutputTokens caps the model's answer (default: the request's target, at least 256).
	MaxOutputTokens int `json:"maxOutputTokens,omitempty"`
	// MaxCallsPerWindow is the spend guard's limit of model requests (the
	// SDK's retries included) per window for every summarizer sharing Spend
	// (the whole process, when it hands one Spend to its engines; default 60;
	// -1 for unlimited).
	MaxCallsPerWindow int `json:"maxCallsPerWindow,omitempty"`
	// WindowMs is the spend guard's window (default 60000).
	WindowMs int `json:"windowMs,omitempty"`
	// MaxCallsPerHour caps the model requests (the SDK's retries included)
	// in any hour, for every summarizer sharing Spend (default DefaultMaxCallsPerHour;
	// -1 for unlimited). Beyond it the extractive summarizer answers.
	MaxCallsPerHour int `json:"maxCallsPerHour,omitempty"`
	// MaxTokensPerHour caps the tokens of the model's calls (prompt and
	// answer, as the provider or host reports them, else counted with the
	// engine's tokenizer) in any hour, for every summarizer sharing Spend (default
	// DefaultMaxTokensPerHour; -1 for unlimited). A call whose prompt and
	// longest answer would pass it is not made: the extractive summarizer
	// answers it.
	MaxTokensPerHour int `json:"maxTokensPerHour,omitempty"`
	// BreakerFailures is the number of consecutive failed calls (each after
	// the SDK's retries) that opens the circuit breaker (default 5).
	BreakerFailures int `json:"breakerFailures,omitempty"`
	// BreakerCooldownMs is how long the breaker stays open before a trial
	// call (default 60000).
	BreakerCooldownMs int `json:"breakerCooldownMs,omitempty"`

	// Spend is where the spend guard and cap of these limits come from:
	// the process's, shared by its engines (NewSpend, made once by the
	// process and handed to each); nil gives the summarizer a Spend of its
	// own. Not configuration: never read from JSON.
	Spend *Spend `json:"-"`
}

// Validate reports a Config FromConfig would refuse for its values (an
// unknown kind, a model kind without a model, a negative limit other than
// -1); it does not look for API keys.
func (cfg Config) Validate() error {
	switch strings.ToLower(cfg.Kind) {
	case "", KindExtractive, KindHost:
	case KindOpenAI, KindAnthropic:
		if cfg.Model == "" {
			return fmt.Errorf("summarize: config: kind %q needs a model: %w", cfg.Kind, ErrConfig)
		}
	default:
		return fmt.Errorf("summarize: unknown summarizer kind %q (want extractive, openai, anthropic or host): %w", cfg.Kind, ErrConfig)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"maxCallsPerWindow", cfg.MaxCallsPerWindow}, {"maxCallsPerHour", cfg.MaxCallsPerHour}, {"maxTokensPerHour", cfg.MaxTokensPerHour}} {
		if f.v < -1 {
			return fmt.Errorf("summarize: config: %s %d (want -1 for unlimited, 0 for the default, or a positive limit): %w", f.name, f.v, ErrConfig)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"timeoutMs", cfg.TimeoutMs}, {"maxOutputTokens", cfg.MaxOutputTokens}, {"windowMs", cfg.WindowMs},
		{"breakerFailures", cfg.BreakerFailures}, {"breakerCooldownMs", cfg.BreakerCooldownMs}} {
		if f.v < 0 {
			return fmt.Errorf("summarize: config: %s %d is negative (0 for the default): %w", f.name, f.v, ErrConfig)
		}
	}
	return nil
}

// FromConfig builds the summarizer cfg describes, counting tokens with tc
// (core.DefaultCounter when nil). The extractive kind needs no network. The
// model kinds retry through their SDK (MaxRetries, TimeoutMs per request)
// and are wrapped in a Guard (a bound on the whole call, a spend guard per
// window and an hourly spend cap of calls and tokens, both cfg.Spend's for
// these limits, circuit breaker) that falls back to the extractive
// summarizer.
func FromConfig(cfg Config, tc core.TokenCounter) (core.Summarizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if tc == nil {
		tc = core.DefaultCounter()
	}
	ext := NewExtractive(tc)
	timeout := time.Duration(cfg.TimeoutMs) * time.Millisecond
	var m *Model
	var err error
	switch strings.ToLower(cfg.Kind) {
	case "", KindExtractive:
		return ext, nil
	case KindOpenAI:
		m, err = NewOpenAI(OpenAIConfig{Model: cfg.Model, BaseURL: cfg.BaseURL, APIKey: cfg.APIKey,
			APIKeyEnv: cfg.APIKeyEnv, Timeout: timeout, MaxRetries: cfg.MaxRetries, MaxOutputTokens: cfg.MaxOutputTokens})
	case KindAnthropic:
		m, err = NewAnthropic(AnthropicConfig{Model: cfg.Model, BaseURL: cfg.BaseURL, APIKey: cfg.APIKey,
			APIKeyEnv: cfg.APIKeyEnv, Timeout: timeout, MaxRetries: cfg.MaxRetries, MaxOutputTokens: cfg.MaxOutputTokens})
	case KindHost:
		m = NewHost(timeout, cfg.MaxOutputTokens)
	default:
		return nil, fmt.Errorf("summarize: unknown summarizer kind %q (want extractive, openai, anthropic or host): %w", cfg.Kind, ErrConfig)
	}
	if err != nil {
		return nil, err
	}
	spend := cfg.Spend
	if spend == nil {
		spend = NewSpend()
	}
	return NewGuard(m, ext, GuardOptions{
		Spend:           spend.Guard(cfg.MaxCallsPerWindow, time.Duration(cfg.WindowMs)*time.Millisecond),
		Cap:             spend.Cap(cfg.MaxCallsPerHour, cfg.MaxTokensPerHour),
		BreakerFailures: cfg.BreakerFailures,
		BreakerCooldown: time.Duration(cfg.BreakerCooldownMs) * time.Millisecond,
		Counter:         tc,
	}), nil
}
