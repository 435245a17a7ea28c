package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// TTLMetrics are a Lethe server's purge figures, read from its GET /metrics
// (Prometheus text format) and added up over its containers.
type TTLMetrics struct {
	// PendingDocs and PendingBytes are the documents expired but not yet
	// physically deleted (lethe_ttl_expired_pending_documents and _bytes,
	// summed over containers).
	PendingDocs  float64 `json:"pending_docs"`
	PendingBytes float64 `json:"pending_bytes"`
	// OldestPendingAgeSec is how long the oldest of them has been expired,
	// seconds (lethe_ttl_oldest_pending_age_seconds, the largest over
	// containers).
	OldestPendingAgeSec float64 `json:"oldest_pending_age_sec"`
	// PurgedTotal and DeferredTotal are the documents purged and the purge
	// batches deferred since the server started (lethe_ttl_purged_documents_total
	// and lethe_ttl_purge_deferred_total, summed over containers).
	PurgedTotal   float64 `json:"purged_total"`
	DeferredTotal float64 `json:"purge_deferred_total"`
	// PurgeShare is the share of a core the purge may take now
	// (lethe_ttl_purge_share), and PurgeBusySecTotal the time spent in purge
	// batches since the server started (lethe_ttl_purge_busy_seconds_total).
	// Servers that do not export them leave them nil.
	PurgeShare        *float64 `json:"purge_share,omitempty"`
	PurgeBusySecTotal *float64 `json:"purge_busy_sec_total,omitempty"`
	// WriteStallSecTotal is how long the store stopped writes behind its
	// flushes and compactions since the server started
	// (lethe_store_write_stall_seconds_total): what a purge's deletions may
	// cost every writer. Nil from servers without an embedded store.
	WriteStallSecTotal *float64 `json:"write_stall_sec_total,omitempty"`
}

// The metric families TTLMetrics reads.
const (
	metricPendingDocs  = "lethe_ttl_expired_pending_documents"
	metricPendingBytes = "lethe_ttl_expired_pending_bytes"
	metricOldestAge    = "lethe_ttl_oldest_pending_age_seconds"
	metricPurged       = "lethe_ttl_purged_documents_total"
	metricDeferred     = "lethe_ttl_purge_deferred_total"
	metricPurgeShare   = "lethe_ttl_purge_share"
	metricPurgeBusy    = "lethe_ttl_purge_busy_seconds_total"
	metricWriteStalls  = "lethe_store_write_stall_seconds_total"
)

// errNoTTLMetrics says an exposition has no lethe_ttl_ series: the endpoint
// is not Lethe, or no container has TTL on.
var errNoTTLMetrics = errors.New("no " + metricPendingDocs + " series")

// parseTTLMetrics reads TTLMetrics from a Prometheus text exposition. A
// gauge, counter or untyped series counts, whatever its labels; families it
// does not read are ignored. The pending-documents family must be there
// (errNoTTLMetrics); the others count as zero, or nil for the optional
// ones, when absent.
func parseTTLMetrics(in io.Reader) (*TTLMetrics, error) {
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(in)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	if _, ok := fams[metricPendingDocs]; !ok {
		return nil, errNoTTLMetrics
	}
	m := &TTLMetrics{}
	m.PendingDocs, _ = familySum(fams[metricPendingDocs])
	m.PendingBytes, _ = familySum(fams[metricPendingBytes])
	m.OldestPendingAgeSec, _ = familyMax(fams[metricOldestAge])
	m.PurgedTotal, _ = familySum(fams[metricPurged])
	m.DeferredTotal, _ = familySum(fams[metricDeferred])
	if v, ok := familyMax(fams[metricPurgeShare]); ok {
		m.PurgeShare = &v
	}
	if v, ok := familySum(fams[metricPurgeBusy]); ok {
		m.PurgeBusySecTotal = &v
	}
	if v, ok := familySum(fams[metricWriteStalls]); ok {
		m.WriteStallSecTotal = &v
	}
	return m, nil
}

// seriesValue is a gauge's, counter's or untyped series' value; ok is false
// for other types.
func seriesValue(m *dto.Metric) (v float64, ok bool) {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue(), true
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue(), true
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// familySum adds up the family's series; ok is false if it has none (or f is
// nil).
func familySum(f *dto.MetricFamily) (sum float64, ok bool) {
	for _, m := range f.GetMetric() {
		if v, vok := seriesValue(m); vok {
			sum, ok = sum+v, true
		}
	}
	return sum, ok
}

// familyMax is the largest of the family's series; ok is false if it has
// none (or f is nil).
func familyMax(f *dto.MetricFamily) (largest float64, ok bool) {
	for _, m := range f.GetMetric() {
		if v, vok := seriesValue(m); vok && (!ok || v > largest) {
			largest, ok = v, true
		}
	}
	return largest, ok
}

// metricsScraper reads TTLMetrics from a server's GET /metrics.
type metricsScraper struct {
	client *http.Client
	url    string
}

// newMetricsScraper scrapes endpoint's /metrics over tr (the target's own
// transport, so the same TLS settings apply). Each scrape may take up to
// timeout.
func newMetricsScraper(endpoint string, tr http.RoundTripper, timeout time.Duration) (*metricsScraper, error) {
	u, err := url.JoinPath(endpoint, "metrics")
	if err != nil {
		return nil, fmt.Errorf("metrics address of %s: %w", endpoint, err)
	}
	return &metricsScraper{client: &http.Client{Transport: tr, Timeout: timeout}, url: u}, nil
}

// scrape fetches and parses the metrics once.
func (s *metricsScraper) scrape(ctx context.Context) (*TTLMetrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", s.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("scrape %s: status %d", s.url, resp.StatusCode)
	}
	m, err := parseTTLMetrics(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", s.url, err)
	}
	return m, nil
}
