package gateway

import (
	"encoding/base64"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/lethe-db/lethe/metrics"
	dto "github.com/prometheus/client_model/go"
)

// counterValue returns the value of family name's series with exactly the
// given label pairs, or -1 if there is none.
func counterValue(t *testing.T, m *metrics.Metrics, name string, labels ...string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if labelsAre(s, labels) {
				return s.GetCounter().GetValue()
			}
		}
	}
	return -1
}

func labelsAre(s *dto.Metric, labels []string) bool {
	if len(s.GetLabel())*2 != len(labels) {
		return false
	}
	for i, lp := range s.GetLabel() {
		if lp.GetName() != labels[2*i] || lp.GetValue() != labels[2*i+1] {
			return false
		}
	}
	return true
}

// TestMetricsEveryRequest: with metrics on, every request is counted under its
// operation and status, including refused ones (401), unknown paths (404),
// method not allowed (405) and panics (500), and charges add up to the headers sent.
// The engine is nil, so any handler that reaches it panics.
func TestMetricsEveryRequest(t *testing.T) {
	key, _ := base64.StdEncoding.DecodeString(emulatorKey)
	m := metrics.New(metrics.Options{})
	srv := New(Options{Key: key, Metrics: m})

	send := func(req *http.Request, want int) float64 {
		t.Helper()
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != want {
			t.Fatalf("%s %s: %d, want %d: %s", req.Method, req.URL, w.Code, want, w.Body)
		}
		ru, _ := strconv.ParseFloat(w.Header().Get("x-ms-request-charge"), 64)
		return ru
	}
	charge := map[string]float64{}
	charge["Account/200"] += send(signedRequest("GET", "/", key, nil, nil), 200)
	charge["Account/200"] += send(signedRequest("GET", "/", key, nil, nil), 200)
	charge["ListDatabases/401"] += send(httptest.NewRequest("GET", "/dbs", nil), 401)
	charge["ListDatabases/500"] += send(signedRequest("GET", "/dbs", key, nil, nil), 500) // nil engine: a recovered panic
	charge["Unknown/404"] += send(signedRequest("GET", "/nowhere", key, nil, nil), 404)
	charge["Unknown/405"] += send(signedRequest("POST", "/", key, nil, nil), 405)
	charge["Unknown/401"] += send(httptest.NewRequest("POST", "/metrics", nil), 401) // only GET and HEAD scrape

	total := 0
	for k, ru := range charge {
		op, status, _ := strings.Cut(k, "/")
		n := 1.0
		if op == "Account" {
			n = 2
		}
		if got := counterValue(t, m, "lethe_requests_total", "operation", op, "status", status); got != n {
			t.Errorf("requests{%s} = %v, want %v", k, got, n)
		}
		if got := counterValue(t, m, "lethe_request_charge_total", "operation", op, "status", status); ru <= 0 || math.Abs(got-ru) > 1e-9 {
			t.Errorf("charge{%s} = %v, want the %v sent", k, got, ru)
		}
		total += int(n)
	}

	// A scrape needs no signature, is not a Cosmos error, and is counted.
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != 200 || !strings.Contains(w.Body.String(), `lethe_requests_total{operation="ListDatabases",status="500"} 1`) {
		t.Fatalf("scrape: %d\n%s", w.Code, w.Body)
	}
	if got := counterValue(t, m, "lethe_requests_total", "operation", "Metrics", "status", "200"); got != 1 {
		t.Errorf("scrapes counted %v, want 1", got)
	}
}

// TestMetricsOff: without Metrics, /metrics is an ordinary unknown path.
func TestMetricsOff(t *testing.T) {
	key, _ := base64.StdEncoding.DecodeString(emulatorKey)
	srv := New(Options{Key: key})
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != 401 {
		t.Errorf("unsigned GET /metrics: %d, want 401", w.Code)
	}
	w = httptest.NewRecorder()
	srv.ServeHTTP(w, signedRequest("GET", "/metrics", key, nil, nil))
	if w.Code != 404 || !strings.Contains(w.Body.String(), `"code":"NotFound"`) {
		t.Errorf("signed GET /metrics: %d %s, want a Cosmos 404", w.Code, w.Body)
	}
}

// TestStatusRecorder: the status and charge noted are those sent first; a
// body without a status is a 200.
func TestStatusRecorder(t *testing.T) {
	w := &statusRecorder{ResponseWriter: httptest.NewRecorder()}
	w.Header().Set("x-ms-request-charge", "2.5")
	w.WriteHeader(201)
	w.Header().Set("x-ms-request-charge", "9")
	w.WriteHeader(500) // superfluous: net/http ignores it, and so do the metrics
	if w.sentStatus() != 201 || w.charge != 2.5 {
		t.Errorf("noted %d %v, want 201 2.5", w.sentStatus(), w.charge)
	}
	w = &statusRecorder{ResponseWriter: httptest.NewRecorder()}
	_, _ = w.Write([]byte("x"))
	if w.sentStatus() != 200 || w.charge != 0 {
		t.Errorf("implicit: %d %v, want 200 0", w.sentStatus(), w.charge)
	}
	if (&statusRecorder{}).sentStatus() != 200 {
		t.Error("nothing written is a 200")
	}
}
