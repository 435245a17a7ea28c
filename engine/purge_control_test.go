package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethe-db/lethe/activity"
	"github.com/lethe-db/lethe/purgectl"
)

// TestPurgeShareFollowsTheOldestAge drives the background purge (paced, with
// a user operation in flight) over backlogs of growing age on the injected
// clock: the share of a core the controller allows grows with the age of the
// oldest pending expiry, reaches its maximum past the target age, and is
// given back once the backlog drains.
func TestPurgeShareFollowsTheOldestAge(t *testing.T) {
	users := &activity.Tracker{}
	ctl := purgectl.Settings{TargetAge: 5 * time.Second, MaxShare: 0.5}
	te := openTestEngine(t, newMemStore(t), Options{DisableBackground: true, Activity: users, PurgeControl: ctl})
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)
	end := users.Begin() // users are active for the whole test
	defer end()

	// backlog creates n documents with a 10 s ttl, lets them wait age past
	// their expiry, and runs one background purge pass over them.
	round := 0
	backlog := func(n int, age time.Duration) PurgeStats {
		t.Helper()
		round++
		te.fill("c", fmt.Sprintf("r%d-", round), n, `,"ttl":10`)
		te.clock.Advance(10*time.Second + age)
		purged, err := te.purge(ctx, true)
		if err != nil || purged != n {
			t.Fatalf("round %d: purged %d, %v; want %d", round, purged, err, n)
		}
		return te.PurgeStats()
	}

	// Each pass starts at the share the last one left and then follows the
	// age its batches find: 40 documents take at least 2 batches at any share.
	fresh := backlog(40, 0)
	if fresh.Share != purgectl.MinShare {
		t.Errorf("a backlog just expired: share %v, want the minimum %v", fresh.Share, purgectl.MinShare)
	}
	prev := fresh.Share
	for _, age := range []time.Duration{2 * time.Second, 3 * time.Second, 4 * time.Second} {
		st := backlog(100, age)
		if want := ctl.Share(age); st.Share != want {
			t.Errorf("oldest waiting %v: share %v, want %v", age, st.Share, want)
		}
		if st.Share <= prev {
			t.Errorf("oldest waiting %v: share %v did not grow from %v", age, st.Share, prev)
		}
		prev = st.Share
	}
	old := backlog(300, time.Minute)
	if old.Share != 0.5 {
		t.Errorf("oldest waiting a minute: share %v, want the maximum 0.5", old.Share)
	}
	if old.OldestAge != 0 {
		t.Errorf("after the pass drained the backlog the oldest age is %v, want 0", old.OldestAge)
	}
	if old.Busy <= fresh.Busy {
		t.Errorf("busy time %v did not grow from %v over four paced passes", old.Busy, fresh.Busy)
	}

	// Drained: a new backlog that has not waited gets the minimum again.
	if st := backlog(40, 0); st.Share != purgectl.MinShare {
		t.Errorf("after draining: share %v, want it given back to %v", st.Share, purgectl.MinShare)
	}
	if err := te.Check(ctx); err != nil {
		t.Error(err)
	}
}

// TestPurgeBehindStopsWaitingForQuiet: once the purge is behind it no longer
// waits for a quiet moment or for the store's own compactions, which a
// saturated server never has, and takes larger batches.
func TestPurgeBehindStopsWaitingForQuiet(t *testing.T) {
	users := &activity.Tracker{}
	busy := func() bool { return true } // the store is always compacting
	te := openTestEngine(t, newMemStore(t), Options{DisableBackground: true, Activity: users, StoreBusy: busy})
	end := users.Begin()
	defer end()
	share := te.opts.PurgeControl.Share(time.Minute)
	done := make(chan int, 1)
	go func() {
		limit, paced := te.paceForUsers(ctx, share)
		if !paced {
			limit = -1
		}
		done <- limit
	}()
	select {
	case limit := <-done:
		if limit != purgectl.Batch(share) || limit <= purgectl.MinBatch {
			t.Errorf("behind: batch %d, want a paced batch of %d, larger than %d", limit, purgectl.Batch(share), purgectl.MinBatch)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("behind, the purge still waits for the store's work to end")
	}
}

// TestPurgeFullShareOnLowDisk: while the disk is nearly full, the purge takes
// its largest share however recent the expired documents are: they are what
// it can free, and writes that add data wait for it.
func TestPurgeFullShareOnLowDisk(t *testing.T) {
	users := &activity.Tracker{}
	var low atomic.Bool
	ctl := purgectl.Settings{TargetAge: 5 * time.Second, MaxShare: 0.5}
	te := openTestEngine(t, newMemStore(t), Options{DisableBackground: true, Activity: users, PurgeControl: ctl, SpaceLow: low.Load})
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)
	end := users.Begin()
	defer end()
	pass := func(prefix string, diskLow bool) PurgeStats {
		t.Helper()
		te.fill("c", prefix, 40, `,"ttl":10`)
		te.clock.Advance(10 * time.Second) // just expired
		low.Store(diskLow)                 // after the writes, which it would refuse
		if purged, err := te.purge(ctx, true); err != nil || purged != 40 {
			t.Fatalf("purged %d, %v; want 40", purged, err)
		}
		return te.PurgeStats()
	}
	if st := pass("a-", false); st.Share != purgectl.MinShare {
		t.Fatalf("a backlog just expired, disk fine: share %v, want %v", st.Share, purgectl.MinShare)
	}
	if st := pass("b-", true); st.Share != 0.5 {
		t.Errorf("a backlog just expired on a nearly full disk: share %v, want the maximum 0.5", st.Share)
	}
}

// TestPurgeBehindGoesOnThroughStoreBacklog: while users are active and the
// purge keeps up, it waits for a backed-up store like an idle server's
// purge; once its oldest expired document has waited long enough to put it
// behind, it stops waiting and goes on at its paced share, since creates
// that never stop keep the store backed up by themselves.
func TestPurgeBehindGoesOnThroughStoreBacklog(t *testing.T) {
	users := &activity.Tracker{}
	var asked atomic.Int64
	askedThrice := make(chan struct{})
	backlogged := func() bool {
		if asked.Add(1) == 3 {
			close(askedThrice)
		}
		return true // the store never catches up
	}
	te := openTestEngine(t, newMemStore(t), Options{DisableBackground: true, Activity: users, StoreBacklogged: backlogged})
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)
	end := users.Begin() // users are active for the whole test
	defer end()

	te.fill("c", "d", 40, `,"ttl":10`)
	te.clock.Advance(10 * time.Second) // expired just now: the purge keeps up
	type result struct {
		n   int
		err error
	}
	pass, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan result, 1)
	go func() {
		n, err := te.purge(pass, true)
		done <- result{n, err}
	}()
	select {
	case <-askedThrice: // waiting, and asking again
	case r := <-done:
		t.Fatalf("keeping up, the purge did not wait for the backed-up store: %d purged, %v", r.n, r.err)
	}
	if st := te.PurgeStats(); st.Purged != 0 || st.Share != purgectl.MinShare {
		t.Fatalf("waiting: %d purged at share %v, want none at the minimum %v", st.Purged, st.Share, purgectl.MinShare)
	}

	// The expired documents wait a minute: the purge is behind, and goes on.
	te.clock.Advance(time.Minute)
	select {
	case r := <-done:
		if r.err != nil || r.n != 40 {
			t.Fatalf("behind: purged %d, %v; want 40", r.n, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("behind, the purge still waits for the backed-up store")
	}
	if st, want := te.PurgeStats(), te.opts.PurgeControl.Share(time.Minute); st.Share != want {
		t.Errorf("behind: share %v, want %v", st.Share, want)
	}
	if err := te.Check(ctx); err != nil {
		t.Error(err)
	}
}
