package e2e

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// recordingTransport sees every response the SDK receives, so the test knows
// every request the server served and every charge it sent, SDK-internal
// requests included.
type recordingTransport struct {
	next policy.Transporter
	mu   sync.Mutex
	n    int
	ru   float64
}

func (r *recordingTransport) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.next.Do(req)
	if err == nil {
		r.record(resp.Header)
	}
	return resp, err
}

func (r *recordingTransport) record(h http.Header) {
	ru, _ := strconv.ParseFloat(h.Get("x-ms-request-charge"), 64)
	r.mu.Lock()
	r.n++
	r.ru += ru
	r.mu.Unlock()
}

// scrape fetches /metrics with plain net/http (no signature) and parses it.
func scrape(t *testing.T, s *server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := s.rawClient().Get(s.URL + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: status %d", resp.StatusCode)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	return fams
}

// metricValue returns the counter (or histogram sample count) of family name
// with the given operation and, unless empty, status; 0 if absent.
func metricValue(fams map[string]*dto.MetricFamily, name, op, status string) float64 {
	v, _ := seriesValue(fams, name, map[string]string{"operation": op, "status": status})
	return v
}

// seriesValue returns the value of the series of family name whose labels
// have the given values (a label it lacks counts as ""): a counter's or
// gauge's value, a histogram's sample count. ok is false when there is none.
func seriesValue(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (v float64, ok bool) {
	for _, m := range fams[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, want := range labels {
			match = match && got[k] == want
		}
		if !match {
			continue
		}
		switch {
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		}
		return m.GetCounter().GetValue(), true
	}
	return 0, false
}

// TestMetrics drives a server through the official SDK and raw requests (a
// create, a read, a 404 read, a query, a refused signature, an unsigned POST
// /metrics), then scrapes
// /metrics without signing: each operation's counters are exact, every
// response the clients received is counted once, and the charges add up to
// the x-ms-request-charge headers they carried.
func TestMetrics(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	rec := &recordingTransport{next: s.httpClient()}
	cred, err := azcosmos.NewKeyCredential(emulatorKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azcosmos.NewClientWithKey(s.URL+"/", cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: rec,
		Retry:     policy.RetryOptions{MaxRetries: -1}, // one response per call: counts stay exact
	}})
	if err != nil {
		t.Fatal(err)
	}
	db := mustDatabase(t, c, "metrics") // a database may be named "metrics": /metrics shadows nothing
	cc := mustContainer(t, db, pkContainer("c", nil))
	pk := azcosmos.NewPartitionKeyString("p")
	if _, err := cc.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p","n":1}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.ReadItem(ctx, pk, "a", nil); err != nil {
		t.Fatal(err)
	}
	var re *azcore.ResponseError
	if _, err := cc.ReadItem(ctx, pk, "missing", nil); !errors.As(err, &re) || re.StatusCode != 404 {
		t.Fatalf("read of a missing item: %v, want 404", err)
	}
	page, err := cc.NewQueryItemsPager("SELECT * FROM c WHERE c.n = 1", pk, nil).NextPage(ctx)
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("query: %v, %d items", err, len(page.Items))
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	bad := s.send(t, "GET", "/dbs", hdr("x-ms-date", date, "x-ms-version", "2020-11-05",
		"Authorization", signWithKey(otherKey, "GET", "dbs", "", date)), nil)
	bad.wantStatus(t, "wrong key", http.StatusUnauthorized)
	rec.record(bad.Header)
	// The same refusal for GET /metrics with another method: only GET and
	// HEAD scrape, anything else is an ordinary (unsigned, so refused) request.
	post := s.send(t, "POST", "/metrics", nil, nil)
	post.wantError(t, "unsigned POST /metrics", http.StatusUnauthorized)
	rec.record(post.Header)

	rec.mu.Lock()
	wantN, wantRU := float64(rec.n), rec.ru
	rec.mu.Unlock()
	// The server records a request as its handler returns, which can be just
	// after the client has the whole response: scrape until every response
	// the clients got is in (the exact checks below then say if more are).
	var f map[string]*dto.MetricFamily
	scrapes := 0
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		f = scrape(t, s)
		scrapes++
		if n, _ := servedTotals(f); n >= wantN || time.Now().After(deadline) {
			break
		}
	}
	exact := []struct {
		op, status string
		n          float64
	}{
		{"CreateDatabase", "201", 1},
		{"CreateContainer", "201", 1},
		{"CreateDocument", "201", 1},
		{"ReadDocument", "200", 1},
		{"ReadDocument", "404", 1},
		{"QueryDocuments", "200", 1},
		{"ListDatabases", "401", 1},
		{"Unknown", "401", 1},
		{"Metrics", "200", float64(scrapes - 1)}, // a scrape is counted once it has been served
	}
	for _, e := range exact {
		if got := metricValue(f, "lethe_requests_total", e.op, e.status); got != e.n {
			t.Errorf("lethe_requests_total{operation=%q,status=%q} = %v, want %v", e.op, e.status, got, e.n)
		}
		if e.n > 0 && metricValue(f, "lethe_request_charge_total", e.op, e.status) <= 0 {
			t.Errorf("lethe_request_charge_total{operation=%q,status=%q} is not positive", e.op, e.status)
		}
	}
	if got := metricValue(f, "lethe_request_duration_seconds", "ReadDocument", ""); got != 2 {
		t.Errorf("ReadDocument duration samples = %v, want 2", got)
	}
	if got := metricValue(f, "lethe_throttled_requests_total", "ReadDocument", ""); got != 0 {
		t.Errorf("ReadDocument throttled = %v, want 0", got)
	}

	// Every response the clients got, and nothing else, is counted, with the
	// charge it carried.
	n, ru := servedTotals(f)
	if n != wantN {
		t.Errorf("requests counted %v, clients received %v responses", n, wantN)
	}
	if math.Abs(ru-wantRU) > 1e-6 {
		t.Errorf("charges counted %v, clients were charged %v", ru, wantRU)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if f[name] == nil {
			t.Errorf("no %s: runtime and process collectors missing", name)
		}
	}
	for _, name := range []string{"lethe_store_compaction_rest_seconds_total", "lethe_store_background_priority_files_total", "lethe_store_write_stall_seconds_total"} {
		if c := f[name]; len(c.GetMetric()) != 1 || c.GetMetric()[0].GetCounter() == nil {
			t.Errorf("%s: %v, want one counter", name, c)
		}
	}
	// The database, the container and the document are commits of the
	// store; in memory nothing is synced.
	if c := f["lethe_store_commits_total"]; len(c.GetMetric()) != 1 || c.GetMetric()[0].GetCounter().GetValue() < 3 {
		t.Errorf("lethe_store_commits_total: %v, want a counter of 3 at least", c)
	}
	if c := f["lethe_store_wal_syncs_total"]; len(c.GetMetric()) != 1 || c.GetMetric()[0].GetCounter() == nil || c.GetMetric()[0].GetCounter().GetValue() != 0 {
		t.Errorf("lethe_store_wal_syncs_total: %v, want a counter at 0 in memory", c)
	}
	if c := f["lethe_store_write_stalls_total"]; len(c.GetMetric()) != 2 {
		t.Errorf("lethe_store_write_stalls_total: %v, want a counter for each reason", c)
	}
	// The in-memory server's lookup cache: the create kept "a", the read and
	// the query's lookup of it hit; the missing item missed. The create's
	// check that "a" was free was the key filter's, not the cache's.
	if lookups := labelled(f, "lethe_store_lookup_cache_total", "result"); lookups["hit"] < 2 || lookups["miss"] < 1 {
		t.Errorf("lethe_store_lookup_cache_total: %v, want two hits and a miss at least", lookups)
	}
	if answers := labelled(f, "lethe_store_key_filter_total", "answer"); answers["absent"] != 1 || answers["maybe"] != 0 {
		t.Errorf("lethe_store_key_filter_total: %v, want the one create answered absent", answers)
	}
	if bytes := f["lethe_store_key_filter_bytes"].GetMetric(); len(bytes) != 1 || bytes[0].GetGauge().GetValue() <= 0 {
		t.Errorf("lethe_store_key_filter_bytes: %v, want the filter's memory", bytes)
	}
}

// labelled returns the values of a family's series by their label name's
// value.
func labelled(f map[string]*dto.MetricFamily, family, name string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range f[family].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				out[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// servedTotals sums lethe_requests_total and lethe_request_charge_total over
// every operation but Metrics (the scrapes themselves).
func servedTotals(f map[string]*dto.MetricFamily) (n, ru float64) {
	sum := func(name string) float64 {
		total := 0.0
		for _, m := range f[name].GetMetric() {
			scrape := false
			for _, l := range m.GetLabel() {
				scrape = scrape || l.GetName() == "operation" && l.GetValue() == "Metrics"
			}
			if !scrape {
				total += m.GetCounter().GetValue()
			}
		}
		return total
	}
	return sum("lethe_requests_total"), sum("lethe_request_charge_total")
}

// TestMetricsDisabled: with --metrics=false, /metrics is an ordinary unknown
// path (401 unsigned, a Cosmos 404 signed) and the server works as usual.
func TestMetricsDisabled(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true, Args: []string{"--metrics=false"}})
	resp, err := s.rawClient().Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned GET /metrics: %d, want 401", resp.StatusCode)
	}
	s.do(t, "GET", "/metrics", nil, nil).wantError(t, "signed GET /metrics", http.StatusNotFound)
	mustDatabase(t, s.client(t), "still-works")
}
