//go:build !race

package storetest

// raceEnabled is false without the race detector (race.go).
const raceEnabled = false
