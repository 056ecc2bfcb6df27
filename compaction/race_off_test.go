//go:build !race

package compaction_test

const raceEnabled = false
