package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/kv/pebblekv"
	"github.com/lethe-db/lethe/kv/pgkv"
	"github.com/lethe-db/lethe/metrics"
)

// newMetrics returns the server's metrics, or nil when --metrics=false (then
// nothing is recorded and /metrics is an ordinary unknown path). store is the
// embedded store, nil on PostgreSQL; pg the PostgreSQL store, nil otherwise.
func newMetrics(c *config, eng *engine.Engine, store *pebblekv.Store, pg *pgkv.Store, log *slog.Logger) *metrics.Metrics {
	if !c.metrics {
		return nil
	}
	opts := metrics.Options{
		TTL:        ttlSource{eng},
		Logger:     log,
		PurgeShare: func() float64 { return eng.PurgeStats().Share },
		PurgeBusy:  func() time.Duration { return eng.PurgeStats().Busy },
	}
	if store != nil { // the embedded store's own figures; PostgreSQL has its own monitoring
		opts.CompactionRest = func() time.Duration { return store.Pacing().Rested }
		opts.LoweredFiles = func() int64 { return store.Pacing().LoweredFiles }
		opts.DiskBytes = func() uint64 { return store.IOStats().DiskBytes }
		opts.Storage = func() metrics.Storage { return storageFigures(eng, store) }
	}
	if pg != nil {
		opts.StoreRetries = func() int64 { return pg.Stats().Retries }
		opts.StoreReconnects = func() int64 { return pg.Stats().Reconnects }
		opts.StoreRoundTrips = func() int64 { return pg.Stats().RoundTrips }
	}
	return metrics.New(opts)
}

// storageFigures gathers the disk's and the storage limits' figures for a
// scrape.
func storageFigures(eng *engine.Engine, store *pebblekv.Store) metrics.Storage {
	d, stalls, lookups, filter, io := store.Disk(), store.Stalls(), store.LookupCache(), store.KeyFilter(), store.IOStats()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e := eng.StorageStatus(ctx)
	return metrics.Storage{
		Guarded:       d.Guarded,
		DiskFreeBytes: d.FreeBytes, DiskSizeBytes: d.TotalBytes, ReserveBytes: d.ReserveBytes, BallastBytes: d.BallastBytes,
		DiskLow: d.Low, DiskFull: d.Exhausted || d.ReadOnly,
		QuotaBytes: e.QuotaBytes, UsedBytes: e.UsedBytes,
		RefusedDiskLow: e.RefusedDisk, RefusedDiskFull: d.RefusedWrites, RefusedQuota: e.RefusedQuota,
		NoSpaceErrors: d.NoSpaceErrors, WaitingWrites: d.WaitingWrites,
		SlowOperations: d.SlowOperations, ReadErrors: d.ReadErrors, BackgroundErrors: d.BackgroundErrors,
		StallsMemTables: stalls.MemTables, StallsLevel0: stalls.Level0, StallSeconds: stalls.Time.Seconds(),
		LookupHits: lookups.Hits, LookupMisses: lookups.Misses,
		KeyFilterAbsent: filter.Absent, KeyFilterMaybe: filter.Maybe, KeyFilterBytes: filter.Bytes,
		Commits: int64(io.Commits), WALSyncs: int64(io.WALSyncs),
	}
}

// ttlSource adapts the engine's expiry backlog to the metrics package.
type ttlSource struct{ eng *engine.Engine }

// ContainerTTL implements metrics.TTLSource.
func (s ttlSource) ContainerTTL(ctx context.Context) ([]metrics.ContainerTTL, error) {
	backlog, err := s.eng.TTLBacklog(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]metrics.ContainerTTL, len(backlog))
	for i, b := range backlog {
		out[i] = metrics.ContainerTTL{
			Database: b.Database, Container: b.Container,
			ExpiredPendingDocs: b.PendingDocuments, ExpiredPendingBytes: b.PendingBytes,
			OldestPendingAge: b.OldestPendingAge,
			PurgedDocs:       b.Purged, PurgeDeferred: b.PurgeDeferred,
		}
	}
	return out, nil
}

// envBoolDefault reads a boolean environment variable that defaults to def:
// "0", "false", "no" and "off" turn it off, "1", "true", "yes" and "on" turn
// it on, anything else leaves def.
func envBoolDefault(name string, def bool) bool {
	switch strings.ToLower(os.Getenv(name)) {
	case "1", "true", "yes", "on":
		return true
	case "0", "false", "no", "off":
		return false
	}
	return def
}
