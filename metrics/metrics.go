// Package metrics is Lethe's Prometheus instrumentation: request counts,
// latencies, request-unit spend and throttling, recorded by the gateway for
// every request, and per-container TTL backlog gathered at scrape time.
//
// Rules:
//   - Each Metrics owns its own *prometheus.Registry: nothing is registered
//     with the global default registry, so several servers can run in one
//     process (tests do).
//   - Label values come from small fixed sets (Operation, HTTP status) or, for
//     the TTL series, from the containers that exist: never raw paths or
//     document ids.
//   - ObserveRequest is on every request's path: after the first request of an
//     operation and status it takes no lock and allocates nothing.
//   - Nothing a TTLSource does (an error, a panic, a bad label value) can crash
//     the server or fail the other series of a scrape.
package metrics

import (
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configure New. Zero fields take their defaults.
type Options struct {
	// TTL reports each container's expiry backlog at scrape time. Nil means
	// no lethe_ttl_* series.
	TTL TTLSource
	// TTLTimeout bounds one TTL.ContainerTTL call. The default is 10 s.
	TTLTimeout time.Duration
	// Logger receives scrape errors. The default discards them.
	Logger *slog.Logger
	// CompactionRest reports how long the store's compactions have rested so
	// far to leave the CPU to user requests. Nil means no such series.
	CompactionRest func() time.Duration
	// LoweredFiles reports how many flush and compaction output files the
	// store has written at background CPU priority. Nil means no such series.
	LoweredFiles func() int64
	// PurgeShare reports the share of one core the TTL purge's controller
	// currently allows (1 while no user is active). Nil means no such series.
	PurgeShare func() float64
	// PurgeBusy reports how long the TTL purge has spent deleting documents.
	// Nil means no such series.
	PurgeBusy func() time.Duration
	// DiskBytes reports the space the store's files take. Nil means no such
	// series.
	DiskBytes func() uint64
	// StoreRetries reports how many transactions a network database's store
	// ran again after a serialization conflict, and StoreReconnects after
	// losing its connection (lethe_store_conflict_retries_total,
	// lethe_store_reconnects_total). Nil means no such store.
	StoreRetries, StoreReconnects func() int64
	// StoreRoundTrips reports how many times a network database's store
	// sent statements and waited for their results
	// (lethe_store_round_trips_total). Nil means no such store.
	StoreRoundTrips func() int64
	// Storage reports the disk and the storage limits (lethe_disk_*,
	// lethe_storage_*, lethe_writes_refused*). Nil means no such series.
	Storage func() Storage
}

// Metrics is one server's set of metrics and the registry that exports them.
//
//	m := metrics.New(metrics.Options{TTL: src})
//	m.ObserveRequest(metrics.OpReadDocument, 200, 1, time.Millisecond)
//	http.Handle("/metrics", m.Handler())
type Metrics struct {
	reg     *prometheus.Registry
	req     *requestMetrics
	handler http.Handler
}

// maxScrapesInFlight bounds concurrent scrapes: /metrics is served without
// authentication and a TTL scrape asks the engine for work, so a flood of
// scrapes gets 503s instead of piling up.
const maxScrapesInFlight = 4

// New returns a fresh set of metrics on its own registry, with the Go runtime
// and process collectors registered.
//
// The Go collector adds the runtime's estimate of where the process's CPU
// went (go_cpu_classes_*_cpu_seconds_total: user code, the garbage
// collector's marking and pauses, the scavenger, idle): the collector's
// share is what a heap setting trades against memory, and an operator
// tuning GOGC needs it.
func New(opts Options) *Metrics {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.TTLTimeout <= 0 {
		opts.TTLTimeout = 10 * time.Second
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(cpuClasses)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m := &Metrics{reg: reg, req: newRequestMetrics(reg)}
	if opts.TTL != nil {
		reg.MustRegister(newTTLCollector(opts.TTL, opts.TTLTimeout, opts.Logger))
	}
	if opts.Storage != nil {
		reg.MustRegister(newStorageCollector(opts.Storage))
	}
	for _, f := range sourcedSeries(opts) {
		if f.value == nil {
			continue
		}
		if f.counter {
			reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: f.name, Help: f.help}, f.value))
		} else {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: f.name, Help: f.help}, f.value))
		}
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            reg,
		MaxRequestsInFlight: maxScrapesInFlight,
	})
	return m
}

// Registry returns the registry the metrics live in, for gathering them in
// tests or registering more collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text (or negotiated) format.
func (m *Metrics) Handler() http.Handler { return m.handler }

// funcSeries is a series read from a source at each scrape.
type funcSeries struct {
	name, help string
	counter    bool
	value      func() float64 // nil when the source is not set
}

// sourcedSeries lists the series of opts' sources, with nil values for the
// sources not set.
func sourcedSeries(opts Options) []funcSeries {
	seconds := func(f func() time.Duration) func() float64 {
		if f == nil {
			return nil
		}
		return func() float64 { return f().Seconds() }
	}
	count := func(f func() int64) func() float64 {
		if f == nil {
			return nil
		}
		return func() float64 { return float64(f()) }
	}
	var lowered, disk func() float64
	if f := opts.LoweredFiles; f != nil {
		lowered = func() float64 { return float64(f()) }
	}
	if f := opts.DiskBytes; f != nil {
		disk = func() float64 { return float64(f()) }
	}
	return []funcSeries{
		{"lethe_store_compaction_rest_seconds_total", "Time the store's compactions have rested to leave the CPU to user requests.", true, seconds(opts.CompactionRest)},
		{"lethe_store_background_priority_files_total", "Flush and compaction output files the store wrote at background CPU priority.", true, lowered},
		{"lethe_store_disk_bytes", "Space the store's files take on disk, files awaiting removal included.", false, disk},
		{"lethe_ttl_purge_share", "Share of one core the TTL purge may take now: the minimum while it keeps up, more as the oldest pending expiry ages, 1 while no user is active.", false, opts.PurgeShare},
		{"lethe_store_conflict_retries_total", "Transactions the database store ran again after a serialization conflict with a concurrent one (PostgreSQL).", true, count(opts.StoreRetries)},
		{"lethe_store_reconnects_total", "Transactions the database store ran again after losing its connection before committing (PostgreSQL).", true, count(opts.StoreReconnects)},
		{"lethe_store_round_trips_total", "Times the database store sent statements and waited for their results (PostgreSQL): divided by requests, what a request costs in network latency.", true, count(opts.StoreRoundTrips)},
		{"lethe_ttl_purge_busy_seconds_total", "Time the TTL purge has spent deleting expired documents; divided by lethe_ttl_purged_documents_total, what a deletion costs.", true, seconds(opts.PurgeBusy)},
	}
}

// cpuClasses selects the runtime's CPU accounting (runtime/metrics
// /cpu/classes/...) for the Go collector.
var cpuClasses = collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/cpu/classes/`)}
