// Package tokens counts tokens the way OpenAI's o200k_base encoding does,
// exactly as tiktoken-go counts them, about an order of magnitude faster.
//
// It is the one o200k_base counter of the module: core.NewCounter and
// core.DefaultCounter return it for "o200k_base", so the engines (lossless,
// legacy), compaction, the summarizers and the benchmarks all count with
// it. core.NewTiktoken keeps tiktoken-go itself, the reference the tests
// compare against.
//
// tiktoken-go splits text with a backtracking regular expression (regexp2),
// which dominates its cost and turns quadratic on some code; O200k splits
// with a hand-written matcher of the same pattern, byte-pair-merges the
// pieces that are not whole tokens (a heap for long ones, so a 32 MiB run
// without spaces counts in seconds), caches the merged counts of repeated
// pieces, counts texts of a million runes and more on every core, and stops when its
// context is done.
//
// The package imports nothing of the module: core imports it.
package tokens
