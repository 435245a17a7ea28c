package bench

import (
	"os"
	"testing"
)

func TestProbeFsync(t *testing.T) {
	dir := t.TempDir()
	r, err := ProbeFsync(dir, 20)
	if err != nil {
		t.Fatal(err)
	}
	if r.Writes != 20 || r.MedianUS <= 0 || r.P99US < r.MedianUS || r.MaxUS < r.P99US {
		t.Errorf("implausible result %+v", r)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the probe left %d files behind", len(ents))
	}
	b := newFsyncBound(&FsyncResult{MedianUS: 2000}, 8, 2000)
	if b.OpsPerSec != 4000 || b.Ratio != 0.5 {
		t.Errorf("bound %+v, want 4000 ops/s and ratio 0.5", b)
	}
}
