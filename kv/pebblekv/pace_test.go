package pebblekv

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethe-db/lethe/cpuprio"
	"github.com/lethe-db/lethe/kv"
)

func TestPacerRest(t *testing.T) {
	var fg atomic.Bool
	sublevels := 0
	p := &pacer{foreground: fg.Load}
	l0 := func() int { return sublevels }
	p.l0Sublevels.Store(&l0)

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

	// Level 0 backed up: compactions run at full speed, once the next check
	// (at most lsmCheckInterval later) has seen it.
	before := p.rested.Load()
	sublevels = maxPacedL0Sublevels
	p.checkedAt.Store(0)
	p.rest(time.Millisecond)
	if p.rested.Load() != before {
		t.Fatal("rested while level 0 was backed up")
	}
	sublevels = 1
	p.rest(time.Millisecond)
	if p.rested.Load() != before {
		t.Fatal("level 0 re-checked before lsmCheckInterval passed")
	}
	p.checkedAt.Store(0)
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
	value := bytes.Repeat([]byte("v"), 200)
	const rounds, perRound = 3, 2000
	for r := range rounds { // overlapping level-0 tables for the compaction to merge
		putKeys(t, s, perRound, func(i int) int { return i*rounds + r }, value)
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
// an output file), and nothing once they are done.
func TestBackgroundJobsRunning(t *testing.T) {
	var self atomic.Pointer[Store]
	var mu sync.Mutex
	var inside []int
	lowerGoroutine = func() bool {
		if st := self.Load(); st != nil {
			mu.Lock()
			inside = append(inside, st.BackgroundJobsRunning())
			mu.Unlock()
		}
		return false
	}
	t.Cleanup(func() { lowerGoroutine = cpuprio.LowerCurrentGoroutine })
	s, err := Open(Options{InMemory: true, Foreground: func() bool { return false }})
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
			rested := s.CompactionRest()
			if active && rested == 0 {
				t.Error("the compaction never rested while the foreground was active")
			}
			if !active && rested != 0 {
				t.Errorf("the compaction rested %v with no foreground", rested)
			}
		})
	}
}
