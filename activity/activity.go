// Package activity tells background work whether user requests are being
// served. The engine marks each user operation; the purger and the store's
// compactions consult the tracker and step aside while users are active, so
// that work nobody waits for does not lengthen the requests somebody does.
package activity

import (
	"sync/atomic"
	"time"
)

// DefaultQuietWindow is how long after the last user operation ended the
// tracker still reports users active: requests arriving at a steady rate leave
// short gaps between them, and background work starting in such a gap would
// still be running when the next request arrives.
const DefaultQuietWindow = 10 * time.Millisecond

// Tracker counts user operations in flight and remembers when the last one
// ended. The zero value is ready to use, with DefaultQuietWindow. It is safe
// for concurrent use.
type Tracker struct {
	inflight atomic.Int64
	lastEnd  atomic.Int64 // Unix nanoseconds
	quiet    time.Duration
	now      func() time.Time
}

// New returns a tracker with the given quiet window, reading time from now
// (nil means time.Now). Tests inject a clock to step through the window.
func New(quiet time.Duration, now func() time.Time) *Tracker {
	return &Tracker{quiet: quiet, now: now}
}

func (t *Tracker) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

func (t *Tracker) window() time.Duration {
	if t.quiet > 0 {
		return t.quiet
	}
	return DefaultQuietWindow
}

// Begin marks a user operation in progress until the returned func is called.
func (t *Tracker) Begin() (end func()) {
	t.inflight.Add(1)
	return func() {
		t.lastEnd.Store(t.clock().UnixNano())
		t.inflight.Add(-1)
	}
}

// InFlight reports how many user operations are in progress.
func (t *Tracker) InFlight() int64 { return t.inflight.Load() }

// LastEnded returns when the last user operation ended; the zero time if
// none has. Work that waits for users to go quiet (returning memory to the
// operating system) tells one quiet period from the next by it.
func (t *Tracker) LastEnded() time.Time {
	last := t.lastEnd.Load()
	if last == 0 {
		return time.Time{}
	}
	return time.Unix(0, last)
}

// Active reports whether a user operation is in progress or ended within the
// quiet window.
func (t *Tracker) Active() bool {
	if t.inflight.Load() > 0 {
		return true
	}
	last := t.lastEnd.Load()
	return last != 0 && t.clock().UnixNano()-last < int64(t.window())
}
