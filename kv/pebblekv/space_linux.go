package pebblekv

import (
	"errors"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// allocate makes the empty file f size bytes long, with its blocks allocated
// (not a sparse file): by fallocate(2) where the file is a real one and the
// filesystem supports it, else by writing zeros.
func allocate(f vfs.File, size int64) error {
	if fd := f.Fd(); fd != vfs.InvalidFd {
		err := unix.Fallocate(int(fd), 0, 0, size)
		if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
			return err
		}
	}
	return writeZeros(f, size)
}
