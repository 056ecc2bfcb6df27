//go:build race

package compaction_test

// raceEnabled is true under -race, where the real-data test runs on
// before-compaction.jsonl only (tiktoken is ~10x slower with the detector).
const raceEnabled = true
