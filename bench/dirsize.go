package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// dirSize is the disk usage of everything under dir, bytes: allocated
// blocks where the system reports them (as du counts), else file sizes.
// Files that vanish during the walk (a store deletes obsolete files all the
// time) are skipped.
func dirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		total += diskBytes(info)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", dir, err)
	}
	return total, nil
}
