package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestRestart proves that an on-disk server keeps everything across SIGTERM and
// a restart (databases, container definitions, documents byte for byte, read
// feed order, deletions), that new resources get fresh ids and etags after the
// restart, and that TTL keeps counting while the server is down: a document
// whose ttl runs out during the downtime is gone when the server comes back.
func TestRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s1 := startServer(t, serverOpts{DataDir: dir})
	c := s1.client(t)
	db := mustDatabase(t, c, "keep")
	mustDatabase(t, c, "empty")
	cc := mustContainer(t, db, pkContainer("c", i32(-1)))
	hc := mustContainer(t, db, azcosmos.ContainerProperties{
		ID:                     "h",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/a", "/b"}, Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2},
	})
	pk := azcosmos.NewPartitionKeyString("p")
	var ids []string
	for i := range 20 {
		id := fmt.Sprintf("d%02d", i)
		createDoc(t, cc, pk, map[string]any{"id": id, "pk": "p", "n": i, "nested": map[string]any{"s": "é😀"}})
		ids = append(ids, id)
	}
	short := createDoc(t, cc, pk, map[string]any{"id": "short", "pk": "p", "ttl": 2})
	createDoc(t, cc, pk, map[string]any{"id": "long", "pk": "p", "ttl": 3600})
	if _, err := cc.DeleteItem(ctx, pk, "d05", nil); err != nil {
		t.Fatal(err)
	}
	ids = slices.DeleteFunc(ids, func(s string) bool { return s == "d05" })
	hpk := azcosmos.NewPartitionKey().AppendString("x").AppendNumber(1)
	if _, err := hc.CreateItem(ctx, hpk, []byte(`{"id":"h1","a":"x","b":1}`), nil); err != nil {
		t.Fatal(err)
	}
	before := s1.do(t, "GET", docPath("keep", "c", "d07"), hdr("x-ms-documentdb-partitionkey", `["p"]`), nil)
	beforeColl := s1.do(t, "GET", collPath("keep", "c"), nil, nil)
	beforeDB := s1.do(t, "GET", "/dbs/keep", nil, nil)
	if st := readStatus(t, cc, pk, "short"); st != http.StatusOK {
		t.Fatalf("short before the restart: %d", st)
	}

	s1.stop(t) // SIGTERM; fails the test unless it exits 0
	sleepUntil(expiryInstant(tsOf(t, short), 2))

	s2 := startServer(t, serverOpts{DataDir: dir})
	c = s2.client(t)
	db, _ = c.NewDatabase("keep")
	cc, _ = db.NewContainer("c")
	hc, _ = db.NewContainer("h")

	for what, pair := range map[string][2]rawResponse{
		"document":  {before, s2.do(t, "GET", docPath("keep", "c", "d07"), hdr("x-ms-documentdb-partitionkey", `["p"]`), nil)},
		"container": {beforeColl, s2.do(t, "GET", collPath("keep", "c"), nil, nil)},
		"database":  {beforeDB, s2.do(t, "GET", "/dbs/keep", nil, nil)},
	} {
		if pair[1].Status != http.StatusOK || string(pair[0].Body) != string(pair[1].Body) {
			t.Errorf("%s after restart: %d %s\nbefore: %s", what, pair[1].Status, pair[1].Body, pair[0].Body)
		}
	}
	if got := s2.readFeedAll(t, "keep", "c", 7, ""); !slices.Equal(got, append(slices.Clone(ids), "long")) {
		t.Errorf("feed after restart = %v", got)
	}
	for id, want := range map[string]int{"short": 404, "long": 200, "d05": 404, "d00": 200} {
		if st := readStatus(t, cc, pk, id); st != want {
			t.Errorf("%s after restart: %d; want %d", id, st, want)
		}
	}
	if st := readStatus(t, hc, hpk, "h1"); st != http.StatusOK {
		t.Errorf("hierarchical document after restart: %d", st)
	}
	r, err := cc.Read(ctx, nil)
	if err != nil || r.ContainerProperties.DefaultTimeToLive == nil || *r.ContainerProperties.DefaultTimeToLive != -1 {
		t.Errorf("container after restart: %v", err)
	}
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "empty"}, nil); statusOf(err) != http.StatusConflict {
		t.Errorf("the empty database did not survive: create again gives %v", err)
	}

	// New writes get new ids and etags, never reused ones.
	fresh := createDoc(t, cc, pk, map[string]any{"id": "fresh", "pk": "p"})
	old := before.json(t)
	if fresh["_rid"] == old["_rid"] || fresh["_etag"] == old["_etag"] {
		t.Errorf("a document created after the restart reuses an id: %v / %v", fresh["_rid"], old["_rid"])
	}
	var rids []string
	for _, d := range s2.readFeedAllDocs(t, "keep", "c") {
		rids = append(rids, d["_rid"].(string))
	}
	slices.Sort(rids)
	if len(slices.Compact(rids)) != len(rids) {
		t.Errorf("duplicate _rid after restart: %v", rids)
	}
	nd, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "new"}, nil)
	if err != nil || nd.DatabaseProperties.ResourceID == old["_rid"] || nd.DatabaseProperties.ResourceID == beforeDB.json(t)["_rid"] {
		t.Errorf("new database after restart: %v, _rid %q", err, nd.DatabaseProperties.ResourceID)
	}
}

// readFeedAllDocs returns every document of a container's read feed.
func (s *server) readFeedAllDocs(t testing.TB, db, coll string) []map[string]any {
	t.Helper()
	var out []map[string]any
	cont := ""
	for {
		h := hdr("x-ms-max-item-count", "1000")
		if cont != "" {
			h["x-ms-continuation"] = cont
		}
		p, r := s.readFeedPage(t, db, coll, h)
		if r.Status != http.StatusOK {
			t.Fatalf("read feed: %d %s", r.Status, r.Body)
		}
		out = append(out, p.Docs...)
		if p.Continuation == "" {
			return out
		}
		cont = p.Continuation
	}
}

// TestGracefulShutdown proves that SIGTERM lets requests already in flight
// finish: requests whose bodies are still being sent when the signal arrives
// complete with 201, the process then exits 0, and their documents are there
// after a restart. New connections are refused once shutdown has begun.
//
// The requests ask for "100 Continue", which the server sends when the
// handler first reads the body: the test waits for it, so it knows every
// request is being served before it sends the signal, however slowly the
// server is scheduled. It then waits for the refusal of new connections, the
// sign that shutdown has begun, before it sends the rest of the bodies.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, serverOpts{DataDir: dir})
	c := s.client(t)
	mustContainer(t, mustDatabase(t, c, "g"), pkContainer("c", nil))

	const inflight = 4
	type result struct {
		status int
		err    error
	}
	results := make([]result, inflight)
	writers := make([]*io.PipeWriter, inflight)
	served := make(chan int, inflight) // a request's index, once its handler reads the body
	var wg sync.WaitGroup
	client := s.httpClient()
	// The timeout is a safety net: the client sends the body anyway if no
	// 100 Continue comes.
	client.Transport.(*http.Transport).ExpectContinueTimeout = time.Minute
	for i := range inflight {
		pr, pw := io.Pipe()
		writers[i] = pw
		path := docsPath("g", "c")
		trace := &httptrace.ClientTrace{Got100Continue: func() { served <- i }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "POST", s.URL+path, pr)
		if err != nil {
			t.Fatal(err)
		}
		date := time.Now().UTC().Format(http.TimeFormat)
		req.Header.Set("x-ms-date", date)
		req.Header.Set("x-ms-version", "2020-11-05")
		req.Header.Set("Authorization", signRequest("POST", path, date))
		req.Header.Set("x-ms-documentdb-partitionkey", `["p"]`)
		req.Header.Set("Expect", "100-continue")
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Do(req)
			if err != nil {
				results[i] = result{err: err}
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			results[i] = result{status: resp.StatusCode}
		}()
	}
	for range inflight {
		select {
		case i := <-served:
			// Half of the body now, the rest after SIGTERM.
			if _, err := io.WriteString(writers[i], fmt.Sprintf(`{"id":"inflight-%d",`, i)); err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute): // a safety net
			t.Fatalf("a minute on, not every request is being served\n%s", s.stderr)
		}
	}
	s.terminate()
	// A new connection is refused once shutdown has begun.
	fresh := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		resp, err := fresh.Get(s.URL + "/")
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) { // a safety net
			t.Fatalf("a minute after SIGTERM, new connections are still served: %d", resp.StatusCode)
		}
	}
	if !s.alive() {
		t.Fatalf("lethe exited with requests in flight\n%s", s.stderr)
	}
	for i, pw := range writers {
		if _, err := io.WriteString(pw, `"pk":"p","n":`+fmt.Sprint(i)+`}`); err != nil {
			t.Fatal(err)
		}
		pw.Close()
	}
	wg.Wait()
	for i, r := range results {
		if r.err != nil || r.status != http.StatusCreated {
			t.Errorf("in-flight request %d: status %d, err %v; want 201", i, r.status, r.err)
		}
	}
	if err := s.waitExit(t, 30*time.Second); err != nil {
		t.Errorf("lethe exited with %v after SIGTERM; want exit 0\n%s", err, s.stderr)
	}
	if strings.Contains(s.stderr.String(), "level=ERROR") {
		t.Errorf("errors logged during shutdown:\n%s", s.stderr)
	}

	s2 := startServer(t, serverOpts{DataDir: dir})
	got := s2.readFeedAll(t, "g", "c", 0, "")
	slices.Sort(got)
	want := []string{"inflight-0", "inflight-1", "inflight-2", "inflight-3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("documents after restart = %v; want %v", got, want)
	}
}
