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
}

var _ kv.Clock = (*Store)(nil)

// Now implements [kv.Clock]: PostgreSQL's clock_timestamp(), read at most
// once a second and run forward in between on this process's monotonic
// clock, so that it costs a round trip a second rather than one a request.
// Its error against the database's clock is the drift of the local clock
// over a second plus half a round trip; it never goes back.
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

// readClock reads the database's clock, splitting the round trip's time.
// s.clock.mu is held.
func (s *Store) readClock(ctx context.Context) error {
	if s.closed.Load() {
		return kv.ErrClosed
	}
	before := time.Now()
	var db time.Time
	if err := s.pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&db); err != nil {
		return mapError(ctx, "read the database clock", err)
	}
	rtt := time.Since(before)
	s.clock.db, s.clock.local = db, before.Add(rtt/2)
	return nil
}
