package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/kv/pebblekv"
)

var (
	fuzzOnce   sync.Once
	fuzzServer *Server
	fuzzKey    []byte
)

// fuzzTarget returns one server over an in-memory store with a lookup cache
// and the key filter of document keys, as `lethe serve --in-memory` runs,
// shared by every fuzz input, with database "db" and container "c"
// (partition key /pk, TTL on).
func fuzzTarget(t testing.TB) *Server {
	fuzzOnce.Do(func() {
		store, err := pebblekv.Open(pebblekv.Options{InMemory: true, LookupCacheSize: 1 << 20, LookupCacheable: engine.LookupCacheable, FilterPrefix: engine.DocumentKeyPrefix(), FilterKeys: engine.DocumentKeys})
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.Open(context.Background(), engine.Options{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		fuzzKey, _ = base64.StdEncoding.DecodeString("C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==")
		fuzzServer = New(Options{Engine: e, Key: fuzzKey})
		ctx := context.Background()
		if _, err := e.CreateDatabase(ctx, []byte(`{"id":"db"}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.CreateContainer(ctx, "db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":10}`)); err != nil {
			t.Fatal(err)
		}
	})
	return fuzzServer
}

var fuzzMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// FuzzServeHTTP sends correctly signed requests with arbitrary methods, paths,
// partition key headers, flags and bodies. No input may produce a 5xx (a panic
// is recovered into a 500, so it is caught here too), every error response
// must carry a Cosmos JSON body, and no write succeeds with a body that is not
// one JSON value with unique member names and numbers within a double's range
// (an independent check: encoding/json's tokenizer, not jsonv).
func FuzzServeHTTP(f *testing.F) {
	seeds := []struct {
		method uint8
		path   string
		pk     string
		flags  uint8
		body   string
	}{
		{1, "/dbs/db/colls/c/docs", `["a"]`, 0, `{"id":"x","pk":"a"}`},
		{1, "/dbs/db/colls/c/docs", `["a"]`, 1, `{"id":"x","pk":"a","ttl":5}`},
		{1, "/dbs/db/colls/c/docs", `["a"]`, 2, `[{"operationType":"Create","resourceBody":{"id":"y","pk":"a"}},{"operationType":"Read","id":"y"}]`},
		{3, "/dbs/db/colls/c/docs/x", `["a"]`, 0, `{"condition":"FROM c WHERE c.pk = 'a'","operations":[{"op":"incr","path":"/n","value":1}]}`},
		{3, "/dbs/db/colls/c/docs/x", `["a"]`, 0, `[{"op":"move","from":"/a","path":"/b"}]`},
		{2, "/dbs/db/colls/c/docs/x", `["a"]`, 4, `{"id":"x","pk":"a"}`},
		{0, "/dbs/db/colls/c/docs", ``, 8, ``},
		{2, "/dbs/db/colls/c", ``, 0, `{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":5}`},
		{1, "/dbs", ``, 0, `{"id":"d2"}`},
		{1, "/dbs/db/colls", ``, 0, `{"id":"c2","partitionKey":{"paths":["/a","/b"],"kind":"MultiHash"}}`},
		{0, "/dbs/db/colls/c/pkranges", ``, 0, ``},
		{4, "/dbs/db/colls/c/docs/x", `[{}]`, 0, ``},
		{1, "/dbs/db/colls/c/docs", `["a"]`, 16, `{"query":"SELECT * FROM c"}`},
		{0, "/offers", ``, 0, ``},
		{0, "/dbs/db/colls/c/docs", ``, 64, `"80000000000000000000000100000000000000ff"`},
		{0, "/dbs/db/colls/c/docs", `["a"]`, 64 | 128, `Mon, 02 Jan 2006 15:04:05 GMT`},
		{0, "/dbs/db/colls/c/docs", ``, 64, `*`},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.pk, s.flags, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method uint8, path, pk string, flags uint8, body []byte) {
		srv := fuzzTarget(t)
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		u, err := url.Parse("http://lethe" + path)
		if err != nil || u.Host != "lethe" {
			return // not a request line a client could send
		}
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		req := httptest.NewRequest(m, "http://lethe/", bytes.NewReader(body))
		req.URL.Path, req.URL.RawPath = u.Path, u.RawPath
		date := time.Now().UTC().Format(http.TimeFormat)
		req.Header.Set("x-ms-date", date)
		rt, link, err := resourceFromPath(req.URL.EscapedPath())
		if err == nil {
			req.Header.Set("Authorization", signMasterKey(m, rt, link, date, fuzzKey))
		}
		if pk != "" {
			req.Header["X-Ms-Documentdb-Partitionkey"] = []string{pk}
		}
		if flags&1 != 0 {
			req.Header.Set("x-ms-documentdb-is-upsert", "True")
		}
		if flags&2 != 0 {
			req.Header.Set("x-ms-cosmos-is-batch-request", "True")
		}
		if flags&4 != 0 {
			req.Header.Set("If-Match", "*")
		}
		if flags&8 != 0 {
			req.Header.Set("x-ms-max-item-count", "2")
			req.Header.Set("x-ms-continuation", string(body))
		}
		if flags&16 != 0 {
			req.Header.Set("Content-Type", "application/query+json")
		}
		if flags&32 != 0 {
			req.Header.Set("Prefer", "return=minimal")
		}
		if flags&64 != 0 { // the change feed, from an arbitrary position
			req.Header.Set("A-IM", "Incremental feed")
			if flags&128 != 0 {
				req.Header.Set("If-Modified-Since", string(body))
			} else {
				req.Header.Set("If-None-Match", string(body))
			}
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s (pk %q, flags %d, body %q) = %d: %s", m, path, pk, flags, body, rec.Code, rec.Body)
		}
		if rec.Header().Get("x-ms-request-charge") == "" || rec.Header().Get("x-ms-activity-id") == "" {
			t.Fatalf("%s %s = %d without charge or activity headers", m, path, rec.Code)
		}
		if rec.Code < 300 && (m == "POST" || m == "PUT" || m == "PATCH") {
			if problem := ambiguousJSON(body); problem != "" {
				t.Fatalf("%s %s (pk %q, flags %d) = %d for a body with %s: %q", m, path, pk, flags, rec.Code, problem, body)
			}
		}
		if rec.Code >= 400 {
			var e struct{ Code, Message string }
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code == "" || e.Message == "" {
				t.Fatalf("%s %s = %d with a non-Cosmos error body %q", m, path, rec.Code, rec.Body)
			}
		}
	})
}

// ambiguousJSON says what makes b something other than one JSON value with
// unique member names and numbers a double can hold, or "" when nothing does.
// It walks encoding/json's tokens, independently of jsonv.
func ambiguousJSON(b []byte) string {
	if !json.Valid(b) {
		return "invalid JSON"
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	type frame struct {
		names   map[string]bool // nil for an array
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := d.Token()
		if err != nil {
			return "" // io.EOF: b is valid, so the value is complete
		}
		if n := len(stack); n > 0 && stack[n-1].names != nil && stack[n-1].wantKey {
			if tok != json.Delim('}') {
				name := tok.(string)
				if stack[n-1].names[name] {
					return "the member name " + strconv.Quote(name) + " twice"
				}
				stack[n-1].names[name] = true
				stack[n-1].wantKey = false
				continue
			}
			stack = stack[:n-1]
		} else {
			switch t := tok.(type) {
			case json.Delim:
				switch t {
				case '{':
					stack = append(stack, &frame{names: map[string]bool{}, wantKey: true})
					continue
				case '[':
					stack = append(stack, &frame{})
					continue
				default:
					stack = stack[:len(stack)-1]
				}
			case json.Number:
				if _, err := strconv.ParseFloat(string(t), 64); err != nil {
					return "the number " + string(t) + " beyond a double"
				}
			}
		}
		if n := len(stack); n > 0 && stack[n-1].names != nil {
			stack[n-1].wantKey = true // a member's value is complete
		}
	}
}
