package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
	"golang.org/x/sync/semaphore"
)

// The gateway registry. On a store shared between processes (not
// kv.Exclusive: PostgreSQL) any number of engines, the gateways, run at once
// (docs/postgres.md). Each registers in a slot of the registry (M gw
// <slot:2>): a lease row renewed while it runs and deleted at Close. The
// live slots tell the change feed which other writers are at work, and the
// floor each publishes in its row how far their writes are done (see
// sharedFeedWatermark); and how many gateways share a container's
// throughput. Each renewal also folds the tally delta rows this gateway
// wrote (usage.go).
//
// A gateway that finds its slot taken (it was stalled past the lease's
// expiry, and another gateway took the slot) refuses every request from then
// on rather than write beside the other under the same name.

// keyGatewayPrefix starts the registry's rows.
var keyGatewayPrefix = []byte("Mgw")

const (
	// leaseTerm is how long a lease lives without renewal: a killed
	// gateway's slot, and its purge leases, are free again after it.
	leaseTerm = 10 * time.Second
	// leaseRenewal is how often a holder renews its leases.
	leaseRenewal = 3 * time.Second
	// othersRefresh is how often a gateway counts the other live ones
	// between renewals: a gateway that joins or leaves changes the others'
	// share of the writers and of throughput, and whether they publish
	// change feed floors, within this much.
	othersRefresh = time.Second
	// floorInterval is how often a gateway looks whether its change feed
	// floor has risen, and publishes it when it has (at most once a second,
	// since a floor is a second): a change shows on the other gateways'
	// feeds within about a second and this much.
	floorInterval = 200 * time.Millisecond
	// maxClockError bounds how far two gateways' readings of the store's
	// time (kv.Clock: read once a second, run forward on the local
	// monotonic clock) differ: half a round trip and a second's drift.
	maxClockError = 10 * time.Millisecond
	// maxGateways bounds the registry's slots.
	maxGateways = 1 << 12
)

// gatewayLease is a lease row's value: the gateway registry's, and a
// container's purge lease (purgelease.go).
type gatewayLease struct {
	Holder string `json:"holder"`
	// Expires is when it lapses, Unix milliseconds of the store's clock
	// (kv.Clock, which every gateway shares), else of the holder's.
	Expires int64 `json:"expires"`
	// FeedFloor, in a registry row, is the change feed floor its gateway
	// last published (Unix seconds, see feedFloor); 0 before the first.
	FeedFloor int64 `json:"feedFloor,omitempty"`
}

// live reports whether the lease is held at now (Unix milliseconds).
func (g gatewayLease) live(now int64) bool { return g.Expires > now }

// lease is an engine's slot in the registry of a shared store.
type lease struct {
	e      *Engine
	holder string
	slot   uint16
	// unfolded holds the containers whose tallies this gateway wrote delta
	// rows to since its last fold (usage.go).
	unfolded struct {
		sync.Mutex
		colls map[[8]byte]struct{}
	}
	// others counts the other gateways whose leases were live when last
	// counted (at every renewal, and every othersRefresh between).
	others atomic.Int32
	// publishing orders the floor's publications; published is the last
	// floor this gateway's row holds.
	publishing sync.Mutex
	published  int64
	lost       atomic.Bool
	stop       chan struct{}
	done       chan struct{}
	once       sync.Once
}

// errRegistryFull is returned by Open when every slot is live.
var errRegistryFull = errors.New("every gateway slot of this database is taken")

// slotKey is the registry row of slot n.
func slotKey(n uint16) []byte {
	return binary.BigEndian.AppendUint16(append([]byte(nil), keyGatewayPrefix...), n)
}

// leaseNow returns the time leases are judged against, Unix milliseconds:
// the store's clock when it has one (every gateway then agrees on it), else
// this process's.
func (e *Engine) leaseNow(ctx context.Context) int64 {
	if c, ok := e.guard.Store.(kv.Clock); ok {
		if t, err := c.Now(ctx); err == nil {
			return t.UnixMilli()
		}
	}
	return time.Now().UnixMilli()
}

// takeLease registers e in the shared store's gateway registry. Exclusive
// stores need none: it returns nil.
func (e *Engine) takeLease(ctx context.Context) (*lease, error) {
	if e.guard.exclusive {
		return nil, nil
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	l := &lease{e: e, holder: hex.EncodeToString(id), stop: make(chan struct{}), done: make(chan struct{})}
	err := e.guard.Update(ctx, func(tx kv.Tx) error {
		now := e.leaseNow(ctx)
		free, others := -1, int32(0)
		next := 0
		it := tx.Scan(keyGatewayPrefix, kv.PrefixEnd(keyGatewayPrefix), false)
		for it.Next() {
			k := it.Key()
			if len(k) != len(keyGatewayPrefix)+2 {
				continue
			}
			n := int(binary.BigEndian.Uint16(k[len(keyGatewayPrefix):]))
			var cur gatewayLease
			if err := json.Unmarshal(it.Value(), &cur); err != nil {
				it.Close()
				return fmt.Errorf("gateway registry row %d %q: %w", n, it.Value(), errCorruptRecord)
			}
			if free < 0 && next < n {
				free = next // a hole before this row
			}
			if cur.live(now) {
				others++
			} else if free < 0 {
				free = n // a lapsed slot: its gateway is gone
			}
			next = n + 1
		}
		if err := it.Close(); err != nil {
			return fmt.Errorf("read the gateway registry: %w", err)
		}
		if free < 0 {
			if next >= maxGateways {
				return errRegistryFull
			}
			free = next
		}
		l.slot = uint16(free)
		l.others.Store(others)
		b, _ := json.Marshal(gatewayLease{Holder: l.holder, Expires: now + leaseTerm.Milliseconds()})
		return tx.Put(slotKey(l.slot), b)
	})
	if err != nil {
		return nil, fmt.Errorf("register in the gateway registry: %w", err)
	}
	if l.others.Load() > 0 {
		// A gateway that was alone serves the change feed up to its own
		// writes until it sees this one's row (sharedFeedWatermark). What
		// it served is below this one's writes: at seconds up to the shared
		// time of this registration, and, within that second, at LSNs from
		// blocks claimed before it (this gateway claims its first after).
		// Only the error between gateways' readings of the shared time is
		// left: this one's writes start above it. A clock read from the
		// store itself (a shared manual clock) has none: raised by
		// maxClockError, a registration in the last 10 ms of a second put
		// this gateway's writes a second ahead of the clock every gateway
		// reads.
		e.raiseSecond(e.opts.Now().Add(e.clockError).Unix())
		if err := l.publishFloor(ctx); err != nil {
			e.log.Warn("publish the change feed floor", "err", err)
		}
	}
	// The first fold takes every container: a gateway that stopped without
	// folding (killed, or its last fold failed) may have left delta rows.
	l.markAllUnfolded(ctx)
	go l.run()
	return l, nil
}

// renew extends the lease, or marks it lost when another gateway holds the
// slot; then counts the other live gateways.
func (l *lease) renew(ctx context.Context) error {
	err := l.e.guard.Update(ctx, func(tx kv.Tx) error {
		now := l.e.leaseNow(ctx)
		var floor int64
		v, err := tx.Get(slotKey(l.slot))
		switch {
		case errors.Is(err, kv.ErrNotFound):
		case err != nil:
			return fmt.Errorf("read the gateway registry: %w", err)
		default:
			var cur gatewayLease
			if err := json.Unmarshal(v, &cur); err != nil {
				return fmt.Errorf("gateway registry row %d %q: %w", l.slot, v, errCorruptRecord)
			}
			if cur.Holder != l.holder {
				l.lost.Store(true)
				return nil
			}
			floor = cur.FeedFloor
		}
		b, _ := json.Marshal(gatewayLease{Holder: l.holder, Expires: now + leaseTerm.Milliseconds(), FeedFloor: floor})
		return tx.Put(slotKey(l.slot), b)
	})
	if err != nil || l.lost.Load() {
		return err
	}
	return l.countOthers(ctx)
}

// countOthers counts the other live gateways (lease.others).
func (l *lease) countOthers(ctx context.Context) error {
	return l.e.guard.View(ctx, func(r kv.Reader) error {
		others, err := l.readOthers(r, l.e.leaseNow(ctx))
		if err == nil {
			l.others.Store(others.n)
		}
		return err
	})
}

// otherGateways is what a snapshot of the registry says of the gateways
// other than this one that are live.
type otherGateways struct {
	n int32
	// floor is the lowest change feed floor they published; floored is
	// false when one of them has published none.
	floor   int64
	floored bool
}

// readOthers reads the live registry rows of other gateways in r at now
// (Unix milliseconds).
func (l *lease) readOthers(r kv.Reader, now int64) (otherGateways, error) {
	o := otherGateways{floor: math.MaxInt64, floored: true}
	it := r.Scan(keyGatewayPrefix, kv.PrefixEnd(keyGatewayPrefix), false)
	defer it.Close()
	for it.Next() {
		var cur gatewayLease
		if json.Unmarshal(it.Value(), &cur) != nil || cur.Holder == l.holder || !cur.live(now) {
			continue
		}
		o.n++
		if cur.FeedFloor == 0 {
			o.floored = false
		}
		o.floor = min(o.floor, cur.FeedFloor)
	}
	return o, it.Close()
}

// publishFloor writes this gateway's change feed floor (feedFloor) into its
// registry row, when it has risen since the last publication. A lower floor
// than the truth is always safe, so the write need not be synced, and a
// publication that fails leaves the last one standing.
func (l *lease) publishFloor(ctx context.Context) error {
	l.publishing.Lock()
	defer l.publishing.Unlock()
	floor := l.e.feedFloor(l.e.opts.Now().Unix())
	if floor <= l.published {
		return nil
	}
	written := false
	err := l.e.guard.UpdateNoSync(ctx, func(tx kv.Tx) error {
		written = false
		v, err := tx.Get(slotKey(l.slot))
		if err != nil {
			return fmt.Errorf("read the gateway registry: %w", err)
		}
		var cur gatewayLease
		if err := json.Unmarshal(v, &cur); err != nil {
			return fmt.Errorf("gateway registry row %d %q: %w", l.slot, v, errCorruptRecord)
		}
		if cur.Holder != l.holder {
			return nil // the slot is another's now: renew finds out
		}
		cur.FeedFloor = floor
		b, _ := json.Marshal(cur)
		written = true
		return tx.Put(slotKey(l.slot), b)
	})
	if err == nil && written {
		l.published = floor
	}
	return err
}

// run renews the lease, counts the other gateways between renewals, and
// publishes the change feed floor while others are live, until release;
// its owner is the engine.
func (l *lease) run() {
	defer close(l.done)
	t := time.NewTicker(leaseRenewal)
	defer t.Stop()
	floors := time.NewTicker(floorInterval)
	defer floors.Stop()
	count := time.NewTicker(othersRefresh)
	defer count.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-count.C:
			l.tryFor(othersRefresh, "count the other gateways", l.countOthers)
			continue
		case <-floors.C:
			if l.others.Load() > 0 {
				l.tryFor(leaseRenewal, "publish the change feed floor", l.publishFloor)
			}
			continue
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), leaseRenewal)
		err := l.renew(ctx)
		if err == nil && !l.lost.Load() {
			err = l.e.ensureLSNs(ctx) // for writes that do not go through update
		}
		if err == nil && !l.lost.Load() {
			err = l.e.foldTallies(ctx)
		}
		cancel()
		switch {
		case l.lost.Load():
			l.e.log.Error("another gateway took this gateway's slot in the registry: refusing every request from now on", "holder", l.holder, "slot", l.slot)
			return
		case err != nil:
			l.e.log.Warn("renew the gateway's registration", "err", err)
		}
	}
}

// tryFor runs a step of the lease's upkeep, given at most d, and logs its
// failure: the next tick tries again.
func (l *lease) tryFor(d time.Duration, what string, step func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := step(ctx); err != nil {
		l.e.log.Warn(what, "err", err)
	}
}

// markUnfolded records that coll's tallies have delta rows to fold.
func (l *lease) markUnfolded(coll [8]byte) {
	l.unfolded.Lock()
	defer l.unfolded.Unlock()
	if l.unfolded.colls == nil {
		l.unfolded.colls = map[[8]byte]struct{}{}
	}
	l.unfolded.colls[coll] = struct{}{}
}

// markAllUnfolded marks every container for the next fold. A container
// created meanwhile is marked by its first write.
func (l *lease) markAllUnfolded(ctx context.Context) {
	colls, err := allContainers(ctx, l.e.guard)
	if err != nil {
		l.e.log.Warn("list the containers to fold their tallies", "err", err)
		return
	}
	for _, c := range colls {
		l.markUnfolded(c.rid())
	}
}

// takeUnfolded returns the containers to fold and forgets them.
func (l *lease) takeUnfolded() [][8]byte {
	l.unfolded.Lock()
	defer l.unfolded.Unlock()
	out := make([][8]byte, 0, len(l.unfolded.colls))
	for c := range l.unfolded.colls {
		out = append(out, c)
	}
	clear(l.unfolded.colls)
	return out
}

// check refuses work once the lease is lost.
func (l *lease) check() error {
	if l != nil && l.lost.Load() {
		return lethe.Errorf(lethe.CodeServiceUnavailable, "This gateway was stalled past its registration's lease, which another gateway has taken; it serves no more requests: send them to another gateway.")
	}
	return nil
}

// release stops the renewals and gives the slot up.
func (l *lease) release() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		if l.lost.Load() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := l.e.releasePurgeLeases(ctx); err != nil {
			l.e.log.Warn("release the purge leases", "err", err)
		}
		err := l.e.guard.Update(ctx, func(tx kv.Tx) error {
			v, err := tx.Get(slotKey(l.slot))
			if err != nil {
				return err
			}
			var cur gatewayLease
			if json.Unmarshal(v, &cur) == nil && cur.Holder == l.holder {
				return tx.Delete(slotKey(l.slot))
			}
			return nil
		})
		if err != nil && !errors.Is(err, kv.ErrNotFound) {
			l.e.log.Warn("leave the gateway registry", "err", err)
		}
	})
}

// Gateway describes this engine's place among the gateways of a shared
// store, for operators and tests.
type Gateway struct {
	// Shared is false on an exclusive (embedded) store; the rest is then zero.
	Shared bool
	// ID is the gateway's registration, unique per process start.
	ID string
	// Slot is its slot in the registry.
	Slot int
	// Others counts the other live gateways at the last renewal.
	Others int
}

// Gateway returns this engine's registration.
func (e *Engine) Gateway() Gateway {
	if e.lease == nil {
		return Gateway{}
	}
	return Gateway{Shared: true, ID: e.lease.holder, Slot: int(e.lease.slot), Others: int(e.lease.others.Load())}
}

// leasedStore is the store as a registered gateway sees it: every
// transaction is refused once its registration is lost, and the gateway runs
// no more writing transactions at once than its share of Options.Writers
// (writerGate). The writes of one gateway, and of several, meet on the index
// pages of neighbouring keys (docs/postgres.md section 3), where more of them
// at once conflict, and run again, more often.
type leasedStore struct {
	kv.Store
	l       *lease
	writers *writerGate
}

// View implements [kv.Store].
func (s leasedStore) View(ctx context.Context, fn func(kv.Reader) error) error {
	if err := s.l.check(); err != nil {
		return err
	}
	return s.Store.View(ctx, fn)
}

// Update implements [kv.Store].
func (s leasedStore) Update(ctx context.Context, fn func(kv.Tx) error) error {
	return s.update(ctx, fn, s.Store.Update)
}

// UpdateNoSync implements [kv.Store].
func (s leasedStore) UpdateNoSync(ctx context.Context, fn func(kv.Tx) error) error {
	return s.update(ctx, fn, s.Store.UpdateNoSync)
}

func (s leasedStore) update(ctx context.Context, fn func(kv.Tx) error, run func(context.Context, func(kv.Tx) error) error) error {
	if err := s.l.check(); err != nil {
		return err
	}
	weight, err := s.writers.enter(ctx, 1+int64(s.l.others.Load()))
	if err != nil {
		return err
	}
	defer s.writers.leave(weight)
	return run(ctx, fn)
}

// writerGate admits a gateway's writing transactions: the gateways over the
// database run Options.Writers of them at once between them, split evenly
// among the live ones and rounded up (writerShare). As gateways join and
// leave the share changes at once, for the transactions that start after.
//
// It is a weighted semaphore of limit² units, where a transaction weighs
// limit²/share, rounded down: exactly share of them fit for every share from
// 1 to limit. For share s < limit, s·⌊limit²/s⌋ <= limit², and
// (s+1)·⌊limit²/s⌋ > limit² since ⌊limit²/s⌋ > limit²/s - 1 and s²+s < limit².
type writerGate struct {
	sem   *semaphore.Weighted
	limit int64 // Options.Writers
}

func newWriterGate(limit int) *writerGate {
	l := int64(limit)
	return &writerGate{sem: semaphore.NewWeighted(l * l), limit: l}
}

// weight is what one transaction takes of the gate while gateways are live.
func (g *writerGate) weight(gateways int64) int64 {
	return g.limit * g.limit / writerShare(g.limit, gateways)
}

// enter waits until the transaction may run, while gateways are live, and
// returns the weight it holds until it leaves.
func (g *writerGate) enter(ctx context.Context, gateways int64) (int64, error) {
	w := g.weight(gateways)
	return w, g.sem.Acquire(ctx, w)
}

// leave gives back the weight enter returned.
func (g *writerGate) leave(weight int64) { g.sem.Release(weight) }

// writerShare is how many of limit writers each of the live gateways runs:
// an even split, rounded up, so that the gateways together run at least limit
// (and fewer than limit more): a gateway that joins never leaves the database
// fewer writes at once than before. Three gateways with four writers between
// them made a median 6% more writes with two each than with one each, in
// seven rounds on two shared cores, with two to three times the conflicts
// (BENCHMARKS.md, thirty-fourth session).
func writerShare(limit, gateways int64) int64 {
	return max(1, (limit+gateways-1)/max(1, gateways))
}
