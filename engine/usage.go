package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/ttl"
)

// Storage accounting. Every container keeps, in the same transactions as its
// documents:
//
//   - K <collRid>: the count and total size of its stored documents, expired
//     or not (a tally);
//   - H <collRid> <T|X> <instant:8>: a tally of the stored documents whose
//     expiry entry (T: last write, X: own expiry instant) is at that second.
//
// On a store shared by several gateways every write would read and rewrite
// the same tally rows, and conflict. There a transaction never reads a
// tally: it inserts its change as a delta row of its own, the tally key
// followed by a fresh delta id (8 bytes, an LSN, which no two transactions of
// any gateway share), and readers sum a tally's rows. Deltas may be negative
// (a delete), so an expiry second's rows may sum to zero. Each gateway folds,
// every few seconds, the tallies of the containers it wrote: a tally's rows
// are replaced by one row holding their sum, or by none when it is zero
// (foldTallies). A key without a suffix is the embedded store's, and one with
// a 4-byte suffix the stripe of an earlier build; both are read alike.
//
// The documents expired at an instant are exactly those whose T entries are at
// or below the default cutoff and whose X entries are at or below the own
// cutoff (the rule the purger applies), so the usage a client sees is the K
// tally minus the H tallies up to the cutoffs: exact from the instant documents
// expire, before any physical deletion, at a cost proportional to the number
// of distinct seconds awaiting purge, not to the number of documents.

// tally is a count of documents and their total size in bytes.
type tally struct{ count, bytes int64 }

func (t tally) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(t.count))
	return binary.BigEndian.AppendUint64(b, uint64(t.bytes))
}

func decodeTally(v []byte) (tally, error) {
	if len(v) != 16 {
		return tally{}, errCorruptRecord
	}
	return tally{int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))}, nil
}

func (t *tally) add(o tally) { t.count += o.count; t.bytes += o.bytes }

// bucketKey returns the H key of the expiry entry key k (a T or X key).
func bucketKey(k []byte) []byte {
	b := make([]byte, 0, 18)
	b = append(b, pfxExpiryBucket)
	b = append(b, k[1:9]...) // the container's RID
	b = append(b, k[0])
	return append(b, k[9:17]...) // the instant
}

// usageDelta gathers one transaction's changes to a container's tallies, so
// that each tally key is read and written once per transaction.
type usageDelta struct {
	total   tally
	buckets map[string]tally
}

// add counts a stored document version in (sign 1) or out (sign -1), given
// its fixed keys and size.
func (d *usageDelta) add(fixed [][]byte, size int, sign int64) {
	d.total.add(tally{sign, sign * int64(size)})
	if len(fixed) < 2 { // no expiry entry: never expires
		return
	}
	if d.buckets == nil {
		d.buckets = map[string]tally{}
	}
	k := string(bucketKey(fixed[1]))
	t := d.buckets[k]
	t.add(tally{sign, sign * int64(size)})
	d.buckets[k] = t
}

// apply writes the gathered changes and resets d: with delta nil, by reading
// and rewriting each tally (an exclusive store), deleting bucket tallies that
// fall to zero so that the H index holds only seconds with documents; else as
// delta rows with the suffix delta, written without reading anything.
func (d *usageDelta) apply(tx kv.Tx, coll [8]byte, delta []byte) error {
	if d.total != (tally{}) {
		var err error
		if key := collKey(pfxUsage, coll); delta == nil {
			err = addTally(tx, key, d.total)
		} else {
			err = tx.Put(append(key, delta...), d.total.encode())
		}
		if err != nil {
			return fmt.Errorf("update container usage: %w", err)
		}
	}
	keys := make([]string, 0, len(d.buckets))
	for k := range d.buckets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t := d.buckets[k]
		var err error
		switch {
		case t == (tally{}):
		case delta == nil:
			err = addTally(tx, []byte(k), t)
		default:
			err = tx.Put(append([]byte(k), delta...), t.encode())
		}
		if err != nil {
			return fmt.Errorf("update expiry tally: %w", err)
		}
	}
	*d = usageDelta{}
	return nil
}

func addTally(tx kv.Tx, key []byte, delta tally) error {
	var cur tally
	v, err := tx.Get(key)
	switch {
	case err == nil:
		if cur, err = decodeTally(v); err != nil {
			return err
		}
	case !errors.Is(err, kv.ErrNotFound):
		return err
	}
	cur.add(delta)
	if cur == (tally{}) {
		return tx.Delete(key)
	}
	return tx.Put(key, cur.encode())
}

// readTally returns the tally at key, summed over its rows; zero when
// absent.
func readTally(r kv.Reader, key []byte) (tally, error) {
	var sum tally
	it := r.Scan(key, kv.PrefixEnd(key), false)
	defer it.Close()
	for it.Next() {
		if !tallySuffix(len(it.Key()) - len(key)) {
			continue // another tally's key that starts alike: none today
		}
		t, err := decodeTally(it.Value())
		if err != nil {
			return tally{}, err
		}
		sum.add(t)
	}
	return sum, it.Close()
}

// Lengths of a tally row's suffix after its tally key: none (an exclusive
// store's one row), a gateway's stripe (an earlier build), a delta id.
const (
	stripeLen  = 4
	deltaIDLen = 8
)

// tallySuffix reports whether n is the length of a tally row's suffix.
func tallySuffix(n int) bool { return n == 0 || n == stripeLen || n == deltaIDLen }

// tallyDelta returns the suffix for one transaction's delta rows of the
// container coll's tallies on a shared store, a fresh LSN, and marks the
// container for the next fold; nil on an exclusive store, whose tallies are
// rewritten in place.
func (e *Engine) tallyDelta(coll [8]byte) []byte {
	if e.lease == nil {
		return nil
	}
	e.lease.markUnfolded(coll)
	return binary.BigEndian.AppendUint64(nil, e.nextLSN())
}

// foldTallies folds the tallies of the containers this gateway wrote since
// the last fold: each tally's delta rows become one row holding their sum, or
// none when it is zero. Folds read the tallies, which no write does, so they
// never make a write conflict; two gateways folding one container at once
// conflict with each other, and one runs again.
func (e *Engine) foldTallies(ctx context.Context) error {
	var errs []error
	for _, coll := range e.lease.takeUnfolded() {
		err := e.guard.Update(ctx, func(tx kv.Tx) error {
			if err := foldTally(tx, collKey(pfxUsage, coll), 0, e.nextLSN); err != nil {
				return err
			}
			return foldTally(tx, collKey(pfxExpiryBucket, coll), 1+8, e.nextLSN)
		})
		if err != nil {
			e.lease.markUnfolded(coll)
			errs = append(errs, fmt.Errorf("fold the tallies of container %x: %w", coll, err))
		}
	}
	return errors.Join(errs...)
}

// foldTally folds the tallies under prefix, each named by the prefix and
// the next nameLen bytes (0: the prefix is the one tally), into one row
// apiece, suffixed with a fresh delta id from next.
func foldTally(tx kv.Tx, prefix []byte, nameLen int, next func() uint64) error {
	type group struct {
		name []byte
		rows int
		sum  tally
	}
	var groups []group
	it := tx.Scan(prefix, kv.PrefixEnd(prefix), false)
	for it.Next() {
		k := it.Key()
		if len(k) < len(prefix)+nameLen || !tallySuffix(len(k)-len(prefix)-nameLen) {
			continue
		}
		name := k[:len(prefix)+nameLen]
		if len(groups) == 0 || !bytes.Equal(groups[len(groups)-1].name, name) {
			groups = append(groups, group{name: append([]byte(nil), name...)})
		}
		t, err := decodeTally(it.Value())
		if err != nil {
			it.Close()
			return err
		}
		g := &groups[len(groups)-1]
		g.rows++
		g.sum.add(t)
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, g := range groups {
		if g.rows == 1 && g.sum != (tally{}) {
			continue
		}
		// Only the rows this transaction read go: a delta inserted
		// meanwhile by another gateway's commit is not in its snapshot.
		if err := tx.DeleteRange(g.name, kv.PrefixEnd(g.name)); err != nil {
			return err
		}
		if g.sum != (tally{}) {
			if err := tx.Put(binary.BigEndian.AppendUint64(g.name, next()), g.sum.encode()); err != nil {
				return err
			}
		}
	}
	return nil
}

// cutoff returns the highest instant of expiry index kind (T or X) whose
// entries are expired at the scope's instant, or ttl.NoCut: the one rule the
// purger and the storage accounting share.
func (s *scope) cutoff(kind byte) int64 {
	if kind == pfxByTS {
		return ttl.DefaultCutoff(s.now, s.pol, s.c.Watermarks)
	}
	return ttl.OwnCutoff(s.now, s.pol, s.c.Watermarks)
}

// liveTally returns the count and size of the scope's container's live
// documents: those it stores less those expired at the scope's instant.
func (s *scope) liveTally(r kv.Reader) (tally, error) {
	total, err := s.storedTally(r)
	if err != nil {
		return tally{}, fmt.Errorf("read usage: %w", err)
	}
	pending, _, _, err := s.expiredTally(r)
	if err != nil {
		return tally{}, fmt.Errorf("read expiry tallies: %w", err)
	}
	return tally{total.count - pending.count, total.bytes - pending.bytes}, nil
}

// storedTally returns the count and size of the documents the scope's
// container stores, expired or not.
func (s *scope) storedTally(r kv.Reader) (tally, error) {
	return readTally(r, collKey(pfxUsage, s.rid))
}

// expiredEntries returns the key range of the expiry entries of kind (T or
// X) of the documents expired at the scope's instant, from the first entry
// of kind to the cutoff's second, included; false when none of kind is.
func (s *scope) expiredEntries(kind byte) (keyRange, bool) {
	cut := s.cutoff(kind)
	if cut == ttl.NoCut {
		return keyRange{}, false
	}
	return keyRange{collKey(kind, s.rid), tsBound(kind, s.rid, cut+1)}, true
}

// expiredTally sums the documents of the scope's container that are expired
// at its instant but still stored, and returns when the longest-waiting of
// them expired (ok false when there are none). A document without own ttl
// expired defaultTtl after its last write, or, if it expired under an earlier
// policy, at some time after its last write, which is then the answer.
func (s *scope) expiredTally(r kv.Reader) (pending tally, oldest int64, ok bool, err error) {
	for _, kind := range []byte{pfxByTS, pfxByExpiry} {
		cut := s.cutoff(kind)
		if cut == ttl.NoCut {
			continue
		}
		start := append(collKey(pfxExpiryBucket, s.rid), kind)
		end := appendInt64(append(collKey(pfxExpiryBucket, s.rid), kind), cut+1) // the cutoff second included
		it := r.Scan(start, end, false)
		bucketLen := len(start) + 8
		var second []byte // the second whose rows are being summed
		var sum tally
		kindOldest := false
		// finish adds a second's sum; the first second whose rows do not
		// cancel out is the oldest of its kind.
		finish := func() {
			if second == nil {
				return
			}
			pending.add(sum)
			if sum.count == 0 || kindOldest {
				return
			}
			kindOldest = true
			at := decodeInt64(second[len(start):])
			if d := s.pol.DefaultTTL(); kind == pfxByTS && d != nil && *d > 0 && at+*d <= s.now {
				at += *d
			}
			if !ok || at < oldest {
				oldest, ok = at, true
			}
		}
		for it.Next() {
			k := it.Key()
			if len(k) < bucketLen || !tallySuffix(len(k)-bucketLen) {
				continue
			}
			if second == nil || !bytes.Equal(k[:bucketLen], second) {
				finish()
				second, sum = append(second[:0], k[:bucketLen]...), tally{}
			}
			t, derr := decodeTally(it.Value())
			if derr != nil {
				it.Close()
				return tally{}, 0, false, derr
			}
			sum.add(t)
		}
		finish()
		if err := it.Close(); err != nil {
			return tally{}, 0, false, err
		}
	}
	return pending, oldest, ok, nil
}

// Usage is a container's storage usage as clients see it: its live documents.
type Usage struct {
	// Documents is the number of live documents.
	Documents int64
	// Bytes is their total stored size.
	Bytes int64
}

// ContainerUsage returns the container's usage at the current server time.
// Documents count from their write until the instant they expire, whether or
// not they have been physically deleted yet.
func (e *Engine) ContainerUsage(ctx context.Context, dbID, collID string) (Usage, error) {
	defer e.begin()()
	return e.containerUsage(ctx, dbID, collID)
}

// containerUsage is ContainerUsage without marking a user operation.
func (e *Engine) containerUsage(ctx context.Context, dbID, collID string) (Usage, error) {
	now, err := e.now(ctx)
	if err != nil {
		return Usage{}, err
	}
	return e.containerUsageAt(ctx, dbID, collID, now)
}

// containerUsageAt is the container's usage at server time now.
func (e *Engine) containerUsageAt(ctx context.Context, dbID, collID string, now int64) (Usage, error) {
	var u Usage
	err := e.store.View(ctx, func(r kv.Reader) error {
		s, err := e.scope(r, dbID, collID, now)
		if err != nil {
			return err
		}
		live, err := s.liveTally(r)
		u = Usage{Documents: live.count, Bytes: live.bytes}
		return err
	})
	return u, err
}

// ContainerTTL is one container's expiry backlog, for operators.
type ContainerTTL struct {
	Database, Container string
	// PendingDocuments and PendingBytes are the documents expired but not yet
	// physically deleted.
	PendingDocuments, PendingBytes int64
	// OldestPending is when the longest-waiting of them expired (zero when
	// there is none). For a document that expired under an earlier, shorter
	// defaultTtl it is its last write, an upper bound on the wait.
	OldestPending time.Time
	// OldestPendingAge is how long ago, in server time, OldestPending was.
	OldestPendingAge time.Duration
	// Purged is how many of its documents the purger deleted since the engine
	// opened; PurgeDeferred how many purge batches waited for spare capacity.
	Purged, PurgeDeferred int64
}

// TTLBacklog returns the expiry backlog of every container that has TTL on
// or documents expired under an earlier policy, ordered by database and name.
func (e *Engine) TTLBacklog(ctx context.Context) ([]ContainerTTL, error) {
	colls, err := allContainers(ctx, e.store)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	now, err := e.now(ctx)
	if err != nil {
		return nil, err
	}
	var out []ContainerTTL
	for _, c := range colls {
		if !c.TTLOn && c.Watermarks == ttl.Initial {
			continue
		}
		row := ContainerTTL{Database: c.DB, Container: c.ID}
		err := e.store.View(ctx, func(r kv.Reader) error {
			s, err := e.scope(r, c.DB, c.ID, now)
			if err != nil {
				return err
			}
			if s.c.RID != c.RID {
				return notFound() // replaced meanwhile
			}
			pending, oldest, ok, err := s.expiredTally(r)
			if err != nil {
				return err
			}
			row.PendingDocuments, row.PendingBytes = pending.count, pending.bytes
			if ok {
				row.OldestPending = time.Unix(oldest, 0)
				row.OldestPendingAge = time.Duration(now-oldest) * time.Second
			}
			row.Purged, row.PurgeDeferred = e.purger.countsOf(s.rid)
			return nil
		})
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("expiry backlog of %s/%s: %w", c.DB, c.ID, err)
		}
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Database != out[j].Database {
			return out[i].Database < out[j].Database
		}
		return out[i].Container < out[j].Container
	})
	return out, nil
}
