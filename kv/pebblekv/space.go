package pebblekv

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Running out of disk. Pebble cannot survive a full disk: a failed write to
// the write-ahead log or the MANIFEST is fatal (the commit pipeline cannot go
// on), and a failed compaction is retried at once, forever. So the store
// never lets ENOSPC reach Pebble:
//
//   - A space guard polls the filesystem's free space. Half the reserve
//     (Options.Reserve) is held in a ballast file in the store's directory;
//     when free space falls below the other half, the store reports itself
//     low ([Store.SpaceLow]): the engine refuses writes that add data, while
//     deletions and the TTL purge, which free space, go on.
//   - When free space falls below a quarter of the reserve, or any write
//     meets ENOSPC, the ballast is removed, so that deletions, the purge,
//     flushes and compactions have room to finish. Its space stays reserved
//     for them: without the ballast the store is low below the whole reserve.
//   - A write that meets ENOSPC all the same (another process filled the disk
//     between two polls, or a compaction needed more than the reserve) is not
//     failed at once: spaceFS releases the ballast and retries it, and
//     otherwise waits for space, retrying with a growing pause. A write to
//     the write-ahead log waits as long as it takes: Pebble cannot survive
//     its failure. A flush or compaction gives up after noSpaceGiveUp, so
//     that its partial output is removed instead of holding the space; Pebble
//     retries it later, so it fails at most once per noSpaceGiveUp, never in
//     a loop. While a write to the
//     write-ahead log waits, Update refuses every new write with
//     kv.ErrNoSpace (each would wait behind it), as it does whenever free
//     space is below exhaustedFloor even without the ballast.
//   - When space returns, the next poll sees it: writes are accepted again
//     and the ballast is recreated once there is room for it and more.
//
// Syncs are not retried: after a failed fsync the kernel may have dropped the
// dirty pages, so a retry could report success for data that is lost.

// BallastName is the ballast file's name in the store's directory (Pebble
// ignores files whose names it does not recognise). Tools that measure the
// store's size leave it out: it is space kept free, not data.
const BallastName = "LETHE-BALLAST"

// Reserve defaults: 5% of the filesystem, between 16 MiB and 1 GiB.
const (
	minDefaultReserve = 16 << 20
	maxDefaultReserve = 1 << 30
)

// DefaultReserve is the reserve used when Options.Reserve is zero, for a
// filesystem of totalBytes: 5% of it, at least 16 MiB (but never more than
// half the filesystem) and at most 1 GiB.
func DefaultReserve(totalBytes int64) int64 {
	r := min(max(totalBytes/20, minDefaultReserve), maxDefaultReserve)
	return min(r, totalBytes/2)
}

// exhaustedFloor is the free space below which even deletions are refused:
// each needs a little room in the write-ahead log and, later, in a flush.
const exhaustedFloor = 1 << 20

// Poll intervals of the space guard: often while space is short, so that
// writes resume within a second of space returning, and rarely otherwise.
const (
	spacePollShort = 100 * time.Millisecond
	spacePollLong  = time.Second
)

// How a write that met ENOSPC waits before retrying: the pause doubles from
// the first to the last value.
const (
	noSpaceFirstWait = 10 * time.Millisecond
	noSpaceMaxWait   = time.Second
)

// SpaceStats describe the store's filesystem and its guard, for metrics and
// for the engine's decisions.
type SpaceStats struct {
	// Guarded is false when the store does not watch its disk (in memory, a
	// filesystem that cannot report its free space, or a negative reserve).
	Guarded bool
	// FreeBytes and TotalBytes are the filesystem's free space (available to
	// the process) and size at the last poll.
	FreeBytes, TotalBytes int64
	// ReserveBytes is the configured reserve; BallastBytes what the ballast
	// file holds now (0 once released).
	ReserveBytes, BallastBytes int64
	// Low means writes that add data should be refused: free space is below
	// the reserve less the ballast held.
	Low bool
	// Exhausted means every write is refused (kv.ErrNoSpace): free space is
	// below exhaustedFloor, or a write to the write-ahead log is waiting for
	// space.
	Exhausted bool
	// WaitingWrites is how many file writes are waiting for space now;
	// NoSpaceErrors how many times a write met ENOSPC since the store opened.
	WaitingWrites, NoSpaceErrors int64
}

// spaceGuard watches the free space of the store's filesystem and keeps the
// ballast. Its poll loop is owned by the Store, which stops it on Close.
type spaceGuard struct {
	fs      vfs.FS // the unwrapped filesystem, for the ballast and statfs
	dir     string
	reserve int64
	log     *slog.Logger

	mu          sync.Mutex // serialises polls and ballast changes
	ballastHeld int64

	free, total atomic.Int64
	ballast     atomic.Int64
	low         atomic.Bool
	exhausted   atomic.Bool
	waiting     atomic.Int64 // file writes waiting for space
	waitingWAL  atomic.Int64 // of which writes to the write-ahead log
	noSpace     atomic.Int64

	wake chan struct{} // a write met ENOSPC: poll now
	// retry is closed (and replaced) by a poll that finds room again, so
	// that writes waiting for space retry at once rather than at the end
	// of their pause. Guarded by mu.
	retry chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

// newSpaceGuard returns a guard for dir on fs, or nil when fs cannot report
// its free space or reserve is negative. A zero reserve selects
// DefaultReserve. It releases an existing ballast at once if space is short,
// so that opening the store has room.
func newSpaceGuard(fs vfs.FS, dir string, reserve int64, log *slog.Logger) *spaceGuard {
	if reserve < 0 {
		return nil
	}
	du, err := fs.GetDiskUsage(dir)
	if err != nil {
		log.Info("pebblekv: free space is not watched: the filesystem does not report it", "dir", dir, "err", err.Error())
		return nil
	}
	if reserve == 0 {
		reserve = DefaultReserve(int64(du.TotalBytes))
	}
	g := &spaceGuard{fs: fs, dir: dir, reserve: reserve, log: log,
		wake: make(chan struct{}, 1), retry: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	if fi, err := fs.Stat(g.ballastPath()); err == nil {
		g.ballastHeld = fi.Size()
		g.ballast.Store(g.ballastHeld)
	}
	g.poll(false) // the loop creates a missing ballast, off the startup path
	return g
}

func (g *spaceGuard) ballastPath() string { return g.fs.PathJoin(g.dir, BallastName) }

// start runs the poll loop until close.
func (g *spaceGuard) start() {
	go func() {
		defer close(g.done)
		for {
			wait := spacePollLong
			if g.low.Load() || g.exhausted.Load() || g.ballast.Load() == 0 {
				wait = spacePollShort
			}
			t := time.NewTimer(wait)
			select {
			case <-g.stop:
				t.Stop()
				return
			case <-g.wake:
			case <-t.C:
			}
			t.Stop()
			g.poll(true)
		}
	}()
}

// close stops the poll loop; safe on a guard never started only if start is
// never called afterwards.
func (g *spaceGuard) close() {
	close(g.stop)
	<-g.done
}

// ballastAction is what a poll does with the ballast.
type ballastAction int

const (
	keepBallast ballastAction = iota
	releaseBallast
	createBallast
)

// decideBallast applies the thresholds to the free space, the reserve, the
// ballast held now, and whether a write is waiting for space: the ballast goes
// when free space is below a quarter of the reserve or a write waits, and
// comes back once it fits with a whole reserve still free, so that creating
// it never makes the store low. Pure, so that the thresholds are tested
// without a filesystem.
func decideBallast(free, reserve, ballast int64, waiting bool) ballastAction {
	switch {
	case ballast > 0 && (free < reserve/4 || waiting):
		return releaseBallast
	case ballast == 0 && !waiting && free >= reserve/2+reserve:
		return createBallast
	}
	return keepBallast
}

// spaceState says which writes the free space allows: low refuses writes that
// add data, exhausted every write: below exhaustedFloor, or while a write to
// the write-ahead log waits for space, since every commit then waits behind
// it. (A flush or compaction that waits leaves commits free until the
// memtables fill.) The reserve is the ballast held plus the
// free space below which the store is low, so a released ballast's space
// stays reserved: it is for deletions, the purge and the store's own work,
// never for more data.
func spaceState(free, reserve, ballast int64, walWaiting bool) (low, exhausted bool) {
	return free < reserve-ballast, walWaiting || free < exhaustedFloor
}

// poll reads the free space, releases the ballast or (if mayCreate)
// recreates it, and updates the store's state.
func (g *spaceGuard) poll(mayCreate bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	du, err := g.fs.GetDiskUsage(g.dir)
	if err != nil {
		g.log.Warn("pebblekv: read free space", "dir", g.dir, "err", err.Error())
		return
	}
	switch decideBallast(int64(du.AvailBytes), g.reserve, g.ballastHeld, g.waiting.Load() > 0) {
	case releaseBallast:
		g.releaseBallastLocked()
		du, err = g.fs.GetDiskUsage(g.dir)
	case createBallast:
		if !mayCreate {
			break
		}
		if cerr := g.createBallastLocked(g.reserve / 2); cerr != nil {
			g.log.Warn("pebblekv: create ballast", "path", g.ballastPath(), "err", cerr)
		}
		du, err = g.fs.GetDiskUsage(g.dir)
	}
	if err != nil {
		g.log.Warn("pebblekv: read free space", "dir", g.dir, "err", err.Error())
		return
	}
	free := int64(du.AvailBytes)
	if free >= exhaustedFloor && g.waiting.Load() > 0 {
		close(g.retry) // room again: the waiting writes retry now
		g.retry = make(chan struct{})
	}
	g.free.Store(free)
	g.total.Store(int64(du.TotalBytes))
	wasLow, wasExhausted := g.low.Load(), g.exhausted.Load()
	low, exhausted := spaceState(free, g.reserve, g.ballastHeld, g.waitingWAL.Load() > 0)
	switch {
	case exhausted && !wasExhausted:
		g.log.Error("pebblekv: disk full: refusing every write until space returns", "dir", g.dir, "free_bytes", free)
	case low && !wasLow:
		g.log.Warn("pebblekv: disk nearly full: refusing writes that add data; deletes and the TTL purge go on", "dir", g.dir, "free_bytes", free, "reserve_bytes", g.reserve)
	case !low && !exhausted && (wasLow || wasExhausted):
		g.log.Info("pebblekv: disk space returned: accepting writes again", "dir", g.dir, "free_bytes", free)
	}
	// Published after its log line, so that whoever sees the new state (a
	// test that waits for it) finds the line too.
	g.low.Store(low)
	g.exhausted.Store(exhausted)
}

// releaseBallastLocked removes the ballast file. g.mu must be held.
func (g *spaceGuard) releaseBallastLocked() {
	if g.ballastHeld == 0 {
		return
	}
	if err := g.fs.Remove(g.ballastPath()); err != nil && !errors.Is(err, syscall.ENOENT) {
		g.log.Error("pebblekv: release ballast", "path", g.ballastPath(), "err", err)
		return
	}
	g.log.Warn("pebblekv: released the ballast for deletes, the purge and compactions", "path", g.ballastPath(), "bytes", g.ballastHeld)
	g.ballastHeld = 0
	g.ballast.Store(0)
}

// createBallastLocked writes a ballast of size bytes, removing it again if
// that fails half-way. g.mu must be held.
func (g *spaceGuard) createBallastLocked(size int64) error {
	f, err := g.fs.Create(g.ballastPath(), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	err = allocate(f, size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = g.fs.Remove(g.ballastPath())
		return err
	}
	g.ballastHeld = size
	g.ballast.Store(size)
	return nil
}

// writeZeros appends size zero bytes to f.
func writeZeros(f vfs.File, size int64) error {
	buf := make([]byte, 1<<20)
	for size > 0 {
		n := int64(len(buf))
		if size < n {
			n = size
		}
		if _, err := f.Write(buf[:n]); err != nil {
			return err
		}
		size -= n
	}
	return nil
}

// stats returns the guard's figures.
func (g *spaceGuard) stats() SpaceStats {
	if g == nil {
		return SpaceStats{}
	}
	return SpaceStats{
		Guarded:       true,
		FreeBytes:     g.free.Load(),
		TotalBytes:    g.total.Load(),
		ReserveBytes:  g.reserve,
		BallastBytes:  g.ballast.Load(),
		Low:           g.low.Load(),
		Exhausted:     g.exhausted.Load(),
		WaitingWrites: g.waiting.Load(),
		NoSpaceErrors: g.noSpace.Load(),
	}
}

// waitForSpace is called by spaceFS when an operation met ENOSPC, before its
// attempt-th retry (0 for the first): on the first attempt it releases the
// ballast (and marks the store exhausted if the write-ahead log is the one
// waiting); otherwise it pauses, longer each time, until a poll finds room.
func (g *spaceGuard) waitForSpace(attempt int, wal bool) {
	if attempt == 0 {
		g.noSpace.Add(1)
		if wal {
			g.exhausted.Store(true)
		}
		g.mu.Lock()
		held := g.ballastHeld > 0
		g.releaseBallastLocked()
		g.mu.Unlock()
		if held {
			return // retry at once into the space the ballast freed
		}
		g.wakePoll()
	}
	g.mu.Lock()
	retry := g.retry
	g.mu.Unlock()
	t := time.NewTimer(min(noSpaceFirstWait<<min(attempt, 10), noSpaceMaxWait))
	defer t.Stop()
	select {
	case <-t.C:
	case <-retry:
	}
}

// isNoSpace reports whether err means the filesystem is full (ENOSPC, or
// EDQUOT, a user's quota exhausted, which a store cannot tell apart).
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// retryNoSpace runs op until it does not fail with ENOSPC, waiting for space
// between attempts. Only operations that are safe to repeat as a whole pass
// through it; partial writes go through writeAll.
// wal says whether op writes the write-ahead log.
func retryNoSpace(g *spaceGuard, wal bool, op func() error) error {
	err := op()
	if !isNoSpace(err) {
		return err
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	if wal {
		g.waitingWAL.Add(1)
		defer g.waitingWAL.Add(-1)
	}
	deadline := time.Now().Add(noSpaceGiveUp)
	for attempt := 0; ; attempt++ {
		g.waitForSpace(attempt, wal)
		if err = op(); !isNoSpace(err) {
			if err == nil {
				g.wakePoll()
			}
			return err
		}
		if !wal && time.Now().After(deadline) {
			// A flush or compaction fails rather than hold its partial
			// output while the disk stays full: Pebble removes the output
			// and tries again later, at most once per noSpaceGiveUp.
			return err
		}
	}
}

// noSpaceGiveUp is how long a flush or compaction write waits for space
// before it fails. Writes to the write-ahead log wait for as long as it
// takes: a commit cannot be undone.
const noSpaceGiveUp = 2 * time.Second

// wakePoll asks the poll loop for an early poll: to see a full disk at once,
// and to lift the exhausted state as soon as a waiting write is through.
func (g *spaceGuard) wakePoll() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// spaceFS is the vfs.FS wrapper that keeps ENOSPC from Pebble: operations
// that allocate space wait for it instead of failing (see the top of this
// file). Preallocation, which is only an optimisation, fails silently.
type spaceFS struct {
	vfs.FS
	g *spaceGuard
}

// Unwrap implements vfs.FS.
func (fs spaceFS) Unwrap() vfs.FS { return fs.FS }

// Create implements vfs.FS.
func (fs spaceFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	wal := isWAL(name)
	err := retryNoSpace(fs.g, wal, func() (err error) {
		f, err = fs.FS.Create(name, category)
		return err
	})
	if err != nil {
		return nil, err
	}
	return spaceFile{File: f, g: fs.g, wal: wal}, nil
}

// isWAL reports whether the file name is a write-ahead log's.
func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

// OpenReadWrite implements vfs.FS.
func (fs spaceFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	var f vfs.File
	wal := isWAL(name)
	err := retryNoSpace(fs.g, wal, func() (err error) {
		f, err = fs.FS.OpenReadWrite(name, category, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return spaceFile{File: f, g: fs.g, wal: wal}, nil
}

// ReuseForWrite implements vfs.FS.
func (fs spaceFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return spaceFile{File: f, g: fs.g, wal: isWAL(newname)}, nil
}

// Link implements vfs.FS.
func (fs spaceFS) Link(oldname, newname string) error {
	return retryNoSpace(fs.g, false, func() error { return fs.FS.Link(oldname, newname) })
}

// Rename implements vfs.FS.
func (fs spaceFS) Rename(oldname, newname string) error {
	return retryNoSpace(fs.g, false, func() error { return fs.FS.Rename(oldname, newname) })
}

// MkdirAll implements vfs.FS.
func (fs spaceFS) MkdirAll(dir string, perm os.FileMode) error {
	return retryNoSpace(fs.g, false, func() error { return fs.FS.MkdirAll(dir, perm) })
}

// spaceFile is a file of spaceFS.
type spaceFile struct {
	vfs.File
	g   *spaceGuard
	wal bool // a write-ahead log
}

// Write implements io.Writer: the bytes a failed attempt wrote stay written,
// and the retry writes the rest.
func (f spaceFile) Write(p []byte) (int, error) {
	total := 0
	err := retryNoSpace(f.g, f.wal, func() error {
		n, err := f.File.Write(p[total:])
		total += n
		return err
	})
	return total, err
}

// WriteAt implements io.WriterAt, resuming after a partial write as Write does.
func (f spaceFile) WriteAt(p []byte, off int64) (int, error) {
	total := 0
	err := retryNoSpace(f.g, f.wal, func() error {
		n, err := f.File.WriteAt(p[total:], off+int64(total))
		total += n
		return err
	})
	return total, err
}

// Preallocate implements vfs.File. A preallocation that does not fit is
// skipped: the writes it was for wait for space themselves.
func (f spaceFile) Preallocate(offset, length int64) error {
	if err := f.File.Preallocate(offset, length); err != nil && !isNoSpace(err) {
		return err
	}
	return nil
}

// Compile-time checks.
var (
	_ vfs.FS    = spaceFS{}
	_ vfs.File  = spaceFile{}
	_ io.Closer = spaceFile{}
)
