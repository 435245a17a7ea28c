package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lethe-db/lethe/kv"
)

// Purge leases. On a store shared by several gateways, exactly one gateway
// purges a container at a time: the one holding its purge lease, a row (M
// purge <collRid:8>) with the holder's registration and an expiry. The
// background purger takes a free or lapsed lease before it purges a
// container, renews it between batches once a renewal is due (every
// leaseRenewal), and leaves the container to others as soon as a renewal
// fails or finds another holder. A killed holder's containers are taken over
// once its leases lapse, within leaseTerm. Two gateways purging one
// container at once (a holder stalled past its lease) would only repeat
// work: the store's serializable transactions keep the data right.

// keyPurgeLeasePrefix starts the purge lease rows.
var keyPurgeLeasePrefix = []byte("Mpurge")

func purgeLeaseKey(rid [8]byte) []byte {
	return append(append([]byte(nil), keyPurgeLeasePrefix...), rid[:]...)
}

// purgeLeases holds the purge leases this gateway holds: their expiry, in
// Unix milliseconds of the lease clock (leaseNow).
type purgeLeases struct {
	mu   sync.Mutex
	held map[[8]byte]int64
}

// holdPurgeLease reports whether this gateway holds the container's purge
// lease, taking or renewing it when due. On an exclusive store it always
// does, without a lease.
func (e *Engine) holdPurgeLease(ctx context.Context, rid [8]byte) (bool, error) {
	if e.lease == nil {
		return true, nil
	}
	p := &e.purgeLeases
	now := e.leaseNow(ctx)
	p.mu.Lock()
	expires, ok := p.held[rid]
	p.mu.Unlock()
	if ok && expires-now > (leaseTerm-leaseRenewal).Milliseconds() {
		return true, nil // renewed less than leaseRenewal ago
	}
	mine := gatewayLease{Holder: e.lease.holder, Expires: now + leaseTerm.Milliseconds()}
	held := false
	err := e.guard.Update(ctx, func(tx kv.Tx) error {
		held = false
		v, err := tx.Get(purgeLeaseKey(rid))
		switch {
		case errors.Is(err, kv.ErrNotFound):
		case err != nil:
			return err
		default:
			var cur gatewayLease
			if err := json.Unmarshal(v, &cur); err != nil {
				return fmt.Errorf("purge lease %q: %w", v, errCorruptRecord)
			}
			if cur.Holder != mine.Holder && cur.live(now) {
				return nil // another gateway's
			}
		}
		held = true
		b, _ := json.Marshal(mine)
		return tx.Put(purgeLeaseKey(rid), b)
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = map[[8]byte]int64{}
	}
	if err != nil || !held {
		delete(p.held, rid)
		if err != nil {
			return false, fmt.Errorf("take the purge lease: %w", err)
		}
		return false, nil
	}
	p.held[rid] = mine.Expires
	return true, nil
}

// releasePurgeLeases gives up the purge leases this gateway holds, at Close,
// so that other gateways take its containers over at once.
func (e *Engine) releasePurgeLeases(ctx context.Context) error {
	p := &e.purgeLeases
	p.mu.Lock()
	rids := make([][8]byte, 0, len(p.held))
	for rid := range p.held {
		rids = append(rids, rid)
	}
	p.held = nil
	p.mu.Unlock()
	if len(rids) == 0 {
		return nil
	}
	return e.guard.Update(ctx, func(tx kv.Tx) error {
		for _, rid := range rids {
			v, err := tx.Get(purgeLeaseKey(rid))
			if errors.Is(err, kv.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			var cur gatewayLease
			if json.Unmarshal(v, &cur) == nil && cur.Holder == e.lease.holder {
				if err := tx.Delete(purgeLeaseKey(rid)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// PurgeLease is a container's purge lease as stored.
type PurgeLease struct {
	// Holder is the registration (Gateway.ID) of the gateway holding it;
	// empty when none does.
	Holder string
	// Expires is when it lapses unless renewed.
	Expires time.Time
}

// readPurgeLease reads the container's purge lease in r; a lapsed lease is
// none.
func (e *Engine) readPurgeLease(ctx context.Context, r kv.Reader, rid [8]byte) (PurgeLease, error) {
	if e.lease == nil {
		return PurgeLease{}, nil
	}
	v, err := r.Get(purgeLeaseKey(rid))
	if errors.Is(err, kv.ErrNotFound) {
		return PurgeLease{}, nil
	}
	if err != nil {
		return PurgeLease{}, err
	}
	var cur gatewayLease
	if err := json.Unmarshal(v, &cur); err != nil {
		return PurgeLease{}, fmt.Errorf("purge lease %q: %w", v, errCorruptRecord)
	}
	if !cur.live(e.leaseNow(ctx)) {
		return PurgeLease{}, nil
	}
	return PurgeLease{Holder: cur.Holder, Expires: time.UnixMilli(cur.Expires)}, nil
}
