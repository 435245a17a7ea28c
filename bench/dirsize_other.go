//go:build !unix

package bench

import "io/fs"

// diskBytes is the disk space a file takes; here, its size.
func diskBytes(info fs.FileInfo) int64 { return info.Size() }
