// Package summarize holds the project's summarizers (core.Summarizer):
//
//   - Extractive, the embedded default: deterministic, no network, fast. It
//     keeps the sentences that carry asks, constraints, decisions, errors,
//     outcomes and identifiers, in fixed sections, and its output is always
//     strictly shorter than its input and within the target.
//   - Model, a language model behind the official SDKs: OpenAI-compatible
//     chat completions (NewOpenAI: OpenAI, vLLM, llama.cpp server, Ollama)
//     or Anthropic Messages (NewAnthropic). Streaming is off; the prompts
//     (SystemPrompt, UserPrompt) mark the transcript as untrusted data.
//   - Guard, around every model: per-attempt timeout, bounded retries with
//     backoff (Retry-After respected), reasoning stripped (StripReasoning),
//     empty or not-shorter answers rejected, a process-wide SpendGuard and a
//     circuit Breaker; on failure it falls back to Extractive, so compaction
//     always converges.
//
// FromConfig builds one from Config (plugins.entries.lossless.config.summarizer).
// Identifiers lists the opaque identifiers of a text, to measure how many a
// summary keeps.
package summarize
