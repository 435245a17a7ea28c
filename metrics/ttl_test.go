package metrics

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeTTL is a TTLSource with a canned answer.
type fakeTTL struct {
	list    []ContainerTTL
	err     error
	panics  bool
	calls   int
	hasDead bool // the context had a deadline
}

func (f *fakeTTL) ContainerTTL(ctx context.Context) ([]ContainerTTL, error) {
	f.calls++
	_, f.hasDead = ctx.Deadline()
	if f.panics {
		panic("boom")
	}
	return f.list, f.err
}

var ttlFamilies = []string{
	"lethe_ttl_expired_pending_documents",
	"lethe_ttl_expired_pending_bytes",
	"lethe_ttl_oldest_pending_age_seconds",
	"lethe_ttl_purged_documents_total",
	"lethe_ttl_purge_deferred_total",
}

func TestTTLCollector(t *testing.T) {
	src := &fakeTTL{list: []ContainerTTL{
		{Database: "db", Container: "sessions", ExpiredPendingDocs: 120, ExpiredPendingBytes: 98304,
			OldestPendingAge: 1500 * time.Millisecond, PurgedDocs: 7000, PurgeDeferred: 3},
		{Database: "db", Container: "idle"},
		{Database: "other", Container: "sessions", PurgedDocs: 1},
	}}
	m := New(Options{TTL: src})
	f := families(t, m.Registry())
	if src.calls != 1 || !src.hasDead {
		t.Errorf("source called %d times (deadline %v), want once with a deadline", src.calls, src.hasDead)
	}
	want := []struct {
		name  string
		db, c string
		v     float64
		gauge bool
	}{
		{"lethe_ttl_expired_pending_documents", "db", "sessions", 120, true},
		{"lethe_ttl_expired_pending_bytes", "db", "sessions", 98304, true},
		{"lethe_ttl_oldest_pending_age_seconds", "db", "sessions", 1.5, true},
		{"lethe_ttl_purged_documents_total", "db", "sessions", 7000, false},
		{"lethe_ttl_purge_deferred_total", "db", "sessions", 3, false},
		{"lethe_ttl_expired_pending_documents", "db", "idle", 0, true},
		{"lethe_ttl_oldest_pending_age_seconds", "db", "idle", 0, true},
		{"lethe_ttl_purged_documents_total", "other", "sessions", 1, false},
	}
	for _, w := range want {
		s := series(f, w.name, "container", w.c, "database", w.db)
		if s == nil {
			t.Errorf("no series %s{%s/%s}", w.name, w.db, w.c)
			continue
		}
		if w.gauge && s.Gauge == nil || !w.gauge && s.Counter == nil {
			t.Errorf("%s has the wrong type: %v", w.name, s)
		}
		if got := value(t, f, w.name, "container", w.c, "database", w.db); got != w.v {
			t.Errorf("%s{%s/%s} = %v, want %v", w.name, w.db, w.c, got, w.v)
		}
	}
	for _, name := range ttlFamilies {
		if n := len(f[name].GetMetric()); n != 3 {
			t.Errorf("%s has %d series, want 3", name, n)
		}
	}
	// A container that no longer exists has no series at the next scrape.
	src.list = src.list[:1]
	f = families(t, m.Registry())
	if series(f, "lethe_ttl_purged_documents_total", "container", "idle", "database", "db") != nil {
		t.Error("a dropped container still has series")
	}
}

func TestTTLCollectorNilSource(t *testing.T) {
	f := families(t, New(Options{}).Registry())
	for _, name := range ttlFamilies {
		if f[name] != nil {
			t.Errorf("%s exported without a TTL source", name)
		}
	}
}

// TestTTLCollectorFailures: a source that fails, panics, repeats a container
// or reports an id that is not UTF-8 makes the scrape report an error, and
// every other series is still served.
func TestTTLCollectorFailures(t *testing.T) {
	good := ContainerTTL{Database: "db", Container: "c", ExpiredPendingDocs: 4}
	cases := []struct {
		name     string
		src      *fakeTTL
		wantErr  bool
		wantGood bool
	}{
		{"error", &fakeTTL{err: errors.New("store closed")}, true, false},
		{"panic", &fakeTTL{panics: true}, true, false},
		{"duplicate", &fakeTTL{list: []ContainerTTL{good, {Database: "db", Container: "c", ExpiredPendingDocs: 99}}}, false, true},
		{"bad label", &fakeTTL{list: []ContainerTTL{good, {Database: "db", Container: "\xff\xfe"}}}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			m := New(Options{TTL: tc.src, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			m.ObserveRequest(OpAccount, 200, 1, time.Millisecond)
			fams, err := m.Registry().Gather()
			if (err != nil) != tc.wantErr {
				t.Fatalf("gather error %v, want error: %v", err, tc.wantErr)
			}
			f := byName(fams)
			if f["lethe_requests_total"] == nil || f["go_goroutines"] == nil {
				t.Error("a failing TTL source hid the other series")
			}
			s := series(f, "lethe_ttl_expired_pending_documents", "container", "c", "database", "db")
			if (s != nil) != tc.wantGood {
				t.Fatalf("good container's series present: %v, want %v", s != nil, tc.wantGood)
			}
			if s != nil && s.GetGauge().GetValue() != 4 {
				t.Errorf("good container = %v, want 4 (the first report)", s.GetGauge().GetValue())
			}

			// The HTTP handler serves what it could gather, with status 200.
			rec := httptest.NewRecorder()
			m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `lethe_requests_total{operation="Account",status="200"} 1`) {
				t.Errorf("handler: %d\n%s", rec.Code, rec.Body)
			}
		})
	}
}

func TestHandlerText(t *testing.T) {
	m := New(Options{TTL: &fakeTTL{list: []ContainerTTL{{Database: "d", Container: "c", PurgedDocs: 5}}}})
	m.ObserveRequest(OpReadDocument, 404, 1, time.Millisecond)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`lethe_requests_total{operation="ReadDocument",status="404"} 1`,
		`lethe_request_charge_total{operation="ReadDocument",status="404"} 1`,
		`lethe_ttl_purged_documents_total{container="c",database="d"} 5`,
		`# TYPE lethe_request_duration_seconds histogram`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Errorf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
}
