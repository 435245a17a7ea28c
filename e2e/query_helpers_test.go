package e2e

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// Helpers shared by the query tests (query_*_test.go): running a query through
// the Go SDK to the end, and computing expected results with Cosmos DB's
// semantics (undefined, the cross-type sort order) independently of the server.

// qdoc is a document as the tests see it: decoded JSON (numbers are float64).
type qdoc = map[string]any

// undefinedT stands for Cosmos DB's undefined (a missing property) in
// expectations; obj and arr leave it out, as the query language does.
type undefinedT struct{}

var undef = undefinedT{}

// get returns the value at a property path, or undef.
func get(d any, path ...string) any {
	v := d
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return undef
		}
		if v, ok = m[p]; !ok {
			return undef
		}
	}
	return v
}

// obj builds an expected object from name, value pairs, leaving out undefined
// members (as projections and object constructors do).
func obj(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		if _, u := kv[i+1].(undefinedT); !u {
			m[kv[i].(string)] = kv[i+1]
		}
	}
	return m
}

// num returns a number-valued property (the dataset guarantees its type).
func num(d qdoc, path ...string) float64 { return get(d, path...).(float64) }

func str(d qdoc, path ...string) string { return get(d, path...).(string) }

// where filters documents.
func where(docs []qdoc, pred func(qdoc) bool) []qdoc {
	var out []qdoc
	for _, d := range docs {
		if pred(d) {
			out = append(out, d)
		}
	}
	return out
}

// mapRows projects documents, dropping rows whose value is undefined (as
// SELECT VALUE does).
func mapRows(docs []qdoc, f func(qdoc) any) []any {
	out := []any{}
	for _, d := range docs {
		if v := f(d); v != undef {
			out = append(out, v)
		}
	}
	return out
}

func idsOf(docs []qdoc) []any { return mapRows(docs, func(d qdoc) any { return d["id"] }) }

// typeRank orders JSON types as Cosmos DB's ORDER BY, MIN and MAX do:
// undefined < null < booleans < numbers < strings < arrays < objects.
func typeRank(v any) int {
	switch v.(type) {
	case undefinedT:
		return 0
	case nil:
		return 1
	case bool:
		return 2
	case float64:
		return 3
	case string:
		return 4
	case []any:
		return 5
	}
	return 6
}

// cosmosCompare compares two scalar values in the ORDER BY order (strings by
// code point, which Go's string comparison of UTF-8 gives).
func cosmosCompare(a, b any) int {
	ra, rb := typeRank(a), typeRank(b)
	if ra != rb {
		return ra - rb
	}
	switch x := a.(type) {
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case float64:
		y := b.(float64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case string:
		return strings.Compare(x, b.(string))
	}
	return 0
}

// orderKey is one ORDER BY key: how to read it and its direction.
type orderKey struct {
	key  func(qdoc) any
	desc bool
}

func asc(path ...string) orderKey {
	return orderKey{key: func(d qdoc) any { return get(d, path...) }}
}

func desc(path ...string) orderKey {
	return orderKey{key: func(d qdoc) any { return get(d, path...) }, desc: true}
}

// orderBy sorts documents by the keys; ties keep insertion order (the order
// Lethe documents for ties, in both directions).
func orderBy(docs []qdoc, keys ...orderKey) []qdoc {
	out := slices.Clone(docs)
	sort.SliceStable(out, func(i, j int) bool {
		for _, k := range keys {
			c := cosmosCompare(k.key(out[i]), k.key(out[j]))
			if k.desc {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		return false
	})
	return out
}

// distinct keeps the first occurrence of each value (by its JSON form).
func distinct(rows []any) []any {
	seen := map[string]bool{}
	out := []any{}
	for _, r := range rows {
		k := canonJSON(r)
		if !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
}

// normalize round-trips a value through JSON so that expectations built from Go
// values compare equal to decoded results (ints become float64, etc.).
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// canonJSON is a value's JSON with object keys sorted (encoding/json sorts map keys).
func canonJSON(v any) string {
	b, err := json.Marshal(normalize(v))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func canonRows(rows []any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = canonJSON(r)
	}
	return out
}

// sameRows compares rows in order, or as multisets when unordered.
func sameRows(got, want []any, unordered bool) bool {
	g, w := canonRows(got), canonRows(want)
	if unordered {
		slices.Sort(g)
		slices.Sort(w)
	}
	return slices.Equal(g, w)
}

func showRows(rows []any) string {
	var b strings.Builder
	for i, r := range canonRows(rows) {
		if i > 0 {
			b.WriteString("\n    ")
		}
		b.WriteString(r)
	}
	return "[\n    " + b.String() + "\n  ]"
}

// systemProps are the properties the server adds to stored documents.
var systemProps = []string{"_rid", "_self", "_etag", "_attachments", "_ts"}

// stripSystem removes system properties from object rows (SELECT * results),
// after checking that each such row carries them.
func stripSystem(t testing.TB, rows []any) []any {
	t.Helper()
	out := make([]any, len(rows))
	for i, r := range rows {
		m, ok := r.(map[string]any)
		if !ok {
			out[i] = r
			continue
		}
		c := map[string]any{}
		for k, v := range m {
			c[k] = v
		}
		for _, p := range systemProps {
			if _, ok := c[p]; !ok {
				t.Errorf("SELECT * row %v has no %s", m["id"], p)
			}
			delete(c, p)
		}
		out[i] = c
	}
	return out
}

// qpage is what one query page looked like.
type qpage struct {
	n            int
	continuation string
}

// queryRun is the outcome of running a query through the SDK pager to the end.
type queryRun struct {
	rows  []any
	pages []qpage
	last  azcosmos.QueryItemsResponse
}

// runQuery runs a query through the Go SDK's pager (NewQueryItemsPager) until
// it ends, checking on every page what each query response must carry: a
// request charge > 0, x-ms-item-count equal to the page's rows, a query-metrics
// header, and no more rows than the page size asked for.
func runQuery(t testing.TB, cc *azcosmos.ContainerClient, query string, pk azcosmos.PartitionKey, o *azcosmos.QueryOptions) (queryRun, error) {
	t.Helper()
	if o == nil {
		o = &azcosmos.QueryOptions{}
	}
	var run queryRun
	run.rows = []any{}
	pager := cc.NewQueryItemsPager(query, pk, o)
	for pager.More() {
		if len(run.pages) > 10000 {
			t.Fatalf("%s: the query does not end", query)
		}
		resp, err := pager.NextPage(ctx)
		if err != nil {
			return run, err
		}
		checkQueryPage(t, query, resp.Response, len(resp.Items), int(o.PageSizeHint))
		if resp.QueryMetrics == nil {
			t.Errorf("%s: no x-ms-documentdb-query-metrics on a query page", query)
		}
		for _, it := range resp.Items {
			var v any
			if err := json.Unmarshal(it, &v); err != nil {
				t.Fatalf("%s: row %q: %v", query, it, err)
			}
			run.rows = append(run.rows, v)
		}
		p := qpage{n: len(resp.Items)}
		if resp.ContinuationToken != nil {
			p.continuation = *resp.ContinuationToken
		}
		run.pages = append(run.pages, p)
		run.last = resp
	}
	return run, nil
}

// checkQueryPage checks the headers every query page must carry.
func checkQueryPage(t testing.TB, what string, r azcosmos.Response, items, pageSize int) {
	t.Helper()
	if r.RequestCharge <= 0 {
		t.Errorf("%s: request charge %v; want > 0", what, r.RequestCharge)
	}
	if r.RawResponse == nil {
		t.Fatalf("%s: no raw response", what)
	}
	if got := r.RawResponse.Header.Get("x-ms-item-count"); got != strconv.Itoa(items) {
		t.Errorf("%s: x-ms-item-count %q with %d rows", what, got, items)
	}
	if pageSize > 0 && items > pageSize {
		t.Errorf("%s: a page of %d rows; the page size is %d", what, items, pageSize)
	}
}

// mustQuery is runQuery failing the test on an error.
func mustQuery(t testing.TB, cc *azcosmos.ContainerClient, query string, pk azcosmos.PartitionKey, o *azcosmos.QueryOptions) queryRun {
	t.Helper()
	run, err := runQuery(t, cc, query, pk, o)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return run
}

// queryIDs runs a query whose rows are strings (SELECT VALUE c.id ...).
func queryIDs(t testing.TB, cc *azcosmos.ContainerClient, query string, pk azcosmos.PartitionKey, o *azcosmos.QueryOptions) []string {
	t.Helper()
	run := mustQuery(t, cc, query, pk, o)
	out := make([]string, 0, len(run.rows))
	for _, r := range run.rows {
		s, ok := r.(string)
		if !ok {
			t.Fatalf("%s: row %v is not a string", query, r)
		}
		out = append(out, s)
	}
	return out
}

// rawQuery sends one raw query page (POST .../docs, application/query+json).
func (s *server) rawQuery(t testing.TB, db, coll string, body any, headers map[string]string) rawResponse {
	t.Helper()
	h := hdr("Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True")
	for k, v := range headers {
		h[k] = v
	}
	if _, ok := body.(string); ok {
		body = map[string]any{"query": body}
	}
	return s.do(t, http.MethodPost, docsPath(db, coll), h, mustMarshal(t, body))
}

// qparams builds SDK query parameters from name, value pairs.
func qparams(kv ...any) []azcosmos.QueryParameter {
	var out []azcosmos.QueryParameter
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, azcosmos.QueryParameter{Name: kv[i].(string), Value: kv[i+1]})
	}
	return out
}

// round is Cosmos DB's ROUND: half away from zero.
func round(x float64) float64 { return math.Round(x) }

// allQueries is the server flag these tests run with: they check how the
// server evaluates every query shape, ORDER BY and aggregates across
// partitions included, which Cosmos DB's gateway (and Lethe by default)
// leaves to SDKs that run query plans.
var allQueries = []string{"--serve-all-cross-partition-queries"}
