package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

// TestPostgresStore: a Lethe on PostgreSQL (--store) through the Go SDK:
// documents, a query, a TTL expiry decided at the instant under the manual
// clock and then purged, the change feed, and everything still there, with
// the feed's continuation, after the server restarts on the same database.
func TestPostgresStore(t *testing.T) {
	t.Parallel()
	opts := serverOpts{InMemory: false, Store: pgtest.Database(t), Args: []string{"--clock=manual", "--disable-purger", "--serve-all-cross-partition-queries"}}
	s := startServer(t, opts)
	cc := mustContainer(t, mustDatabase(t, s.client(t), "db"), pkContainer("c", i32(60)))
	pk := azcosmos.NewPartitionKeyString("p")
	for _, doc := range []map[string]any{
		{"id": "a", "pk": "p", "n": 1},
		{"id": "b", "pk": "p", "n": 2, "ttl": -1},
		{"id": "c", "pk": "p", "n": 3, "ttl": 10},
	} {
		createDoc(t, cc, pk, doc)
	}
	if _, err := cc.ReplaceItem(ctx, pk, "a", []byte(`{"id":"a","pk":"p","n":10}`), nil); err != nil {
		t.Fatal(err)
	}
	ranges, err := cc.ReadFeedRanges(ctx, nil)
	if err != nil || len(ranges) != 1 {
		t.Fatalf("feed ranges %v, %v", ranges, err)
	}
	feed, err := cc.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0]})
	if err != nil || feed.Count != 3 {
		t.Fatalf("change feed from the beginning: %v, %v", feed.Count, err)
	}
	token := feed.ContinuationToken

	ids := func(query string) []string {
		t.Helper()
		pager := cc.NewQueryItemsPager(query, pk, nil)
		var out []string
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			for _, it := range page.Items {
				var d struct{ ID string }
				_ = json.Unmarshal(it, &d)
				out = append(out, d.ID)
			}
		}
		return out
	}
	if got := strings.Join(ids("SELECT c.id FROM c WHERE c.n > 2 ORDER BY c.n"), ","); got != "c,a" {
		t.Fatalf("query: %s, want c,a", got)
	}

	s.advanceClock(t, 10) // c expires at _ts + 10
	if st := readStatus(t, cc, pk, "c"); st != http.StatusNotFound {
		t.Fatalf("c read at its expiry instant: %d, want 404", st)
	}
	if got := strings.Join(ids("SELECT c.id FROM c ORDER BY c.id"), ","); got != "a,b" {
		t.Fatalf("after c's expiry: %s, want a,b", got)
	}
	if n := s.purgeNow(t); n != 1 {
		t.Fatalf("purged %d, want 1 (c)", n)
	}
	s.advanceClock(t, 60) // a expires (defaultTtl 60); b never does
	if got := strings.Join(ids("SELECT c.id FROM c"), ","); got != "b" {
		t.Fatalf("after a's expiry: %s, want b", got)
	}
	// Across the container, the count reads the tallies, which on
	// PostgreSQL are the rows of every transaction's changes: a, expired
	// and not yet purged, is not counted.
	if rows := mustQuery(t, cc, "SELECT VALUE COUNT(1) FROM c", azcosmos.NewPartitionKey(), nil).rows; len(rows) != 1 || rows[0] != float64(1) {
		t.Fatalf("the container's count after a's expiry: %v, want [1]", rows)
	}
	createDoc(t, cc, pk, map[string]any{"id": "d", "pk": "p"})
	// A property name of 3,000 bytes (incompressible: PostgreSQL's limit
	// applies after compression) makes an index key longer than its index
	// takes: a 400 that says so, and nothing written.
	name := make([]byte, 3000)
	for i, x := 0, uint32(1); i < len(name); i++ {
		x = x*1664525 + 1013904223
		name[i] = 'a' + byte(x>>24)%26
	}
	long := map[string]any{"id": "long", "pk": "p", string(name): 1}
	if _, err := cc.CreateItem(ctx, pk, mustMarshal(t, long), nil); statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "longer than this server's store takes") {
		t.Fatalf("a document with a 3,000-byte property name: %v, want 400", err)
	}
	if st := readStatus(t, cc, pk, "long"); st != http.StatusNotFound {
		t.Fatalf("the refused document reads %d", st)
	}

	s.stop(t)
	s = startServer(t, opts)
	cc, err = s.client(t).NewContainer("db", "c")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids("SELECT c.id FROM c ORDER BY c.id"), ","); got != "b,d" {
		t.Fatalf("after a restart: %s, want b,d", got)
	}
	feed, err = cc.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{Continuation: &token})
	if err != nil || feed.Count != 1 || !bytes.Contains(feed.Items[0], []byte(`"id":"d"`)) {
		t.Fatalf("the change feed after the restart, from the token before it: %d items, %v", feed.Count, err)
	}
	// The store's round trips are counted (what each request costs is
	// engine.TestReadAheadRoundTrips').
	if v, ok := seriesValue(scrape(t, s), "lethe_store_round_trips_total", nil); !ok || v == 0 {
		t.Fatalf("lethe_store_round_trips_total after requests: %v (present: %v), want more than 0", v, ok)
	}
}

// TestPostgresOutage: when the database goes away (every connection cut,
// new ones refused, as in a restart or a failover), a Lethe on it answers
// 503 with a Cosmos error body, never a 500, and keeps its lease; once the
// database is back it serves again with nothing acknowledged lost.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	dsn, proxy := pgtest.Proxied(t, pgtest.Database(t))
	s := startServer(t, serverOpts{Store: dsn})
	cc := mustContainer(t, mustDatabase(t, s.client(t), "db"), pkContainer("c", nil))
	pk := azcosmos.NewPartitionKeyString("p")
	createDoc(t, cc, pk, map[string]any{"id": "before", "pk": "p"})

	proxy.Cut()
	for _, rq := range []struct{ method, path, body string }{
		{"GET", docPath("db", "c", "before"), ""},
		{"POST", docsPath("db", "c"), `{"id":"during","pk":"p"}`},
	} {
		r := s.do(t, rq.method, rq.path, map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "Content-Type": "application/json"}, []byte(rq.body))
		msg := r.wantError(t, rq.method+" during the outage", http.StatusServiceUnavailable)
		if !strings.Contains(msg, "lost its connection to its database") {
			t.Errorf("%s during the outage: %q", rq.method, msg)
		}
	}

	proxy.Restore()
	// The store reconnects by itself: the first write after the outage
	// succeeds, whatever connections the pool still held from before.
	if _, err := cc.CreateItem(ctx, pk, []byte(`{"id":"after","pk":"p"}`), nil); err != nil {
		t.Fatalf("a create once the database is back: %v", err)
	}
	for _, id := range []string{"before", "after"} {
		if st := readStatus(t, cc, pk, id); st != http.StatusOK {
			t.Errorf("%s after the outage: %d", id, st)
		}
	}
	if st := readStatus(t, cc, pk, "during"); st != http.StatusNotFound {
		t.Errorf("the create refused during the outage reads %d", st)
	}
}

// TestPostgresOrderedReads: on a PostgreSQL store, ORDER BY read from an
// index in order (a composite index on /pk and /n, and the path index of
// _ts) gives every page a container without any index gives: documents
// sharing a key (all share _ts under the manual clock, many share n) come in
// insertion order from a descending read, continuations resume within them,
// and an object where the index orders makes the read start again without
// that order.
func TestPostgresOrderedReads(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: false, Store: pgtest.Database(t), Args: []string{"--clock=manual"}})
	db := mustDatabase(t, s.client(t), "db")
	composite := mustContainer(t, db, azcosmos.ContainerProperties{
		ID: "composite", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		IndexingPolicy: &azcosmos.IndexingPolicy{
			Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
			IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}},
			CompositeIndexes: [][]azcosmos.CompositeIndex{{
				{Path: "/pk", Order: azcosmos.CompositeIndexAscending}, {Path: "/n", Order: azcosmos.CompositeIndexDescending},
			}},
		},
	})
	scan := mustContainer(t, db, azcosmos.ContainerProperties{
		ID: "scan", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		IndexingPolicy: &azcosmos.IndexingPolicy{IndexingMode: azcosmos.IndexingModeNone},
	})
	for i := range 60 {
		doc := map[string]any{"id": fmt.Sprintf("d%02d", i), "pk": []string{"p", "q"}[i%2], "n": i % 7}
		if i == 33 {
			doc["n"] = map[string]any{"x": 1}
		}
		for _, cc := range []*azcosmos.ContainerClient{composite, scan} {
			createDoc(t, cc, azcosmos.NewPartitionKeyString(doc["pk"].(string)), doc)
		}
	}
	for _, q := range []struct{ text, pk string }{
		{"SELECT c.id FROM c ORDER BY c.n DESC", "p"},
		{"SELECT * FROM c ORDER BY c.n DESC", "p"},
		{"SELECT c.id FROM c ORDER BY c.n DESC", "q"}, // q holds the object
		{"SELECT c.id FROM c ORDER BY c._ts DESC", "p"},
		{"SELECT c.id FROM c ORDER BY c._ts", "q"},
	} {
		var runs [2]queryRun
		for i, cc := range []*azcosmos.ContainerClient{composite, scan} {
			run, err := runQuery(t, cc, q.text, azcosmos.NewPartitionKeyString(q.pk), &azcosmos.QueryOptions{PageSizeHint: 4})
			if err != nil {
				t.Fatalf("%s in %s on %s: %v", q.text, q.pk, cc.ID(), err)
			}
			runs[i] = run
		}
		// Rows compare by id: _rid, _self and _etag name their container.
		ids := func(r queryRun) []any {
			var docs []qdoc
			for _, row := range r.rows {
				docs = append(docs, row.(qdoc))
			}
			return idsOf(docs)
		}
		sizes := func(r queryRun) []int {
			var n []int
			for _, p := range r.pages {
				n = append(n, p.n)
			}
			return n
		}
		if !sameRows(ids(runs[0]), ids(runs[1]), false) || !slices.Equal(sizes(runs[0]), sizes(runs[1])) || len(runs[0].pages) < 4 {
			t.Errorf("%s in %s: ids %s in pages of %v, a container without an index gives %s in pages of %v",
				q.text, q.pk, showRows(ids(runs[0])), sizes(runs[0]), showRows(ids(runs[1])), sizes(runs[1]))
		}
	}
}
