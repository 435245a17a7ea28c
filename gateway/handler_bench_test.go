package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/kv/pebblekv"
	"github.com/lethe-db/lethe/metrics"
)

// Handler benchmarks: the server's CPU per operation, without the network:
// signed requests straight into ServeHTTP over an in-memory store. The
// requests are built and signed outside the timer (benchServe), and the
// responses go to one reused benchWriter, so that the time and the
// allocations reported are the handler's own.
//
//	go test ./gateway -run '^$' -bench Handler -benchmem

func benchServer(b *testing.B) (*Server, []byte) {
	b.Helper()
	// The key filter of document keys, as lethe serve runs; no lookup cache
	// (the benchmarks that read a document measure the store's lookup).
	store, err := pebblekv.Open(pebblekv.Options{InMemory: true, FilterPrefix: engine.DocumentKeyPrefix(), FilterKeys: engine.DocumentKeys})
	if err != nil {
		b.Fatal(err)
	}
	e, err := engine.Open(context.Background(), engine.Options{Store: store, DisableBackground: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close(); store.Close() })
	key, _ := base64.StdEncoding.DecodeString(emulatorKey)
	// Metrics are on, as they are by default in lethe serve.
	srv := New(Options{Engine: e, Key: key, Metrics: metrics.New(metrics.Options{})})
	ctx := context.Background()
	if _, err := e.CreateDatabase(ctx, []byte(`{"id":"db"}`)); err != nil {
		b.Fatal(err)
	}
	if _, err := e.CreateContainer(ctx, "db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]}}`)); err != nil {
		b.Fatal(err)
	}
	return srv, key
}

// benchDoc returns a document of about 1 KB.
func benchDoc(id, pk string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"pk":%q,"name":"user %s","n":42,"tags":["a","b","c"],"pad":%q}`, id, pk, id, strings.Repeat("x", 900)))
}

// postBenchDocs creates n documents with ids 0..n-1 in container coll of
// database "db" through srv: in partition "p" when partitions is 1, else
// document i in partition "p<i mod partitions>".
func postBenchDocs(srv *Server, key []byte, coll string, n, partitions int) {
	for i := range n {
		pk := "p"
		if partitions > 1 {
			pk = fmt.Sprintf("p%d", i%partitions)
		}
		req := signedRequest("POST", "/dbs/db/colls/"+coll+"/docs", key, benchDoc(fmt.Sprint(i), pk), map[string]string{"x-ms-documentdb-partitionkey": `["` + pk + `"]`})
		srv.ServeHTTP(httptest.NewRecorder(), req)
	}
}

func signedRequest(method, path string, key []byte, body []byte, hdr map[string]string) *http.Request {
	req := httptest.NewRequest(method, "http://lethe"+path, bytes.NewReader(body))
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	rt, link, _ := resourceFromPath(req.URL.EscapedPath())
	req.Header.Set("Authorization", signMasterKey(method, rt, link, date, key))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

// benchBatch is how many requests benchServe builds at a time, with the
// timer stopped: stopping it reads the memory statistics, which stops the
// world, so once per request would cost more than many handlers.
const benchBatch = 512

// benchServe serves b.N requests to srv: build(i) makes the i-th, outside
// the timer; check looks at each response (its status, a header) and fails
// the benchmark when it is wrong.
func benchServe(b *testing.B, srv *Server, build func(i int) *http.Request, check func(w *benchWriter)) {
	w := &benchWriter{h: http.Header{}}
	reqs := make([]*http.Request, 0, benchBatch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		b.StopTimer()
		reqs = reqs[:0]
		for j := i; j < b.N && len(reqs) < benchBatch; j++ {
			reqs = append(reqs, build(j))
		}
		b.StartTimer()
		for _, req := range reqs {
			w.reset()
			srv.ServeHTTP(w, req)
			check(w)
			i++
		}
	}
}

// benchWriter is the ResponseWriter of benchServe: it keeps its header map
// and its body's buffer from one response to the next, where an
// httptest.ResponseRecorder for each would grow a new buffer every time
// (12 KB of a query page's 47 KB of allocations).
type benchWriter struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (w *benchWriter) Header() http.Header { return w.h }

func (w *benchWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

func (w *benchWriter) reset() {
	clear(w.h)
	w.code = 0
	w.body.Reset()
}

// wantStatus returns a benchServe check that the status is code.
func wantStatus(b *testing.B, op string, code int) func(w *benchWriter) {
	return func(w *benchWriter) {
		if w.code != code {
			b.Fatalf("%s: %d %s", op, w.code, w.body.Bytes())
		}
	}
}

func BenchmarkHandlerRead(b *testing.B) {
	srv, key := benchServer(b)
	postBenchDocs(srv, key, "c", 1000, 1)
	benchServe(b, srv, func(i int) *http.Request {
		return signedRequest("GET", fmt.Sprintf("/dbs/db/colls/c/docs/%d", i%1000), key, nil, map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
	}, wantStatus(b, "read", http.StatusOK))
}

func BenchmarkHandlerCreate(b *testing.B) {
	srv, key := benchServer(b)
	benchServe(b, srv, func(i int) *http.Request {
		return signedRequest("POST", "/dbs/db/colls/c/docs", key, benchDoc(fmt.Sprint(i), "p"), map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "Prefer": "return=minimal"})
	}, wantStatus(b, "create", http.StatusCreated))
}

// BenchmarkHandlerReplace replaces existing documents, each with one
// property changed, as lethe bench's replace workload does; and
// BenchmarkHandlerUpsert upserts them (x-ms-documentdb-is-upsert).
func BenchmarkHandlerReplace(b *testing.B) { benchWriteExisting(b, "PUT") }

func BenchmarkHandlerUpsert(b *testing.B) { benchWriteExisting(b, "POST") }

// benchWriteExisting writes 1,000 documents, then rewrites them in turn:
// method PUT replaces each at its own path, POST upserts it.
func benchWriteExisting(b *testing.B, method string) {
	srv, key := benchServer(b)
	postBenchDocs(srv, key, "c", 1000, 1)
	hdr := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "Prefer": "return=minimal"}
	if method == "POST" {
		hdr["x-ms-documentdb-is-upsert"] = "true"
	}
	benchServe(b, srv, func(i int) *http.Request {
		id := fmt.Sprint(i % 1000)
		path := "/dbs/db/colls/c/docs"
		if method == "PUT" {
			path += "/" + id
		}
		body := bytes.Replace(benchDoc(id, "p"), []byte(`"n":42`), []byte(`"n":`+fmt.Sprint(i)), 1)
		return signedRequest(method, path, key, body, hdr)
	}, wantStatus(b, method, http.StatusOK))
}

// BenchmarkHandlerQueryPK is lethe bench's query-pk workload in process: the
// first page of 10 of a query whose WHERE names the partition key.
func BenchmarkHandlerQueryPK(b *testing.B) {
	benchQueryPage(b, `{"query":"SELECT * FROM c WHERE c.pk = @pk","parameters":[{"name":"@pk","value":"p7"}]}`)
}

// BenchmarkHandlerListPK is lethe bench's query-list workload in process:
// the first page of 10 of SELECT * FROM c, the partition key only in the
// request's header, as applications list a user's items.
func BenchmarkHandlerListPK(b *testing.B) {
	benchQueryPage(b, `{"query":"SELECT * FROM c"}`)
}

// benchQueryPage runs query in partition "p7" of 500, ten documents each,
// and checks that every page holds all ten.
func benchQueryPage(b *testing.B, query string) {
	srv, key := benchServer(b)
	postBenchDocs(srv, key, "c", 5000, 500)
	body := []byte(query)
	status := wantStatus(b, "query", http.StatusOK)
	benchServe(b, srv, func(int) *http.Request {
		return signedRequest("POST", "/dbs/db/colls/c/docs", key, body, map[string]string{"x-ms-documentdb-partitionkey": `["p7"]`, "Content-Type": "application/query+json", "x-ms-max-item-count": "10"})
	}, func(w *benchWriter) {
		status(w)
		if n := w.h.Get("x-ms-item-count"); n != "10" {
			b.Fatalf("query: %s items in the page, want 10", n)
		}
	})
}
