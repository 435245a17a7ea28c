package engine

import (
	"context"
	"time"

	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/ttl"
)

// TTLStatus is what TTL is doing to one container's data, for the web
// console: its policy, the expired documents still stored (the purge's
// backlog), and how many documents expire in each coming minute and hour.
type TTLStatus struct {
	// Now is the server time the status was taken at (Unix seconds).
	Now int64
	// Policy is the container's TTL policy.
	Policy ttl.Policy
	// PendingDocuments and PendingBytes are the documents expired but not
	// yet physically deleted; OldestPending when the longest-waiting of them
	// expired (zero when there is none; see ContainerTTL).
	PendingDocuments, PendingBytes int64
	OldestPending                  time.Time
	// Purged is how many of its documents the purger deleted since the
	// engine opened.
	Purged int64
	// ByMinute[i] counts the documents that expire in the i-th coming minute,
	// at an instant in (Now + 60i, Now + 60(i+1)]; ByHour likewise by hour.
	ByMinute [60]int64
	ByHour   [24]int64
	// PurgeLease is, on a store shared by several gateways, the gateway
	// that purges the container (purgelease.go); zero on an exclusive store.
	PurgeLease PurgeLease
}

// ContainerTTLStatus returns the container's TTL status at the current
// server time. It reads the per-second expiry tallies (H), never the
// documents: its cost follows the seconds of the coming day that have
// expiring documents, not the container's size.
func (e *Engine) ContainerTTLStatus(ctx context.Context, dbID, collID string) (TTLStatus, error) {
	var st TTLStatus
	err := e.view(ctx, dbID, collID, func(r kv.Reader, s *scope) error {
		st = TTLStatus{Now: s.now, Policy: s.pol}
		pending, oldest, ok, err := s.expiredTally(r)
		if err != nil {
			return err
		}
		st.PendingDocuments, st.PendingBytes = pending.count, pending.bytes
		if ok {
			st.OldestPending = time.Unix(oldest, 0)
		}
		st.Purged, _ = e.purger.countsOf(s.rid)
		if st.PurgeLease, err = e.readPurgeLease(ctx, r, s.rid); err != nil {
			return err
		}
		return s.upcomingExpiries(r, &st)
	})
	return st, err
}

// upcomingExpiries fills st's minute and hour counts from the expiry
// tallies: the T tallies (by last write) of documents that expire at _ts +
// defaultTtl, the X tallies (by own expiry instant) of the others. Every
// tally above a kind's cutoff is of live documents, which expire at an
// instant after now under the current policy.
func (s *scope) upcomingExpiries(r kv.Reader, st *TTLStatus) error {
	const day = 24 * 3600
	for _, kind := range []byte{pfxByTS, pfxByExpiry} {
		cut := s.cutoff(kind)
		if cut == ttl.NoCut {
			continue
		}
		var shift int64 // from a tally's instant to its documents' expiry
		if kind == pfxByTS {
			shift = s.pol.Default
		}
		base := append(collKey(pfxExpiryBucket, s.rid), kind)
		start := appendInt64(append([]byte(nil), base...), cut+1) // after the cutoff second
		end := appendInt64(append([]byte(nil), base...), s.now+day-shift+1)
		it := r.Scan(start, end, false)
		for it.Next() {
			t, err := decodeTally(it.Value())
			if err != nil {
				it.Close()
				return err
			}
			at := decodeInt64(it.Key()[len(base):]) + shift
			if at <= s.now {
				continue // cannot happen above the cutoff; never count it
			}
			in := at - s.now - 1 // (now, now+60] is minute 0
			if in < 3600 {
				st.ByMinute[in/60] += t.count
			}
			st.ByHour[in/3600] += t.count
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	return nil
}
