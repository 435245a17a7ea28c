package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ContainerTTL is one container's expiry backlog and purge progress, as a
// TTLSource reports it at scrape time.
type ContainerTTL struct {
	Database, Container string
	// ExpiredPendingDocs counts documents that have expired (and are
	// invisible to every reader) but are not yet physically deleted.
	ExpiredPendingDocs int64
	// ExpiredPendingBytes is the stored size of those documents.
	ExpiredPendingBytes int64
	// OldestPendingAge is how long the oldest pending document has been
	// expired; 0 if none is pending. A growing age means the purge is not
	// keeping up.
	OldestPendingAge time.Duration
	// PurgedDocs counts documents physically deleted since the server
	// started (a counter).
	PurgedDocs int64
	// PurgeDeferred counts purge batches deferred for lack of spare capacity
	// since the server started (a counter).
	PurgeDeferred int64
}

// TTLSource reports every container's TTL state. The engine implements it;
// ContainerTTL is called once per scrape, with a deadline, from the scrape's
// goroutine, and must be safe for concurrent use.
type TTLSource interface {
	ContainerTTL(ctx context.Context) ([]ContainerTTL, error)
}

// ttlCollector exports a TTLSource's report as const metrics at each scrape,
// so the series always describe the containers that exist now: a deleted
// container's series vanish with it.
type ttlCollector struct {
	src     TTLSource
	timeout time.Duration
	log     *slog.Logger

	pendingDocs  *prometheus.Desc
	pendingBytes *prometheus.Desc
	oldestAge    *prometheus.Desc
	purged       *prometheus.Desc
	deferred     *prometheus.Desc
}

var _ prometheus.Collector = (*ttlCollector)(nil)

func newTTLCollector(src TTLSource, timeout time.Duration, log *slog.Logger) *ttlCollector {
	labels := []string{"database", "container"}
	return &ttlCollector{
		src: src, timeout: timeout, log: log,
		pendingDocs: prometheus.NewDesc("lethe_ttl_expired_pending_documents",
			"Documents expired (invisible to readers) but not yet physically deleted.", labels, nil),
		pendingBytes: prometheus.NewDesc("lethe_ttl_expired_pending_bytes",
			"Stored bytes of the documents expired but not yet physically deleted.", labels, nil),
		oldestAge: prometheus.NewDesc("lethe_ttl_oldest_pending_age_seconds",
			"How long the oldest expired, not yet deleted document has been expired; 0 if none.", labels, nil),
		purged: prometheus.NewDesc("lethe_ttl_purged_documents_total",
			"Expired documents physically deleted since the server started.", labels, nil),
		deferred: prometheus.NewDesc("lethe_ttl_purge_deferred_total",
			"Purge batches deferred for lack of spare capacity since the server started.", labels, nil),
	}
}

// Describe sends the five TTL descriptors.
func (c *ttlCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pendingDocs
	ch <- c.pendingBytes
	ch <- c.oldestAge
	ch <- c.purged
	ch <- c.deferred
}

// Collect asks the source for its report and sends one series per container
// and metric. A failing source yields one invalid metric (the scrape reports
// the error and still serves every other series); a panicking one is
// recovered into the same, since the registry runs collectors on goroutines
// of its own where a panic would end the process.
func (c *ttlCollector) Collect(ch chan<- prometheus.Metric) {
	defer func() {
		if v := recover(); v != nil {
			ch <- prometheus.NewInvalidMetric(c.pendingDocs, fmt.Errorf("gather TTL metrics: panic: %v", v))
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	list, err := c.src.ContainerTTL(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.pendingDocs, fmt.Errorf("gather TTL metrics: %w", err))
		return
	}
	seen := make(map[[2]string]bool, len(list))
	for _, ct := range list {
		k := [2]string{ct.Database, ct.Container}
		if seen[k] {
			// Two reports for one container would make the whole family
			// invalid; keep the first.
			c.log.Warn("TTL metrics: container reported twice", "database", ct.Database, "container", ct.Container)
			continue
		}
		seen[k] = true
		c.send(ch, c.pendingDocs, prometheus.GaugeValue, float64(ct.ExpiredPendingDocs), ct)
		c.send(ch, c.pendingBytes, prometheus.GaugeValue, float64(ct.ExpiredPendingBytes), ct)
		c.send(ch, c.oldestAge, prometheus.GaugeValue, ct.OldestPendingAge.Seconds(), ct)
		c.send(ch, c.purged, prometheus.CounterValue, float64(ct.PurgedDocs), ct)
		c.send(ch, c.deferred, prometheus.CounterValue, float64(ct.PurgeDeferred), ct)
	}
}

// send emits one series, or an invalid metric if the labels are not valid
// (an id that is not UTF-8).
func (c *ttlCollector) send(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, ct ContainerTTL) {
	m, err := prometheus.NewConstMetric(d, t, v, ct.Database, ct.Container)
	if err != nil {
		m = prometheus.NewInvalidMetric(d, fmt.Errorf("TTL metric for container %q in database %q: %w", ct.Container, ct.Database, err))
	}
	ch <- m
}
