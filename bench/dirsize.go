package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/lethe-db/lethe/kv/pebblekv"
)

// dirSize measures everything under dir but the store's ballast (space kept
// free, not data): disk is its disk usage, bytes (allocated blocks where the
// system reports them, as du counts: space a store preallocates for its logs
// included), files the sum of the files' sizes (what they hold). Files that
// vanish during the walk (a store deletes obsolete files all the time) are
// skipped.
func dirSize(dir string) (disk, files int64, err error) {
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil
			}
			return err
		}
		if d.Name() == pebblekv.BallastName {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		disk += diskBytes(info)
		if info.Mode().IsRegular() {
			files += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("size of %s: %w", dir, err)
	}
	return disk, files, nil
}
