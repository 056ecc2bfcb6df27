//go:build !unix

package bench

import "io/fs"

// allocated returns the bytes a file occupies on disk (its size here).
func allocated(info fs.FileInfo) int64 { return info.Size() }
