package pebblekv

import (
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// StallStats are the times Pebble stopped writes until a flush or a
// compaction caught up, since the store opened: writes waiting on the
// store's own background work, which a burst of writes or a purge's
// deletions can cause. A stall begins when the first writer waits and ends
// when the last one goes on.
type StallStats struct {
	// MemTables and Level0 count the stalls by what began them.
	MemTables, Level0 int64
	// Time is how long writes were stalled in all, the current stall
	// included.
	Time time.Duration
}

// stallClock keeps StallStats from Pebble's write-stall events. Pebble sends
// one begin and one end per waiting writer, under its own lock, so the
// clock counts waiting writers and times the spans when any waits.
type stallClock struct {
	now func() time.Time

	mu      sync.Mutex
	stats   StallStats // Time holds the stalls that ended
	waiting int
	since   time.Time // when the current stall began
}

// begin records a writer starting to wait, for the reason Pebble gave.
func (c *stallClock) begin(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting++
	if c.waiting > 1 {
		return
	}
	c.since = c.now()
	if strings.Contains(reason, "memtable") {
		c.stats.MemTables++
	} else {
		c.stats.Level0++
	}
}

// end records a writer going on.
func (c *stallClock) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting == 0 {
		return
	}
	c.waiting--
	if c.waiting == 0 {
		c.stats.Time += c.now().Sub(c.since)
	}
}

// read returns the figures so far.
func (c *stallClock) read() StallStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	if c.waiting > 0 {
		st.Time += c.now().Sub(c.since)
	}
	return st
}

// listen adds the clock to Pebble's event listener.
func (c *stallClock) listen(events *pebble.EventListener) {
	events.WriteStallBegin = func(info pebble.WriteStallBeginInfo) { c.begin(info.Reason) }
	events.WriteStallEnd = c.end
}

// Stalls returns the store's write stalls since it opened.
func (s *Store) Stalls() StallStats { return s.stalls.read() }

// Backlogged reports whether level 0 is backed up: at least pacedL0Factor
// times the depth that starts a compaction out of it, the depth from which
// compactions also run unpaced, and two thirds of the way to the depth at
// which Pebble stops writes. Work that may wait (the TTL purge) waits while
// it is, so that its writes do not bring the store to stop every writer's.
// The depth is read at most once per lsmCheckInterval.
func (s *Store) Backlogged() bool {
	if s.enter() != nil {
		return false
	}
	defer s.inflight.Done()
	return s.l0.backedUpAt(time.Now())
}
