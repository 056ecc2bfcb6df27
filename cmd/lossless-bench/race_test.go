//go:build race

package main

// raceEnabled is true under the race detector, which slows token counting
// about tenfold; tests shrink their real-data inputs.
const raceEnabled = true
