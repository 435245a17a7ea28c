package pebblekv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/lethe-db/lethe/kv"
)

func TestDecideBallast(t *testing.T) {
	const r = 64 << 20 // reserve: ballast 32 MiB, low below 32 MiB free
	for _, c := range []struct {
		name          string
		free, ballast int64
		waiting       bool
		want          ballastAction
	}{
		{"plenty, ballast held", 1 << 30, r / 2, false, keepBallast},
		{"low but above a quarter: keep it", r/4 + 1, r / 2, false, keepBallast},
		{"below a quarter: release", r/4 - 1, r / 2, false, releaseBallast},
		{"a write waits for space: release", 1 << 30, r / 2, true, releaseBallast},
		{"released, room for it and a reserve: recreate", r/2 + r, 0, false, createBallast},
		{"released, not room enough", r/2 + r - 1, 0, false, keepBallast},
		{"released, a write waits: not now", 1 << 30, 0, true, keepBallast},
	} {
		if got := decideBallast(c.free, r, c.ballast, c.waiting); got != c.want {
			t.Errorf("%s: decideBallast(%d, %d, %d, %v) = %d, want %d", c.name, c.free, r, c.ballast, c.waiting, got, c.want)
		}
	}
	for _, c := range []struct {
		free, ballast  int64
		waiting        bool
		low, exhausted bool
	}{
		{r / 2, r / 2, false, false, false},
		{r/2 - 1, r / 2, false, true, false},
		{r - 1, 0, false, true, false}, // a released ballast's space stays reserved
		{r, 0, false, false, false},
		{exhaustedFloor - 1, r / 2, false, true, true},
		{r, r / 2, true, false, true},
	} {
		low, exhausted := spaceState(c.free, r, c.ballast, c.waiting)
		if low != c.low || exhausted != c.exhausted {
			t.Errorf("spaceState(%d, %d, %d, %v) = %v, %v; want %v, %v", c.free, r, c.ballast, c.waiting, low, exhausted, c.low, c.exhausted)
		}
	}
	if got := DefaultReserve(40 << 20); got != 16<<20 {
		t.Errorf("DefaultReserve(40 MiB) = %d, want 16 MiB", got)
	}
	if got := DefaultReserve(20 << 20); got != 10<<20 {
		t.Errorf("DefaultReserve(20 MiB) = %d, want half of it", got)
	}
	if got := DefaultReserve(1 << 40); got != 1<<30 {
		t.Errorf("DefaultReserve(1 TiB) = %d, want 1 GiB", got)
	}
}

// faults is an errorfs injector whose faults the test switches on and off:
// ENOSPC on writes to the write-ahead log or to sstables, EIO on sstable
// reads, and syncs of the write-ahead log that stall until released.
type faults struct {
	walNoSpace, sstNoSpace, sstReadEIO atomic.Bool
	walNoSpaceOnce                     atomic.Bool // switch walNoSpace off after one ENOSPC
	stall                              atomic.Pointer[chan struct{}]
	injected                           atomic.Int64
}

func (f *faults) String() string { return "lethe test faults" }

func (f *faults) MaybeError(op errorfs.Op) error {
	wal, sst := strings.HasSuffix(op.Path, ".log"), strings.HasSuffix(op.Path, ".sst")
	write := op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt
	switch {
	case write && wal && f.walNoSpace.Load():
		// One writer (the log's flush loop) at a time: no race on the switch.
		if f.walNoSpaceOnce.Load() {
			f.walNoSpace.Store(false)
		}
		f.injected.Add(1)
		return syscall.ENOSPC
	case (write || op.Kind == errorfs.OpCreate) && sst && f.sstNoSpace.Load():
		f.injected.Add(1)
		return syscall.ENOSPC
	case op.Kind == errorfs.OpFileReadAt && sst && f.sstReadEIO.Load():
		f.injected.Add(1)
		return syscall.EIO
	case wal && (op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo):
		if ch := f.stall.Load(); ch != nil {
			<-*ch
		}
	}
	return nil
}

// faultyStore is a durable store on a crashable in-memory filesystem with
// fault injection, whose free space the test sets.
type faultyStore struct {
	*Store
	mem    *vfs.MemFS
	faults *faults
	logs   *syncBuffer
}

// syncBuffer is a bytes.Buffer for a logger written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func setFree(mem *vfs.MemFS, free int64) {
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: uint64(free), TotalBytes: 1 << 30, UsedBytes: uint64(1<<30 - free)})
}

func openFaulty(t *testing.T, mem *vfs.MemFS, opts Options) *faultyStore {
	t.Helper()
	f := &faultyStore{mem: mem, faults: &faults{}, logs: &syncBuffer{}}
	opts.Dir = "/db"
	opts.Logger = slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s, err := open(opts, errorfs.Wrap(mem, f.faults))
	if err != nil {
		t.Fatal(err)
	}
	f.Store = s
	t.Cleanup(func() { _ = s.Close() })
	return f
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline: the conditions are states the store reaches by itself.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func putErr2(s *Store, key string) error {
	return s.Update(context.Background(), func(tx kv.Tx) error { return tx.Put([]byte(key), []byte(key)) })
}

// checkAcked reopens a crash clone of mem (what a power loss would leave)
// and checks that every acknowledged key is there.
func checkAcked(t *testing.T, mem *vfs.MemFS, acked []string) {
	t.Helper()
	clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	s, err := open(Options{Dir: "/db", Reserve: -1}, clone)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, k := range acked {
		checkValue(t, s, k, k)
	}
}

// noPebbleErrors fails the test if Pebble ever saw a failed write: the store
// must turn ENOSPC into waiting, never into a background error.
func noPebbleErrors(t *testing.T, f *faultyStore) {
	t.Helper()
	if n := f.Disk().BackgroundErrors; n != 0 {
		t.Errorf("%d background errors: Pebble saw the full disk\n%s", n, f.logs.String())
	}
}

// TestNoSpaceInWAL: a write-ahead log write meets ENOSPC with no ballast to
// release. The commit waits instead of failing (Pebble would exit the
// process); new writes are refused with kv.ErrNoSpace at once; reads go on;
// when space returns the waiting write completes and writes resume; nothing
// acknowledged is lost.
func TestNoSpaceInWAL(t *testing.T) {
	mem := vfs.NewCrashableMem()
	f := openFaulty(t, mem, Options{Reserve: -1})
	if f.space != nil {
		t.Fatal("a negative reserve should turn the guard off")
	}
	f.Close()

	// 90 MiB free of a 64 MiB reserve: not low, and no room for a ballast
	// (it needs 1.5 reserves), so the write below has to wait for space.
	setFree(mem, 90<<20)
	f = openFaulty(t, mem, Options{Reserve: 64 << 20})

	var acked []string
	for i := range 10 {
		k := fmt.Sprintf("before/%02d", i)
		if err := putErr2(f.Store, k); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, k)
	}

	f.faults.walNoSpace.Store(true)
	done := make(chan error, 1)
	go func() { done <- putErr2(f.Store, "waiting") }()
	waitFor(t, "a write waits for space", func() bool { d := f.Disk(); return d.WaitingWrites > 0 && d.Exhausted })

	err := putErr2(f.Store, "refused")
	if !errors.Is(err, kv.ErrNoSpace) {
		t.Fatalf("a write while the disk is full: %v, want kv.ErrNoSpace", err)
	}
	checkValue(t, f.Store, "before/03", "before/03")
	select {
	case err := <-done:
		t.Fatalf("the write returned (%v) although its WAL record could not be written", err)
	default:
	}

	f.faults.walNoSpace.Store(false)
	setFree(mem, 1<<30)
	if err := <-done; err != nil {
		t.Fatalf("the waiting write, once space returned: %v", err)
	}
	acked = append(acked, "waiting")
	waitFor(t, "writes are accepted again", func() bool { return !f.Disk().Exhausted })
	if err := putErr2(f.Store, "after"); err != nil {
		t.Fatal(err)
	}
	acked = append(acked, "after")
	if d := f.Disk(); d.NoSpaceErrors == 0 || f.faults.injected.Load() == 0 {
		t.Errorf("no ENOSPC was met (%+v): the test tested nothing", d)
	}
	noPebbleErrors(t, f)
	checkAcked(t, mem, acked)
}

// TestNoSpaceReleasesBallast: a write that meets ENOSPC releases the ballast
// and goes through at once, without refusing anything.
func TestNoSpaceReleasesBallast(t *testing.T) {
	mem := vfs.NewCrashableMem()
	setFree(mem, 1<<30)
	f := openFaulty(t, mem, Options{Reserve: 8 << 20})
	waitFor(t, "the ballast is created", func() bool { return f.Disk().BallastBytes == 4<<20 })
	// 10 MiB free: not low with the ballast held (below half the 8 MiB
	// reserve is), nor without it (below the whole), and too little to
	// recreate it (that takes 1.5 reserves): the guard leaves it alone.
	setFree(mem, 10<<20)

	f.faults.walNoSpaceOnce.Store(true)
	f.faults.walNoSpace.Store(true)
	if err := putErr2(f.Store, "k"); err != nil {
		t.Fatal(err)
	}
	if f.faults.injected.Load() != 1 {
		t.Fatalf("%d ENOSPC injected, want 1", f.faults.injected.Load())
	}
	d := f.Disk()
	if d.BallastBytes != 0 || d.NoSpaceErrors != 1 {
		t.Errorf("after one ENOSPC: ballast %d, ENOSPC errors %d; want the ballast released, 1 error", d.BallastBytes, d.NoSpaceErrors)
	}
	if _, err := mem.Stat("/db/" + BallastName); err == nil {
		t.Error("the ballast file is still there")
	}
	// With space plentiful, the guard recreates it.
	setFree(mem, 1<<30)
	waitFor(t, "the ballast is recreated", func() bool { return f.Disk().BallastBytes == 4<<20 })
	noPebbleErrors(t, f)
	checkAcked(t, mem, []string{"k"})
}

// TestLowSpaceThresholds: the guard reports the store low below half the
// reserve, releases the ballast below a quarter, refuses every write below
// exhaustedFloor, and undoes all of it when space returns.
func TestLowSpaceThresholds(t *testing.T) {
	mem := vfs.NewCrashableMem()
	setFree(mem, 1<<30)
	f := openFaulty(t, mem, Options{Reserve: 16 << 20})
	waitFor(t, "the ballast is created", func() bool { return f.Disk().BallastBytes == 8<<20 })
	if f.SpaceLow() {
		t.Fatal("low with 1 GiB free")
	}

	setFree(mem, 6<<20) // below half the reserve, above a quarter
	waitFor(t, "the store reports low", f.SpaceLow)
	if d := f.Disk(); d.BallastBytes == 0 || d.Exhausted {
		t.Errorf("6 MiB free of a 16 MiB reserve: %+v; want low, ballast kept, writes accepted", d)
	}
	if err := putErr2(f.Store, "deletes still go"); err != nil {
		t.Fatalf("a write while low (the store leaves the choice to its caller): %v", err)
	}

	setFree(mem, 3<<20) // below a quarter
	waitFor(t, "the ballast is released", func() bool { return f.Disk().BallastBytes == 0 })

	setFree(mem, exhaustedFloor/2)
	waitFor(t, "writes are refused", func() bool { return f.Disk().Exhausted })
	if err := putErr2(f.Store, "refused"); !errors.Is(err, kv.ErrNoSpace) {
		t.Fatalf("a write with %d bytes free: %v, want kv.ErrNoSpace", exhaustedFloor/2, err)
	}
	checkValue(t, f.Store, "deletes still go", "deletes still go")

	setFree(mem, 1<<30)
	waitFor(t, "space returns", func() bool { d := f.Disk(); return !d.Low && !d.Exhausted && d.BallastBytes == 8<<20 })
	if err := putErr2(f.Store, "resumed"); err != nil {
		t.Fatal(err)
	}
	logs := f.logs.String()
	for _, want := range []string{"disk nearly full", "released the ballast", "disk full: refusing every write", "disk space returned"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log does not say %q:\n%s", want, logs)
		}
	}
}

// TestNoSpaceInFlushAndCompaction: flushes and compactions whose sstable
// writes meet ENOSPC wait for space instead of failing and retrying in a
// loop; reads go on meanwhile, and both finish once space returns.
func TestNoSpaceInFlushAndCompaction(t *testing.T) {
	mem := vfs.NewCrashableMem()
	setFree(mem, 1<<30)
	setFree(mem, 90<<20) // as in TestNoSpaceInWAL: no ballast
	// Only the compaction the test asks for, none started by Pebble before
	// the fault is on.
	f := openFaulty(t, mem, Options{Reserve: 64 << 20, tweak: noAutoCompactions})

	var acked []string
	put := func(prefix string) {
		for i := range 200 {
			k := fmt.Sprintf("%s/%03d", prefix, i)
			if err := putErr2(f.Store, k); err != nil {
				t.Fatal(err)
			}
			acked = append(acked, k)
		}
	}
	put("a")

	f.faults.sstNoSpace.Store(true)
	flushed := make(chan error, 1)
	go func() { flushed <- f.db.Flush() }()
	waitFor(t, "the flush waits for space", func() bool { return f.Disk().WaitingWrites > 0 })
	checkValue(t, f.Store, "a/007", "a/007")
	f.faults.sstNoSpace.Store(false)
	if err := <-flushed; err != nil {
		t.Fatalf("flush once space returned: %v", err)
	}

	// The same keys again: the two sstables overlap, so the compaction
	// below merges them into new files rather than moving one down.
	put("a")
	if err := f.db.Flush(); err != nil {
		t.Fatal(err)
	}
	f.faults.sstNoSpace.Store(true)
	compacted := make(chan error, 1)
	go func() { compacted <- f.db.Compact(context.Background(), []byte("a"), []byte("c"), true) }()
	waitFor(t, "the compaction waits for space", func() bool { return f.Disk().WaitingWrites > 0 })
	checkValue(t, f.Store, "a/100", "a/100")
	f.faults.sstNoSpace.Store(false)
	if err := <-compacted; err != nil {
		t.Fatalf("compaction once space returned: %v", err)
	}
	if f.faults.injected.Load() == 0 {
		t.Fatal("no ENOSPC was injected: the test tested nothing")
	}
	noPebbleErrors(t, f)
	checkAcked(t, mem, acked)
}

// TestReadIOError: a read that meets EIO fails with kv.ErrIO and is counted;
// the store goes on, and the same read succeeds once the disk does.
func TestReadIOError(t *testing.T) {
	mem := vfs.NewCrashableMem()
	f := openFaulty(t, mem, Options{Reserve: -1})
	for i := range 100 {
		if err := putErr2(f.Store, fmt.Sprintf("k/%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.db.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Reopened, its block cache is cold: reads go to the sstable. Without
	// the table stats collector, which otherwise opens the sstable in the
	// background after Open: an open of it in flight while reads fail can
	// hand its error to the read made after the disk heals, which joins it.
	f = openFaulty(t, mem, Options{Reserve: -1, tweak: func(o *pebble.Options) { o.DisableTableStats = true }})
	f.faults.sstReadEIO.Store(true)
	err := f.View(context.Background(), func(r kv.Reader) error {
		_, err := r.Get([]byte("k/042"))
		return err
	})
	if !errors.Is(err, kv.ErrIO) {
		t.Fatalf("a read of a failing disk: %v, want kv.ErrIO", err)
	}
	err = f.View(context.Background(), func(r kv.Reader) error {
		it := r.Scan([]byte("k/"), nil, false)
		for it.Next() {
		}
		return it.Close()
	})
	if !errors.Is(err, kv.ErrIO) {
		t.Fatalf("a scan of a failing disk: %v, want kv.ErrIO", err)
	}
	if n := f.Disk().ReadErrors; n < 2 {
		t.Errorf("ReadErrors = %d after two failed reads", n)
	}
	f.faults.sstReadEIO.Store(false)
	checkValue(t, f.Store, "k/042", "k/042")
}

// TestStalledSync: a sync of the write-ahead log that stalls is logged and
// counted as slow once it passes the threshold; reads go on; the write
// completes when the disk does.
func TestStalledSync(t *testing.T) {
	mem := vfs.NewCrashableMem()
	f := openFaulty(t, mem, Options{Reserve: -1, SlowDiskThreshold: 50 * time.Millisecond})
	if err := putErr2(f.Store, "before"); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	f.faults.stall.Store(&release)
	done := make(chan error, 1)
	go func() { done <- putErr2(f.Store, "stalled") }()
	waitFor(t, "the stalled sync is reported slow", func() bool { return f.Disk().SlowOperations > 0 })
	checkValue(t, f.Store, "before", "before")
	f.faults.stall.Store(nil)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.logs.String(), "slow disk operation") {
		t.Errorf("the slow sync was not logged:\n%s", f.logs.String())
	}
	checkAcked(t, mem, []string{"before", "stalled"})
}

// TestStartOnFullDisk: a store opened on a disk too full for the files that
// opening writes comes up read-only: it serves reads and refuses writes, and
// reopens for writing by itself once space returns.
func TestStartOnFullDisk(t *testing.T) {
	mem := vfs.NewCrashableMem()
	setFree(mem, 1<<30)
	f := openFaulty(t, mem, Options{Reserve: -1})
	for _, k := range []string{"a", "b"} {
		if err := putErr2(f.Store, k); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()

	setFree(mem, exhaustedFloor/2)
	f = openFaulty(t, mem, Options{Reserve: 16 << 20})
	if !f.readOnly.Load() {
		t.Fatal("opened for writing on a full disk")
	}
	checkValue(t, f.Store, "a", "a")
	if err := putErr2(f.Store, "refused"); !errors.Is(err, kv.ErrNoSpace) {
		t.Fatalf("a write on a store opened read-only: %v, want kv.ErrNoSpace", err)
	}
	if d := f.Disk(); !d.Exhausted || !d.ReadOnly || !f.SpaceLow() || d.RefusedWrites != 1 {
		t.Errorf("disk stats on a full disk: %+v", d)
	}

	setFree(mem, 1<<30)
	waitFor(t, "the store reopens for writing", func() bool { return !f.Disk().ReadOnly })
	if err := putErr2(f.Store, "c"); err != nil {
		t.Fatalf("a write once space returned: %v", err)
	}
	checkValue(t, f.Store, "b", "b")
	if !strings.Contains(f.logs.String(), "reopened for writing") {
		t.Errorf("the reopening was not logged:\n%s", f.logs.String())
	}
	noPebbleErrors(t, f)
	checkAcked(t, mem, []string{"a", "b", "c"})
}
