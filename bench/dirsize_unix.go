//go:build unix

package bench

import (
	"io/fs"
	"syscall"
)

// diskBytes is the disk space a file takes: its allocated blocks (st_blocks
// counts 512-byte units whatever the file system's block size), which
// include space preallocated beyond its size, and exclude holes.
func diskBytes(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return info.Size()
}
