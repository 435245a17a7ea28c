package engine

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/lethe-db/lethe/kv"
)

// metaGuard wraps the engine's store so that request paths can use database
// and container records kept in memory instead of reading them from the store
// in every transaction (two of a point read's three lookups), without ever
// using a record that differs from the one in their own snapshot.
//
// It works like a seqlock over every write the engine makes to those records.
// A transaction that writes one raises writers before its commit, and after
// Update returns it advances gen and lowers writers. A transaction records gen
// before it asks the store for its snapshot and checks writers and then gen
// again after; if no writer was active and gen did not move, its snapshot
// holds exactly the records of generation gen (the store's snapshot holds
// every Update that returned before the request, so every record writer
// counted in gen; one not yet finished shows in writers or moves gen), and a
// record cached at that generation is the one it would read. Records cached
// at an older generation are never used.
//
// This holds only when the store is [kv.Exclusive]: all writes come from this
// process, through this wrapper, and transactions read one fixed state. For
// any other store the guard passes calls through and nothing is cached.
type metaGuard struct {
	kv.Store
	exclusive bool
	writers   atomic.Int64  // transactions that wrote a record and have not finished
	gen       atomic.Uint64 // finished transactions that wrote a record

	// provisioned is raised once any resource of the store has provisioned
	// throughput (budget.go); until then Admit does nothing.
	provisioned atomic.Bool

	refs int // engines using the guard; guards' lock

	mu     sync.RWMutex
	scopes map[string]*cachedScope // by dbID + "\x00" + collID

	// seqs are the blocks of document sequence numbers of every engine on
	// an exclusive store (Engine.nextSeq): shared, so that the last number
	// given out in a container is known exactly (Engine.lastSeqGiven).
	seqs *seqBlocks
	// defined holds what counts of index entries proved on an exclusive
	// store (proofs.go); nil on any other.
	defined *definedProofs
}

// cachedScope is a container's decoded records at one generation. The records
// are shared: read-only, like those from the decode cache.
type cachedScope struct {
	gen uint64
	db  *dbRecord
	c   *collRecord
	l   *layout
}

// maxCachedScopes bounds the cache; past it the cache starts over.
const maxCachedScopes = 4096

// guards holds one guard per store, so that engines sharing a store in one
// process (tests open several) count each other's writes.
var guards = struct {
	sync.Mutex
	m map[kv.Store]*metaGuard
}{m: map[kv.Store]*metaGuard{}}

// acquireGuard returns the store's guard; release it with releaseGuard.
func acquireGuard(s kv.Store) *metaGuard {
	guards.Lock()
	defer guards.Unlock()
	g := guards.m[s]
	if g == nil {
		g = &metaGuard{Store: s, scopes: map[string]*cachedScope{}}
		if x, ok := s.(kv.Exclusive); ok {
			g.exclusive = x.Exclusive()
		}
		if g.exclusive {
			g.seqs = newSeqBlocks()
			g.defined = newDefinedProofs()
		}
		guards.m[s] = g
	}
	g.refs++
	return g
}

func releaseGuard(g *metaGuard) {
	guards.Lock()
	defer guards.Unlock()
	if g.refs--; g.refs == 0 {
		delete(guards.m, g.Store)
	}
}

// metaSnapshot is what a transaction knows about its metadata generation.
type metaSnapshot struct {
	guard *metaGuard
	gen   uint64
	valid bool // records of generation gen are exactly this snapshot's
	// proofEpoch is the definedness proofs' epoch loaded before the
	// snapshot was taken (definedProofs).
	proofEpoch uint64
}

// begin records the generation before the store takes its snapshot.
func (g *metaGuard) begin() (gen uint64, quiet bool) {
	gen = g.gen.Load()
	return gen, g.writers.Load() == 0
}

// settle completes the check once the snapshot is taken: writers first, then
// gen (the order matters: a writer lowers writers only after advancing gen).
func (g *metaGuard) settle(gen uint64, quiet bool) metaSnapshot {
	ok := quiet && g.writers.Load() == 0 && g.gen.Load() == gen
	return metaSnapshot{guard: g, gen: gen, valid: ok}
}

// View implements [kv.Store].
func (g *metaGuard) View(ctx context.Context, fn func(kv.Reader) error) error {
	if !g.exclusive {
		return g.Store.View(ctx, fn)
	}
	gen, quiet := g.begin()
	epoch := g.defined.epoch.Load()
	return g.Store.View(ctx, func(r kv.Reader) error {
		snap := g.settle(gen, quiet)
		snap.proofEpoch = epoch
		return fn(&metaReader{Reader: r, snap: snap})
	})
}

// Update implements [kv.Store].
func (g *metaGuard) Update(ctx context.Context, fn func(kv.Tx) error) error {
	return g.update(ctx, fn, g.Store.Update)
}

// UpdateNoSync implements [kv.Store].
func (g *metaGuard) UpdateNoSync(ctx context.Context, fn func(kv.Tx) error) error {
	return g.update(ctx, fn, g.Store.UpdateNoSync)
}

func (g *metaGuard) update(ctx context.Context, fn func(kv.Tx) error, run func(context.Context, func(kv.Tx) error) error) error {
	if !g.exclusive {
		return run(ctx, fn)
	}
	gen, quiet := g.begin()
	wrote := false // some attempt of fn wrote a record
	defer func() {
		if wrote {
			g.gen.Add(1)
			g.writers.Add(-1)
		}
	}()
	return run(ctx, func(tx kv.Tx) error {
		return fn(&metaTx{Tx: tx, snap: g.settle(gen, quiet), wrote: &wrote})
	})
}

// metaReader is a read-only transaction that knows its metadata generation.
type metaReader struct {
	kv.Reader
	snap metaSnapshot
}

// metaTx is a read-write transaction that knows its metadata generation and
// announces its writes to database and container records.
type metaTx struct {
	kv.Tx
	snap  metaSnapshot
	wrote *bool
}

// touch announces a write to a record before it is made. From then on this
// transaction reads its own writes, so it stops using cached records too.
func (t *metaTx) touch() {
	t.snap.valid = false
	t.snap.guard.defined.reset() // a policy may have changed what a prefix means
	if !*t.wrote {
		*t.wrote = true
		t.snap.guard.writers.Add(1)
	}
}

// isMetaKey reports whether key is a database or container record.
func isMetaKey(key []byte) bool {
	return len(key) > 0 && (key[0] == pfxDatabase || key[0] == pfxContainer)
}

// Put implements [kv.Tx].
func (t *metaTx) Put(key, value []byte) error {
	if isMetaKey(key) {
		t.touch()
	}
	return t.Tx.Put(key, value)
}

// Delete implements [kv.Tx].
func (t *metaTx) Delete(key []byte) error {
	if isMetaKey(key) {
		t.touch()
	}
	return t.Tx.Delete(key)
}

// DeleteSized implements [kv.Tx].
func (t *metaTx) DeleteSized(key []byte, valueSize int) error {
	if isMetaKey(key) {
		t.touch()
	}
	return t.Tx.DeleteSized(key, valueSize)
}

// DeleteRange implements [kv.Tx].
func (t *metaTx) DeleteRange(start, end []byte) error {
	// [start, end) meets the records' keys, which all begin with B or C.
	lo, hi := []byte{pfxDatabase}, []byte{pfxContainer + 1}
	if string(start) < string(hi) && (end == nil || string(end) > string(lo)) {
		t.touch()
	}
	return t.Tx.DeleteRange(start, end)
}

// snapshotOf returns r's metadata generation, if r came through a guard.
func snapshotOf(r kv.Reader) metaSnapshot {
	switch t := r.(type) {
	case *metaReader:
		return t.snap
	case *metaTx:
		return t.snap
	}
	return metaSnapshot{}
}

func scopeKey(dbID, collID string) string { return dbID + "\x00" + collID }

// cached returns the container's records at the snapshot's generation, if the
// snapshot may use them and they are cached.
func (s metaSnapshot) cached(dbID, collID string) *cachedScope {
	if !s.valid {
		return nil
	}
	s.guard.mu.RLock()
	e := s.guard.scopes[scopeKey(dbID, collID)]
	s.guard.mu.RUnlock()
	if e == nil || e.gen != s.gen {
		return nil
	}
	return e
}

// remember caches records read in this snapshot, when it may.
func (s metaSnapshot) remember(dbID, collID string, e *cachedScope) {
	if !s.valid {
		return
	}
	e.gen = s.gen
	s.guard.mu.Lock()
	if len(s.guard.scopes) >= maxCachedScopes {
		s.guard.scopes = map[string]*cachedScope{}
	}
	k := scopeKey(dbID, collID)
	if old := s.guard.scopes[k]; old == nil || old.gen <= e.gen {
		s.guard.scopes[k] = e
	}
	s.guard.mu.Unlock()
}
