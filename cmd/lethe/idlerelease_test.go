package main

import (
	"testing"
	"time"

	"github.com/lethe-db/lethe/activity"
)

// TestIdleRelease steps a clock through quiet periods: memory is released
// once users have been quiet for idleReleaseAfter since an operation, never
// while one runs, never before any has, and once per quiet period.
func TestIdleRelease(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	users := activity.New(0, clock)
	releases := 0
	r := &idleReleaser{users: users, now: clock, release: func() { releases++ }}
	step := func(d time.Duration, want int, what string) {
		t.Helper()
		now = now.Add(d)
		r.check()
		if releases != want {
			t.Fatalf("%s: %d releases, want %d", what, releases, want)
		}
	}
	step(time.Hour, 0, "no operation yet")

	end := users.Begin()
	step(time.Hour, 0, "an operation in flight")
	end()
	step(idleReleaseAfter-time.Millisecond, 0, "quiet for less than idleReleaseAfter")
	step(time.Millisecond, 1, "quiet for idleReleaseAfter")
	step(time.Hour, 1, "the same quiet period")

	users.Begin()()
	end = users.Begin() // ended one, another still running
	step(time.Hour, 1, "an operation in flight after a quiet period")
	end()
	step(idleReleaseAfter, 2, "the next quiet period")
}

// TestIdleReleaseStops: the release goroutine stops when asked.
func TestIdleReleaseStops(t *testing.T) {
	stop := startIdleRelease(activity.New(0, nil))
	stop() // returns once the goroutine has ended; a leak would hang here
}
