package metrics

import (
	"math"
	"sync"
	"testing"
	"time"
)

func TestObserveRequest(t *testing.T) {
	m := New(Options{})
	m.ObserveRequest(OpReadDocument, 200, 1.5, 2*time.Millisecond)
	m.ObserveRequest(OpReadDocument, 200, 2.25, 3*time.Millisecond)
	m.ObserveRequest(OpReadDocument, 404, 1, time.Millisecond)
	m.ObserveRequest(OpCreateDocument, 429, 0, 50*time.Microsecond)
	m.ObserveRequest(OpCreateDocument, 201, 5.71, 20*time.Second) // beyond the last bucket
	// Charges that are not finite positive numbers count the request only.
	m.ObserveRequest(OpQueryDocuments, 200, -3, time.Millisecond)
	m.ObserveRequest(OpQueryDocuments, 200, math.NaN(), time.Millisecond)
	m.ObserveRequest(OpQueryDocuments, 200, math.Inf(1), time.Millisecond)
	// An operation out of range is Unknown, a status out of range is 0.
	m.ObserveRequest(Operation(200), 1234, 1, time.Millisecond)

	f := families(t, m.Registry())
	counts := []struct {
		op, status string
		n, ru      float64
	}{
		{"ReadDocument", "200", 2, 3.75},
		{"ReadDocument", "404", 1, 1},
		{"CreateDocument", "429", 1, 0},
		{"CreateDocument", "201", 1, 5.71},
		{"QueryDocuments", "200", 3, 0},
		{"Unknown", "0", 1, 1},
	}
	total := 0.0
	for _, c := range counts {
		if got := value(t, f, "lethe_requests_total", "operation", c.op, "status", c.status); got != c.n {
			t.Errorf("requests{%s,%s} = %v, want %v", c.op, c.status, got, c.n)
		}
		if got := value(t, f, "lethe_request_charge_total", "operation", c.op, "status", c.status); math.Abs(got-c.ru) > 1e-9 {
			t.Errorf("charge{%s,%s} = %v, want %v", c.op, c.status, got, c.ru)
		}
		total += c.n
	}
	if n := len(f["lethe_requests_total"].GetMetric()); n != len(counts) {
		t.Errorf("%d request series, want %d", n, len(counts))
	}
	if got := value(t, f, "lethe_throttled_requests_total", "operation", "CreateDocument"); got != 1 {
		t.Errorf("throttled{CreateDocument} = %v, want 1", got)
	}
	if got := value(t, f, "lethe_throttled_requests_total", "operation", "ReadDocument"); got != 0 {
		t.Errorf("throttled{ReadDocument} = %v, want 0", got)
	}

	h := series(f, "lethe_request_duration_seconds", "operation", "ReadDocument").GetHistogram()
	if h.GetSampleCount() != 3 || math.Abs(h.GetSampleSum()-0.006) > 1e-9 {
		t.Errorf("ReadDocument histogram: count %d sum %v, want 3 and 0.006", h.GetSampleCount(), h.GetSampleSum())
	}
	b := h.GetBucket()
	if len(b) != len(durationBuckets) || b[0].GetUpperBound() != 0.0001 || b[len(b)-1].GetUpperBound() != 10 {
		t.Fatalf("buckets %v, want 0.0001 .. 10", b)
	}
	for _, bk := range b {
		want := uint64(0)
		switch {
		case bk.GetUpperBound() >= 0.005:
			want = 3
		case bk.GetUpperBound() >= 0.0025:
			want = 2
		case bk.GetUpperBound() >= 0.001:
			want = 1
		}
		if bk.GetCumulativeCount() != want {
			t.Errorf("ReadDocument bucket le=%v: %d, want %d", bk.GetUpperBound(), bk.GetCumulativeCount(), want)
		}
	}
	c := series(f, "lethe_request_duration_seconds", "operation", "CreateDocument").GetHistogram()
	if c.GetSampleCount() != 2 || c.GetBucket()[0].GetCumulativeCount() != 1 || c.GetBucket()[len(b)-1].GetCumulativeCount() != 1 {
		t.Errorf("CreateDocument histogram: %v", c)
	}
}

// TestObserveRequestConcurrent races first observations of the same series
// (run with -race): none is lost.
func TestObserveRequestConcurrent(t *testing.T) {
	m := New(Options{})
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m.ObserveRequest(Operation(i%3), 200+w%2, 1, time.Microsecond)
			}
		}()
	}
	wg.Wait()
	f := families(t, m.Registry())
	sum := 0.0
	for _, s := range f["lethe_requests_total"].GetMetric() {
		sum += s.GetCounter().GetValue()
	}
	if sum != workers*each {
		t.Errorf("requests total %v, want %d", sum, workers*each)
	}
	if n := len(f["lethe_requests_total"].GetMetric()); n != 6 {
		t.Errorf("%d series, want 6 (3 operations x 2 statuses)", n)
	}
}

// TestRegistriesAreSeparate: two servers in one process each count their own
// requests (no default registry).
func TestRegistriesAreSeparate(t *testing.T) {
	a, b := New(Options{}), New(Options{})
	a.ObserveRequest(OpAccount, 200, 1, time.Millisecond)
	if got := value(t, families(t, a.Registry()), "lethe_requests_total", "operation", "Account", "status", "200"); got != 1 {
		t.Errorf("a: %v, want 1", got)
	}
	if s := series(families(t, b.Registry()), "lethe_requests_total", "operation", "Account", "status", "200"); s != nil {
		t.Errorf("b sees a's request: %v", s)
	}
	fb := families(t, b.Registry())
	if fb["go_goroutines"] == nil || fb["process_cpu_seconds_total"] == nil && fb["process_start_time_seconds"] == nil {
		t.Errorf("runtime and process collectors missing: %v", fb)
	}
	for _, name := range []string{"go_cpu_classes_gc_total_cpu_seconds_total", "go_cpu_classes_total_cpu_seconds_total"} {
		if c := fb[name]; len(c.GetMetric()) != 1 || c.GetMetric()[0].GetCounter() == nil {
			t.Errorf("%s: %v, want one counter: the runtime's CPU accounting", name, c)
		}
	}
}

func BenchmarkObserveRequest(b *testing.B) {
	m := New(Options{})
	b.ReportAllocs()
	for i := range b.N {
		m.ObserveRequest(OpReadDocument, 200+i%2, 1, time.Millisecond)
	}
}
