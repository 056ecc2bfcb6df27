//go:build unix

package diskusage

import (
	"io/fs"
	"syscall"
)

// allocated is st_blocks (512-byte units, whatever the filesystem's block
// size) times 512.
func allocated(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return info.Size()
}
