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
)

// Storage limits. Two things refuse a write that adds data:
//
//   - the disk: Options.SpaceLow reports the store's filesystem nearly full
//     (the store refuses every write by itself, kv.ErrNoSpace, once it is
//     full);
//   - the quota: Options.MaxStorage caps the bytes of live documents, as a
//     Cosmos DB container's storage quota does. Expired documents do not count,
//     purged or not, so a container whose documents expire writes again as
//     soon as they expire.
//
// Either refusal is Cosmos DB's answer to an exhausted storage quota: 403
// Forbidden, "Storage quota for 'Document' exceeded." Deletions are never
// refused for the quota or a low disk, nor are metadata writes (databases,
// containers, offers), which are small and may be what frees space: a new
// defaultTtl expires documents at once.

// The live bytes change in three ways: writes add and remove documents, which
// the gate tallies as they commit; documents expire, which happens only when
// the server time reaches a new second; and metadata writes (a container
// deleted, a defaultTtl changed). So a count of the live bytes serves the
// quota, with the writes' tally added, for as long as the server second and
// the metadata generation (metaGuard) stay the same. Where the store is not
// exclusive there is no metadata generation, and a count also serves no
// longer than quotaRecount.
const quotaRecount = 250 * time.Millisecond

// storageGate enforces the limits and counts its refusals.
type storageGate struct {
	spaceLow func() bool
	max      int64

	mu      sync.Mutex // serialises recounts and guards key and at
	key     countKey   // what the count is valid for
	at      time.Time  // when it was taken (real clock); zero: never
	counted atomic.Int64
	since   atomic.Int64 // bytes writes added since the count (negative: removed)

	refusedDisk, refusedQuota atomic.Int64
}

// errStorageFull is the refusal of a write that adds data while the disk is
// nearly full; Translate turns the store's own refusal into the same error.
func errStorageFull() error {
	return lethe.Errorf(lethe.CodeForbidden, "Storage quota for 'Document' exceeded. The server's disk is full: writes that add data are refused until space is freed; reads, deletes and the TTL purge go on.")
}

func errQuotaExceeded(used, max int64) error {
	return lethe.Errorf(lethe.CodeForbidden, "Storage quota for 'Document' exceeded. Live documents take %d bytes of the server's %d-byte storage quota (--max-storage); delete documents, or let them expire, to write again.", used, max)
}

// admitGrowth refuses a write that adds data when the disk or the quota
// allows none.
func (e *Engine) admitGrowth(ctx context.Context) error {
	g := &e.storage
	if g.spaceLow != nil && g.spaceLow() {
		g.refusedDisk.Add(1)
		return errStorageFull()
	}
	if g.max <= 0 {
		return nil
	}
	used, err := e.liveBytes(ctx)
	if err != nil {
		return err
	}
	if used >= g.max {
		g.refusedQuota.Add(1)
		return errQuotaExceeded(used, g.max)
	}
	return nil
}

// wrote tallies the bytes a committed write added (negative: removed), for
// the quota between counts.
func (g *storageGate) wrote(bytes int64) {
	if g.max > 0 && bytes != 0 {
		g.since.Add(bytes)
	}
}

// countKey identifies the state a count of the live bytes is valid for.
type countKey struct {
	second int64  // server time
	gen    uint64 // metadata generation
}

// liveBytes returns the bytes of live documents in every container now: the
// last count while it holds, plus what writes added since.
func (e *Engine) liveBytes(ctx context.Context) (int64, error) {
	now, err := e.now(ctx)
	if err != nil {
		return 0, err
	}
	key := countKey{second: now, gen: e.guard.gen.Load()}
	g := &e.storage
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.at.IsZero() && g.key == key && (e.guard.exclusive || time.Since(g.at) < quotaRecount) {
		return g.counted.Load() + g.since.Load(), nil
	}
	// A write that commits during the count may be in it and in since as
	// well: that errs towards refusing, never past the quota.
	since := g.since.Load()
	started := time.Now()
	total, err := e.countLiveBytes(ctx, now)
	if err != nil {
		return 0, fmt.Errorf("count storage for the quota: %w", err)
	}
	g.counted.Store(total)
	g.since.Add(-since)
	g.key, g.at = key, started
	return total + g.since.Load(), nil
}

// countLiveBytes sums the usage of every container at server time now.
func (e *Engine) countLiveBytes(ctx context.Context, now int64) (int64, error) {
	colls, err := allContainers(ctx, e.store)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, c := range colls {
		u, err := e.containerUsageAt(ctx, c.DB, c.ID, now)
		if isNotFound(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			return 0, err
		}
		total += u.Bytes
	}
	return total, nil
}

// StorageStatus is what the engine knows of its storage limits, for metrics.
type StorageStatus struct {
	// QuotaBytes is Options.MaxStorage (0: no quota); UsedBytes the live
	// documents' bytes at the last count (only kept with a quota).
	QuotaBytes, UsedBytes int64
	// RefusedDisk and RefusedQuota count the writes refused since the engine
	// opened because the disk was nearly full, or the quota reached.
	RefusedDisk, RefusedQuota int64
}

// StorageStatus returns the storage limits' figures; with a quota it counts
// the live bytes if the last count is stale.
func (e *Engine) StorageStatus(ctx context.Context) StorageStatus {
	g := &e.storage
	st := StorageStatus{QuotaBytes: g.max, RefusedDisk: g.refusedDisk.Load(), RefusedQuota: g.refusedQuota.Load()}
	if g.max > 0 {
		if used, err := e.liveBytes(ctx); err == nil {
			st.UsedBytes = used
		}
	}
	return st
}

// Translate turns the store's refusals into the domain errors clients see: a
// full disk (kv.ErrNoSpace) is the 403 of an exhausted storage quota, a read
// the storage failed (kv.ErrIO) a 503 the client may retry, a key longer
// than the store takes (kv.ErrTooLarge) a 400. Other errors are returned
// unchanged.
func Translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kv.ErrNoSpace):
		return errStorageFull()
	case errors.Is(err, kv.ErrIO):
		return lethe.Errorf(lethe.CodeServiceUnavailable, "The server could not read its storage (an I/O error); the request may be retried.")
	case errors.Is(err, kv.ErrUnavailable):
		return lethe.Errorf(lethe.CodeServiceUnavailable, "The server lost its connection to its database (restarting or failing over); the request may be retried. A write retried after this may find that it was applied.")
	case errors.Is(err, kv.ErrTooLarge):
		return lethe.Errorf(lethe.CodeBadRequest, "The request needs a storage key longer than this server's store takes (PostgreSQL: about 2,700 bytes): the document's id and partition key together, a unique key's value, or an indexed property path is too long. Shorten it, or exclude the path from indexing.")
	}
	return err
}
