package metrics

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// durationBuckets span 100 µs to 10 s, about 2.5x apart: an in-memory point
// read lands in the first buckets, a long cross-partition query in the last.
var durationBuckets = []float64{
	0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05,
	0.1, 0.25, 0.5,
	1, 2.5, 5, 10,
}

// requestMetrics are the per-request series. Their children are resolved once
// per operation (and status) and cached, so that observing a request costs a
// few atomic adds rather than a label hash and a map lookup under a lock per
// vector.
type requestMetrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	charge    *prometheus.CounterVec
	throttled *prometheus.CounterVec

	ops      [numOperations]atomic.Pointer[opSeries]
	byStatus sync.Map // statusKey(op, status) -> *statusSeries
}

// opSeries are the children labelled by operation alone.
type opSeries struct {
	duration  prometheus.Observer
	throttled prometheus.Counter
}

// statusSeries are the children labelled by operation and status.
type statusSeries struct {
	requests prometheus.Counter
	charge   prometheus.Counter
}

func newRequestMetrics(reg prometheus.Registerer) *requestMetrics {
	m := &requestMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lethe_requests_total",
			Help: "Requests served, by operation and HTTP status.",
		}, []string{"operation", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lethe_request_duration_seconds",
			Help:    "Time from receiving a request to finishing its response, by operation.",
			Buckets: durationBuckets,
		}, []string{"operation"}),
		charge: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lethe_request_charge_total",
			Help: "Request units charged (the x-ms-request-charge response header), by operation and HTTP status.",
		}, []string{"operation", "status"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lethe_throttled_requests_total",
			Help: "Requests answered 429 Too Many Requests, by operation.",
		}, []string{"operation"}),
	}
	reg.MustRegister(m.requests, m.duration, m.charge, m.throttled)
	return m
}

// ObserveRequest records one finished request: its operation, HTTP status,
// request charge in RU (as sent in x-ms-request-charge; negative, NaN and
// infinite values are not added) and duration. It is safe for concurrent use.
func (m *Metrics) ObserveRequest(op Operation, status int, charge float64, d time.Duration) {
	m.req.observe(op, status, charge, d)
}

func (m *requestMetrics) observe(op Operation, status int, charge float64, d time.Duration) {
	if op >= numOperations {
		op = OpUnknown
	}
	o := m.opSeries(op)
	o.duration.Observe(d.Seconds())
	if status == 429 {
		o.throttled.Inc()
	}
	s := m.statusSeries(op, status)
	s.requests.Inc()
	if charge > 0 && !math.IsInf(charge, 1) {
		s.charge.Add(charge)
	}
}

func (m *requestMetrics) opSeries(op Operation) *opSeries {
	if o := m.ops[op].Load(); o != nil {
		return o
	}
	// Two first requests may race here: WithLabelValues returns the same
	// children to both, so whichever pointer is stored is equivalent.
	name := op.String()
	o := &opSeries{
		duration:  m.duration.WithLabelValues(name),
		throttled: m.throttled.WithLabelValues(name),
	}
	m.ops[op].Store(o)
	return o
}

func (m *requestMetrics) statusSeries(op Operation, status int) *statusSeries {
	if status < 0 || status > 999 {
		status = 0 // not an HTTP status; net/http never sends one
	}
	key := uint32(op)<<16 | uint32(status)
	if s, ok := m.byStatus.Load(key); ok {
		return s.(*statusSeries)
	}
	name, code := op.String(), strconv.Itoa(status)
	s := &statusSeries{
		requests: m.requests.WithLabelValues(name, code),
		charge:   m.charge.WithLabelValues(name, code),
	}
	actual, _ := m.byStatus.LoadOrStore(key, s)
	return actual.(*statusSeries)
}
