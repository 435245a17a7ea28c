package pebblekv

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/lethe-db/lethe/kv"
)

// TestStallClock: writers waiting together make one stall, timed from the
// first one's wait to the last one's going on; a stall in progress counts
// up to now.
func TestStallClock(t *testing.T) {
	now := time.Unix(1000, 0)
	c := &stallClock{now: func() time.Time { return now }}
	c.begin("L0 file count limit exceeded")
	now = now.Add(time.Second)
	c.begin("memtable count limit reached") // a second writer, same stall
	now = now.Add(time.Second)
	if got := c.read(); got != (StallStats{Level0: 1, Time: 2 * time.Second}) {
		t.Errorf("during the stall: %+v, want one level-0 stall of 2s so far", got)
	}
	c.end()
	now = now.Add(time.Second)
	c.end()
	now = now.Add(5 * time.Second) // nobody waits: not counted
	c.begin("memtable count limit reached")
	now = now.Add(time.Second)
	c.end()
	c.end() // an end without a begin changes nothing
	if got := c.read(); got != (StallStats{MemTables: 1, Level0: 1, Time: 4 * time.Second}) {
		t.Errorf("after two stalls: %+v, want one of each, 4s in all", got)
	}
}

// TestWriteStallCounted: a write that Pebble stops behind level 0 is counted
// as a level-0 stall from when it waits until a compaction lets it go on.
func TestWriteStallCounted(t *testing.T) {
	// Level 0 stops writes at two tables, and only the compaction the test
	// asks for runs.
	s, err := Open(Options{InMemory: true, tweak: func(o *pebble.Options) {
		o.DisableAutomaticCompactions = true
		o.L0CompactionThreshold = 1
		o.L0StopWritesThreshold = 2
		o.MemTableSize = 1 << 20
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for round := range 2 { // two overlapping tables in level 0
		putKeys(t, s, 10, func(j int) int { return j }, make([]byte, 1<<10))
		if err := s.db.Flush(); err != nil {
			t.Fatalf("flush %d: %v", round, err)
		}
	}
	if got := s.Stalls(); got != (StallStats{}) {
		t.Fatalf("before any stall: %+v", got)
	}

	// Fill the memtable until its rotation waits for level 0.
	value := make([]byte, 64<<10)
	wrote := make(chan error, 1)
	var stop atomic.Bool // set once the stall is seen: no writes after the one it holds
	go func() {
		for i := 0; i < 64 && !stop.Load(); i++ { // up to 4 MiB, four memtables' worth
			err := s.Update(context.Background(), func(tx kv.Tx) error {
				return tx.Put(fmt.Appendf(nil, "k%06d", 100+i), value)
			})
			if err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	waitFor(t, "a write stalls behind level 0", func() bool { return s.Stalls().Level0 == 1 })
	stop.Store(true)
	select {
	case err := <-wrote:
		t.Fatalf("the writes finished during the stall: %v", err)
	default:
	}
	// Only the level-0 tables' keys: a range that overlapped the stalled
	// writer's memtable would wait to flush it, behind the stall.
	if err := s.db.Compact(context.Background(), []byte("k000000"), []byte("k000010"), false); err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	got := s.Stalls()
	if got.Level0 != 1 || got.MemTables != 0 || got.Time <= 0 {
		t.Errorf("after the compaction: %+v, want one level-0 stall that took some time", got)
	}
}

// TestBacklogged: a store reports itself backlogged once level 0 is as deep
// as its level-0 watch's depth, and no longer once a compaction has emptied it.
func TestBacklogged(t *testing.T) {
	s, err := Open(Options{InMemory: true, tweak: func(o *pebble.Options) {
		o.DisableAutomaticCompactions = true
		o.L0StopWritesThreshold = 1000 // level 0 grows without stopping writes
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if s.Backlogged() {
		t.Fatal("an empty store reports a backlog")
	}
	for round := range s.l0.depth { // one overlapping table in level 0 each
		putKeys(t, s, 10, func(j int) int { return j }, make([]byte, 1<<10))
		if err := s.db.Flush(); err != nil {
			t.Fatalf("flush %d: %v", round, err)
		}
	}
	waitFor(t, "the store reports level 0 backed up", s.Backlogged)
	if err := s.db.Compact(context.Background(), []byte("k"), []byte("l"), false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the backlog clears after the compaction", func() bool { return !s.Backlogged() })
}
