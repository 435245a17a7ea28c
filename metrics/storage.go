package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Storage is what the server reports about its disk and its storage limits
// at each scrape: what an operator alerts on before the disk fills, and sees
// while it is full.
type Storage struct {
	// Guarded is false when the store does not watch its disk (in memory);
	// the disk series are then left out.
	Guarded bool
	// DiskFreeBytes and DiskSizeBytes describe the data directory's
	// filesystem; ReserveBytes and BallastBytes the space kept back for
	// deletions and the purge, and the part of it held in a ballast file.
	DiskFreeBytes, DiskSizeBytes, ReserveBytes, BallastBytes int64
	// DiskLow means writes that add data are refused for lack of space;
	// DiskFull that every write is.
	DiskLow, DiskFull bool
	// QuotaBytes is --max-storage (0: none); UsedBytes the live documents'
	// bytes counted against it.
	QuotaBytes, UsedBytes int64
	// Refused* count the writes refused since start: for a low disk (by the
	// engine), a full one (by the store), and the quota.
	RefusedDiskLow, RefusedDiskFull, RefusedQuota int64
	// NoSpaceErrors counts the file writes that met ENOSPC (each then waited
	// for space); WaitingWrites is how many wait now.
	NoSpaceErrors, WaitingWrites int64
	// SlowOperations counts disk writes and syncs slower than the slow-disk
	// threshold; ReadErrors reads the storage failed; BackgroundErrors failed
	// flushes and compactions.
	SlowOperations, ReadErrors, BackgroundErrors int64
	// StallsMemTables and StallsLevel0 count the times the store stopped
	// writes until a flush (memtables waiting) or a compaction (level 0 too
	// deep) caught up; StallSeconds is how long writes were stopped in all.
	StallsMemTables, StallsLevel0 int64
	StallSeconds                  float64
	// LookupHits and LookupMisses count the point lookups of cacheable keys
	// the store's lookup cache answered and those it passed to the store;
	// both 0 without a cache (--lookup-cache).
	LookupHits, LookupMisses int64
	// KeyFilterAbsent and KeyFilterMaybe count the lookups of absent-looking
	// document keys (a create's check that its id is free) that the store's
	// key filter answered, and those it passed to the store (the key was
	// there, or a false positive); KeyFilterBytes is the filter's memory.
	KeyFilterAbsent, KeyFilterMaybe, KeyFilterBytes int64
	// Commits counts the store's committed write transactions, WALSyncs
	// its write-ahead log's syncs: durable writes that commit together share
	// a sync, and each sync costs the machine CPU as well as time.
	Commits, WALSyncs int64
}

// storageCollector exports a Storage read once per scrape.
type storageCollector struct {
	read func() Storage

	free, size, reserve, ballast, quota, used, refusing, waiting *prometheus.Desc
	refused, noSpace, slow, readErrs, bgErrs, stalls, stallTime  *prometheus.Desc
	lookups, filter, filterBytes, commits, walSyncs              *prometheus.Desc
}

func newStorageCollector(read func() Storage) *storageCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &storageCollector{
		read:        read,
		free:        d("lethe_disk_free_bytes", "Free space on the data directory's filesystem, available to the server."),
		size:        d("lethe_disk_size_bytes", "Size of the data directory's filesystem."),
		reserve:     d("lethe_disk_reserve_bytes", "Space kept back for deletes, the TTL purge and the store's own work (--disk-reserve): below half of it free, writes that add data are refused."),
		ballast:     d("lethe_disk_ballast_bytes", "Part of the reserve held in the ballast file now; 0 once released for a full disk."),
		quota:       d("lethe_storage_quota_bytes", "The storage quota on live documents (--max-storage); 0 for none."),
		used:        d("lethe_storage_used_bytes", "Bytes of live documents counted against the storage quota (expired documents excluded); exported with a quota."),
		refusing:    d("lethe_writes_refused", "1 while writes are being refused, by reason: disk_low (writes that add data), disk_full (every write), quota (writes that add data).", "reason"),
		waiting:     d("lethe_disk_waiting_writes", "File writes waiting for disk space now (each met ENOSPC)."),
		refused:     d("lethe_writes_refused_total", "Writes refused for lack of storage, by reason (disk_low, disk_full, quota).", "reason"),
		noSpace:     d("lethe_disk_no_space_errors_total", "File writes that met ENOSPC; each released the ballast or waited for space, none failed."),
		slow:        d("lethe_disk_slow_operations_total", "Disk writes and syncs slower than --slow-disk-threshold."),
		readErrs:    d("lethe_store_read_errors_total", "Reads the storage failed (I/O errors, corrupt blocks); each failed its request with a 503."),
		bgErrs:      d("lethe_store_background_errors_total", "Flushes and compactions that failed (the store retries them)."),
		stalls:      d("lethe_store_write_stalls_total", "Times the store stopped writes until its background work caught up, by reason: memtables (flushes behind) or level0 (compactions behind).", "reason"),
		stallTime:   d("lethe_store_write_stall_seconds_total", "Time writes were stopped behind the store's flushes and compactions."),
		lookups:     d("lethe_store_lookup_cache_total", "Lookups of documents by key, of the storage tallies every write reads, and of the change feed log's first second, by result: hit (answered from the lookup cache, --lookup-cache) or miss (read from the store).", "result"),
		filter:      d("lethe_store_key_filter_total", "Lookups of document keys in writes (a create's check that its id is free) by the key filter's answer: absent (answered without a search of the store) or maybe (passed to the store: the document exists, or a false positive).", "answer"),
		filterBytes: d("lethe_store_key_filter_bytes", "Memory of the key filter of document keys."),
		commits:     d("lethe_store_commits_total", "Write transactions the store committed."),
		walSyncs:    d("lethe_store_wal_syncs_total", "Syncs of the store's write-ahead log (none in memory): durable writes that commit together share one."),
	}
}

// Describe implements prometheus.Collector.
func (c *storageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.free, c.size, c.reserve, c.ballast, c.quota, c.used, c.refusing, c.waiting, c.refused, c.noSpace, c.slow, c.readErrs, c.bgErrs, c.stalls, c.stallTime, c.lookups, c.filter, c.filterBytes, c.commits, c.walSyncs} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *storageCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.read()
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	flag := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	if s.Guarded {
		gauge(c.free, s.DiskFreeBytes)
		gauge(c.size, s.DiskSizeBytes)
		gauge(c.reserve, s.ReserveBytes)
		gauge(c.ballast, s.BallastBytes)
		gauge(c.waiting, s.WaitingWrites)
		counter(c.noSpace, s.NoSpaceErrors)
	}
	gauge(c.quota, s.QuotaBytes)
	if s.QuotaBytes > 0 {
		gauge(c.used, s.UsedBytes)
	}
	gauge(c.refusing, flag(s.DiskLow), "disk_low")
	gauge(c.refusing, flag(s.DiskFull), "disk_full")
	gauge(c.refusing, flag(s.QuotaBytes > 0 && s.UsedBytes >= s.QuotaBytes), "quota")
	counter(c.refused, s.RefusedDiskLow, "disk_low")
	counter(c.refused, s.RefusedDiskFull, "disk_full")
	counter(c.refused, s.RefusedQuota, "quota")
	counter(c.slow, s.SlowOperations)
	counter(c.readErrs, s.ReadErrors)
	counter(c.bgErrs, s.BackgroundErrors)
	counter(c.stalls, s.StallsMemTables, "memtables")
	counter(c.stalls, s.StallsLevel0, "level0")
	ch <- prometheus.MustNewConstMetric(c.stallTime, prometheus.CounterValue, s.StallSeconds)
	counter(c.lookups, s.LookupHits, "hit")
	counter(c.lookups, s.LookupMisses, "miss")
	counter(c.filter, s.KeyFilterAbsent, "absent")
	counter(c.filter, s.KeyFilterMaybe, "maybe")
	gauge(c.filterBytes, s.KeyFilterBytes)
	counter(c.commits, s.Commits)
	counter(c.walSyncs, s.WALSyncs)
}
