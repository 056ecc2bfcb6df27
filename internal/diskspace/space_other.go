//go:build !unix

package diskspace

import "errors"

// freeBytes is not implemented here: writes are not refused for space.
func freeBytes(string) (uint64, error) { return 0, errors.New("free space unknown on this platform") }

// sizeBytes is not implemented here either.
func sizeBytes(string) (uint64, error) {
	return 0, errors.New("filesystem size unknown on this platform")
}
