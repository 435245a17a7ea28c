package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/purgectl"
	"github.com/lethe-db/lethe/ru"
	"github.com/lethe-db/lethe/throttle"
	"github.com/lethe-db/lethe/ttl"
)

// purger physically deletes expired documents in the background. Expiry itself
// is decided inline on every request; the purger only reclaims space, so when it
// runs never changes what a client sees.
//
// One goroutine serves the whole store. Each pass walks the containers
// round-robin, taking one bounded batch from each in turn until none has expired
// documents left, so one large container cannot starve the others. Batches are
// found by range scans of the T and X indexes up to the container's cutoffs:
// the work is proportional to the number of expired documents, not to the
// container's size. Before each batch the purger yields while user operations
// are in flight. It keeps no state of its own: after a restart the indexes say
// exactly what is left to do. Purging is never charged to anyone.
type purger struct {
	e     *Engine
	kickc chan struct{}
	stopc chan struct{}
	donec chan struct{}
	once  sync.Once

	started atomic.Bool
	purged  atomic.Int64 // documents deleted since start
	passes  atomic.Int64
	// busy is the time spent in background purge batches since start, and
	// share (float64 bits) the share of a core the controller last allowed
	// (1 while no user was active); oldest (nanoseconds) is the age of the
	// oldest pending expiry the last batch found. Together they show an
	// operator the controller at work.
	busy   atomic.Int64
	share  atomic.Uint64
	oldest atomic.Int64
	// held pauses background purging between batches while true. Only
	// benchmarks set it, to measure the same load with and without a purge
	// in alternating windows.
	held atomic.Bool

	mu    sync.Mutex
	byRID map[[8]byte]*purgeCounts // per container, since start
}

// purgeCounts are one container's purge counters.
type purgeCounts struct{ purged, deferred int64 }

// count adds to a container's counters.
func (p *purger) count(rid [8]byte, purged, deferred int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byRID == nil {
		p.byRID = map[[8]byte]*purgeCounts{}
	}
	c := p.byRID[rid]
	if c == nil {
		c = &purgeCounts{}
		p.byRID[rid] = c
	}
	c.purged += purged
	c.deferred += deferred
}

// countDeferred counts a purge batch of t put off for lack of spare capacity.
func (p *purger) countDeferred(t *purgeTarget) {
	p.count(t.key, 0, 1)
}

// countsOf returns a container's counters.
func (p *purger) countsOf(rid [8]byte) (purged, deferred int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.byRID[rid]; c != nil {
		return c.purged, c.deferred
	}
	return 0, 0
}

func newPurger(e *Engine) *purger {
	p := &purger{e: e, kickc: make(chan struct{}, 1), stopc: make(chan struct{}), donec: make(chan struct{})}
	p.share.Store(math.Float64bits(purgectl.MinShare))
	return p
}

func (p *purger) start() {
	p.started.Store(true)
	go p.run()
}

// kick wakes the purger early, e.g. after a container's TTL changed.
func (p *purger) kick() {
	select {
	case p.kickc <- struct{}{}:
	default:
	}
}

func (p *purger) stop() {
	p.once.Do(func() { close(p.stopc) })
	if p.started.Load() {
		<-p.donec
	}
}

func (p *purger) run() {
	defer close(p.donec)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-p.stopc:
			cancel()
		case <-ctx.Done():
		}
	}()
	interval := p.e.opts.PurgeInterval
	backoff := interval
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-p.stopc:
			return
		case <-p.kickc:
		case <-timer.C:
		}
		var err error
		if !p.e.opts.DisablePurger {
			_, err = p.e.purge(ctx, true)
		}
		if err == nil {
			err = p.e.buildIndexesYielding(ctx)
		}
		if err == nil {
			_, err = p.e.TrimChangeFeeds(ctx)
		}
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, kv.ErrNoSpace):
			// The disk is full even for deletions: try again soon, since
			// the purge is one of the things that free it.
			backoff = interval
		case err != nil:
			p.e.log.Warn("purge pass", "err", err, "retry_in", backoff)
			backoff = min(2*backoff, 30*time.Second)
		default:
			backoff = interval
		}
		timer.Reset(backoff)
	}
}

// buildIndexesYielding runs pending re-index batches, paced around user
// operations as purge batches are (small batches and a proportional rest
// while users are active, full batches back to back otherwise), until none
// is pending.
func (e *Engine) buildIndexesYielding(ctx context.Context) error {
	for {
		limit, paced := e.paceForUsers(ctx, purgectl.MinShare)
		if err := ctx.Err(); err != nil {
			return err
		}
		began := time.Now()
		_, pending, err := e.buildIndexBatch(ctx, limit)
		if paced {
			e.restAfterBatch(ctx, purgectl.Rest(purgectl.MinShare, time.Since(began)))
		}
		if err != nil || !pending {
			return err
		}
	}
}

// PurgeStats describes the purger's progress.
type PurgeStats struct {
	// Purged is the number of documents physically deleted since the engine opened.
	Purged int64
	// Passes is the number of completed purge passes.
	Passes int64
	// Busy is how long the background purge has spent in its batches; Busy
	// divided by Purged is what deleting a document costs it.
	Busy time.Duration
	// Share is the share of one core's time the purge controller last
	// allowed: from purgectl.MinShare while the purge keeps up, growing as
	// the oldest pending expiry ages, 1 while no user is active.
	Share float64
	// OldestAge is how long the oldest expired document the purge last
	// found had been waiting, the controller's input.
	OldestAge time.Duration
}

// PurgeStats returns the purger's counters.
func (e *Engine) PurgeStats() PurgeStats {
	p := e.purger
	return PurgeStats{
		Purged: p.purged.Load(), Passes: p.passes.Load(), Busy: time.Duration(p.busy.Load()),
		Share: math.Float64frombits(p.share.Load()), OldestAge: time.Duration(p.oldest.Load()),
	}
}

// Purge physically deletes every document expired at the current server time,
// synchronously, and returns how many it deleted; then it trims the change
// feed logs past their retention, as the background purger does after its
// passes. It does not yield to user operations; the background purger does.
func (e *Engine) Purge(ctx context.Context) (int, error) {
	n, err := e.purge(ctx, false)
	if err != nil {
		return n, err
	}
	_, err = e.TrimChangeFeeds(ctx)
	return n, err
}

// purgeTarget is one container in a purge pass, with where each of its expiry
// indexes was left: scanning from the index start every batch would step over
// the tombstones of every entry already purged, making a pass quadratic. New
// entries never appear below a cursor: a write's _ts is now, and both cutoffs
// are at most now.
type purgeTarget struct {
	db, coll string
	rid      string          // the container's _rid
	key      [8]byte         // the same, as in keys
	cursor   map[byte][]byte // index prefix -> first key not yet scanned
	// budget is the container's provisioned throughput, nil when it has none
	// (or the purge is not a background one); the purge then spends only its
	// spare capacity. lastRUPerDoc is what a purged document cost last batch.
	budget       *throttle.Bucket
	lastRUPerDoc float64
	// oldest is how long the oldest expired document its last batch found
	// had been waiting; 0 once it has none left.
	oldest time.Duration
}

// ruPerDoc estimates what purging one of the target's documents costs, from
// its last batch or, before one, a 1 KB document with default indexing.
func (t *purgeTarget) ruPerDoc() float64 {
	if t.lastRUPerDoc > 0 {
		return t.lastRUPerDoc
	}
	return ru.Write{Bytes: 1024, TermsRemoved: 10}.Charge()
}

func (e *Engine) purge(ctx context.Context, yield bool) (int, error) {
	colls, err := allContainers(ctx, e.store)
	if err != nil {
		return 0, fmt.Errorf("list containers to purge: %w", err)
	}
	var targets []*purgeTarget
	for _, c := range colls {
		if c.IndexBuild != nil {
			e.purger.kick() // a re-index is pending: come back soon
		}
		// A container with TTL off and no watermark can hold no expired document.
		if c.TTLOn || c.Watermarks != ttl.Initial {
			t := &purgeTarget{db: c.DB, coll: c.ID, rid: c.RID, cursor: map[byte][]byte{}}
			if b, ok := decodeRID(c.RID); ok && len(b) == 8 {
				t.key = [8]byte(b)
			}
			if yield {
				if t.budget, err = e.BudgetFor(ctx, c.DB, c.ID); err != nil {
					return 0, fmt.Errorf("budget of %s/%s: %w", c.DB, c.ID, err)
				}
			}
			targets = append(targets, t)
		}
	}
	total := 0
	for len(targets) > 0 {
		next := targets[:0]
		for _, t := range targets {
			limit, paced, share := e.opts.PurgeBatch, false, 1.0
			switch {
			case t.budget != nil:
				// Provisioned: spend only what users left of the last second's
				// budget, recorded as background spend, never charged.
				limit = min(limit, int(t.budget.Spare(e.opts.Now())/t.ruPerDoc()))
				if limit < 1 {
					e.purger.countDeferred(t)
					continue // no spare capacity: the next pass comes back
				}
			case yield:
				age := oldestOf(targets, e.purger)
				if low := e.opts.SpaceLow; low != nil && low() {
					// The disk is nearly full and writes that add data are
					// refused: expired documents are what the purge can
					// free, so it takes its largest share at once.
					age = math.MaxInt64
				}
				share = e.opts.PurgeControl.Share(age)
				limit, paced = e.paceForUsers(ctx, share)
				limit = min(limit, e.opts.PurgeBatch)
				if !paced {
					share = 1
				}
				e.purger.share.Store(math.Float64bits(share))
			}
			if yield {
				// On a shared store, the container is this gateway's to
				// purge only while it holds the container's purge lease.
				held, err := e.holdPurgeLease(ctx, t.key)
				if err != nil {
					e.log.Warn("purge lease", "database", t.db, "container", t.coll, "err", err)
				}
				if !held {
					continue
				}
			}
			for yield && e.purger.held.Load() && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			switch {
			case !paced:
				e.waitForStoreBacklog(ctx, nil)
			case !purgectl.Behind(share):
				e.waitForStoreBacklog(ctx, func() bool { return e.fellBehind(ctx, t) })
			}
			if err := ctx.Err(); err != nil {
				return total, err
			}
			began := time.Now()
			// A paced batch at the minimum share waited for a quiet moment
			// and was shrunk for users: that counts as deferred.
			n, more, spent, oldest, err := e.purgeBatch(ctx, t, limit, paced && !purgectl.Behind(share))
			took := time.Since(began)
			if yield {
				e.purger.busy.Add(int64(took))
			}
			if paced {
				e.restAfterBatch(ctx, purgectl.Rest(share, took))
			}
			if t.budget != nil && n > 0 {
				t.budget.UseBackground(e.opts.Now(), spent)
				t.lastRUPerDoc = spent / float64(n)
			}
			total += n
			if err != nil {
				return total, fmt.Errorf("purge %s/%s: %w", t.db, t.coll, err)
			}
			t.oldest = 0 // drained up to the cutoff
			if more {
				t.oldest = oldest
				next = append(next, t)
			}
			e.purger.oldest.Store(int64(oldestOf(targets, nil)))
		}
		targets = next
	}
	e.purger.passes.Add(1)
	e.purger.oldest.Store(0)
	return total, nil
}

// oldestOf returns the longest any of the targets' expired documents has
// waited, by their last batches; before any batch of this pass, what the
// last pass left (from p, if not nil).
func oldestOf(targets []*purgeTarget, p *purger) time.Duration {
	var oldest time.Duration
	for _, t := range targets {
		oldest = max(oldest, t.oldest)
	}
	if p != nil {
		oldest = max(oldest, time.Duration(p.oldest.Load()))
	}
	return oldest
}

// Pacing of the purge around user traffic on containers without provisioned
// throughput. The signal is the engine's activity tracker: a user operation in
// flight, or one that ended within its quiet window, means users are active.
// Then the purge takes the share of one core that package purgectl decides
// from the age of the oldest pending expiry: small batches (a batch holds the
// store's writer lock, so short batches keep user writes from queueing behind
// it), each followed by a rest in proportion to how long it took. While the
// purge keeps up (the minimum share, a seventeenth of a core), it also waits
// up to userWaitMax for a quiet moment before each batch and does not run
// beside a compaction: measured in issue 5, its batches then cost user
// requests nothing measurable. Once it falls behind, it stops waiting for
// quiet moments and for a backed-up store (waitForStoreBacklog), which a
// saturated server never has, and its share grows until deletion keeps pace
// with expiry (issue 16). (The purge itself stays at
// normal CPU priority: a lowered thread holding the writer lock would make
// user writes wait on the kernel's scheduler.) An idle server purges in full
// batches, back to back. The flushes and compactions that the purge's
// deletions cause run at background priority in the store, and compactions at
// a limited write rate while users are active (pebblekv.Options.Foreground
// and BackgroundWriteRate).
const (
	userWaitMax   = 50 * time.Millisecond
	storeBusyPoll = 2 * time.Millisecond
)

// storeBacklogPoll is how often a purge waiting for the store's background
// work to catch up asks again.
const storeBacklogPoll = 10 * time.Millisecond

// waitForStoreBacklog waits while the store's background work is too far
// behind (Options.StoreBacklogged): more deletions would bring the store to
// stop writes until its compactions caught up, and a stopped store holds the
// next user's write as long. The purge waits so on an idle server, where its
// full batches back to back would outrun any compaction, and while it keeps
// up; behind, if not nil, is asked every pendingAgePoll meanwhile and ends
// the wait once it reports true. A purge behind while users write goes on at
// its paced share without waiting: creates that never stop keep level 0 that
// deep by themselves, compactions running at full speed, so a purge that
// waited for it would hardly run, and expired documents would pile up
// without bound (measured with the change feed's log on, whose records make
// every create's compactions dearer: BENCHMARKS.md, issue 21, twentieth
// session).
func (e *Engine) waitForStoreBacklog(ctx context.Context, behind func() bool) {
	backlogged := e.opts.StoreBacklogged
	if backlogged == nil {
		return
	}
	var asked time.Time
	for backlogged() && ctx.Err() == nil {
		if behind != nil && time.Since(asked) >= pendingAgePoll {
			if behind() {
				return
			}
			asked = time.Now()
		}
		time.Sleep(storeBacklogPoll)
	}
}

// pendingAgePoll is how often a purge waiting for the store's backlog
// measures how long its container's oldest expired document has waited.
const pendingAgePoll = 100 * time.Millisecond

// fellBehind reports whether the oldest expired document of t, measured
// now from its expiry tallies (no document is read), has waited long enough
// for the controller to count the purge as behind. The batch that follows
// measures the age again, for the controller's next share.
func (e *Engine) fellBehind(ctx context.Context, t *purgeTarget) bool {
	var age time.Duration
	err := e.view(ctx, t.db, t.coll, func(r kv.Reader, s *scope) error {
		_, oldest, ok, err := s.expiredTally(r)
		if ok {
			age = time.Duration(s.now-oldest) * time.Second
		}
		return err
	})
	if err != nil {
		// A dropped container, or a store failing reads: the batch that
		// follows the wait finds out and reports it.
		return false
	}
	return purgectl.Behind(e.opts.PurgeControl.Share(age))
}

// usersActive reports whether user operations are running or ran within the
// tracker's quiet window.
func (e *Engine) usersActive() bool { return e.opts.Activity.Active() }

// paceForUsers returns the size of the next batch at share and whether it is
// paced because users are active. At the minimum share it first waits,
// briefly, for a quiet moment, and while users are active and the store is
// busy with background work of its own (a compaction), for that to end:
// background work then takes one core at a time, never both.
func (e *Engine) paceForUsers(ctx context.Context, share float64) (limit int, paced bool) {
	behind := purgectl.Behind(share)
	deadline := time.Now().Add(userWaitMax)
	for !behind && e.opts.Activity.InFlight() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if !e.usersActive() {
		return e.opts.PurgeBatch, false
	}
	if busy := e.opts.StoreBusy; busy != nil && !behind {
		for busy() && e.usersActive() && ctx.Err() == nil {
			time.Sleep(storeBusyPoll)
		}
	}
	return purgectl.Batch(share), true
}

// restAfterBatch sleeps for d, or until ctx ends.
func (e *Engine) restAfterBatch(ctx context.Context, d time.Duration) {
	t := time.NewTimer(max(time.Millisecond, d))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// purgeBatch deletes up to limit expired documents of one container and
// reports whether more may remain, and how long the oldest of them had been
// expired. deferred says the batch was shrunk and put off for user traffic,
// which the container's deferral counter records.
func (e *Engine) purgeBatch(ctx context.Context, t *purgeTarget, limit int, deferred bool) (n int, more bool, spent float64, oldest time.Duration, err error) {
	now, err := e.now(ctx)
	if err != nil {
		return 0, false, 0, 0, err
	}
	var rid [8]byte
	var next map[byte][]byte // cursors to adopt once the batch commits
	// No sync: a purge batch lost in a crash is redone, and its documents stay
	// expired meanwhile (expiry is final), so nothing waits on the disk here.
	err = e.store.UpdateNoSync(ctx, func(tx kv.Tx) error {
		n, more, spent, oldest = 0, false, 0, 0
		s, err := e.scope(tx, t.db, t.coll, now)
		if err != nil {
			if isNotFound(err) { // dropped meanwhile: nothing to do
				return nil
			}
			return err
		}
		type entry struct{ key, value []byte }
		var entries []entry
		next = map[byte][]byte{}
		collect := func(pfx byte) error {
			kr, ok := s.expiredEntries(pfx)
			if !ok {
				return nil
			}
			cut := s.cutoff(pfx)
			// A cursor counts only inside this container's index: a container
			// dropped and re-created under the same name has a new RID.
			if c, ok := t.cursor[pfx]; ok && bytes.HasPrefix(c, kr.start) {
				kr.start = c
			}
			it := tx.Scan(kr.start, kr.end, false)
			defer it.Close()
			before := len(entries)
			for len(entries) < limit && it.Next() {
				entries = append(entries, entry{append([]byte(nil), it.Key()...), append([]byte(nil), it.Value()...)})
			}
			if len(entries) >= limit && it.Next() {
				more = true
			}
			if len(entries) > before {
				next[pfx] = append(append([]byte(nil), entries[len(entries)-1].key...), 0)
				// The index is ordered by instant: its first entry here is its
				// longest-waiting one, expired (cut - instant) seconds ago.
				if k := entries[before].key; len(k) >= 1+8+8 {
					oldest = max(oldest, time.Duration(cut-decodeInt64(k[9:17]))*time.Second)
				}
			}
			return it.Err()
		}
		if err := collect(pfxByTS); err != nil {
			return err
		}
		if len(entries) < limit {
			if err := collect(pfxByExpiry); err != nil {
				return err
			}
		} else {
			more = true
		}
		// Delete straight from the index, reading no document: inside this
		// serialised transaction an expiry entry always belongs to its
		// document's current version (every write and delete removes a
		// version's entries in the same commit; Check verifies it), and an
		// entry at or below the cutoff is expired by construction. The
		// document's other keys come from the entry: its primary key and
		// manifest from the value, its sequence number from the key.
		// The usage tallies are read and written before the deletions, so
		// that no read follows them and the store never has to index the
		// batch to let the transaction see its own writes.
		type doomed struct {
			seq      uint64
			suffix   []byte
			size     int
			manifest [][]byte
		}
		docs := make([]doomed, len(entries))
		for i, en := range entries {
			d := &docs[i]
			d.seq = binary.BigEndian.Uint64(en.key[len(en.key)-8:])
			if d.suffix, d.size, d.manifest, err = decodeOrderValue(en.value, &s.rid); err != nil {
				return err
			}
			s.usage.add([][]byte{nil, en.key}, d.size, -1)
			spent += ru.Write{Bytes: d.size, TermsRemoved: countTerms(d.manifest)}.Charge()
		}
		// A container with an all-versions log gets each expiry's record
		// there as its document goes (readers synthesised it until now):
		// that takes the documents themselves, read before any write.
		logged, err := s.expiryRecords(tx, func(yield func(suffix []byte) bool) {
			for _, d := range docs {
				if !yield(d.suffix) {
					return
				}
			}
		})
		if err != nil {
			return err
		}
		if err := s.usage.apply(tx, s.rid, e.tallyDelta(s.rid)); err != nil {
			return err
		}
		for _, l := range logged {
			if err := tx.Put(l.key, l.value); err != nil {
				return err
			}
		}
		// The deletions go to the store in key order: the memtable inserts
		// each key after the one before, and in order most of them land
		// next to it, which makes them cheaper.
		type deletion struct {
			key  []byte
			size int // the deleted value's size, for documents; -1 otherwise
		}
		dels := make([]deletion, 0, 16*len(docs))
		for i, d := range docs {
			dels = append(dels, deletion{docKey(s.rid, d.suffix), docHeaderLen + d.size},
				deletion{orderKey(s.rid, d.seq), -1}, deletion{entries[i].key, -1})
			for _, k := range d.manifest {
				dels = append(dels, deletion{k, -1})
			}
		}
		slices.SortFunc(dels, func(a, b deletion) int { return bytes.Compare(a.key, b.key) })
		for _, d := range dels {
			var err error
			if d.size >= 0 {
				// The document's own record carries its size, so that the
				// store can compact its tombstone sooner and free the space.
				err = tx.DeleteSized(d.key, d.size)
			} else {
				err = tx.Delete(d.key)
			}
			if err != nil {
				return err
			}
		}
		n, rid = len(entries), s.rid
		return nil
	})
	if err == nil {
		e.purger.purged.Add(int64(n))
		if n > 0 || deferred {
			var d int64
			if deferred {
				d = 1
			}
			e.purger.count(rid, int64(n), d)
		}
		for pfx, c := range next {
			t.cursor[pfx] = c
		}
	}
	return n, more, spent, oldest, err
}
