package pebblekv

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Views share one Pebble snapshot while nothing commits. A snapshot costs a
// View more than its lookup: taking it and closing it each lock the
// database's mutex, and closing the oldest snapshot makes Pebble look for
// compactions to schedule (its level scores computed under that mutex), which
// every View of a one-client load did, since each held the only snapshot
// (BenchmarkGet: 1,032 ns and 16 allocations per View and Get, 475 ns and 2
// shared). A View instead reuses the shared snapshot when it is fresh enough:
// when no Update has committed since it was taken.
//
// Freshness rests on the commit count (Store.commits): runUpdate adds one
// after each commit, before the Update returns and so before its writer can
// tell anyone, and a snapshot is labelled with the count read before it was
// taken, so it holds every commit its label counts. A View that reads the
// count c and finds a snapshot labelled c or more sees every Update that
// returned before the View began. New snapshots are taken and published under
// snapMu, so the shared one is always the newest, and a View never sees an
// older state than a View that ended before it began. After each commit the
// shared snapshot is let go, so that none outlives the reads that use it and
// keeps overwritten or deleted data from compactions.

// sharedSnap is a snapshot and the number of its users.
type sharedSnap struct {
	snap  *pebble.Snapshot
	label uint64 // Store.commits before the snapshot was taken
	// refs counts the Views using it, plus one while it is Store.shared. At
	// zero it is closed, and never used again.
	refs atomic.Int64
}

// tryRef takes a reference to sh unless it is already closed.
func (sh *sharedSnap) tryRef() bool {
	for {
		n := sh.refs.Load()
		if n == 0 {
			return false
		}
		if sh.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// unref drops a reference to sh, closing the snapshot with the last.
func (sh *sharedSnap) unref() {
	if sh.refs.Add(-1) == 0 {
		_ = sh.snap.Close() // only fails on a double close
	}
}

// acquireSnapshot returns a snapshot holding at least every commit counted
// so far, shared with other Views; release it with sh.unref.
func (s *Store) acquireSnapshot() *sharedSnap {
	c := s.commits.Load()
	if sh := s.shared.Load(); sh != nil && sh.label >= c && sh.tryRef() {
		return sh
	}
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	c = s.commits.Load()
	if sh := s.shared.Load(); sh != nil && sh.label >= c && sh.tryRef() {
		return sh // another View published one meanwhile
	}
	sh := &sharedSnap{snap: s.db.NewSnapshot(), label: c}
	sh.refs.Store(2) // the caller's and the store's
	if old := s.shared.Swap(sh); old != nil {
		old.unref()
	}
	return sh
}

// unshareSnapshot lets the shared snapshot go, closing it if no View uses
// it: after a commit, and before the database closes.
func (s *Store) unshareSnapshot() {
	if s.shared.Load() == nil {
		return
	}
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	if old := s.shared.Swap(nil); old != nil {
		old.unref()
	}
}
