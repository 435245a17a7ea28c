package main

import (
	"runtime/debug"
	"time"
)

// An idle server returns the memory it no longer uses to the operating
// system. After a burst of requests a durable server kept about 100 MB
// resident for as long as it stayed idle: the Go heap held the garbage that
// the heap floor (heapfloor.go) lets build up between collections, which Go's
// own scavenger leaves alone because it stays under the heap goal the floor
// sets, and glibc's arenas kept the block cache entries freed in them. Once no
// user operation has run for idleReleaseAfter, the server collects and
// returns free Go memory (debug.FreeOSMemory), then trims malloc's arenas
// (releaseCMemory), once per quiet period. Measured after lethe bench's four
// workloads on a durable server: 102 MB resident, 83 MB after the Go heap's
// release, 80 MB after the trim (BENCHMARKS.md, eighth session). Requests that
// come later regrow the heap as they need it; the release costs one forced
// collection per quiet period, never while requests run.
const (
	idleReleaseAfter = 5 * time.Second
	idleCheckEvery   = time.Second
)

// userActivity is what the releaser reads of the users' activity
// (activity.Tracker).
type userActivity interface {
	InFlight() int64
	LastEnded() time.Time
}

// idleReleaser decides when to return memory: after users have been quiet
// for idleReleaseAfter since an operation it has not yet released after.
type idleReleaser struct {
	users   userActivity
	now     func() time.Time
	release func()
	after   time.Time // LastEnded at the last release
}

// check releases memory if users have been quiet long enough since activity
// not yet followed by a release.
func (r *idleReleaser) check() {
	last := r.users.LastEnded()
	if last.IsZero() || !last.After(r.after) || r.users.InFlight() > 0 || r.now().Sub(last) < idleReleaseAfter {
		return
	}
	r.after = last
	r.release()
}

// releaseMemory is what an idle server does: a collection that returns
// every free page of the Go heap, then a trim of malloc's arenas.
func releaseMemory() {
	debug.FreeOSMemory()
	releaseCMemory()
}

// startIdleRelease starts the goroutine that checks, every idleCheckEvery,
// whether to release memory; the returned func stops it and waits for it.
func startIdleRelease(users userActivity) (stop func()) {
	r := &idleReleaser{users: users, now: time.Now, release: releaseMemory}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(idleCheckEvery)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				r.check()
			}
		}
	}()
	return func() { close(quit); <-done }
}
