package pebblekv

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/lethe-db/lethe/cpuprio"
	"github.com/lethe-db/lethe/kv"
)

// testPacedSublevels is the level-0 depth from which the tests' pacers
// count level 0 as backed up.
const testPacedSublevels = 16

func TestPacerRest(t *testing.T) {
	var fg atomic.Bool
	sublevels := 0
	now := time.Unix(1000, 0) // a fake clock that only sleeping moves
	p := &pacer{foreground: fg.Load, l0: &level0Watch{depth: testPacedSublevels},
		now:   func() time.Time { return now },
		sleep: func(d time.Duration) { now = now.Add(d) },
	}
	l0 := func() int { return sublevels }
	p.l0.sublevels.Store(&l0)

	p.rest(time.Millisecond)
	if got := p.rested.Load(); got != 0 {
		t.Fatalf("rested %v with no foreground", time.Duration(got))
	}
	fg.Store(true)
	p.rest(100 * time.Microsecond)
	if got, want := time.Duration(p.rested.Load()), compactionRestFactor*100*time.Microsecond; got != want {
		t.Fatalf("rest after 100us of work with the foreground active = %v, want %v", got, want)
	}
	p.rest(time.Second)
	if got, want := time.Duration(p.rested.Load()), compactionRestFactor*100*time.Microsecond+maxCompactionRest; got != want {
		t.Fatalf("rest after a long stretch: total %v, want %v (capped)", got, want)
	}

	// Just short of backed up: still paced.
	before := p.rested.Load()
	sublevels = testPacedSublevels - 1
	p.l0.checkedAt.Store(0)
	p.rest(time.Millisecond)
	if p.rested.Load() == before {
		t.Fatal("did not rest with level 0 one sublevel short of backed up")
	}

	// Level 0 backed up: compactions run at full speed, once the next check
	// (at most lsmCheckInterval later) has seen it.
	before = p.rested.Load()
	sublevels = testPacedSublevels
	p.l0.checkedAt.Store(0)
	p.rest(time.Millisecond)
	if p.rested.Load() != before {
		t.Fatal("rested while level 0 was backed up")
	}
	sublevels = 1
	now = now.Add(lsmCheckInterval - time.Nanosecond)
	p.rest(time.Millisecond)
	if p.rested.Load() != before {
		t.Fatal("level 0 re-checked before lsmCheckInterval passed")
	}
	now = now.Add(time.Nanosecond)
	p.rest(time.Millisecond)
	if p.rested.Load() == before {
		t.Fatal("no rest once level 0 was healthy again")
	}
}

// flushAndCompact writes rounds of overlapping keys, flushing each to its own
// level-0 table, then compacts them all, and checks that every key is kept.
func flushAndCompact(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	// Values that do not compress, so that the compaction writes its 1.2 MB
	// in many blocks, faster than the write rate of the tests that set one
	// even on a slow (race-detecting) build: a repeated byte compressed to a
	// few writes, and a slow enough compaction then never had to wait.
	rng := rand.New(rand.NewPCG(7, 7))
	const rounds, perRound = 3, 2000
	for r := range rounds { // overlapping level-0 tables for the compaction to merge
		putValues(t, s, perRound, func(i int) int { return i*rounds + r }, func(int) []byte {
			value := make([]byte, 200)
			for j := range value {
				value[j] = byte(rng.Uint32())
			}
			return value
		})
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Compact(ctx, []byte("k"), []byte("l"), false); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := s.View(ctx, func(r kv.Reader) error {
		it := r.Scan([]byte("k"), []byte("l"), false)
		defer it.Close()
		for it.Next() {
			n++
		}
		return it.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != rounds*perRound {
		t.Errorf("%d keys after the compaction, want %d", n, rounds*perRound)
	}
}

// TestBackgroundJobsRunning checks that BackgroundJobsRunning counts a flush
// or compaction while it runs, observed from inside the job (where it creates
// an output file), and nothing once they are done; and that Options.Jobs hears
// every change of the count.
func TestBackgroundJobsRunning(t *testing.T) {
	var self atomic.Pointer[Store]
	var mu sync.Mutex
	var inside, told []int
	lowerGoroutine = func() bool {
		if st := self.Load(); st != nil {
			mu.Lock()
			inside = append(inside, st.BackgroundJobsRunning())
			mu.Unlock()
		}
		return false
	}
	t.Cleanup(func() { lowerGoroutine = cpuprio.LowerCurrentGoroutine })
	jobs := func(n int) {
		mu.Lock()
		told = append(told, n)
		mu.Unlock()
	}
	s, err := Open(Options{InMemory: true, Foreground: func() bool { return false }, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	self.Store(s)
	flushAndCompact(t, s)
	// Compactions Pebble schedules itself after the flushes may still run.
	for deadline := time.Now().Add(10 * time.Second); s.BackgroundJobsRunning() != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(inside) < 4 { // three flushes and a compaction
		t.Fatalf("saw %d output files created, want at least 4", len(inside))
	}
	for i, n := range inside {
		if n < 1 {
			t.Errorf("output file %d: BackgroundJobsRunning = %d inside a job", i, n)
		}
	}
	if n := s.BackgroundJobsRunning(); n != 0 {
		t.Errorf("BackgroundJobsRunning = %d after waiting for the jobs to finish", n)
	}
	// Jobs heard each start and end: the counts step by one from 1 and end at 0.
	if len(told) < 8 || told[0] != 1 || told[len(told)-1] != 0 {
		t.Fatalf("Jobs was told %v, want at least four starts and ends, from 1 back to 0", told)
	}
	for i := 1; i < len(told); i++ {
		if d := told[i] - told[i-1]; d != 1 && d != -1 {
			t.Fatalf("Jobs was told %v: step %d to %d", told, told[i-1], told[i])
		}
	}
}

// TestCompactionsYieldToForeground compacts a store where priorities cannot
// be lowered twice, once with the foreground signal on and once off, and
// checks that only the first rested, that Compacting was true while the
// compaction wrote and false after, and that both kept every key.
func TestCompactionsYieldToForeground(t *testing.T) {
	lowerGoroutine = func() bool { return false }
	t.Cleanup(func() { lowerGoroutine = cpuprio.LowerCurrentGoroutine })
	for _, active := range []bool{true, false} {
		t.Run(fmt.Sprintf("foreground=%v", active), func(t *testing.T) {
			var self atomic.Pointer[Store]
			var sawCompacting atomic.Bool
			s, err := Open(Options{InMemory: true, Foreground: func() bool {
				if st := self.Load(); st != nil && st.Compacting() {
					sawCompacting.Store(true)
				}
				return active
			}})
			if err != nil {
				t.Fatal(err)
			}
			self.Store(s)
			defer s.Close()
			flushAndCompact(t, s)
			if !sawCompacting.Load() {
				t.Error("Compacting was false while a compaction wrote its output")
			}
			if s.Compacting() {
				t.Error("Compacting still true after the compaction finished")
			}
			checkWaitedOnlyIfActive(t, active, s.Pacing().Rested, "rested")
		})
	}
}

func TestPacerThrottle(t *testing.T) {
	var fg atomic.Bool
	sublevels := 0
	l0 := func() int { return sublevels }
	const rate = 10 << 20 // 1 MiB costs 100 ms
	// A fake clock that only sleeping moves, plus a step between calls.
	now := time.Unix(1000, 0)
	var slept []time.Duration
	p := &pacer{foreground: fg.Load, writeRate: rate, l0: &level0Watch{depth: testPacedSublevels},
		now:   func() time.Time { return now },
		sleep: func(d time.Duration) { slept = append(slept, d); now = now.Add(d) },
	}
	p.l0.sublevels.Store(&l0)

	p.throttle(1 << 20)
	p.throttle(1 << 20)
	if got := p.throttled.Load(); got != 0 {
		t.Fatalf("waited %v with no foreground", time.Duration(got))
	}
	fg.Store(true)
	p.nextWrite.Store(0)
	p.throttle(1 << 20) // the rate is unused: goes at once
	if got := p.throttled.Load(); got != 0 || len(slept) != 0 {
		t.Fatalf("the first write waited %v (slept %v)", time.Duration(got), slept)
	}
	now = now.Add(30 * time.Millisecond)
	p.throttle(1 << 20) // waits for the rest of the first write's 100 ms
	if waited := time.Duration(p.throttled.Load()); waited != 70*time.Millisecond || !slices.Equal(slept, []time.Duration{70 * time.Millisecond}) {
		t.Fatalf("the second 1 MiB at 10 MiB/s, 30 ms after the first: waited %v (slept %v); want 70ms", waited, slept)
	}
	// A write that comes after the slot of the one before it goes at once:
	// time in which nothing was written is not saved up for a burst.
	now = now.Add(250 * time.Millisecond)
	p.throttle(1 << 20)
	p.throttle(1 << 20)
	if waited := time.Duration(p.throttled.Load()); waited != 170*time.Millisecond {
		t.Fatalf("after an idle 250 ms, two writes waited %v in all; want 70ms + 100ms", waited)
	}

	// Level 0 backed up: no wait, once the next check has seen it.
	before := p.throttled.Load()
	sublevels = testPacedSublevels
	p.l0.checkedAt.Store(0)
	p.throttle(1 << 20)
	p.throttle(1 << 20)
	if p.throttled.Load() != before {
		t.Fatal("waited for the write rate while level 0 was backed up")
	}

	unlimited := &pacer{foreground: fg.Load, l0: &level0Watch{}}
	unlimited.l0.sublevels.Store(&l0)
	unlimited.throttle(1 << 30)
	unlimited.throttle(1 << 30)
	if got := unlimited.throttled.Load(); got != 0 {
		t.Fatalf("waited %v with no write rate", time.Duration(got))
	}
}

// syncRecorder is an output file that records where it was asked to start
// writeback.
type syncRecorder struct {
	vfs.File
	syncs []int64
}

func (f *syncRecorder) SyncTo(offset int64) (bool, error) {
	f.syncs = append(f.syncs, offset)
	return f.File.SyncTo(offset)
}

// TestBackgroundFileHandsOutputInPieces checks that an output file starts
// writeback each time backgroundSyncBytes more have been written, at a page
// boundary, and counts what it wrote.
func TestBackgroundFileHandsOutputInPieces(t *testing.T) {
	inner, err := vfs.NewMem().Create("out", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	rec := &syncRecorder{File: inner}
	p := &pacer{foreground: func() bool { return false }}
	f := &backgroundFile{File: rec, p: p, limited: true}
	chunk := bytes.Repeat([]byte("b"), 10_000)
	const writes = 40
	for range writes {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := p.written.Load(), int64(writes*len(chunk)); got != want {
		t.Errorf("counted %d bytes written, want %d", got, want)
	}
	if len(rec.syncs) < writes*len(chunk)/backgroundSyncBytes-1 {
		t.Fatalf("writeback started %d times for %d bytes, want about one per %d: %v", len(rec.syncs), writes*len(chunk), backgroundSyncBytes, rec.syncs)
	}
	prev := int64(0)
	for _, off := range rec.syncs {
		if off%syncAlignment != 0 || off-prev < backgroundSyncBytes-syncAlignment || off > int64(writes*len(chunk)) {
			t.Fatalf("writeback offsets %v: want page-aligned, about %d apart, within the file", rec.syncs, backgroundSyncBytes)
		}
		prev = off
	}
}

// TestCompactionsKeepToWriteRate compacts a durable store twice at a small
// write rate, with the foreground signal on and off, and checks that only the
// first waited for the rate and that both kept every key.
func TestCompactionsKeepToWriteRate(t *testing.T) {
	lowerGoroutine = func() bool { return false }
	t.Cleanup(func() { lowerGoroutine = cpuprio.LowerCurrentGoroutine })
	for _, active := range []bool{true, false} {
		t.Run(fmt.Sprintf("foreground=%v", active), func(t *testing.T) {
			s, err := Open(Options{Dir: t.TempDir(), Foreground: func() bool { return active }, BackgroundWriteRate: 4 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			flushAndCompact(t, s)
			if s.Pacing().BytesWritten == 0 {
				t.Error("no flush or compaction output counted")
			}
			checkWaitedOnlyIfActive(t, active, s.Pacing().Throttled, "waited for the write rate")
		})
	}
}

// checkWaitedOnlyIfActive fails t unless compactions spent time yielding
// (how is what they did) exactly when the foreground was active.
func checkWaitedOnlyIfActive(t *testing.T, active bool, waited time.Duration, how string) {
	t.Helper()
	if active && waited == 0 {
		t.Errorf("compactions never %s while the foreground was active", how)
	}
	if !active && waited != 0 {
		t.Errorf("compactions %s %v with no foreground", how, waited)
	}
}
