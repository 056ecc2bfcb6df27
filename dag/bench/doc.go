// Package bench holds the DAG compaction benchmarks that need the real
// summarizer (package summarize), kept apart so that package dag's own
// tests do not depend on it:
//
//	go test ./dag/bench -run '^$' -bench Compact -benchtime 1x
package bench
