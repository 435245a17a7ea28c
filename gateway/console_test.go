package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe/engine"
)

// get sends one request through ServeHTTP and returns the recorder.
func get(s *Server, method, path string, headers map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// TestConsoleRoutes: the console's files are served without a key, with a
// Content-Security-Policy that allows no inline script; a browser asking the
// account root for a page is sent to the console, an SDK asking for JSON is
// not (it gets the account, or a 401 without a key).
func TestConsoleRoutes(t *testing.T) {
	s, _ := adminTarget(t, false)
	page := get(s, "GET", "/_explorer/", nil)
	if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), `<script type="module" src="app.js">`) {
		t.Fatalf("GET /_explorer/: %d %.200s", page.Code, page.Body)
	}
	csp := page.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if strings.Contains(page.Body.String(), "<script>") || strings.Contains(page.Body.String(), " style=") || strings.Contains(page.Body.String(), " onclick=") {
		t.Errorf("the page has inline script or style, which the policy forbids")
	}
	for path, ctype := range map[string]string{"/_explorer/app.js": "javascript", "/_explorer/style.css": "text/css"} {
		w := get(s, "GET", path, nil)
		if w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Content-Type"), ctype) || w.Body.Len() == 0 {
			t.Errorf("GET %s: %d %q", path, w.Code, w.Header().Get("Content-Type"))
		}
	}
	// A deep link reloaded: any other path below the console is its page.
	if w := get(s, "GET", "/_explorer/dbs/x", nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "app.js") {
		t.Errorf("GET /_explorer/dbs/x: %d", w.Code)
	}
	if w := get(s, "POST", "/_explorer/", nil); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /_explorer/: %d", w.Code)
	}
	for _, path := range []string{"/", "/_explorer"} {
		w := get(s, "GET", path, map[string]string{"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
		if w.Code != http.StatusFound || w.Header().Get("Location") != "/_explorer/" {
			t.Errorf("a browser's GET %s: %d, Location %q", path, w.Code, w.Header().Get("Location"))
		}
	}
	if w := get(s, "GET", "/", map[string]string{"Accept": "application/json"}); w.Code != http.StatusUnauthorized {
		t.Errorf("an unsigned JSON GET /: %d, want 401", w.Code)
	}
	if w := get(s, "GET", "/", signedHeaders(t, "GET", "/")); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "writableLocations") {
		t.Errorf("a signed GET / (an SDK reading the account): %d %.100s", w.Code, w.Body)
	}
}

// TestAdminTTLStatusAndItems: the console's two container endpoints answer
// signed requests with the TTL status (backlog, upcoming counts) and a page
// of documents with their expiry instants.
func TestAdminTTLStatusAndItems(t *testing.T) {
	s, m := adminTarget(t, true)
	e := s.opts.Engine
	ctx := context.Background()
	if _, err := e.CreateDatabase(ctx, []byte(`{"id":"db"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer(ctx, "db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":600}`)); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{`{"id":"a","pk":"p","ttl":30}`, `{"id":"b","pk":"p","ttl":-1}`, `{"id":"c","pk":"p"}`, `{"id":"d","pk":"p","ttl":5}`} {
		if _, err := e.CreateDocument(ctx, engine.DocRef{DB: "db", Coll: "c", PK: []any{"p"}}, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	now := m.Now().Unix()
	if _, err := m.Advance(10 * time.Second); err != nil { // d expires
		t.Fatal(err)
	}
	path := "/_lethe/dbs/db/colls/c/ttl"
	code, st := adminCall(s, "GET", path, "", signedHeaders(t, "GET", path))
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %v", path, code, st)
	}
	backlog := st["backlog"].(map[string]any)
	minutes := st["upcoming"].(map[string]any)["byMinute"].([]any)
	hours := st["upcoming"].(map[string]any)["byHour"].([]any)
	if st["defaultTtl"] != 600.0 || backlog["documents"] != 1.0 || backlog["oldestAgeSeconds"] != 5.0 || len(minutes) != 60 || len(hours) != 24 {
		t.Fatalf("status %v", st)
	}
	// a at now+30 (20 s from the status's now): minute 0; c at now+600 (590 s): minute 9.
	if minutes[0] != 1.0 || minutes[9] != 1.0 || hours[0] != 2.0 {
		t.Errorf("upcoming by minute %v, by hour %v", minutes, hours)
	}

	items := "/_lethe/dbs/db/colls/c/items"
	h := signedHeaders(t, "GET", items)
	h["x-ms-max-item-count"] = "2"
	w := get(s, "GET", items, h)
	body, _ := io.ReadAll(w.Body)
	if w.Code != http.StatusOK || !strings.Contains(string(body), `"continuation"`) {
		t.Fatalf("GET %s: %d %s", items, w.Code, body)
	}
	var page struct {
		Items []struct {
			Document  struct{ ID string }
			Expires   string
			ExpiresAt int64
		}
		Continuation  string
		RequestCharge float64
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	// d expired: the page is a (expires at now+30) and b (never).
	if len(page.Items) != 2 || page.Continuation == "" || page.RequestCharge <= 0 ||
		page.Items[0].Document.ID != "a" || page.Items[0].Expires != rfc3339(now+30) || page.Items[0].ExpiresAt != now+30 ||
		page.Items[1].Document.ID != "b" || page.Items[1].Expires != "" || page.Items[1].ExpiresAt != 0 {
		t.Fatalf("items page %s", body)
	}
	h["x-ms-continuation"] = page.Continuation
	w = get(s, "GET", items, h)
	if body, _ := io.ReadAll(w.Body); w.Code != http.StatusOK || !strings.Contains(string(body), `"expires":"`+rfc3339(now+600)+`"`) || strings.Contains(string(body), `"continuation"`) {
		t.Errorf("second items page: %d %s", w.Code, body)
	}
	if code, _ := adminCall(s, "GET", "/_lethe/dbs/db/colls/nope/ttl", "", keyHeader()); code != http.StatusNotFound {
		t.Errorf("the status of a container that does not exist: %d", code)
	}
}
