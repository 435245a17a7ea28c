package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/throttle"
)

// keyProvisioned is written, once, with the first resource that has
// provisioned throughput (an explicit offer: at creation, or a default offer
// replaced). Until then every container is unlimited and Admit costs one
// atomic load, unless default offers are enforced.
var keyProvisioned = []byte("Mprovisioned")

// budgets owns the RU buckets of the resources with provisioned throughput,
// by the _rid of the resource whose throughput governs (the container's own,
// or its database's shared throughput). A bucket is made on first use, made
// again when the offer changes (a new etag) and dropped with its resource.
type budgets struct {
	mu sync.Mutex
	m  map[string]*budget // guarded by mu
}

type budget struct {
	etag   string // the offer version the bucket was made for
	bucket *throttle.Bucket
}

func newBudgets() *budgets { return &budgets{m: map[string]*budget{}} }

// get returns the bucket for owner's current offer tp, of which this
// gateway enforces share (see gatewayShare).
func (bs *budgets) get(owner string, tp *Throughput, share float64, now time.Time) *throttle.Bucket {
	rate := float64(tp.budget()) * share
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b := bs.m[owner]; b != nil && b.etag == tp.ETag && b.bucket.Rate() == rate {
		return b.bucket
	}
	b := &budget{etag: tp.ETag, bucket: throttle.New(rate, now)}
	bs.m[owner] = b
	return b.bucket
}

// peek returns owner's bucket if it has one.
func (bs *budgets) peek(owner string) *throttle.Bucket {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b := bs.m[owner]; b != nil {
		return b.bucket
	}
	return nil
}

// drop forgets the buckets of deleted or changed resources.
func (bs *budgets) drop(owners ...string) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for _, o := range owners {
		delete(bs.m, o)
	}
}

// loadProvisioned reads whether any resource of the store ever had
// provisioned throughput.
func (e *Engine) loadProvisioned(ctx context.Context) error {
	return e.store.View(ctx, func(r kv.Reader) error {
		_, err := r.Get(keyProvisioned)
		switch {
		case err == nil:
			e.guard.provisioned.Store(true)
		case !errors.Is(err, kv.ErrNotFound):
			return fmt.Errorf("read provisioned marker: %w", err)
		}
		return nil
	})
}

// markProvisioned records, in tx, that a resource has provisioned
// throughput. The in-memory flag is raised before the commit, so no request
// can see the resource and skip its budget.
func (e *Engine) markProvisioned(tx kv.Tx) error {
	e.guard.provisioned.Store(true)
	return tx.Put(keyProvisioned, []byte{1})
}

// mayBeProvisioned reports whether any container may have a budget. Stores
// shared with other processes always may.
func (g *metaGuard) mayBeProvisioned() bool { return !g.exclusive || g.provisioned.Load() }

// peekScope returns a container's cached records without a transaction, when
// the cache is provably current: no metadata write is in progress and none
// finished since the records were cached (see metaGuard). Otherwise nil.
func (g *metaGuard) peekScope(dbID, collID string) *cachedScope {
	if !g.exclusive {
		return nil
	}
	return g.settle(g.begin()).cached(dbID, collID)
}

// governing returns the throughput that governs a container and the _rid of
// the resource it belongs to: the container's own, else its database's;
// nil when it has none or does not exist. A default offer governs only when
// enforceDefault (Options.EnforceDefaultThroughput) is set: otherwise it is
// no provisioned throughput at all.
func governing(db *dbRecord, c *collRecord, enforceDefault bool) (string, *Throughput) {
	switch {
	case c.Throughput != nil:
		return c.RID, c.Throughput
	case db.Throughput != nil:
		return db.RID, db.Throughput
	case enforceDefault:
		return c.RID, defaultOffer(c)
	}
	return "", nil
}

// governedBy remembers, on a store shared with other gateways, which
// throughput governs each container, so that admitting a request does not
// cost a transaction of its own (three round trips on PostgreSQL) before the
// request's. An entry serves for admissionStaleness, and not at all once
// this engine has changed a database, a container or an offer since it was
// read: a change made through this gateway is enforced by its next request;
// one made through another gateway within admissionStaleness, as a gateway
// joining or leaving changes each gateway's share within a lease renewal
// (gatewayShare). The request itself still reads the records in its own
// transaction, so what it does and what it is charged are never stale.
type governedBy struct {
	*recent[governed] // by scopeKey
	// gen counts this engine's committed changes to records.
	gen atomic.Uint64
}

// governed is what throughputOf read for a container.
type governed struct {
	owner string
	tp    *Throughput
	gen   uint64    // governedBy.gen before the read
	read  time.Time // when it was read, on the monotonic clock
}

// admissionStaleness is how long a gateway on a shared store admits by a
// throughput it read (governedBy).
const admissionStaleness = time.Second

func newGovernedBy() *governedBy { return &governedBy{recent: newRecent[governed]()} }

// current returns the container's entry if it may still serve.
func (g *governedBy) current(key string) (governed, bool) {
	v, ok := g.get(key)
	return v, ok && v.gen == g.gen.Load() && time.Since(v.read) < admissionStaleness
}

// recordsChanged tells the engine's caches of records read from a shared
// store that this engine committed a change to a database, a container or
// an offer.
func (e *Engine) recordsChanged() { e.governs.gen.Add(1) }

// throughputOf looks up the throughput governing container collID of dbID.
func (e *Engine) throughputOf(ctx context.Context, dbID, collID string) (string, *Throughput, error) {
	if s := e.guard.peekScope(dbID, collID); s != nil {
		owner, tp := governing(s.db, s.c, e.opts.EnforceDefaultThroughput)
		return owner, tp, nil
	}
	key := scopeKey(dbID, collID)
	shared := !e.guard.exclusive
	if shared {
		if v, ok := e.governs.current(key); ok {
			return v.owner, v.tp, nil
		}
	}
	read := governed{gen: e.governs.gen.Load(), read: time.Now()}
	var owner string
	var tp *Throughput
	err := e.store.View(ctx, func(r kv.Reader) error {
		db, c, err := getContainer(r, dbID, collID)
		if isNotFound(err) {
			return nil // the request itself will say so
		}
		if err != nil {
			return err
		}
		owner, tp = governing(db, c, e.opts.EnforceDefaultThroughput)
		return nil
	})
	if err == nil && shared {
		read.owner, read.tp = owner, tp
		e.governs.put(key, read)
	}
	return owner, tp, err
}

// Admission is a request admitted by its container's budget. Once the request
// is done, Charge deducts what it cost. The zero Admission (unlimited
// containers) charges nothing.
type Admission struct {
	bucket *throttle.Bucket
	now    func() time.Time
}

// Charge deducts a finished request's charge, in RU, from the budget that
// admitted it. It is a no-op for unlimited containers.
func (a Admission) Charge(ru float64) {
	if a.bucket != nil {
		a.bucket.Charge(a.now(), ru)
	}
}

// substatusThrottled is Cosmos DB's substatus for a request refused because
// the provisioned throughput is used up.
const substatusThrottled = 3200

// Admit decides whether a request to container collID of database dbID (its
// documents: point operations, queries, feeds, batches) may start now,
// before it does any work. A container with provisioned throughput, its own
// or its database's, admits requests while its RU budget is positive; a
// container without any is unlimited. A missing container is admitted, so
// the request reports it. Returns a *lethe.Error TooManyRequests (substatus
// 3200) with RetryAfter set when the budget is exhausted; a refused request
// must change nothing and is not charged.
func (e *Engine) Admit(ctx context.Context, dbID, collID string) (Admission, error) {
	b, err := e.BudgetFor(ctx, dbID, collID)
	if err != nil || b == nil {
		return Admission{}, err
	}
	if ok, wait := b.Admit(e.opts.Now()); !ok {
		return Admission{}, &lethe.Error{
			Code:       lethe.CodeTooManyRequests,
			SubStatus:  substatusThrottled,
			Message:    fmt.Sprintf("Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request after %d ms.", wait.Milliseconds()),
			RetryAfter: wait,
		}
	}
	return Admission{bucket: b, now: e.opts.Now}, nil
}

// BudgetFor returns the RU bucket governing container collID of database
// dbID, its own or its database's shared one, or nil when the container is
// unlimited or unknown. Background work (the TTL purge) spends only
// Bucket.Spare and records it with Bucket.UseBackground, so it never gets a
// user request throttled.
func (e *Engine) BudgetFor(ctx context.Context, dbID, collID string) (*throttle.Bucket, error) {
	if !e.opts.EnforceDefaultThroughput && !e.guard.mayBeProvisioned() {
		return nil, nil
	}
	owner, tp, err := e.throughputOf(ctx, dbID, collID)
	if err != nil || tp == nil {
		return nil, err
	}
	return e.budgets.get(owner, tp, e.gatewayShare(), e.opts.Now()), nil
}

// gatewayShare is the part of each provisioned throughput this gateway
// enforces: on a store shared by n live gateways, 1/n of it, so that a
// container's budget is one budget across them when a load balancer spreads
// requests evenly (docs/postgres.md section 5). A bucket shared in the
// database would be exact, but a row every request writes.
func (e *Engine) gatewayShare() float64 {
	if e.lease == nil {
		return 1
	}
	return 1 / float64(1+e.lease.others.Load())
}
