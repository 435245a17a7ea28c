package bench

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// FsyncResult is the latency of a synced write on one disk.
type FsyncResult struct {
	Dir        string  `json:"dir"`
	Writes     int     `json:"writes"`
	BlockBytes int     `json:"block_bytes"`
	MedianUS   float64 `json:"median_us"`
	P99US      float64 `json:"p99_us"`
	MaxUS      float64 `json:"max_us"`
}

// fsyncBlock is the size of each probe write.
const fsyncBlock = 4096

// ProbeFsync measures the latency of a synced 4 KB write in dir: it appends n
// blocks to a new file, each followed by fdatasync (fsync where fdatasync is
// not available), as a write-ahead log does, and reports the median and 99th
// percentile. The file is removed afterwards.
func ProbeFsync(dir string, n int) (*FsyncResult, error) {
	if n <= 0 {
		n = DefaultFsyncCount
	}
	f, err := os.CreateTemp(dir, "lethe-fsync-probe-*")
	if err != nil {
		return nil, fmt.Errorf("fsync probe: %w", err)
	}
	name := f.Name()
	var h Histogram
	block := make([]byte, fsyncBlock)
	for i := range block {
		block[i] = byte(i)
	}
	for range n {
		t0 := time.Now()
		if _, err = f.Write(block); err != nil {
			break
		}
		if err = fdatasync(f); err != nil {
			break
		}
		h.Record(time.Since(t0))
	}
	err = errors.Join(err, f.Close(), os.Remove(name))
	if err != nil {
		return nil, fmt.Errorf("fsync probe in %s: %w", dir, err)
	}
	return &FsyncResult{
		Dir: dir, Writes: n, BlockBytes: fsyncBlock,
		MedianUS: micros(h.Percentile(0.5)), P99US: micros(h.Percentile(0.99)), MaxUS: micros(h.Max()),
	}, nil
}

// FsyncBound compares a durable write workload with what the disk allows if
// every client waits for one synced write per operation: concurrency divided
// by the median sync latency. Group commit (one sync acknowledging many
// writers) is what makes reaching it possible.
type FsyncBound struct {
	SyncMedianUS float64 `json:"sync_median_us"`
	OpsPerSec    float64 `json:"bound_ops_per_sec"`
	Ratio        float64 `json:"ratio"` // measured ops/s divided by the bound
}

func newFsyncBound(f *FsyncResult, concurrency int, opsPerSec float64) *FsyncBound {
	if f == nil || f.MedianUS <= 0 {
		return nil
	}
	b := &FsyncBound{SyncMedianUS: f.MedianUS, OpsPerSec: float64(concurrency) / (f.MedianUS / 1e6)}
	b.Ratio = opsPerSec / b.OpsPerSec
	return b
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
