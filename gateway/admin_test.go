package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/clock"
	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/kv/pebblekv"
)

func TestParseClockMove(t *testing.T) {
	for _, tc := range []struct {
		body string
		want clockMove
		ok   bool
	}{
		{`{"advanceSeconds":1800}`, clockMove{seconds: 1800}, true},
		{` { "advanceSeconds" : 1 } `, clockMove{seconds: 1}, true},
		{`{"set":1900000000}`, clockMove{seconds: 1900000000, set: true}, true},
		{`{"advanceSeconds":3162240000}`, clockMove{seconds: 3162240000}, true},
		{`{"set":253402300799}`, clockMove{seconds: 253402300799, set: true}, true},
		{`{"advanceSeconds":0}`, clockMove{}, false},
		{`{"advanceSeconds":-5}`, clockMove{}, false},
		{`{"advanceSeconds":1.5}`, clockMove{}, false},
		{`{"advanceSeconds":1e3}`, clockMove{}, false},
		{`{"advanceSeconds":"60"}`, clockMove{}, false},
		{`{"advanceSeconds":null}`, clockMove{}, false},
		{`{"advanceSeconds":3162240001}`, clockMove{}, false},
		{`{"advanceSeconds":99999999999999999999}`, clockMove{}, false},
		{`{"set":0}`, clockMove{}, false},
		{`{"set":253402300800}`, clockMove{}, false},
		{`{"advanceSeconds":1,"set":5}`, clockMove{}, false},
		{`{"advance":1}`, clockMove{}, false},
		{`{}`, clockMove{}, false},
		{`[]`, clockMove{}, false},
		{`null`, clockMove{}, false},
		{`60`, clockMove{}, false},
		{``, clockMove{}, false},
		{`{"advanceSeconds":1} x`, clockMove{}, false},
		{`{"advanceSeconds":1`, clockMove{}, false},
	} {
		got, err := parseClockMove([]byte(tc.body))
		if tc.ok {
			if err != nil || got != tc.want {
				t.Errorf("parseClockMove(%s) = %+v, %v; want %+v", tc.body, got, err, tc.want)
			}
			continue
		}
		if lethe.ErrorCode(err) != lethe.CodeBadRequest {
			t.Errorf("parseClockMove(%s) = %+v, %v; want a BadRequest error", tc.body, got, err)
		}
	}
	// JSON that cannot mean one thing: a map would keep one of the copies.
	for body, want := range map[string]string{
		`{"advanceSeconds":60,"advanceSeconds":60}`: "The request body is not valid JSON: duplicate property name 'advanceSeconds' at offset 21. " + clockBodyHelp,
		`{"set":1e400}`: "The request body is not valid JSON: the number '1e400' at offset 7 does not fit a 64-bit floating-point value. " + clockBodyHelp,
	} {
		_, err := parseClockMove([]byte(body))
		if lethe.ErrorCode(err) != lethe.CodeBadRequest || lethe.ErrorMessage(err) != want {
			t.Errorf("parseClockMove(%s) = %v; want BadRequest %q", body, err, want)
		}
	}
}

// adminTarget is a server on a manual clock over an in-memory engine with no
// background goroutine, and that clock.
func adminTarget(t *testing.T, manual bool) (*Server, *clock.Manual) {
	t.Helper()
	store, err := pebblekv.Open(pebblekv.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	var m *clock.Manual
	now := time.Now
	if manual {
		m = clock.NewManual(time.Now())
		now = m.Now
	}
	e, err := engine.Open(context.Background(), engine.Options{Store: store, Now: now, DisableBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return New(Options{Engine: e, Key: mustDecodeKey(t), ManualClock: m}), m
}

// adminCall sends one admin request through ServeHTTP with the given headers.
func adminCall(s *Server, method, path, body string, headers map[string]string) (int, map[string]any) {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	var out map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &out)
	return w.Code, out
}

func keyHeader() map[string]string { return map[string]string{"x-lethe-master-key": emulatorKey} }

// signedHeaders signs a request at wall-clock time, as an SDK would.
func signedHeaders(t *testing.T, method, path string) map[string]string {
	segs, err := pathSegments(path)
	if err != nil {
		t.Fatal(err)
	}
	typ, link := resourceOf(segs)
	date := time.Now().UTC().Format(http.TimeFormat)
	return map[string]string{"x-ms-date": date, "Authorization": signMasterKey(method, typ, link, date, mustDecodeKey(t))}
}

func TestAdminAuth(t *testing.T) {
	s, _ := adminTarget(t, true)
	wrongKey := "AAAA" + emulatorKey[4:]
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"key header", keyHeader(), http.StatusOK},
		{"key header with spaces", map[string]string{"x-lethe-master-key": " " + emulatorKey + " "}, http.StatusOK},
		{"wrong key", map[string]string{"x-lethe-master-key": wrongKey}, http.StatusUnauthorized},
		{"truncated key", map[string]string{"x-lethe-master-key": emulatorKey[:40]}, http.StatusUnauthorized},
		{"not base64", map[string]string{"x-lethe-master-key": "not base64!"}, http.StatusUnauthorized},
		{"empty key header", map[string]string{"x-lethe-master-key": ""}, http.StatusUnauthorized},
		{"nothing", nil, http.StatusUnauthorized},
		{"signature", signedHeaders(t, "GET", "/_lethe/clock"), http.StatusOK},
		{"signature for another path", signedHeaders(t, "GET", "/_lethe/purge"), http.StatusUnauthorized},
		{"signature for another verb", signedHeaders(t, "POST", "/_lethe/clock"), http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := adminCall(s, "GET", "/_lethe/clock", "", tc.headers)
			if code != tc.want {
				t.Fatalf("status %d, want %d: %v", code, tc.want, body)
			}
			if code != http.StatusOK && (body["code"] != lethe.CodeUnauthorized || body["message"] == "") {
				t.Fatalf("error body %v", body)
			}
		})
	}
}

// TestAdminClockKeepsAuthOnWallClock: a day after the manual clock was
// advanced, requests signed with the wall-clock time still pass the 15-minute
// skew check, and requests dated a day ahead (the manual clock's time) still
// fail it.
func TestAdminClockKeepsAuthOnWallClock(t *testing.T) {
	s, m := adminTarget(t, true)
	if code, body := adminCall(s, "POST", "/_lethe/clock", `{"advanceSeconds":86400}`, keyHeader()); code != http.StatusOK {
		t.Fatalf("advance: %d %v", code, body)
	}
	if code, body := adminCall(s, "GET", "/", "", signedHeaders(t, "GET", "/")); code != http.StatusOK {
		t.Fatalf("request signed at wall-clock time after the advance: %d %v", code, body)
	}
	date := m.Now().UTC().Format(http.TimeFormat)
	h := map[string]string{"x-ms-date": date, "Authorization": signMasterKey("GET", "", "", date, mustDecodeKey(t))}
	if code, _ := adminCall(s, "GET", "/", "", h); code != http.StatusUnauthorized {
		t.Fatalf("request dated at the manual clock, a day ahead of the wall clock: %d, want 401", code)
	}
}

func TestAdminClockMoves(t *testing.T) {
	s, m := adminTarget(t, true)
	start := m.Now().Unix()
	clockNow := func() int64 {
		t.Helper()
		code, body := adminCall(s, "GET", "/_lethe/clock", "", keyHeader())
		if code != http.StatusOK {
			t.Fatalf("GET clock: %d %v", code, body)
		}
		now := int64(body["now"].(float64))
		if want := time.Unix(now, 0).UTC().Format(time.RFC3339); body["nowRfc3339"] != want {
			t.Fatalf("nowRfc3339 = %v, want %s", body["nowRfc3339"], want)
		}
		return now
	}
	if got := clockNow(); got != start {
		t.Fatalf("clock starts at %d, want %d", got, start)
	}
	code, body := adminCall(s, "POST", "/_lethe/clock", `{"advanceSeconds":1800}`, keyHeader())
	if code != http.StatusOK || int64(body["now"].(float64)) != start+1800 {
		t.Fatalf("advance 1800: %d %v, want now %d", code, body, start+1800)
	}
	code, body = adminCall(s, "POST", "/_lethe/clock", `{"set":`+itoa(start+3600)+`}`, keyHeader())
	if code != http.StatusOK || int64(body["now"].(float64)) != start+3600 {
		t.Fatalf("set: %d %v, want now %d", code, body, start+3600)
	}
	code, body = adminCall(s, "POST", "/_lethe/clock", `{"set":`+itoa(start+3600)+`}`, keyHeader())
	if code != http.StatusOK || int64(body["now"].(float64)) != start+3600 {
		t.Fatalf("set to the current second: %d %v", code, body)
	}
	for _, bad := range []string{`{"set":` + itoa(start+3599) + `}`, `{"advanceSeconds":-1}`, `{"advanceSeconds":0}`, `garbage`, ``, `{"advanceSeconds":60,"advanceSeconds":60}`} {
		code, body := adminCall(s, "POST", "/_lethe/clock", bad, keyHeader())
		if code != http.StatusBadRequest || body["code"] != lethe.CodeBadRequest {
			t.Errorf("POST %q: %d %v, want 400", bad, code, body)
		}
		if got := clockNow(); got != start+3600 {
			t.Fatalf("after POST %q the clock is at %d, want %d", bad, got, start+3600)
		}
	}
}

func TestAdminPaths(t *testing.T) {
	s, _ := adminTarget(t, true)
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"POST", "/_lethe/purge", http.StatusOK},
		{"GET", "/_lethe/purge", http.StatusMethodNotAllowed},
		{"DELETE", "/_lethe/clock", http.StatusMethodNotAllowed},
		{"GET", "/_lethe", http.StatusNotFound},
		{"GET", "/_lethe/x", http.StatusNotFound},
		{"GET", "/_lethe/clock/x", http.StatusNotFound},
	} {
		code, body := adminCall(s, tc.method, tc.path, "", keyHeader())
		if code != tc.want {
			t.Errorf("%s %s: %d %v, want %d", tc.method, tc.path, code, body, tc.want)
		}
		if code != http.StatusOK && body["message"] == "" {
			t.Errorf("%s %s: no Cosmos error body: %v", tc.method, tc.path, body)
		}
	}
	if _, body := adminCall(s, "POST", "/_lethe/purge", "", keyHeader()); body["purged"] != float64(0) {
		t.Errorf("purge of an empty store: %v", body)
	}
}

// TestAdminWithoutManualClock: without a manual clock the admin API still
// tells the time (manual false), but refuses to move it or purge on demand,
// naming the flag that enables them.
func TestAdminWithoutManualClock(t *testing.T) {
	s, _ := adminTarget(t, false)
	code, body := adminCall(s, "GET", "/_lethe/clock", "", keyHeader())
	if code != http.StatusOK || body["manual"] != false || body["now"] == nil {
		t.Errorf("GET /_lethe/clock with the wall clock: %d %v", code, body)
	}
	for _, p := range []string{"/_lethe/clock", "/_lethe/purge"} {
		code, body := adminCall(s, "POST", p, `{"advanceSeconds":60}`, keyHeader())
		msg, _ := body["message"].(string)
		if code != http.StatusNotFound || body["code"] != lethe.CodeNotFound || !strings.Contains(msg, "--clock=manual") {
			t.Errorf("POST %s without a manual clock: %d %v", p, code, body)
		}
	}
	if code, body := adminCall(s, "GET", "/_lethe/x", "", keyHeader()); code != http.StatusNotFound || body["code"] != lethe.CodeNotFound {
		t.Errorf("GET /_lethe/x: %d %v", code, body)
	}
	if code, _ := adminCall(s, "GET", "/_lethe/clock", "", nil); code != http.StatusUnauthorized {
		t.Errorf("unauthenticated request: %d, want 401", code)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
