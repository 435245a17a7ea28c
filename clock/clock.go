// Package clock holds the server clocks that can stand in for time.Now. It does
// no I/O and starts no goroutine.
//
// A [Manual] clock moves only when told to: `lethe serve --clock=manual` uses
// one as the server time, so that a test suite can advance time by thirty
// minutes in one request instead of sleeping through a TTL. It never goes
// backwards, like the engine's own high-water mark, so nothing that was once
// reported expired can come back.
package clock

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrBackwards is returned when a move would take a Manual clock back in time.
var ErrBackwards = errors.New("clock: cannot go backwards")

// Manual is a clock that stands still until Advance or Set moves it. It is
// safe for concurrent use. Its method Now has the signature of time.Now, so it
// can be injected wherever a clock function is taken:
//
//	c := clock.NewManual(time.Now())
//	eng, err := engine.Open(ctx, engine.Options{Store: store, Now: c.Now})
//	...
//	c.Advance(30 * time.Minute) // every session written before now has expired
type Manual struct {
	mu struct {
		sync.Mutex
		now time.Time // the current time, without a monotonic reading
	}
}

// NewManual returns a manual clock reading start.
func NewManual(start time.Time) *Manual {
	m := &Manual{}
	// Round(0) drops the monotonic reading: the clock is compared and moved by
	// its wall time only.
	m.mu.now = start.Round(0)
	return m
}

// Now returns the clock's current time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.now
}

// Advance moves the clock forward by d and returns the new time. A negative d
// returns ErrBackwards and leaves the clock unchanged; zero changes nothing.
func (m *Manual) Advance(d time.Duration) (time.Time, error) {
	if d < 0 {
		return m.Now(), fmt.Errorf("advance by %s: %w", d, ErrBackwards)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.now = m.mu.now.Add(d)
	return m.mu.now, nil
}

// Set moves the clock to t and returns the new time. A t before the current
// time returns ErrBackwards and leaves the clock unchanged; setting the
// current time again changes nothing.
func (m *Manual) Set(t time.Time) (time.Time, error) {
	t = t.Round(0)
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.Before(m.mu.now) {
		return m.mu.now, fmt.Errorf("set to %s, before %s: %w", t.UTC().Format(time.RFC3339Nano), m.mu.now.UTC().Format(time.RFC3339Nano), ErrBackwards)
	}
	m.mu.now = t
	return t, nil
}
