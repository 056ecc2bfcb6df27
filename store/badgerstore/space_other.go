//go:build !unix

package badgerstore

import "errors"

// freeBytes is not implemented here: writes are not refused for space.
func freeBytes(string) (uint64, error) { return 0, errors.New("free space unknown on this platform") }
