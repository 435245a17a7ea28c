package bench

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestParseTTLMetricsRealScrape parses a whole GET /metrics of a Lethe
// server (testdata/metrics-lethe.txt, taken during a ttl workload: one TTL
// container, and every other family a server exports, histograms and
// summaries included), which has no purge share or busy time.
func TestParseTTLMetricsRealScrape(t *testing.T) {
	f, err := os.Open("testdata/metrics-lethe.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := parseTTLMetrics(f)
	if err != nil {
		t.Fatal(err)
	}
	want := TTLMetrics{PendingDocs: 11267, PendingBytes: 13847143, OldestPendingAgeSec: 2, PurgedTotal: 5696, DeferredTotal: 358}
	if *m != want {
		t.Errorf("got %+v, want %+v", *m, want)
	}
}

// TestParseTTLMetrics adds up containers (the oldest age is the largest),
// reads the optional purge share and busy time, and refuses what is not a
// Lethe exposition.
func TestParseTTLMetrics(t *testing.T) {
	const scrape = `# HELP lethe_ttl_expired_pending_documents Documents expired (invisible to readers) but not yet physically deleted.
# TYPE lethe_ttl_expired_pending_documents gauge
lethe_ttl_expired_pending_documents{container="a",database="d"} 100
lethe_ttl_expired_pending_documents{container="b",database="d"} 23
# TYPE lethe_ttl_expired_pending_bytes gauge
lethe_ttl_expired_pending_bytes{container="a",database="d"} 1.5e+06
lethe_ttl_expired_pending_bytes{container="b",database="d"} 2.5e+06
# TYPE lethe_ttl_oldest_pending_age_seconds gauge
lethe_ttl_oldest_pending_age_seconds{container="a",database="d"} 38
lethe_ttl_oldest_pending_age_seconds{container="b",database="d"} 4
# TYPE lethe_ttl_purge_deferred_total counter
lethe_ttl_purge_deferred_total{container="a",database="d"} 2200
lethe_ttl_purge_deferred_total{container="b",database="d"} 1
# TYPE lethe_ttl_purged_documents_total counter
lethe_ttl_purged_documents_total{container="a",database="d"} 5000
lethe_ttl_purged_documents_total{container="b",database="d"} 7
# HELP lethe_ttl_purge_share The share of a core the purge may take now.
# TYPE lethe_ttl_purge_share gauge
lethe_ttl_purge_share 0.25
# TYPE lethe_ttl_purge_busy_seconds_total counter
lethe_ttl_purge_busy_seconds_total 12.5
# TYPE lethe_store_write_stall_seconds_total counter
lethe_store_write_stall_seconds_total 0.75
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 3.87
`
	m, err := parseTTLMetrics(strings.NewReader(scrape))
	if err != nil {
		t.Fatal(err)
	}
	if m.PendingDocs != 123 || m.PendingBytes != 4e6 || m.OldestPendingAgeSec != 38 || m.PurgedTotal != 5007 || m.DeferredTotal != 2201 {
		t.Errorf("got %+v", *m)
	}
	if m.PurgeShare == nil || *m.PurgeShare != 0.25 || m.PurgeBusySecTotal == nil || *m.PurgeBusySecTotal != 12.5 {
		t.Errorf("share %v, busy %v, want 0.25 and 12.5", m.PurgeShare, m.PurgeBusySecTotal)
	}
	if m.WriteStallSecTotal == nil || *m.WriteStallSecTotal != 0.75 {
		t.Errorf("write stalls %v, want 0.75 s", m.WriteStallSecTotal)
	}

	// Only pending documents is required; the rest count as zero.
	m, err = parseTTLMetrics(strings.NewReader("lethe_ttl_expired_pending_documents{container=\"a\"} 5\n"))
	if err != nil || *m != (TTLMetrics{PendingDocs: 5}) {
		t.Errorf("pending only: %+v, %v", m, err)
	}
	if _, err := parseTTLMetrics(strings.NewReader("process_cpu_seconds_total 3.87\n")); !errors.Is(err, errNoTTLMetrics) {
		t.Errorf("no lethe_ttl_ series: error %v, want errNoTTLMetrics", err)
	}
	// The ceiling answers GET /metrics with a JSON listing.
	if _, err := parseTTLMetrics(strings.NewReader(`{"_rid":"","Databases":[],"_count":0}`)); err == nil || errors.Is(err, errNoTTLMetrics) {
		t.Errorf("JSON: error %v, want a parse error", err)
	}
}
