package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// scrapeText returns the body of one scrape of m.
func scrapeText(m *Metrics) string {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

func TestCompactionRest(t *testing.T) {
	rest := 1500 * time.Millisecond
	m := New(Options{CompactionRest: func() time.Duration { return rest }})
	scrape := func() string { return scrapeText(m) }
	if body := scrape(); !strings.Contains(body, "lethe_store_compaction_rest_seconds_total 1.5\n") {
		t.Errorf("scrape lacks the compaction rest of 1.5 s:\n%s", body)
	}
	rest = 2 * time.Second // read at each scrape, not at registration
	if body := scrape(); !strings.Contains(body, "lethe_store_compaction_rest_seconds_total 2\n") {
		t.Error("the compaction rest series did not follow its source")
	}
	if f := families(t, New(Options{}).Registry()); f["lethe_store_compaction_rest_seconds_total"] != nil {
		t.Error("compaction rest exported without a source")
	}
}

func TestLoweredFiles(t *testing.T) {
	var lowered int64 = 3
	m := New(Options{LoweredFiles: func() int64 { return lowered }})
	scrape := func() string { return scrapeText(m) }
	if body := scrape(); !strings.Contains(body, "lethe_store_background_priority_files_total 3\n") {
		t.Errorf("scrape lacks the 3 lowered files:\n%s", body)
	}
	lowered = 5 // read at each scrape, not at registration
	if body := scrape(); !strings.Contains(body, "lethe_store_background_priority_files_total 5\n") {
		t.Error("the lowered files series did not follow its source")
	}
	if f := families(t, New(Options{}).Registry()); f["lethe_store_background_priority_files_total"] != nil {
		t.Error("lowered files exported without a source")
	}
}

func TestPurgeAndDiskSeries(t *testing.T) {
	share, busy, disk := 0.25, 1500*time.Millisecond, uint64(4096)
	m := New(Options{
		PurgeShare: func() float64 { return share },
		PurgeBusy:  func() time.Duration { return busy },
		DiskBytes:  func() uint64 { return disk },
	})
	for _, want := range []string{"lethe_ttl_purge_share 0.25\n", "lethe_ttl_purge_busy_seconds_total 1.5\n", "lethe_store_disk_bytes 4096\n"} {
		if body := scrapeText(m); !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}
	share, busy, disk = 0.5, 3*time.Second, 8192 // read at each scrape
	body := scrapeText(m)
	for _, want := range []string{"lethe_ttl_purge_share 0.5\n", "lethe_ttl_purge_busy_seconds_total 3\n", "lethe_store_disk_bytes 8192\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("the series did not follow its source: no %q", want)
		}
	}
	f := families(t, New(Options{}).Registry())
	for _, name := range []string{"lethe_ttl_purge_share", "lethe_ttl_purge_busy_seconds_total", "lethe_store_disk_bytes"} {
		if f[name] != nil {
			t.Errorf("%s exported without a source", name)
		}
	}
}

// TestStorageSeries: the disk and storage-limit series follow their source
// at each scrape; the disk's are left out when the store does not watch it.
func TestStorageSeries(t *testing.T) {
	st := Storage{Guarded: true, DiskFreeBytes: 100, DiskSizeBytes: 1000, ReserveBytes: 64, BallastBytes: 32,
		DiskLow: true, QuotaBytes: 500, UsedBytes: 500, RefusedDiskLow: 3, RefusedDiskFull: 2, RefusedQuota: 1,
		NoSpaceErrors: 4, WaitingWrites: 1, SlowOperations: 5, ReadErrors: 6, BackgroundErrors: 7,
		StallsMemTables: 8, StallsLevel0: 9, StallSeconds: 1.5, LookupHits: 10, LookupMisses: 11,
		KeyFilterAbsent: 12, KeyFilterMaybe: 13, KeyFilterBytes: 14, Commits: 15, WALSyncs: 16}
	m := New(Options{Storage: func() Storage { return st }})
	body := scrapeText(m)
	for _, want := range []string{
		"lethe_disk_free_bytes 100\n", "lethe_disk_size_bytes 1000\n", "lethe_disk_reserve_bytes 64\n", "lethe_disk_ballast_bytes 32\n",
		"lethe_storage_quota_bytes 500\n", "lethe_storage_used_bytes 500\n",
		`lethe_writes_refused{reason="disk_low"} 1` + "\n", `lethe_writes_refused{reason="disk_full"} 0` + "\n", `lethe_writes_refused{reason="quota"} 1` + "\n",
		`lethe_writes_refused_total{reason="disk_low"} 3` + "\n", `lethe_writes_refused_total{reason="disk_full"} 2` + "\n", `lethe_writes_refused_total{reason="quota"} 1` + "\n",
		"lethe_disk_no_space_errors_total 4\n", "lethe_disk_waiting_writes 1\n", "lethe_disk_slow_operations_total 5\n",
		"lethe_store_read_errors_total 6\n", "lethe_store_background_errors_total 7\n",
		`lethe_store_write_stalls_total{reason="memtables"} 8` + "\n", `lethe_store_write_stalls_total{reason="level0"} 9` + "\n",
		"lethe_store_write_stall_seconds_total 1.5\n",
		`lethe_store_lookup_cache_total{result="hit"} 10` + "\n", `lethe_store_lookup_cache_total{result="miss"} 11` + "\n",
		`lethe_store_key_filter_total{answer="absent"} 12` + "\n", `lethe_store_key_filter_total{answer="maybe"} 13` + "\n",
		"lethe_store_key_filter_bytes 14\n", "lethe_store_commits_total 15\n", "lethe_store_wal_syncs_total 16\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}
	st = Storage{QuotaBytes: 0} // in memory, no quota
	body = scrapeText(m)
	for _, absent := range []string{"lethe_disk_free_bytes", "lethe_storage_used_bytes", "lethe_disk_ballast_bytes"} {
		if strings.Contains(body, absent) {
			t.Errorf("%s exported for an unwatched disk or without a quota", absent)
		}
	}
	if !strings.Contains(body, `lethe_writes_refused{reason="quota"} 0`) {
		t.Error("the refusal gauges did not follow their source")
	}
}
