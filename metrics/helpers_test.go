package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// families gathers g into a map by family name, failing the test on any error.
func families(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	return byName(fams)
}

func byName(fams []*dto.MetricFamily) map[string]*dto.MetricFamily {
	out := make(map[string]*dto.MetricFamily, len(fams))
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// series returns the series of family name whose labels are exactly labels
// (given as name, value pairs), or nil.
func series(fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel())*2 != len(labels) {
			continue
		}
		ok := true
		for i, lp := range m.GetLabel() {
			if lp.GetName() != labels[2*i] || lp.GetValue() != labels[2*i+1] {
				ok = false
				break
			}
		}
		if ok {
			return m
		}
	}
	return nil
}

// value returns a counter's or gauge's value, failing if the series is missing.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := series(fams, name, labels...)
	if m == nil {
		t.Fatalf("no series %s%v", name, labels)
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("series %s%v is neither a counter nor a gauge", name, labels)
	return 0
}
