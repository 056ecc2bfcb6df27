package summarize

import "errors"

// The errors of package summarize, for errors.Is.

// ErrConfig is returned for an invalid configuration (missing model, unknown kind).
var ErrConfig = errors.New("summarize: invalid config")

// ErrNoAPIKey is returned by NewOpenAI and NewAnthropic when no key is
// configured for the provider's own endpoint.
var ErrNoAPIKey = errors.New("summarize: no API key")

// ErrNoHostLLM is returned by a KindHost summarizer called without the
// host's model in its context.
var ErrNoHostLLM = errors.New("summarize: the host's model is not offered in this call")

// ErrBreakerOpen is the reason a Guard skipped its model: the circuit breaker is open.
var ErrBreakerOpen = errors.New("summarize: circuit breaker open")

// ErrSpendLimit is the reason a Guard skipped its model, or stopped a
// model's retries: the spend guard's budget for the window is used up.
var ErrSpendLimit = errors.New("summarize: spend limit reached")
