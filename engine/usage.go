package engine

import (
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
// On a store shared by several gateways every write would update the same
// tally rows, and conflict: there each gateway keeps a stripe of its own,
// the tally key followed by its writer (4 bytes), and readers sum the stripes
// (a key without a stripe is the embedded store's, read alike). A stripe may
// be negative (a gateway deleting what another wrote); a transaction that
// lowers an expiry tally reads every stripe of its second and deletes them
// all when they sum to zero, so that the H index still holds only seconds
// with documents.
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

// apply writes the gathered changes, to the gateway's stripe (nil: none),
// and resets d. Bucket tallies that fall to zero are deleted, so the H index
// holds only seconds with documents.
func (d *usageDelta) apply(tx kv.Tx, coll [8]byte, stripe []byte) error {
	if d.total != (tally{}) {
		if err := addTally(tx, append(collKey(pfxUsage, coll), stripe...), d.total); err != nil {
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
		case stripe == nil:
			err = addTally(tx, []byte(k), t)
		case t.count < 0:
			err = lowerStripedTally(tx, []byte(k), stripe, t)
		default:
			err = addTally(tx, append([]byte(k), stripe...), t)
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

// lowerStripedTally adds the negative delta to the stripe of the tally at
// key, or deletes every stripe when they come to sum to zero.
func lowerStripedTally(tx kv.Tx, key, stripe []byte, delta tally) error {
	sum, err := readTally(tx, key)
	if err != nil {
		return err
	}
	sum.add(delta)
	if sum.count != 0 {
		return addTally(tx, append(key, stripe...), delta)
	}
	return tx.DeleteRange(key, kv.PrefixEnd(key))
}

// readTally returns the tally at key, summed over its stripes; zero when
// absent.
func readTally(r kv.Reader, key []byte) (tally, error) {
	var sum tally
	it := r.Scan(key, kv.PrefixEnd(key), false)
	defer it.Close()
	for it.Next() {
		if n := len(it.Key()) - len(key); n != 0 && n != stripeLen {
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

// stripeLen is the length of a stripe's suffix: the writer's number.
const stripeLen = 4

// stripe returns this engine's stripe suffix on a shared store, nil on an
// exclusive one.
func (e *Engine) stripe() []byte {
	if e.lease == nil {
		return nil
	}
	return e.lease.stripe
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
		first := true
		for it.Next() {
			t, derr := decodeTally(it.Value())
			if derr != nil {
				it.Close()
				return tally{}, 0, false, derr
			}
			pending.add(t)
			if first {
				at := decodeInt64(it.Key()[10:])
				if d := s.pol.DefaultTTL(); kind == pfxByTS && d != nil && *d > 0 && at+*d <= s.now {
					at += *d
				}
				if !ok || at < oldest {
					oldest, ok = at, true
				}
				first = false
			}
		}
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
		total, err := readTally(r, collKey(pfxUsage, s.rid))
		if err != nil {
			return fmt.Errorf("read usage: %w", err)
		}
		pending, _, _, err := s.expiredTally(r)
		if err != nil {
			return fmt.Errorf("read expiry tallies: %w", err)
		}
		u = Usage{Documents: total.count - pending.count, Bytes: total.bytes - pending.bytes}
		return nil
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
