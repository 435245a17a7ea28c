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
