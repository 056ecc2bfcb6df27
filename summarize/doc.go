// Package summarize holds the project's summarizers (core.Summarizer):
//
//   - Extractive, the embedded default: deterministic, no network, fast. It
//     keeps the sentences that carry asks, constraints, decisions, errors,
//     outcomes and identifiers, in fixed sections, and its output is always
//     strictly shorter than its input and within the target. Every sentence
//     is also scored by what it says (rare words by inverse frequency within
//     the input, names, numbers, dates, preferences and plans; small talk
//     loses, near-duplicates are left out). A chat becomes one chronological
//     "Facts:" list of whole short turns, with the date stamps its lines
//     carry ("[7 May 2023] user: …"); a condensed input is split back into
//     its children's items, so the most specific facts of all children win,
//     not the first child's. Measured by TestLocomoSummaryCoverage (LoCoMo
//     evidence covered by summaries alone) and TestPiMonoSummaryRetention
//     (paths, names, error and decision lines of coding sessions).
//   - Model, a language model behind the official SDKs: OpenAI-compatible
//     chat completions (NewOpenAI: OpenAI, vLLM, llama.cpp server, Ollama)
//     or Anthropic Messages (NewAnthropic), or the host's own model
//     (NewHost, OpenClaw's llm.complete). Streaming is off; the prompts
//     (SystemPrompt, UserPrompt) mark the transcript as untrusted data. The
//     SDKs do the retries (MaxRetries, Retry-After respected, exponential
//     backoff) and time out each request; the host retries by itself.
//   - Guard, around every model: one call per request (no retries of its
//     own) bounded in time, reasoning stripped (StripReasoning), the answer
//     checked (CheckSummary: empty, a canned reply, not shorter than the
//     input, the input's identifiers lost) and, when refused, asked for
//     once more with a stricter prompt saying why, then answered by the
//     fallback (core.SummarizeReport tells the caller, which stores it as
//     dag.MethodRefused), a SpendGuard charged for every request the SDK
//     sends, a SpendCap of requests and tokens per hour (the tokens the
//     provider or host reports through
//     ReportUsage, else counted) and a circuit Breaker counting failed
//     calls; on failure, or over a limit, it falls back to Extractive, so
//     compaction always converges. A Tally in the context counts how one
//     compaction's requests were answered. The guard and the cap come from
//     a Spend (Config.Spend), which a process makes once and hands to each
//     of its engines so that they share them; a summarizer given none has
//     its own.
//
// FromConfig builds one from Config (plugins.entries.lossless.config.summarizer).
// The identifiers it keeps are those of package ident, the project's one
// identifier extractor.
package summarize
