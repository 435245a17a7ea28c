package pgkv

import (
	"context"
	"sync"
	"time"

	"github.com/lethe-db/lethe/kv"
)

// clockRefresh is how often Now reads the database's clock; between
// readings it runs this process's monotonic clock from the last one.
const clockRefresh = time.Second

// clockStale is how old a reading may be before Now waits for a new one.
// Between clockRefresh and clockStale, Now answers from the reading it has
// and a new one is taken in the background: no caller waits for the
// database's clock, and none needs a second connection for it while it
// holds one in a transaction (with every connection of the pool held so,
// that would wait for ever). The local monotonic clock drifts from the
// database's by microseconds over clockStale.
const clockStale = 5 * time.Second

// clock is the store's hybrid of the database's clock and the local
// monotonic one.
type clock struct {
	mu       sync.Mutex
	db       time.Time // the database's clock at the last reading
	local    time.Time // this process's clock then (with its monotonic reading)
	returned time.Time // the latest time Now returned
	// bound is how far the last reading may be from the database's clock:
	// half its round trip, plus the microsecond the database rounds to.
	bound time.Duration
	// refreshing is set while a background reading runs (refreshClock).
	refreshing bool
}

// clockReading is one reading of the database's clock: db at local, give
// or take bound.
type clockReading struct {
	db, local time.Time
	bound     time.Duration
}

var _ kv.Clock = (*Store)(nil)

// Now implements [kv.Clock]: PostgreSQL's clock_timestamp(), read about
// once a second and run forward in between on this process's monotonic
// clock, so that it costs a round trip a second rather than one a request,
// and that round trip is taken in the background (clockStale). Its error
// against the database's clock is the drift of the local clock since the
// last reading plus half the shortest of a few round trips (and the
// microsecond the database rounds to); it never goes back.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	c := &s.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	age := time.Since(c.local)
	switch {
	case c.local.IsZero() || age >= clockStale:
		r, err := s.readClock(ctx)
		if err != nil {
			return time.Time{}, err
		}
		c.install(r)
	case age >= clockRefresh && !c.refreshing && !s.closed.Load():
		c.refreshing = true
		s.background.Add(1)
		go s.refreshClock()
	}
	now := c.db.Add(time.Since(c.local))
	if now.Before(c.returned) {
		now = c.returned
	}
	c.returned = now
	return now, nil
}

// install makes r the clock's reading. c.mu is held.
func (c *clock) install(r clockReading) {
	c.db, c.local, c.bound = r.db, r.local, r.bound
}

// refreshClock takes a new reading for Now, which goes on answering from
// the last one meanwhile; a failed reading leaves it, and the next Now past
// clockRefresh tries again. The store owns it: Close waits for it.
func (s *Store) refreshClock() {
	defer s.background.Done()
	ctx, cancel := context.WithTimeout(context.Background(), clockStale)
	defer cancel()
	r, err := s.readClock(ctx)
	c := &s.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshing = false
	if err == nil && r.local.After(c.local) {
		c.install(r)
	}
}

// clockSamples is how many readings readClock takes on one connection,
// keeping the one with the shortest round trip.
const clockSamples = 3

// readClock reads the database's clock and pins the reading to the middle
// of its round trip, whose length bounds the error. The round trip is timed
// on a connection already acquired (a wait for a free one would count as
// error), and of clockSamples readings the one with the shortest round trip
// is kept: on a busy machine one reading may wait a millisecond or more for
// the database's process to be scheduled, which put the hybrid clock that
// far ahead of the database's.
func (s *Store) readClock(ctx context.Context) (clockReading, error) {
	if s.closed.Load() {
		return clockReading{}, kv.ErrClosed
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		if s.closed.Load() {
			return clockReading{}, kv.ErrClosed
		}
		return clockReading{}, mapError(ctx, "read the database clock", err)
	}
	defer conn.Release()
	var best clockReading
	for i := range clockSamples {
		before := time.Now()
		var db time.Time
		if err := conn.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&db); err != nil {
			return clockReading{}, mapError(ctx, "read the database clock", err)
		}
		rtt := time.Since(before)
		if i == 0 || rtt/2+time.Microsecond < best.bound {
			best = clockReading{db: db, local: before.Add(rtt / 2), bound: rtt/2 + time.Microsecond}
		}
	}
	return best, nil
}
