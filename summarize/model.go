package summarize

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/lossless-engine/contextengine/core"
)

// OpenAIConfig configures NewOpenAI.
type OpenAIConfig struct {
	// Model is the model name (required).
	Model string
	// BaseURL is the endpoint, e.g. http://localhost:11434/v1 for Ollama or
	// http://localhost:8000/v1 for vLLM (default: OpenAI's).
	BaseURL string
	// APIKey is the key; when empty it is read from APIKeyEnv. Local servers
	// accept any key; "none" is sent when no key is found and BaseURL is set.
	APIKey string
	// APIKeyEnv names the variable holding the key (default OPENAI_API_KEY).
	APIKeyEnv string
	// Timeout bounds one HTTP request: each of the SDK's attempts has its
	// own (default DefaultTimeout). The SDK does not retry an attempt that
	// timed out.
	Timeout time.Duration
	// MaxRetries is the number of retries the SDK makes after a retryable
	// failure (HTTP 408, 409, 429, 5xx, a connection error): default
	// DefaultMaxRetries, negative for none. The SDK waits as the server's
	// retry-after-ms or Retry-After asks, else backs off exponentially from
	// 0.5 s with jitter.
	MaxRetries int
	// MaxRetryDelay caps the SDK's wait before a retry; a Retry-After
	// beyond it ends the retries (default DefaultMaxRetryDelay).
	MaxRetryDelay time.Duration
	// MaxOutputTokens caps the answer (default: the request's target, at least 256).
	MaxOutputTokens int
	// HTTPClient overrides the HTTP client (tests).
	HTTPClient *http.Client
}

// AnthropicConfig configures NewAnthropic.
type AnthropicConfig struct {
	// Model is the model name (required).
	Model string
	// BaseURL is the endpoint (default: Anthropic's).
	BaseURL string
	// APIKey is the key; when empty it is read from APIKeyEnv.
	APIKey string
	// APIKeyEnv names the variable holding the key (default ANTHROPIC_API_KEY).
	APIKeyEnv string
	// Timeout bounds one HTTP request: each of the SDK's attempts has its
	// own (default DefaultTimeout). The SDK retries an attempt that timed
	// out like a connection error.
	Timeout time.Duration
	// MaxRetries is the number of retries the SDK makes after a retryable
	// failure (HTTP 408, 409, 429, 5xx, a connection error, a timed-out
	// attempt): default DefaultMaxRetries, negative for none. The SDK waits
	// as the server's retry-after-ms or Retry-After asks, else backs off
	// exponentially from 0.5 s (at most 8 s) with jitter.
	MaxRetries int
	// MaxRetryDelay ends the retries when the server's Retry-After is
	// beyond it (default DefaultMaxRetryDelay). This SDK has no such cap
	// of its own: a middleware tells it not to retry such a response.
	MaxRetryDelay time.Duration
	// MaxOutputTokens caps the answer (default: the request's target, at least 256).
	MaxOutputTokens int
	// HTTPClient overrides the HTTP client (tests).
	HTTPClient *http.Client
}

// Model client defaults.
const (
	// DefaultTimeout bounds one HTTP request of a model client (and one
	// call of the host's model).
	DefaultTimeout = 60 * time.Second
	// DefaultMaxRetries is the number of retries a model client's SDK makes.
	DefaultMaxRetries = 2
	// DefaultMaxRetryDelay is the longest wait before a retry: a server
	// asking for a longer one (Retry-After) is not retried.
	DefaultMaxRetryDelay = 30 * time.Second
)

// StatusError is the HTTP failure that ended a model call, after the
// SDK's retries. Model wraps it (and core.ErrSummarizerFailed); callers may
// read it with errors.As.
type StatusError struct {
	// Provider is "openai" or "anthropic".
	Provider string
	// StatusCode is the HTTP status.
	StatusCode int
	// RetryAfter is the server's Retry-After (or retry-after-ms), zero when absent.
	RetryAfter time.Duration
	// Err is the SDK's error.
	Err error
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("summarize: %s: HTTP %d: %v", e.Provider, e.StatusCode, e.Err)
}

// Unwrap returns the SDK's error.
func (e *StatusError) Unwrap() error { return e.Err }

// Retryable reports whether the status is one the SDKs retry (408, 409,
// 429, 5xx): when it ended the call, the retries were used up or the
// server's Retry-After was beyond the cap.
func (e *StatusError) Retryable() bool {
	return e.StatusCode == 408 || e.StatusCode == 409 || e.StatusCode == 429 || e.StatusCode >= 500
}

// Model is a summarizer backed by a language model. Each Summarize is one
// call of the provider's SDK, which retries by itself (MaxRetries, with
// Retry-After respected) and bounds each HTTP attempt by Timeout; the host
// kind makes one call of the host's model, bounded by its timeout. Wrap it
// in a Guard for the spend guard, the circuit breaker and the fallback. Its
// output has reasoning stripped; empty output is an error.
type Model struct {
	name      string
	maxOutput int
	// timeout bounds one HTTP attempt (SDK kinds) or the whole call (host).
	timeout time.Duration
	// retries and retryDelay are the SDK's MaxRetries and longest wait
	// (zero for the host).
	retries    int
	retryDelay time.Duration
	// callTimeout, when set, bounds the whole call in Summarize (the host
	// kind; the SDKs apply timeout per attempt themselves).
	callTimeout time.Duration
	// hostOnly marks the host kind: it answers only with the host's model
	// in the call's context (HostLLMFrom).
	hostOnly bool
	call     func(ctx context.Context, system, user string, maxTokens int) (string, error)
}

// Name returns "openai:<model>", "anthropic:<model>" or "host".
func (m *Model) Name() string { return m.name }

// callBudget is how long one call may take at worst: every attempt timing
// out and every wait as long as allowed. A Guard without a Timeout of its
// own bounds the call by it.
func (m *Model) callBudget() time.Duration {
	return time.Duration(m.retries+1)*m.timeout + time.Duration(m.retries)*m.retryDelay
}

// Summarize asks the model for a summary of req. Errors wrap
// core.ErrSummarizerFailed, and a *StatusError for HTTP failures.
func (m *Model) Summarize(ctx context.Context, req core.SummarizeRequest) (string, error) {
	max := m.maxTokensFor(req)
	if m.callTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.callTimeout)
		defer cancel()
	}
	out, err := m.call(ctx, SystemPrompt(req), UserPrompt(req), max)
	if err != nil {
		return "", fmt.Errorf("summarize: %s: %w: %w", m.name, core.ErrSummarizerFailed, err)
	}
	out = StripReasoning(out)
	if out == "" {
		// A refusal (CheckSummary's first rule): a Guard asks once more.
		return "", fmt.Errorf("summarize: %s: %w: %w", m.name, core.ErrSummarizerFailed,
			&RefusedError{Reason: "the answer is empty (after removing reasoning)"})
	}
	return out, nil
}

// maxTokensFor is the answer cap of req: MaxOutputTokens, else the
// request's target, at least 256.
func (m *Model) maxTokensFor(req core.SummarizeRequest) int {
	if m.maxOutput > 0 {
		return m.maxOutput
	}
	return max(req.TargetTokens, 256)
}

func apiKey(key, env, def string) string {
	if key != "" {
		return key
	}
	if env == "" {
		env = def
	}
	return os.Getenv(env)
}

func timeoutOr(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultTimeout
	}
	return d
}

// retryPolicy returns the SDK's MaxRetries and longest wait for a config's
// values (zero: the defaults; negative retries: none).
func retryPolicy(retries int, delay time.Duration) (int, time.Duration) {
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	}
	if delay <= 0 {
		delay = DefaultMaxRetryDelay
	}
	return retries, delay
}

type attemptHookKey struct{}

// withAttemptHook returns ctx carrying hook, which the model clients call
// before each HTTP attempt of the call made with ctx (the SDK's retries
// included). An error from hook stops the attempt; the hook must then also
// cancel ctx so that the SDK does not retry. The Guard uses it to count
// retries and charge them to the spend guard.
func withAttemptHook(ctx context.Context, hook func() error) context.Context {
	return context.WithValue(ctx, attemptHookKey{}, hook)
}

// attemptMiddleware is an SDK middleware (the same function type for both
// SDKs) run around each HTTP attempt: it calls the attempt hook of the
// request's context, and, when capDelay > 0, asks the SDK (with
// x-should-retry: false, which both SDKs honour) not to retry a response
// whose Retry-After is beyond capDelay, for an SDK without that cap.
func attemptMiddleware(capDelay time.Duration) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		if hook, _ := req.Context().Value(attemptHookKey{}).(func() error); hook != nil {
			if err := hook(); err != nil {
				return nil, err
			}
		}
		res, err := next(req)
		if capDelay > 0 && res != nil && retryAfter(res) > capDelay {
			res.Header.Set("X-Should-Retry", "false")
		}
		return res, err
	}
}

// NewOpenAI returns a summarizer for an OpenAI-compatible chat-completions
// endpoint (OpenAI, vLLM, llama.cpp server, Ollama), retried by the SDK
// (see OpenAIConfig.MaxRetries). Streaming is off. On
// OpenAI's own endpoint the cap is sent as max_completion_tokens, elsewhere
// as max_tokens (what local servers understand).
func NewOpenAI(cfg OpenAIConfig) (*Model, error) {
	key, err := clientKey("openai", cfg.Model, cfg.APIKey, cfg.APIKeyEnv, "OPENAI_API_KEY", cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	retries, delay := retryPolicy(cfg.MaxRetries, cfg.MaxRetryDelay)
	m := &Model{name: "openai:" + cfg.Model, maxOutput: cfg.MaxOutputTokens, timeout: timeoutOr(cfg.Timeout),
		retries: retries, retryDelay: delay}
	opts := []ooption.RequestOption{
		ooption.WithAPIKey(key),
		ooption.WithMaxRetries(retries),
		ooption.WithMaxRetryDelay(delay),
		ooption.WithRequestTimeout(m.timeout),
		ooption.WithMiddleware(attemptMiddleware(0)),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, ooption.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, ooption.WithHTTPClient(cfg.HTTPClient))
	}
	client := openai.NewClient(opts...)
	official := cfg.BaseURL == ""
	model := cfg.Model
	m.call = func(ctx context.Context, system, user string, maxTokens int) (string, error) {
		p := openai.ChatCompletionNewParams{
			Model: model,
			Messages: []openai.ChatCompletionMessageParamUnion{
				openai.SystemMessage(system),
				openai.UserMessage(user),
			},
		}
		if official {
			p.MaxCompletionTokens = openai.Int(int64(maxTokens))
		} else {
			p.MaxTokens = openai.Int(int64(maxTokens))
			p.Temperature = openai.Float(0)
		}
		resp, err := client.Chat.Completions.New(ctx, p)
		if err != nil {
			var ae *openai.Error
			if errors.As(err, &ae) {
				return "", &StatusError{Provider: "openai", StatusCode: ae.StatusCode, RetryAfter: retryAfter(ae.Response), Err: err}
			}
			return "", err
		}
		ReportUsage(ctx, int(resp.Usage.PromptTokens), int(resp.Usage.CompletionTokens))
		if len(resp.Choices) == 0 {
			return "", errors.New("no choices in the answer")
		}
		return resp.Choices[0].Message.Content, nil
	}
	return m, nil
}

// NewAnthropic returns a summarizer for the Anthropic Messages API,
// retried by the SDK (see AnthropicConfig.MaxRetries). Streaming is off; thinking content blocks are ignored, only text blocks
// make the answer.
func NewAnthropic(cfg AnthropicConfig) (*Model, error) {
	key, err := clientKey("anthropic", cfg.Model, cfg.APIKey, cfg.APIKeyEnv, "ANTHROPIC_API_KEY", cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	retries, delay := retryPolicy(cfg.MaxRetries, cfg.MaxRetryDelay)
	m := &Model{name: "anthropic:" + cfg.Model, maxOutput: cfg.MaxOutputTokens, timeout: timeoutOr(cfg.Timeout),
		retries: retries, retryDelay: delay}
	opts := []aoption.RequestOption{
		aoption.WithAPIKey(key),
		aoption.WithMaxRetries(retries),
		aoption.WithRequestTimeout(m.timeout),
		aoption.WithMiddleware(attemptMiddleware(delay)),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, aoption.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, aoption.WithHTTPClient(cfg.HTTPClient))
	}
	client := anthropic.NewClient(opts...)
	model := cfg.Model
	m.call = func(ctx context.Context, system, user string, maxTokens int) (string, error) {
		resp, err := client.Messages.New(ctx, anthropic.MessageNewParams{
			Model:     model,
			MaxTokens: int64(maxTokens),
			System:    []anthropic.TextBlockParam{{Text: system}},
			Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(user))},
		})
		if err != nil {
			var ae *anthropic.Error
			if errors.As(err, &ae) {
				return "", &StatusError{Provider: "anthropic", StatusCode: ae.StatusCode, RetryAfter: retryAfter(ae.Response), Err: err}
			}
			return "", err
		}
		ReportUsage(ctx, int(resp.Usage.InputTokens), int(resp.Usage.OutputTokens))
		var b strings.Builder
		for _, c := range resp.Content {
			if c.Type == "text" {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				b.WriteString(c.Text)
			}
		}
		return b.String(), nil
	}
	return m, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// retryAfter reads retry-after-ms or Retry-After (seconds or an HTTP date),
// as the SDKs do, for StatusError and for the cap on the Anthropic SDK's
// waits; the SDKs do the waiting.
func retryAfter(r *http.Response) time.Duration {
	if r == nil {
		return 0
	}
	if v := r.Header.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := r.Header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// clientKey checks a model client's config and returns its API key: from
// apiKey, else $apiKeyEnv (default defaultEnv); a custom base URL (a local
// server) may go without one and sends "none".
func clientKey(provider, model, apiKeyValue, apiKeyEnv, defaultEnv, baseURL string) (string, error) {
	if model == "" {
		return "", fmt.Errorf("summarize: %s: model is required: %w", provider, ErrConfig)
	}
	key := apiKey(apiKeyValue, apiKeyEnv, defaultEnv)
	if key == "" {
		if baseURL == "" {
			return "", fmt.Errorf("summarize: %s: set apiKey or $%s: %w", provider, orDefault(apiKeyEnv, defaultEnv), ErrNoAPIKey)
		}
		key = "none"
	}
	return key, nil
}
