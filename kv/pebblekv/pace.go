package pebblekv

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/lethe-db/lethe/cpuprio"
)

// Flushes and compactions yield the CPU to the foreground. A compaction is
// one goroutine that computes for a second or more at a stretch (merging,
// encoding and compressing blocks); on a machine with few cores that stretch
// takes a core from user requests, and Go's scheduler lets a waiting
// goroutine sit behind it for up to its 10 ms time slice. Measured on 2 cores:
// a single busy goroutine beside a fixed load of point reads and creates
// raised their p99 latency 2.5-fold.
//
// So each flush and compaction goroutine runs on its own OS thread at the
// lowest CPU priority (package cpuprio), from its first output file on: the
// kernel then runs it only on CPU that requests leave idle, and preempts it
// the moment a request's thread wakes. Lethe gives Go an extra P for each of
// these jobs while it runs (Options.Jobs, cpuprio.Procs), so that requests keep one P per
// core. Where priorities are unavailable (not Linux, or not permitted), a
// compaction instead rests before each output write, while the foreground is
// active, compactionRestFactor times as long as it computed since its
// previous write: it then runs in slices of about one block and uses at most
// a quarter of a core. Neither applies while level 0 is backed up, twice as
// deep as the depth that starts a compaction out of it (pacedL0Factor):
// compactions then run at full speed until the tree is healthy again. The
// write-ahead log is never slowed.
const (
	compactionRestFactor = 3
	maxCompactionRest    = 5 * time.Millisecond
	pacedL0Factor        = 2
	lsmCheckInterval     = 100 * time.Millisecond
)

// Background writes are also kept gentle on the disk, whose queue the
// write-ahead log shares: a durable user write waits for its fsync, and an
// fsync waits for the writes queued on the device before it. Measured on this
// machine's virtual disk, a 4 KB write and fdatasync beside a writer in
// Pebble's pattern (512 KB sync_file_range chunks, 1 MB behind the write
// offset) had a p99 of 0.46-0.52 ms alone, 1.16-1.18 ms beside 20 MB/s and
// 0.69-0.75 ms beside 5 MB/s; with 64 KB chunks 0.6-0.9 ms beside 20 MB/s
// and 0.45-0.59 ms beside 10 MB/s. So every flush and compaction output file
// is handed to the disk in backgroundSyncBytes pieces as it is written, and,
// while the foreground is active and level 0 is healthy, compactions write
// at most Options.BackgroundWriteRate. Flushes are not limited: a memtable
// that is not flushed before the next one fills stops every write.
const (
	backgroundSyncBytes = 64 << 10
	syncAlignment       = 4 << 10 // writeback starts at page boundaries
)

// DefaultBackgroundWriteRate is what compactions may write, in bytes a
// second, while the foreground is active, when Options.BackgroundWriteRate is
// zero: 16 MiB/s, about three times what flushes and compactions wrote on
// average while a steady load of reads and creates ran beside a purge of
// 1,000,000 documents (engine BenchmarkForegroundDuringPurgeInterleaved).
// Compactions that fall behind deepen level 0, and once it is backed up
// (level0Watch) they run unlimited.
const DefaultBackgroundWriteRate = 16 << 20

// BackgroundJobs is how many flushes and compactions may run at once: one
// of each, Pebble's default concurrency. It is the number of extra Ps a
// process gives Go (cpuprio.Procs) for their lowered threads.
const BackgroundJobs = 2

// The disk-write categories Pebble gives the output files of compactions and
// of memtable flushes; the WAL has its own.
const (
	compactionCategory vfs.DiskWriteCategory = "pebble-compaction"
	flushCategory      vfs.DiskWriteCategory = "pebble-memtable-flush"
)

// level0Watch tells whether level 0 is backed up: at least depth sublevels
// deep, read from the database at most every lsmCheckInterval. Compactions
// then run unpaced (pacer) and the TTL purge waits (Store.Backlogged).
type level0Watch struct {
	depth int
	// sublevels reports level 0's depth; nil until the DB is open.
	sublevels atomic.Pointer[func() int]
	checkedAt atomic.Int64 // Unix nanoseconds of the last check
	backedUp  atomic.Bool
}

// backedUpAt reports whether level 0 is backed up, reading its depth again
// if lsmCheckInterval has passed since the last check at now.
func (w *level0Watch) backedUpAt(now time.Time) bool {
	last := w.checkedAt.Load()
	if now.UnixNano()-last >= int64(lsmCheckInterval) && w.checkedAt.CompareAndSwap(last, now.UnixNano()) {
		if f := w.sublevels.Load(); f != nil {
			w.backedUp.Store((*f)() >= w.depth)
		}
	}
	return w.backedUp.Load()
}

// pacer decides whether compaction writes rest, and for how long.
type pacer struct {
	foreground func() bool
	// l0 says when level 0 is backed up: compactions are then not paced.
	l0      *level0Watch
	rested  atomic.Int64 // total rest, nanoseconds, for tests and diagnostics
	writing atomic.Int64 // paced compaction output files open
	lowered atomic.Int64 // output files written at background priority
	written atomic.Int64 // bytes written to flush and compaction output files

	// writeRate is the most compactions write per second while the
	// foreground is active, in bytes; 0 means unlimited. nextWrite is when,
	// in Unix nanoseconds, the rate allows the next write to start, and
	// throttled the total time compactions waited for it.
	writeRate int64
	nextWrite atomic.Int64
	throttled atomic.Int64

	// now and sleep are the clock of rests, the write rate and level-0
	// checks; nil means time.Now and time.Sleep. Tests inject their own, so
	// that what they check does not depend on how the machine schedules them.
	now   func() time.Time
	sleep func(time.Duration)
}

func (p *pacer) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

func (p *pacer) wait(d time.Duration) {
	if p.sleep != nil {
		p.sleep(d)
		return
	}
	time.Sleep(d)
}

// healthy reports whether level 0 is shallow enough for compactions to be
// paced, checking at most every lsmCheckInterval.
func (p *pacer) healthy(now time.Time) bool { return !p.l0.backedUpAt(now) }

// rest sleeps before a compaction write when the foreground is active, in
// proportion to busy, the time the compaction computed since its last write.
func (p *pacer) rest(busy time.Duration) {
	if busy <= 0 || !p.foreground() || !p.healthy(p.clock()) {
		return
	}
	d := min(busy*compactionRestFactor, maxCompactionRest)
	p.wait(d)
	p.rested.Add(int64(d))
}

// throttle waits, while the foreground is active and level 0 is healthy,
// until a compaction write of n bytes fits in the write rate. Writes reserve
// their share of the rate in turn, so concurrent compactions share it; time
// in which nothing was written is not saved up for a later burst.
func (p *pacer) throttle(n int) {
	if p.writeRate <= 0 || !p.foreground() || !p.healthy(p.clock()) {
		return
	}
	cost := int64(n) * int64(time.Second) / p.writeRate
	for {
		now := p.clock().UnixNano()
		next := p.nextWrite.Load()
		start := max(next, now)
		if p.nextWrite.CompareAndSwap(next, start+cost) {
			if wait := time.Duration(start - now); wait > 0 {
				p.wait(wait)
				p.throttled.Add(int64(wait))
			}
			return
		}
	}
}

// lowerGoroutine lowers the calling goroutine's CPU priority; a variable so
// that tests can take the path where that is not possible.
var lowerGoroutine = cpuprio.LowerCurrentGoroutine

// lower moves the calling flush or compaction goroutine to background CPU
// priority and reports whether it did. Not while the DB is still opening
// (replaying the WAL may write tables on the goroutine that called Open, which
// must not be lowered) nor while level 0 is backed up.
func (p *pacer) lower() bool {
	if p.l0.sublevels.Load() == nil || !p.healthy(p.clock()) || !lowerGoroutine() {
		return false
	}
	p.lowered.Add(1)
	return true
}

// pacedFS is a vfs.FS whose flushes and compactions yield to the foreground:
// their goroutines are lowered to background priority when they create an
// output file or, where that is not possible, compaction output files rest
// before each write.
type pacedFS struct {
	vfs.FS
	p *pacer
}

// Create implements vfs.FS.
func (fs pacedFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || (category != compactionCategory && category != flushCategory) {
		return f, err
	}
	f = &backgroundFile{File: f, p: fs.p, limited: category == compactionCategory}
	if fs.p.lower() || category != compactionCategory {
		return f, nil
	}
	fs.p.writing.Add(1)
	return &pacedFile{File: f, p: fs.p, lastWrite: time.Now()}, nil
}

// backgroundFile is a flush or compaction output file. Its writes go to the
// disk in backgroundSyncBytes pieces, and a compaction's wait for the write
// rate. Pebble writes a file sequentially from one goroutine, so the offsets
// need no lock.
type backgroundFile struct {
	vfs.File
	p       *pacer
	limited bool  // a compaction's: subject to the write rate
	written int64 // bytes written
	synced  int64 // bytes handed to the disk
}

// Write implements vfs.File.
func (f *backgroundFile) Write(b []byte) (int, error) {
	if f.limited {
		f.p.throttle(len(b))
	}
	n, err := f.File.Write(b)
	f.written += int64(n)
	f.p.written.Add(int64(n))
	if err == nil && f.written-f.synced >= backgroundSyncBytes {
		// Starts writeback of the new pieces, after waiting for the
		// previous ones: at most one piece per file is queued at the disk.
		to := f.written - f.written%syncAlignment
		if _, err := f.File.SyncTo(to); err != nil {
			return n, fmt.Errorf("pebblekv: hand output to the disk: %w", err)
		}
		f.synced = to
	}
	return n, err
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
