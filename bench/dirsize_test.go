package bench

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
)

// TestDirSize counts the files in every subdirectory: their sizes exactly,
// and a disk usage of at least their size (incompressible data, no holes)
// and at most a block or so more each.
func TestDirSize(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	const fileSize = 100_000
	for _, name := range []string{"x", "a/y", "a/b/z"} {
		b := make([]byte, fileSize)
		_, _ = rand.Read(b)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	disk, files, err := dirSize(dir)
	if err != nil {
		t.Fatal(err)
	}
	if files != 3*fileSize {
		t.Errorf("file sizes %d, want %d", files, 3*fileSize)
	}
	if disk < 3*fileSize || disk > 3*fileSize+6*64<<10 {
		t.Errorf("disk usage %d, want about %d", disk, 3*fileSize)
	}
	if _, _, err := dirSize(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory: no error")
	}
}
