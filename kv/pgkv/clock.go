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
}

var _ kv.Clock = (*Store)(nil)

// Now implements [kv.Clock]: PostgreSQL's clock_timestamp(), read at most
// once a second and run forward in between on this process's monotonic
// clock, so that it costs a round trip a second rather than one a request.
// Its error against the database's clock is the drift of the local clock
// over a second plus half the shortest of a few round trips (and the
// microsecond the database rounds to); it never goes back.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	c := &s.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.local.IsZero() || time.Since(c.local) >= clockRefresh {
		if err := s.readClock(ctx); err != nil {
			return time.Time{}, err
		}
	}
	now := c.db.Add(time.Since(c.local))
	if now.Before(c.returned) {
		now = c.returned
	}
	c.returned = now
	return now, nil
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
// far ahead of the database's. s.clock.mu is held.
func (s *Store) readClock(ctx context.Context) error {
	if s.closed.Load() {
		return kv.ErrClosed
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return mapError(ctx, "read the database clock", err)
	}
	defer conn.Release()
	best := time.Duration(-1)
	for range clockSamples {
		before := time.Now()
		var db time.Time
		if err := conn.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&db); err != nil {
			return mapError(ctx, "read the database clock", err)
		}
		rtt := time.Since(before)
		if best < 0 || rtt < best {
			best = rtt
			s.clock.db, s.clock.local = db, before.Add(rtt/2)
			s.clock.bound = rtt/2 + time.Microsecond
		}
	}
	return nil
}
