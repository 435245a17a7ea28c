package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestQuery runs Cosmos DB SQL queries through the official Go SDK
// (NewQueryItemsPager) against one in-memory server and compares every result
// with an expectation computed by the test from the documents
// (query_cases_test.go): the SELECT forms, every WHERE operator family,
// ORDER BY, GROUP BY, aggregates, OFFSET LIMIT, subqueries, parameters and a
// sample of built-in functions. The same table runs
//   - cross-partition (NewPartitionKey(): no pk header) over 4 partitions,
//   - paged with page sizes 1, 2 and 5 (and resumed from a token in a new
//     pager), which must give exactly the unpaged rows,
//   - scoped to each partition key value, which must see only that partition,
//   - over a container whose documents all share one partition key value,
//     which must give the same rows as the cross-partition query.
//
// It also covers the current date/time functions, the errors (syntax errors
// with their line:column, unsupported functions, foreign continuation tokens,
// cross-partition disabled), queries over databases, containers and offers,
// and hierarchical partition key prefixes.
func TestQuery(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true, Args: allQueries})
	c := s.client(t)
	db := mustDatabase(t, c, "q")
	multi := mustContainer(t, db, pkContainer("multi", nil))
	single := mustContainer(t, db, azcosmos.ContainerProperties{
		ID:                     "single",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/kind"}},
	})
	docs := queryDataset()
	multiRIDs, singleRIDs := map[string]string{}, map[string]string{}
	for _, d := range docs {
		id := str(d, "id")
		multiRIDs[id] = createDoc(t, multi, azcosmos.NewPartitionKeyString(str(d, "pk")), d)["_rid"].(string)
		singleRIDs[id] = createDoc(t, single, azcosmos.NewPartitionKeyString("doc"), d)["_rid"].(string)
	}
	cases := queryCases()
	all := azcosmos.NewPartitionKey()

	t.Run("cross partition", func(t *testing.T) {
		for _, qc := range append(slices.Clone(cases), documentIDCase(multiRIDs)) {
			t.Run(qc.name, func(t *testing.T) {
				checkQueryCase(t, multi, qc, all, docs)
			})
		}
	})

	t.Run("paged", func(t *testing.T) {
		for _, qc := range cases {
			t.Run(qc.name, func(t *testing.T) {
				o := &azcosmos.QueryOptions{QueryParameters: qc.params}
				unpaged := mustQuery(t, multi, qc.query, all, o)
				sizes := []int32{5}
				if qc.shape {
					sizes = []int32{1, 2, 5}
				}
				for _, size := range sizes {
					o := &azcosmos.QueryOptions{QueryParameters: qc.params, PageSizeHint: size}
					paged := mustQuery(t, multi, qc.query, all, o)
					if !sameRows(paged.rows, unpaged.rows, false) {
						t.Errorf("page size %d: %s\ngot  %s\nwant (unpaged) %s", size, qc.query, showRows(paged.rows), showRows(unpaged.rows))
					}
					checkPageCount(t, qc.query, paged, len(unpaged.rows), int(size))
				}
				if !qc.shape || len(unpaged.rows) < 3 {
					return
				}
				// A continuation token resumes the query in a new pager (a
				// client that kept only the token).
				first, err := multi.NewQueryItemsPager(qc.query, all, &azcosmos.QueryOptions{QueryParameters: qc.params, PageSizeHint: 2}).NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if first.ContinuationToken == nil {
					t.Fatalf("no continuation after the first page of 2 of %d rows", len(unpaged.rows))
				}
				rest := mustQuery(t, multi, qc.query, all, &azcosmos.QueryOptions{QueryParameters: qc.params, PageSizeHint: 3, ContinuationToken: first.ContinuationToken})
				var got []any
				for _, it := range first.Items {
					var v any
					_ = json.Unmarshal(it, &v)
					got = append(got, v)
				}
				got = append(got, rest.rows...)
				if !sameRows(got, unpaged.rows, false) {
					t.Errorf("resumed in a new pager: %s\ngot  %s\nwant %s", qc.query, showRows(got), showRows(unpaged.rows))
				}
			})
		}
	})

	t.Run("partition scoped", func(t *testing.T) {
		for p := range 4 {
			pk := fmt.Sprintf("p%d", p)
			part := where(docs, func(d qdoc) bool { return d["pk"] == pk })
			t.Run(pk, func(t *testing.T) {
				for _, qc := range append(slices.Clone(cases), documentIDCase(multiRIDs)) {
					t.Run(qc.name, func(t *testing.T) {
						checkQueryCase(t, multi, qc, azcosmos.NewPartitionKeyString(pk), part)
					})
				}
			})
		}
		// A value no document has: nothing, and aggregates over nothing.
		if ids := queryIDs(t, multi, "SELECT VALUE c.id FROM c", azcosmos.NewPartitionKeyString("none"), nil); len(ids) != 0 {
			t.Errorf("partition with no documents: %v", ids)
		}
		run := mustQuery(t, multi, "SELECT VALUE COUNT(1) FROM c", azcosmos.NewPartitionKeyString("none"), nil)
		if !sameRows(run.rows, []any{0.0}, false) {
			t.Errorf("COUNT over an empty partition = %v; want [0]", run.rows)
		}
	})

	t.Run("single partition container", func(t *testing.T) {
		for _, qc := range cases {
			t.Run(qc.name, func(t *testing.T) {
				o := &azcosmos.QueryOptions{QueryParameters: qc.params}
				want := mustQuery(t, multi, qc.query, all, o).rows
				if qc.star {
					want = stripSystem(t, want)
				}
				for _, pk := range []azcosmos.PartitionKey{all, azcosmos.NewPartitionKeyString("doc")} {
					got := mustQuery(t, single, qc.query, pk, o).rows
					if qc.star {
						got = stripSystem(t, got)
					}
					if !sameRows(got, want, qc.unordered) {
						t.Errorf("%s\nsingle partition: %s\nfour partitions: %s", qc.query, showRows(got), showRows(want))
					}
				}
			})
		}
		checkQueryCase(t, single, documentIDCase(singleRIDs), all, docs)
	})

	t.Run("current date and time", func(t *testing.T) {
		testQueryCurrentTime(t, multi)
	})

	t.Run("errors", func(t *testing.T) {
		testQueryErrors(t, s, multi, single)
	})

	t.Run("databases containers and offers", func(t *testing.T) {
		testQueryResources(t, s, c, db)
	})

	t.Run("hierarchical partition keys", func(t *testing.T) {
		testQueryHierarchical(t, db)
	})
}

// checkQueryCase runs one case over a container (unpaged) and compares the rows
// with the case's expectation over docs.
func checkQueryCase(t *testing.T, cc *azcosmos.ContainerClient, qc queryCase, pk azcosmos.PartitionKey, docs []qdoc) {
	t.Helper()
	run, err := runQuery(t, cc, qc.query, pk, &azcosmos.QueryOptions{QueryParameters: qc.params})
	if err != nil {
		t.Errorf("%s: %v", qc.query, err)
		return
	}
	got := run.rows
	if qc.star {
		got = stripSystem(t, got)
	}
	want := qc.want(docs)
	if !sameRows(got, want, qc.unordered) {
		t.Errorf("%s\ngot  %s\nwant %s", qc.query, showRows(got), showRows(want))
	}
}

// checkPageCount checks that paging does not waste pages: rows/size pages,
// rounded up, plus at most one empty last page (the Go SDK's own tests expect
// one after a full last page).
func checkPageCount(t *testing.T, query string, run queryRun, rows, size int) {
	t.Helper()
	limit := (rows+size-1)/size + 1
	if len(run.pages) > limit {
		var ns []int
		for _, p := range run.pages {
			ns = append(ns, p.n)
		}
		t.Errorf("%s: %d rows in pages of %d took %d pages %v; want at most %d", query, rows, size, len(run.pages), ns, limit)
	}
	for i, p := range run.pages[:max(0, len(run.pages)-1)] {
		if p.n == 0 {
			t.Errorf("%s: page %d of %d is empty and not the last", query, i, len(run.pages))
		}
	}
}

// testQueryCurrentTime: GetCurrentDateTime, GetCurrentTimestamp and
// GetCurrentTicks are the request's instant, the same for every row, with the
// precision Cosmos DB gives them (7 fractional digits, milliseconds, ticks).
func testQueryCurrentTime(t *testing.T, cc *azcosmos.ContainerClient) {
	const q = "SELECT VALUE [GetCurrentDateTime(), GetCurrentTimestamp(), GetCurrentTicks()] FROM c"
	before := time.Now()
	run := mustQuery(t, cc, q, azcosmos.NewPartitionKey(), nil)
	after := time.Now()
	if len(run.rows) != queryDocCount {
		t.Fatalf("%d rows; want %d", len(run.rows), queryDocCount)
	}
	first := canonJSON(run.rows[0])
	for _, r := range run.rows {
		if canonJSON(r) != first {
			t.Errorf("the current time differs between rows of one request: %s and %s", first, canonJSON(r))
		}
	}
	row := run.rows[0].([]any)
	dt, ok := row[0].(string)
	if !ok || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$`).MatchString(dt) {
		t.Fatalf("GetCurrentDateTime() = %v; want YYYY-MM-DDThh:mm:ss.fffffffZ", row[0])
	}
	at := parseDate(dt)
	if lo, hi := before.Add(-time.Second), after.Add(time.Second); at.Before(lo) || at.After(hi) {
		t.Errorf("GetCurrentDateTime() = %s; the request ran between %s and %s", dt, before.UTC().Format(time.RFC3339Nano), after.UTC().Format(time.RFC3339Nano))
	}
	ts, ok := row[1].(float64)
	if !ok || ts != float64(at.UnixMilli()) {
		t.Errorf("GetCurrentTimestamp() = %v; want %d, the same instant as GetCurrentDateTime() %s", row[1], at.UnixMilli(), dt)
	}
	// Ticks: 100 ns units since the Unix epoch.
	if ticks, ok := row[2].(float64); !ok || ticks < float64(at.UnixMilli())*1e4 || ticks >= float64(at.UnixMilli()+1)*1e4 {
		t.Errorf("GetCurrentTicks() = %v; want the instant of GetCurrentDateTime() %s in ticks", row[2], dt)
	}
	// In WHERE: documents written before now are all older than now.
	ids := queryIDs(t, cc, "SELECT VALUE c.id FROM c WHERE c._ts * 1000 <= GetCurrentTimestamp() AND c.date < GetCurrentDateTime()", azcosmos.NewPartitionKey(), nil)
	if len(ids) != queryDocCount {
		t.Errorf("documents written before now: %d; want %d", len(ids), queryDocCount)
	}

	// Millisecond precision: the server reads its clock (this machine's)
	// after the request was sent and before the answer arrived, so the
	// current timestamp lies between the two. A timestamp cut to the whole
	// second lies up to 999 ms before the request was even sent, and a
	// client comparing it with a time it took itself (say, a createdAt it
	// just wrote) gets the wrong answer.
	t.Run("millisecond precision", func(t *testing.T) {
		misses := 0
		for range 5 {
			before := time.Now()
			row := mustQuery(t, cc, "SELECT VALUE [GetCurrentTimestamp(), GetCurrentDateTime()] FROM c WHERE c.id = 'd00'", azcosmos.NewPartitionKey(), nil).rows[0].([]any)
			after := time.Now()
			ts := int64(row[0].(float64))
			if ts < before.UnixMilli() || ts > after.UnixMilli() {
				misses++
				t.Logf("GetCurrentTimestamp() = %d (%s); the request was sent at %d and answered at %d", ts, row[1], before.UnixMilli(), after.UnixMilli())
			}
			time.Sleep(37 * time.Millisecond)
		}
		if misses > 0 {
			t.Errorf("GetCurrentTimestamp() fell outside the request's own time span %d times out of 5", misses)
		}
	})
}

// testQueryErrors: queries the server must refuse with 400 and a Cosmos error
// body, through the SDK and raw.
func testQueryErrors(t *testing.T, s *server, multi, single *azcosmos.ContainerClient) {
	all := azcosmos.NewPartitionKey()
	syntax := []struct {
		query, pos, problem string
	}{
		{"SELECT * FROM c WHERE", "1:22", "expected expression"},
		{"SELECT c.id\nFROM c\nWHERE c.bits >", "3:15", "expected expression"},
		{"SELECT c.id FROM c WHERE c.bits = = 1", "1:35", "expected expression"},
		{"SELECT * FROM c ORDER c.id", "1:23", "BY"},
		{"SELECT VALUE FOO(c.id) FROM c", "1:14", "unknown function"},
		{"SELECT c.id FROM c WHERE c.name = 'unterminated", "1:35", "string"},
	}
	for _, e := range syntax {
		_, err := runQuery(t, multi, e.query, all, nil)
		wantStatus(t, e.query, err, http.StatusBadRequest)
		if msg := err.Error(); err != nil && (!strings.Contains(msg, e.pos) || !strings.Contains(msg, e.problem)) {
			t.Errorf("%q: error %q; want the position %s and %q", e.query, msg, e.pos, e.problem)
		}
		r := s.rawQuery(t, "q", "multi", e.query, hdr("x-ms-documentdb-query-enablecrosspartition", "true"))
		if msg := r.wantError(t, e.query, http.StatusBadRequest); msg != "" && !strings.Contains(msg, e.pos+":") {
			t.Errorf("%q: message %q does not start the problem with %s", e.query, msg, e.pos)
		}
		// The query-plan request (the JavaScript SDK's) refuses it the same way.
		r = s.rawQuery(t, "q", "multi", e.query, hdr("x-ms-cosmos-is-query-plan-request", "True", "x-ms-cosmos-query-version", "1.4"))
		r.wantError(t, "plan of "+e.query, http.StatusBadRequest)
	}

	// Unsupported: spatial functions, user-defined functions.
	for _, q := range []string{
		`SELECT VALUE ST_DISTANCE({"type": "Point", "coordinates": [0, 0]}, {"type": "Point", "coordinates": [0, 1]}) FROM c`,
		"SELECT VALUE udf.tax(c.price) FROM c",
		"SELECT * FROM c WHERE udf.ok(c)",
	} {
		_, err := runQuery(t, multi, q, all, nil)
		wantStatus(t, q, err, http.StatusBadRequest)
	}

	// A parameter without a value.
	_, err := runQuery(t, multi, "SELECT * FROM c WHERE c.id = @missing", all, nil)
	wantStatus(t, "unbound parameter", err, http.StatusBadRequest)

	// A continuation token belongs to its query, parameters and container.
	const q1 = "SELECT VALUE c.id FROM c WHERE c.bits > @b"
	first, err := multi.NewQueryItemsPager(q1, all, &azcosmos.QueryOptions{PageSizeHint: 2, QueryParameters: qparams("@b", 1)}).NextPage(ctx)
	if err != nil || first.ContinuationToken == nil {
		t.Fatalf("first page: %v (continuation %v)", err, first.ContinuationToken)
	}
	tok := first.ContinuationToken
	for _, misuse := range []struct {
		what  string
		cc    *azcosmos.ContainerClient
		query string
		b     int
	}{
		{"another query", multi, "SELECT VALUE c.name FROM c WHERE c.bits > @b", 1},
		{"other parameters", multi, q1, 2},
		{"another container", single, q1, 1},
	} {
		_, err := runQuery(t, misuse.cc, misuse.query, all, &azcosmos.QueryOptions{PageSizeHint: 2, QueryParameters: qparams("@b", misuse.b), ContinuationToken: tok})
		wantStatus(t, "continuation token used with "+misuse.what, err, http.StatusBadRequest)
	}
	// The right query accepts it.
	if _, err := runQuery(t, multi, q1, all, &azcosmos.QueryOptions{PageSizeHint: 2, QueryParameters: qparams("@b", 1), ContinuationToken: tok}); err != nil {
		t.Errorf("the token with its own query: %v", err)
	}
	garbage := "not-a-token"
	_, err = runQuery(t, multi, q1, all, &azcosmos.QueryOptions{QueryParameters: qparams("@b", 1), ContinuationToken: &garbage})
	wantStatus(t, "garbage continuation token", err, http.StatusBadRequest)

	// Cross-partition queries must be enabled: the SDK with
	// EnableCrossPartitionQuery false sends no pk header and no
	// x-ms-documentdb-query-enablecrosspartition.
	no := false
	_, err = runQuery(t, multi, "SELECT * FROM c", all, &azcosmos.QueryOptions{EnableCrossPartitionQuery: &no})
	wantStatus(t, "cross-partition query with cross-partition disabled", err, http.StatusBadRequest)
	if _, err := runQuery(t, multi, "SELECT * FROM c", azcosmos.NewPartitionKeyString("p1"), &azcosmos.QueryOptions{EnableCrossPartitionQuery: &no}); err != nil {
		t.Errorf("single-partition query with cross-partition disabled: %v", err)
	}
	r := s.rawQuery(t, "q", "multi", "SELECT * FROM c", nil)
	r.wantError(t, "raw query without pk or enablecrosspartition", http.StatusBadRequest)
	r = s.rawQuery(t, "q", "multi", "SELECT VALUE COUNT(1) FROM c", hdr("x-ms-documentdb-query-enablecrosspartition", "false"))
	r.wantError(t, "raw query with enablecrosspartition false", http.StatusBadRequest)
	r = s.rawQuery(t, "q", "multi", "SELECT VALUE COUNT(1) FROM c", hdr("x-ms-documentdb-partitionkey", pkHeader("p1")))
	r.wantStatus(t, "raw query with a pk header", http.StatusOK)
	if b := r.json(t); canonJSON(b["Documents"]) != "[6]" || b["_count"] != 1.0 {
		t.Errorf("COUNT in p1: %s", r.Body)
	}

	// Malformed bodies.
	for _, body := range []string{`{"query": ""}`, `{"parameters": []}`, `not json`, `{"query": "SELECT * FROM c", "parameters": [{"name": "x", "value": 1}]}`} {
		r := s.do(t, http.MethodPost, docsPath("q", "multi"), hdr("Content-Type", "application/query+json", "x-ms-documentdb-query-enablecrosspartition", "true"), []byte(body))
		r.wantError(t, "query body "+body, http.StatusBadRequest)
	}
}

// testQueryResources: queries over the databases feed, a database's
// containers and the offers.
func testQueryResources(t *testing.T, s *server, c *azcosmos.Client, db *azcosmos.DatabaseClient) {
	for _, id := range []string{"qdb-2", "qdb-3", "qdb-1"} {
		mustDatabase(t, c, id)
	}
	pager := c.NewQueryDatabasesPager("SELECT * FROM root r WHERE STARTSWITH(r.id, @p) ORDER BY r.id DESC", &azcosmos.QueryDatabasesOptions{QueryParameters: qparams("@p", "qdb-")})
	var dbs []string
	for pager.More() {
		resp, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		checkQueryPage(t, "databases query", resp.Response, len(resp.Databases), 0)
		for _, d := range resp.Databases {
			dbs = append(dbs, d.ID)
		}
	}
	if want := []string{"qdb-3", "qdb-2", "qdb-1"}; !slices.Equal(dbs, want) {
		t.Errorf("databases query = %v; want %v", dbs, want)
	}

	cpager := db.NewQueryContainersPager("SELECT * FROM c WHERE c.partitionKey.paths[0] = @path", &azcosmos.QueryContainersOptions{QueryParameters: qparams("@path", "/kind")})
	var colls []azcosmos.ContainerProperties
	for cpager.More() {
		resp, err := cpager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		checkQueryPage(t, "containers query", resp.Response, len(resp.Containers), 0)
		colls = append(colls, resp.Containers...)
	}
	if len(colls) != 1 || colls[0].ID != "single" || !slices.Equal(colls[0].PartitionKeyDefinition.Paths, []string{"/kind"}) {
		t.Errorf("containers query = %+v; want only \"single\" partitioned on /kind", colls)
	}

	// Raw: VALUE and aggregate queries, and paging with page size 1.
	r := s.do(t, http.MethodPost, "/dbs", hdr("Content-Type", "application/query+json"), mustMarshal(t, map[string]any{"query": "SELECT VALUE COUNT(1) FROM d WHERE d.id LIKE 'qdb-%'"}))
	r.wantStatus(t, "databases count", http.StatusOK)
	if b := r.json(t); canonJSON(b["Databases"]) != "[3]" {
		t.Errorf("databases count: %s", r.Body)
	}
	var paged []string
	cont := ""
	for i := 0; ; i++ {
		if i > 20 {
			t.Fatal("databases query does not end")
		}
		h := hdr("Content-Type", "application/query+json", "x-ms-max-item-count", "1")
		if cont != "" {
			h["x-ms-continuation"] = cont
		}
		r := s.do(t, http.MethodPost, "/dbs", h, mustMarshal(t, map[string]any{"query": "SELECT VALUE d.id FROM d ORDER BY d.id"}))
		r.wantStatus(t, "databases page", http.StatusOK)
		var page struct {
			Databases []string
			Count     int `json:"_count"`
		}
		if err := json.Unmarshal(r.Body, &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Databases) > 1 || page.Count != len(page.Databases) || r.Header.Get("x-ms-item-count") != strconv.Itoa(len(page.Databases)) || r.charge() <= 0 {
			t.Errorf("databases page: %s, headers %v", r.Body, r.Header)
		}
		paged = append(paged, page.Databases...)
		if cont = r.Header.Get("x-ms-continuation"); cont == "" {
			break
		}
	}
	if want := []string{"q", "qdb-1", "qdb-2", "qdb-3"}; !slices.Equal(paged, want) {
		t.Errorf("databases paged by 1 = %v; want %v", paged, want)
	}
	r = s.do(t, http.MethodPost, "/dbs/q/colls", hdr("Content-Type", "application/query+json"), mustMarshal(t, map[string]any{"query": "SELECT VALUE c.id FROM c ORDER BY c.id DESC"}))
	r.wantStatus(t, "containers ids", http.StatusOK)
	if b := r.json(t); canonJSON(b["DocumentCollections"]) != `["single","multi"]` {
		t.Errorf("containers ids: %s", r.Body)
	}
	r = s.do(t, http.MethodPost, "/dbs", hdr("Content-Type", "application/query+json"), mustMarshal(t, map[string]any{"query": "SELECT * FROM d WHERE"}))
	r.wantError(t, "databases query syntax error", http.StatusBadRequest)

	// Offers: a query by offerResourceId finds the default offer of a
	// container created without throughput, as in Cosmos DB.
	props, err := (func() (azcosmos.ContainerProperties, error) {
		cc, _ := db.NewContainer("multi")
		resp, err := cc.Read(ctx, nil)
		if err != nil {
			return azcosmos.ContainerProperties{}, err
		}
		return *resp.ContainerProperties, nil
	})()
	if err != nil {
		t.Fatal(err)
	}
	r = s.do(t, http.MethodPost, "/offers", hdr("Content-Type", "application/query+json"), mustMarshal(t, map[string]any{
		"query": "SELECT * FROM c WHERE c.offerResourceId = @rid", "parameters": []map[string]any{{"name": "@rid", "value": props.ResourceID}}}))
	r.wantStatus(t, "offers query", http.StatusOK)
	b := r.json(t)
	offers, _ := b["Offers"].([]any)
	if len(offers) != 1 || b["_count"] != 1.0 || r.charge() <= 0 || offers[0].(map[string]any)["offerResourceId"] != props.ResourceID {
		t.Errorf("offers query: %s; want the container's default offer", r.Body)
	}
	cc, _ := db.NewContainer("multi")
	tr, err := cc.ReadThroughput(ctx, nil)
	if n, ok := tr.ThroughputProperties.ManualThroughput(); err != nil || !ok || n != 400 {
		t.Errorf("read throughput (an offers query): %d %v %v; want the default 400 RU/s", n, ok, err)
	}
}

// testQueryHierarchical: on a MultiHash container, a partition key with only
// the first level scopes a query to that prefix; the full key to one
// partition; none to all.
func testQueryHierarchical(t *testing.T, db *azcosmos.DatabaseClient) {
	cc := mustContainer(t, db, azcosmos.ContainerProperties{
		ID:                     "hier",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/tenant", "/user"}, Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2},
	})
	var hdocs []qdoc
	i := 0
	for _, tenant := range []string{"a", "ab", "b"} {
		for _, user := range []string{"u1", "u2"} {
			for range 2 {
				d := qdoc{"id": fmt.Sprintf("h%02d", i), "tenant": tenant, "user": user, "v": float64((i * 7) % 12)}
				createDoc(t, cc, azcosmos.NewPartitionKey().AppendString(tenant).AppendString(user), d)
				hdocs = append(hdocs, d)
				i++
			}
		}
	}
	cases := []queryCase{
		{name: "ids", query: "SELECT VALUE c.id FROM c", want: idsOf},
		{name: "order by", query: "SELECT VALUE c.id FROM c ORDER BY c.v DESC", want: func(d []qdoc) []any { return idsOf(orderBy(d, desc("v"))) }},
		{name: "count", query: "SELECT VALUE COUNT(1) FROM c", want: func(d []qdoc) []any { return []any{len(d)} }},
		{name: "filter", query: "SELECT VALUE c.id FROM c WHERE c.user = 'u1'", want: func(d []qdoc) []any {
			return idsOf(where(d, func(x qdoc) bool { return x["user"] == "u1" }))
		}},
		{name: "group by", query: "SELECT c.user, SUM(c.v) AS s FROM c GROUP BY c.user", unordered: true, want: func(d []qdoc) []any {
			keys, groups := groupRows(d, func(x qdoc) any { return x["user"] })
			out := []any{}
			for i, k := range keys {
				out = append(out, obj("user", k, "s", sumOf(groups[i], "v")))
			}
			return out
		}},
	}
	scopes := []struct {
		name string
		pk   azcosmos.PartitionKey
		keep func(qdoc) bool
	}{
		{"all", azcosmos.NewPartitionKey(), func(qdoc) bool { return true }},
		{"prefix a", azcosmos.NewPartitionKeyString("a"), func(d qdoc) bool { return d["tenant"] == "a" }},
		{"prefix ab", azcosmos.NewPartitionKeyString("ab"), func(d qdoc) bool { return d["tenant"] == "ab" }},
		{"full key b/u2", azcosmos.NewPartitionKeyString("b").AppendString("u2"), func(d qdoc) bool { return d["tenant"] == "b" && d["user"] == "u2" }},
		{"unknown prefix", azcosmos.NewPartitionKeyString("c"), func(qdoc) bool { return false }},
	}
	for _, sc := range scopes {
		for _, qc := range cases {
			t.Run(sc.name+"/"+qc.name, func(t *testing.T) {
				checkQueryCase(t, cc, qc, sc.pk, where(hdocs, sc.keep))
			})
		}
	}
	// More components than the container has: 400.
	_, err := runQuery(t, cc, "SELECT * FROM c", azcosmos.NewPartitionKeyString("a").AppendString("u1").AppendString("x"), nil)
	wantStatus(t, "three components on a two-level key", err, http.StatusBadRequest)
}
