package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/lethe-db/lethe/metrics"
)

// metricsPath is where Prometheus scrapes. No Cosmos resource has a single
// segment other than "dbs" and "offers", so it shadows no route.
const metricsPath = "/metrics"

// isScrape reports whether r asks for the metrics page. Other methods on
// /metrics go the ordinary way (authentication, then 404).
func isScrape(r *http.Request) bool {
	return r.URL.Path == metricsPath && (r.Method == http.MethodGet || r.Method == http.MethodHead)
}

// serveMetrics serves a scrape, without master-key authentication (scrapers
// do not sign), and counts it as operation Metrics.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := statusRecorder{ResponseWriter: w}
	s.opts.Metrics.Handler().ServeHTTP(&rec, r)
	s.opts.Metrics.ObserveRequest(metrics.OpMetrics, rec.sentStatus(), 0, time.Since(start))
}

// observe records a finished request; ServeHTTP defers it, so it also runs
// after a recovered panic has been answered.
func (s *Server) observe(rq *request, start time.Time) {
	s.opts.Metrics.ObserveRequest(rq.op, rq.rec.sentStatus(), rq.rec.charge, time.Since(start))
}

// statusRecorder is the ResponseWriter handlers write to when metrics are on:
// it notes the status and the x-ms-request-charge a response is sent with.
// It lives inside request, so it costs no allocation of its own.
type statusRecorder struct {
	http.ResponseWriter
	status int     // first final status written; 0 until then
	charge float64 // x-ms-request-charge sent with it
}

// WriteHeader notes the first final status and the charge header sent with it.
func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.sent(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write notes an implicit 200 when no status was written first.
func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.sent(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusRecorder) sent(code int) {
	w.status = code
	if v := w.Header()["X-Ms-Request-Charge"]; len(v) > 0 {
		w.charge, _ = strconv.ParseFloat(v[0], 64)
	}
}

// sentStatus is the status the client got: a handler that wrote nothing
// leaves net/http to send 200.
func (w *statusRecorder) sentStatus() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
