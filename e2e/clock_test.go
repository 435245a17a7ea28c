package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// adminKey is the header that authenticates admin requests without a signature.
var adminKey = hdr("x-lethe-master-key", emulatorKey)

// clockNow reads GET /_lethe/clock and checks its two forms agree.
func (s *server) clockNow(t testing.TB) int64 {
	t.Helper()
	r := s.send(t, "GET", "/_lethe/clock", adminKey, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /_lethe/clock: %d %s", r.Status, r.Body)
	}
	return clockOf(t, r)
}

// clockOf decodes a clock response, {"now": <unix seconds>, "nowRfc3339": "..."}.
func clockOf(t testing.TB, r rawResponse) int64 {
	t.Helper()
	m := r.json(t)
	f, ok := m["now"].(float64)
	if !ok || f != float64(int64(f)) {
		t.Fatalf("clock body %s: now is not an integer", r.Body)
	}
	now := int64(f)
	if want := time.Unix(now, 0).UTC().Format(time.RFC3339); m["nowRfc3339"] != want {
		t.Fatalf("clock body %s: nowRfc3339 is not %s", r.Body, want)
	}
	return now
}

// advanceClock moves the server clock forward by n seconds and returns the new time.
func (s *server) advanceClock(t testing.TB, n int64) int64 {
	t.Helper()
	r := s.send(t, "POST", "/_lethe/clock", adminKey, fmt.Appendf(nil, `{"advanceSeconds":%d}`, n))
	if r.Status != http.StatusOK {
		t.Fatalf("advance %d s: %d %s", n, r.Status, r.Body)
	}
	return clockOf(t, r)
}

// purgeNow runs POST /_lethe/purge and returns how many documents it deleted.
func (s *server) purgeNow(t testing.TB) int {
	t.Helper()
	r := s.send(t, "POST", "/_lethe/purge", adminKey, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("POST /_lethe/purge: %d %s", r.Status, r.Body)
	}
	n, ok := r.json(t)["purged"].(float64)
	if !ok {
		t.Fatalf("purge body %s has no purged count", r.Body)
	}
	return int(n)
}

// TestManualClockSession is the 30-minute session story with a manual clock:
// the clock stands still until told, a session with defaultTtl 1800 is readable
// 1799 s later and gone (read, query, read feed) 1 s after that, the SDK keeps
// authenticating although the server clock is now half an hour ahead of the
// wall clock, and POST /_lethe/purge deletes exactly the expired session. The
// background purger is off so that the purge endpoint's count is the only
// deletion.
func TestManualClockSession(t *testing.T) {
	t.Parallel()
	started := time.Now().Unix()
	s := startServer(t, serverOpts{InMemory: true, Args: []string{"--clock=manual", "--disable-purger"}})
	c := s.client(t)
	db := mustDatabase(t, c, "app")
	cc := mustContainer(t, db, pkContainer("sessions", i32(1800)))
	pk := azcosmos.NewPartitionKeyString("u1")

	t0 := s.clockNow(t)
	if wall := time.Now().Unix(); t0 < started || t0 > wall {
		t.Fatalf("a manual clock starts at the wall-clock time: %d; the server started at %d, read at %d", t0, started, wall)
	}
	session := createDoc(t, cc, pk, map[string]any{"id": "s1", "pk": "u1"})
	createDoc(t, cc, pk, map[string]any{"id": "forever", "pk": "u1", "ttl": -1})
	if ts := tsOf(t, session); ts != t0 {
		t.Fatalf("_ts = %d, want the manual clock's %d", ts, t0)
	}
	// The clock does not move by itself: a wall-clock second later it still reads t0.
	time.Sleep(1100 * time.Millisecond)
	if now := s.clockNow(t); now != t0 {
		t.Fatalf("the manual clock moved by itself from %d to %d", t0, now)
	}
	if st := readStatus(t, cc, pk, "s1"); st != http.StatusOK {
		t.Fatalf("read a fresh session: %d", st)
	}

	if now := s.advanceClock(t, 1799); now != t0+1799 {
		t.Fatalf("after advancing 1799 s the clock reads %d, want %d", now, t0+1799)
	}
	if st := readStatus(t, cc, pk, "s1"); st != http.StatusOK {
		t.Fatalf("read the session 1799 s after it was written: %d", st)
	}
	if got := queryIDs(t, cc, "SELECT VALUE c.id FROM c ORDER BY c.id", pk, nil); !slices.Equal(got, []string{"forever", "s1"}) {
		t.Fatalf("query at 1799 s = %v", got)
	}

	if now := s.advanceClock(t, 1); now != t0+1800 {
		t.Fatalf("after advancing 1 s more the clock reads %d, want %d", now, t0+1800)
	}
	if st := readStatus(t, cc, pk, "s1"); st != http.StatusNotFound {
		t.Fatalf("read the session 1800 s after it was written: %d, want 404", st)
	}
	if got := queryIDs(t, cc, "SELECT VALUE c.id FROM c", pk, nil); !slices.Equal(got, []string{"forever"}) {
		t.Errorf("query at 1800 s = %v, want [forever]", got)
	}
	if got := queryIDs(t, cc, "SELECT VALUE c.id FROM c WHERE c.id = 's1'", azcosmos.NewPartitionKey(), nil); len(got) != 0 {
		t.Errorf("cross-partition query for the session at 1800 s = %v", got)
	}
	if got := s.readFeedAll(t, "app", "sessions", 0, ""); !slices.Equal(got, []string{"forever"}) {
		t.Errorf("read feed at 1800 s = %v, want [forever]", got)
	}
	if _, err := cc.ReplaceItem(ctx, pk, "s1", mustMarshal(t, map[string]any{"id": "s1", "pk": "u1"}), nil); statusOf(err) != http.StatusNotFound {
		t.Errorf("replace of the expired session: %v, want 404", err)
	}

	if n := s.purgeNow(t); n != 1 {
		t.Errorf("POST /_lethe/purge purged %d documents, want 1", n)
	}
	if n := s.purgeNow(t); n != 0 {
		t.Errorf("a second purge purged %d documents, want 0", n)
	}
	if st := readStatus(t, cc, pk, "forever"); st != http.StatusOK {
		t.Errorf("the document with ttl -1 after the purge: %d", st)
	}
	if now := s.clockNow(t); now != t0+1800 {
		t.Errorf("after the purge the clock reads %d, want %d", now, t0+1800)
	}
}

// TestManualClockBadRequests: requests without the master key get 401, bodies
// that are not a forward move get 400, unknown admin paths 404 and wrong
// methods 405, all with Cosmos error bodies, and none of them moves the clock.
// A request signed like any Cosmos request (type "_lethe", link
// "_lethe/clock") is accepted.
func TestManualClockBadRequests(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true, Args: []string{"--clock=manual"}})
	t0 := s.advanceClock(t, 3600)
	unchanged := func(what string) {
		t.Helper()
		if now := s.clockNow(t); now != t0 {
			t.Fatalf("%s moved the clock from %d to %d", what, t0, now)
		}
	}

	if r := s.do(t, "GET", "/_lethe/clock", nil, nil); r.Status != http.StatusOK || clockOf(t, r) != t0 {
		t.Errorf("GET /_lethe/clock signed with the master key: %d %s", r.Status, r.Body)
	}
	wrongKey := "AAAA" + emulatorKey[4:]
	date := time.Now().UTC().Format(http.TimeFormat)
	for name, h := range map[string]map[string]string{
		"no credentials":                      nil,
		"wrong x-lethe-master-key":            hdr("x-lethe-master-key", wrongKey),
		"x-lethe-master-key not base64":       hdr("x-lethe-master-key", "secret"),
		"bad signature":                       hdr("Authorization", "type%3Dmaster%26ver%3D1.0%26sig%3DAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA%3D", "x-ms-date", date),
		"signature for GET /_lethe/clock":     hdr("Authorization", signRequest("GET", "/_lethe/clock", date), "x-ms-date", date),
		"signature dated at the server clock": signedAt(time.Unix(t0, 0)),
	} {
		s.send(t, "POST", "/_lethe/clock", h, []byte(`{"advanceSeconds":60}`)).wantError(t, "advance with "+name, http.StatusUnauthorized)
		s.send(t, "POST", "/_lethe/purge", h, nil).wantError(t, "purge with "+name, http.StatusUnauthorized)
		unchanged(name)
	}

	for _, body := range []string{
		fmt.Sprintf(`{"set":%d}`, t0-1),
		`{"set":1}`,
		`{"advanceSeconds":-60}`,
		`{"advanceSeconds":0}`,
		`{"advanceSeconds":1.5}`,
		`{"advanceSeconds":"60"}`,
		`{"advanceSeconds":60,"set":99999999999}`,
		`{"advance":60}`,
		`{}`,
		`[60]`,
		`garbage`,
		``,
	} {
		msg := s.send(t, "POST", "/_lethe/clock", adminKey, []byte(body)).wantError(t, "POST /_lethe/clock "+body, http.StatusBadRequest)
		if strings.HasPrefix(body, `{"set"`) && !strings.Contains(msg, "backwards") {
			t.Errorf("going back to %s: message %q does not say the clock never goes backwards", body, msg)
		}
		unchanged("body " + body)
	}

	if r := s.send(t, "POST", "/_lethe/clock", adminKey, fmt.Appendf(nil, `{"set":%d}`, t0)); r.Status != http.StatusOK || clockOf(t, r) != t0 {
		t.Errorf("set to the current time: %d %s", r.Status, r.Body)
	}
	if r := s.send(t, "POST", "/_lethe/clock", adminKey, fmt.Appendf(nil, `{"set":%d}`, t0+86400)); r.Status != http.StatusOK || clockOf(t, r) != t0+86400 {
		t.Errorf("set a day ahead: %d %s", r.Status, r.Body)
	}
	t0 += 86400

	for _, p := range []string{"/_lethe", "/_lethe/x", "/_lethe/clock/x", "/_lethe/purge/x"} {
		s.send(t, "GET", p, adminKey, nil).wantError(t, "GET "+p, http.StatusNotFound)
	}
	s.send(t, "GET", "/_lethe/purge", adminKey, nil).wantError(t, "GET /_lethe/purge", http.StatusMethodNotAllowed)
	s.send(t, "DELETE", "/_lethe/clock", adminKey, nil).wantError(t, "DELETE /_lethe/clock", http.StatusMethodNotAllowed)
	unchanged("the path checks")
}

// signedAt returns the headers of POST /_lethe/clock signed with the master key
// and dated at.
func signedAt(at time.Time) map[string]string {
	date := at.UTC().Format(http.TimeFormat)
	return hdr("Authorization", signRequest("POST", "/_lethe/clock", date), "x-ms-date", date)
}

// TestWallClockHasNoAdminAPI: without --clock=manual the admin API tells the
// time (manual: false) but refuses to move it or purge on demand, answering
// 404 with a message saying how to turn them on, even with the right key;
// and the server runs on the wall clock.
func TestWallClockHasNoAdminAPI(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	for _, rq := range []struct{ method, path, body string }{
		{"POST", "/_lethe/clock", `{"advanceSeconds":3600}`},
		{"POST", "/_lethe/purge", ""},
	} {
		msg := s.send(t, rq.method, rq.path, adminKey, []byte(rq.body)).wantError(t, rq.method+" "+rq.path, http.StatusNotFound)
		if !strings.Contains(msg, "--clock=manual") {
			t.Errorf("%s %s: message %q does not say how to enable it", rq.method, rq.path, msg)
		}
		s.do(t, rq.method, rq.path, nil, []byte(rq.body)).wantError(t, "signed "+rq.method+" "+rq.path, http.StatusNotFound)
	}
	s.send(t, "GET", "/_lethe/x", adminKey, nil).wantError(t, "GET /_lethe/x", http.StatusNotFound)
	if r := s.send(t, "GET", "/_lethe/clock", adminKey, nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"manual":false`) {
		t.Errorf("GET /_lethe/clock on the wall clock: %d %s", r.Status, r.Body)
	}
	s.send(t, "GET", "/_lethe/clock", nil, nil).wantError(t, "unauthenticated GET /_lethe/clock", http.StatusUnauthorized)

	c := s.client(t)
	cc := mustContainer(t, mustDatabase(t, c, "db"), pkContainer("c", i32(3600)))
	before := time.Now().Unix()
	doc := createDoc(t, cc, azcosmos.NewPartitionKeyString("p"), map[string]any{"id": "d", "pk": "p"})
	after := time.Now().Unix()
	if ts := tsOf(t, doc); ts < before || ts > after {
		t.Errorf("_ts = %d on the wall clock; want between %d and %d", ts, before, after)
	}
}

// TestManualClockSurvivesRestart: an advance is persisted (the engine's
// high-water mark), so after a restart on the same data directory the clock
// does not go back: under --clock=manual it resumes where it was and advances
// from there; under the wall clock new writes still get that later time.
func TestManualClockSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--clock=manual"}
	s1 := startServer(t, serverOpts{DataDir: dir, Args: args})
	cc := mustContainer(t, mustDatabase(t, s1.client(t), "db"), pkContainer("c", i32(-1)))
	pk := azcosmos.NewPartitionKeyString("p")
	t1 := s1.advanceClock(t, 10*86400)
	doc := createDoc(t, cc, pk, map[string]any{"id": "d", "pk": "p", "ttl": 60})
	if ts := tsOf(t, doc); ts != t1 {
		t.Fatalf("_ts = %d, want the advanced clock's %d", ts, t1)
	}
	s1.stop(t)

	s2 := startServer(t, serverOpts{DataDir: dir, Args: args})
	t2 := s2.clockNow(t)
	if t2 != t1 {
		t.Fatalf("after a restart the clock reads %d, want %d (where it was left)", t2, t1)
	}
	cc2, _ := s2.client(t).NewContainer("db", "c")
	if st := readStatus(t, cc2, pk, "d"); st != http.StatusOK {
		t.Fatalf("the document after the restart: %d", st)
	}
	if now := s2.advanceClock(t, 59); now != t1+59 {
		t.Fatalf("advancing 59 s after the restart: clock %d, want %d", now, t1+59)
	}
	if st := readStatus(t, cc2, pk, "d"); st != http.StatusOK {
		t.Fatalf("the document 59 s into its 60 s ttl: %d", st)
	}
	if now := s2.advanceClock(t, 1); now != t1+60 {
		t.Fatalf("advancing 1 s more: clock %d, want %d", now, t1+60)
	}
	if st := readStatus(t, cc2, pk, "d"); st != http.StatusNotFound {
		t.Fatalf("the document at the end of its ttl: %d, want 404", st)
	}
	s2.stop(t)

	s3 := startServer(t, serverOpts{DataDir: dir}) // the wall clock, ten days behind
	cc3, _ := s3.client(t).NewContainer("db", "c")
	if st := readStatus(t, cc3, pk, "d"); st != http.StatusNotFound {
		t.Errorf("the expired document under the wall clock: %d, want 404 (expiry is final)", st)
	}
	later := createDoc(t, cc3, pk, map[string]any{"id": "e", "pk": "p"})
	if ts := tsOf(t, later); ts < t1+60 {
		t.Errorf("_ts under the wall clock after the restart = %d; want at least %d, the persisted clock", ts, t1+60)
	}
}
