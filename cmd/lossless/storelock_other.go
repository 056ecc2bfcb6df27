//go:build windows || plan9 || js || wasip1 || aix

package main

// probeStoreLock reports no lock where Badger's lock is not a flock on the
// directory: doctor then opens the store as usual, and a store in use fails
// to open with Badger's error.
func probeStoreLock(dir string) (storeLock, error) {
	return storeLock{}, nil
}
