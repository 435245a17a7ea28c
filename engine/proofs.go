package engine

import (
	"bytes"
	"context"
	"math"
	"sync"
	"sync/atomic"

	"github.com/lethe-db/lethe/kv"
)

// Definedness proofs. An ascending read of an index in ORDER BY order is
// right only when no document the query selects lacks the key (such a
// document sorts first and has no entry), and definedInEvery proves that
// by counting the index's entries against the container's stored
// documents (or, when an equality selects the documents, against that
// value's entries in its path index): every entry, on every page. Once
// proved, the fact stays true until a write stores a document without an
// entry under the index's prefix (one the equality selects), since a
// delete, an expiry or a purge removes a document and its entries together
// and a write that has the key adds one of each; or until the container's
// policy changes what the prefix means. definedProofs keeps such facts in
// memory, so that a count runs once rather than on every page.
//
// It is kept only over a [kv.Exclusive] store, whose Updates run one at a
// time and whose snapshots hold every Update that returned before them:
//
//   - A prefix is watched from the Update that registers it (watch), which
//     runs between two writers: every write whose transaction runs after it
//     checks its document against the watched prefixes, and one without an
//     entry under a prefix breaks that prefix's proof before it commits.
//   - Every write that ran before the registration has committed before it
//     finished, so a count on a snapshot taken after the registration (its
//     View started once epoch had reached the registration's) sees them: a
//     count that finds every document proves the prefix.
//   - A query may use a proof when its own snapshot was taken after the
//     count's (its epoch is at least the proof's) and nothing has broken it
//     by the time it looks, after its snapshot: a write its snapshot holds
//     broke the proof before committing.
//
// Registering costs an empty Update, and a proof the next count (two
// queries, each counting once); a write pays a comparison of its index keys
// with the prefixes watched in its container, nothing in containers where
// none is.
type definedProofs struct {
	// epoch orders registrations and proofs with the snapshots of queries,
	// which load it before their View (metaSnapshot.proofEpoch).
	epoch atomic.Uint64
	// watched counts the prefixes watched in every container, so that a
	// write in a store without any skips the lookup.
	watched atomic.Int64

	mu     sync.Mutex
	byColl map[[8]byte][]*definedProof
}

// definedProof is one watched prefix of a container: every document with
// an entry under among (every document, when nil) has one under prefix.
type definedProof struct {
	among, prefix []byte
	// since is the epoch after the registration: snapshots of queries that
	// loaded at least it hold every write made before the prefix was
	// watched. The largest epoch until the registration has returned.
	since atomic.Uint64
	// proven is the epoch after a count, on such a snapshot, found every
	// document to have an entry under prefix; 0 until then.
	proven atomic.Uint64
	// broken is set by a write that stores a document without an entry
	// under prefix; the proof is then never used again, and the prefix is
	// registered anew.
	broken atomic.Bool
}

// Bounds on what definedProofs keeps: past them it starts over, which only
// costs counts.
const (
	maxProofsPerContainer = 16
	maxProofContainers    = 1024
)

func newDefinedProofs() *definedProofs {
	return &definedProofs{byColl: map[[8]byte][]*definedProof{}}
}

// definednessCounts counts the counts definedInEvery has made, for tests
// that check which pages count and which use a proof.
var definednessCounts atomic.Int64

// find returns coll's current proof for among and prefix, or nil.
func (d *definedProofs) find(coll [8]byte, among, prefix []byte) *definedProof {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.byColl[coll] {
		if p.is(among, prefix) {
			return p
		}
	}
	return nil
}

func (p *definedProof) is(among, prefix []byte) bool {
	return bytes.Equal(p.prefix, prefix) && bytes.Equal(p.among, among) && (p.among == nil) == (among == nil)
}

// holds reports whether a query whose snapshot was taken at epoch may take
// it as proved that every document of coll with an entry under among has
// one under prefix.
func (d *definedProofs) holds(coll [8]byte, among, prefix []byte, epoch uint64) bool {
	p := d.find(coll, among, prefix)
	if p == nil || p.broken.Load() {
		return false
	}
	proven := p.proven.Load()
	return proven != 0 && epoch >= proven
}

// counted records that a count on a snapshot taken at epoch found every
// document of coll with an entry under among to have one under prefix: it
// proves a watched, unbroken prefix whose registration the snapshot
// follows, and registers one that is not watched (or whose proof broke)
// through store, so that a later count proves it.
func (d *definedProofs) counted(ctx context.Context, store kv.Store, coll [8]byte, among, prefix []byte, epoch uint64) {
	p := d.find(coll, among, prefix)
	if p != nil && !p.broken.Load() {
		if epoch >= p.since.Load() && p.proven.Load() == 0 {
			// After the count's snapshot: later snapshots hold what it held.
			p.proven.CompareAndSwap(0, d.epoch.Add(1))
		}
		return
	}
	d.watch(ctx, store, coll, among, prefix)
}

// watch registers prefix in coll's watched prefixes, replacing a broken
// proof of it, in an Update of its own: writers run one at a time, so each
// either finished before it or checks the prefix. A store that refuses the
// Update (closed, or out of space) leaves the prefix unwatched.
func (d *definedProofs) watch(ctx context.Context, store kv.Store, coll [8]byte, among, prefix []byte) {
	p := &definedProof{among: bytes.Clone(among), prefix: bytes.Clone(prefix)}
	p.since.Store(math.MaxUint64)
	err := store.Update(ctx, func(kv.Tx) error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if len(d.byColl) >= maxProofContainers {
			d.resetLocked()
		}
		list := d.byColl[coll]
		for i, q := range list {
			if q.is(among, prefix) {
				list = append(list[:i:i], list[i+1:]...)
				d.watched.Add(-1)
				break
			}
		}
		if len(list) >= maxProofsPerContainer {
			list = list[1:] // the oldest
			d.watched.Add(-1)
		}
		d.byColl[coll] = append(list, p)
		d.watched.Add(1)
		return nil
	})
	if err != nil {
		// Listed or not, it is never proved: the next count watches anew.
		p.broken.Store(true)
		return
	}
	// Set after the Update has returned: a View that loads it or a later
	// epoch starts after every write the registration followed.
	p.since.Store(d.epoch.Add(1))
}

// wrote checks a document version a write of coll stores, whose index and
// unique key entries are keys, against the container's watched prefixes,
// and breaks the proof of each it has no entry under (while it has one
// under the proof's among). It runs inside the write's transaction, before
// the commit.
func (d *definedProofs) wrote(coll [8]byte, keys [][]byte) {
	if d.watched.Load() == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.byColl[coll] {
		if !p.broken.Load() && (p.among == nil || hasKeyUnder(keys, p.among)) && !hasKeyUnder(keys, p.prefix) {
			p.broken.Store(true)
		}
	}
}

// hasKeyUnder reports whether one of keys starts with prefix.
func hasKeyUnder(keys [][]byte, prefix []byte) bool {
	for _, k := range keys {
		if bytes.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// reset forgets every proof: a database or container record changed, and
// with it, perhaps, what a prefix means (a policy that no longer indexes a
// path, a composite index at another ordinal). It runs inside the
// transaction that writes the record, before the commit.
func (d *definedProofs) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.resetLocked()
}

func (d *definedProofs) resetLocked() {
	for _, list := range d.byColl {
		for _, p := range list {
			p.broken.Store(true) // a query holding it stops using it
		}
	}
	clear(d.byColl)
	d.watched.Store(0)
}
