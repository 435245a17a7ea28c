package pebblekv

import (
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Compactions yield the CPU to the foreground. A compaction is one goroutine
// that computes for a second or more at a stretch (merging, encoding and
// compressing blocks); on a machine with few cores that stretch takes a core
// from user requests, and Go's scheduler lets a waiting goroutine sit behind it
// for up to its 10 ms time slice. Measured on 2 cores: a single busy goroutine
// beside a fixed load of point reads and creates raised their p99 latency
// 2.5-fold. So while the store's Foreground signal is on, every write of a
// compaction's output first sleeps compactionRestFactor times as long as the
// compaction computed since its previous write: the compaction then runs in
// slices of about one block and uses at most a quarter of a core. Flushes and
// the write-ahead log are never paced (a late flush would stall every
// writer), nor is anything while level 0 is backed up (maxPacedL0Sublevels):
// compactions then run at full speed until the tree is healthy again.
const (
	compactionRestFactor = 3
	maxCompactionRest    = 5 * time.Millisecond
	maxPacedL0Sublevels  = 8
	lsmCheckInterval     = 100 * time.Millisecond
)

// compactionCategory is the disk-write category Pebble gives compaction
// output; flushes and the WAL have their own.
const compactionCategory vfs.DiskWriteCategory = "pebble-compaction"

// pacer decides whether compaction writes rest, and for how long.
type pacer struct {
	foreground func() bool
	// l0Sublevels reports level 0's depth; nil until the DB is open.
	l0Sublevels atomic.Pointer[func() int]
	checkedAt   atomic.Int64 // Unix nanoseconds of the last level-0 check
	backedUp    atomic.Bool
	rested      atomic.Int64 // total rest, nanoseconds, for tests and diagnostics
	writing     atomic.Int64 // compaction output files open
}

// healthy reports whether level 0 is shallow enough for compactions to be
// paced, checking at most every lsmCheckInterval.
func (p *pacer) healthy(now time.Time) bool {
	last := p.checkedAt.Load()
	if now.UnixNano()-last >= int64(lsmCheckInterval) && p.checkedAt.CompareAndSwap(last, now.UnixNano()) {
		if f := p.l0Sublevels.Load(); f != nil {
			p.backedUp.Store((*f)() >= maxPacedL0Sublevels)
		}
	}
	return !p.backedUp.Load()
}

// rest sleeps before a compaction write when the foreground is active, in
// proportion to busy, the time the compaction computed since its last write.
func (p *pacer) rest(busy time.Duration) {
	if busy <= 0 || !p.foreground() || !p.healthy(time.Now()) {
		return
	}
	d := min(busy*compactionRestFactor, maxCompactionRest)
	time.Sleep(d)
	p.rested.Add(int64(d))
}

// pacedFS is a vfs.FS whose compaction output files rest before each write.
type pacedFS struct {
	vfs.FS
	p *pacer
}

// Create implements vfs.FS.
func (fs pacedFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || category != compactionCategory {
		return f, err
	}
	fs.p.writing.Add(1)
	return &pacedFile{File: f, p: fs.p, lastWrite: time.Now()}, nil
}

// pacedFile is one compaction output file. Pebble writes a file from one
// goroutine, so lastWrite needs no lock.
type pacedFile struct {
	vfs.File
	p         *pacer
	lastWrite time.Time
	closed    bool
}

// Close implements vfs.File.
func (f *pacedFile) Close() error {
	if !f.closed {
		f.closed = true
		f.p.writing.Add(-1)
	}
	return f.File.Close()
}

// Write implements vfs.File.
func (f *pacedFile) Write(b []byte) (int, error) {
	f.p.rest(time.Since(f.lastWrite))
	n, err := f.File.Write(b)
	f.lastWrite = time.Now()
	return n, err
}
