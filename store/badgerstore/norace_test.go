//go:build !race

package badgerstore

const raceEnabled = false
