//go:build race

package storetest

// raceEnabled is true under the race detector (go test -race), which makes
// the contract suite's model run about ten times slower.
const raceEnabled = true
