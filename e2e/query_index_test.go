package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestQueryIndexes proves that secondary indexes never change a query's
// answer, only its cost:
//   - with PopulateIndexMetrics the response carries
//     x-ms-cosmos-index-utilization naming the index an equality, IN, range,
//     STARTSWITH or IS_DEFINED filter used; without it, no header;
//   - the planner's filters (equality, IN, ranges, STARTSWITH, IS_DEFINED,
//     bare boolean paths) give exactly the expected rows over values of every
//     type: numbers written 1, 1.0 and 1e0, -0, strings longer than the indexed
//     prefix, unicode, booleans, null, arrays, objects, missing values;
//   - the same queries on a container whose policy excludes everything but
//     /name/? (so they scan) give the same rows;
//   - replacing the indexing policy of a live container (the rebuild runs in
//     the background) keeps every query exact immediately and throughout.
func TestQueryIndexes(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true, Args: allQueries})
	c := s.client(t)
	db := mustDatabase(t, c, "qi")
	nameOnly := &azcosmos.IndexingPolicy{
		Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
		IncludedPaths: []azcosmos.IncludedPath{{Path: "/name/?"}},
		ExcludedPaths: []azcosmos.ExcludedPath{{Path: "/*"}},
	}
	indexed := mustContainer(t, db, pkContainer("indexed", nil))
	scanned := mustContainer(t, db, azcosmos.ContainerProperties{
		ID: "scanned", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}, IndexingPolicy: nameOnly,
	})
	rawDocs := indexDataset()
	var docs []qdoc
	for _, raw := range rawDocs {
		var d qdoc
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		docs = append(docs, d)
		for _, cc := range []*azcosmos.ContainerClient{indexed, scanned} {
			if _, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString(str(d, "pk")), []byte(raw), nil); err != nil {
				t.Fatalf("create %s: %v", raw, err)
			}
		}
	}
	cases := indexCases()

	t.Run("index metrics", func(t *testing.T) {
		for _, m := range []struct {
			query string
			cc    *azcosmos.ContainerClient
			spec  string // "" when no index can serve it
		}{
			{"SELECT * FROM c WHERE c.name = 'n3'", indexed, "/name/?"},
			{"SELECT * FROM c WHERE c.name = 'n3'", scanned, "/name/?"},
			{"SELECT * FROM c WHERE c.v IN (1, 2)", indexed, "/v/?"},
			{"SELECT * FROM c WHERE c.v > 1", indexed, "/v/?"},
			{"SELECT * FROM c WHERE STARTSWITH(c.name, 'n1')", indexed, "/name/?"},
			{"SELECT * FROM c WHERE IS_DEFINED(c.v)", indexed, "/v/?"},
			{"SELECT * FROM c WHERE c.o.p = 3", indexed, "/o/p/?"},
			{"SELECT * FROM c WHERE c.v = 1", scanned, ""},
			{"SELECT * FROM c", indexed, ""},
		} {
			resp, err := m.cc.NewQueryItemsPager(m.query, azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PopulateIndexMetrics: true}).NextPage(ctx)
			if err != nil {
				t.Fatalf("%s: %v", m.query, err)
			}
			if resp.IndexMetrics == nil {
				t.Errorf("%s: no x-ms-cosmos-index-utilization with PopulateIndexMetrics", m.query)
				continue
			}
			specs := utilizedIndexes(t, *resp.IndexMetrics)
			if m.spec == "" && len(specs) != 0 || m.spec != "" && !slices.Contains(specs, m.spec) {
				t.Errorf("%s: utilized indexes %v; want %q", m.query, specs, m.spec)
			}
			resp, err = m.cc.NewQueryItemsPager(m.query, azcosmos.NewPartitionKey(), nil).NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if resp.IndexMetrics != nil {
				t.Errorf("%s: x-ms-cosmos-index-utilization %q without PopulateIndexMetrics", m.query, *resp.IndexMetrics)
			}
		}
	})

	// The JavaScript SDK asks with x-ms-cosmos-populateindexmetrics-V2 and
	// reads the answer with decodeURIComponent + JSON.parse: percent-encoded
	// JSON {"UtilizedIndexes": {"SingleIndexes": [{"IndexSpec": ...}]}, ...}.
	t.Run("index metrics V2", func(t *testing.T) {
		r := s.rawQuery(t, "qi", "indexed", "SELECT * FROM c WHERE c.name = 'n3'", hdr("x-ms-documentdb-query-enablecrosspartition", "true", "x-ms-cosmos-populateindexmetrics-V2", "true"))
		r.wantStatus(t, "query with V2 index metrics", http.StatusOK)
		h := r.Header.Get("x-ms-cosmos-index-utilization")
		dec, err := url.PathUnescape(h)
		var m struct {
			Utilized struct {
				Single []struct {
					IndexSpec string `json:"IndexSpec"`
				} `json:"SingleIndexes"`
				Composite []any `json:"CompositeIndexes"`
			} `json:"UtilizedIndexes"`
			Potential *struct{} `json:"PotentialIndexes"`
		}
		if err != nil || json.Unmarshal([]byte(dec), &m) != nil || m.Potential == nil || len(m.Utilized.Single) != 1 || m.Utilized.Single[0].IndexSpec != "/name/?" {
			t.Errorf("x-ms-cosmos-index-utilization %q (decoded %q): want V2 JSON naming /name/?", h, dec)
		}
	})

	for _, target := range []struct {
		name string
		cc   *azcosmos.ContainerClient
	}{{"default policy", indexed}, {"only /name/? indexed", scanned}} {
		t.Run(target.name, func(t *testing.T) {
			for _, qc := range cases {
				t.Run(qc.name, func(t *testing.T) {
					checkQueryCase(t, target.cc, qc, azcosmos.NewPartitionKey(), docs)
					inB := where(docs, func(d qdoc) bool { return d["pk"] == "b" })
					checkQueryCase(t, target.cc, qc, azcosmos.NewPartitionKeyString("b"), inB)
					if qc.shape {
						run := mustQuery(t, target.cc, qc.query, azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{QueryParameters: qc.params, PageSizeHint: 2})
						if want := qc.want(docs); !sameRows(run.rows, want, qc.unordered) {
							t.Errorf("%s (pages of 2)\ngot  %s\nwant %s", qc.query, showRows(run.rows), showRows(want))
						}
					}
				})
			}
		})
	}

	t.Run("ordered index reads", func(t *testing.T) {
		testQueryOrderedIndex(t, db, nameOnly)
	})

	t.Run("policy replaced on a live container", func(t *testing.T) {
		t.Parallel()
		testQueryIndexPolicyReplace(t, db, nameOnly)
	})

	// The re-index after a policy change must not depend on the purger:
	// --disable-purger promises only that expired documents are never
	// physically deleted.
	t.Run("policy replaced with the purger disabled", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, serverOpts{InMemory: true, Args: append(allQueries, "--disable-purger")})
		db := mustDatabase(t, s.client(t), "qi")
		testQueryIndexPolicyReplace(t, db, nameOnly)
	})
}

// utilizedIndexes decodes x-ms-cosmos-index-utilization (base64 JSON, as the
// service sends it to clients that ask with x-ms-cosmos-populateindexmetrics)
// and returns the IndexSpec of every utilized single index, and the specs of
// every utilized composite index joined by commas ("/pk ASC,/v DESC").
func utilizedIndexes(t *testing.T, header string) []string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		t.Fatalf("x-ms-cosmos-index-utilization %q is not base64: %v", header, err)
	}
	var m struct {
		Utilized []struct {
			IndexSpec string `json:"IndexSpec"`
		} `json:"UtilizedSingleIndexes"`
		Potential *[]any `json:"PotentialSingleIndexes"`
		Composite []struct {
			IndexSpecs []string `json:"IndexSpecs"`
		} `json:"UtilizedCompositeIndexes"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.Potential == nil {
		t.Fatalf("x-ms-cosmos-index-utilization %s: not the index utilization object (%v)", raw, err)
	}
	var specs []string
	for _, u := range m.Utilized {
		specs = append(specs, u.IndexSpec)
	}
	for _, c := range m.Composite {
		specs = append(specs, strings.Join(c.IndexSpecs, ","))
	}
	return specs
}

var longA = strings.Repeat("L", 140) + "a"
var longB = strings.Repeat("L", 140) + "b"

// indexDataset is raw JSON, so that numbers keep their spelling (1, 1.0, 1e0).
func indexDataset() []string {
	vs := []string{
		`1`, `1.0`, `1e0`, `10`, `-2`, `-10`, `0`, `-0`, `1.5`, `100`, `1e2`, `-1e308`,
		`"1"`, `"a"`, `"ab"`, `"abc"`, `"b"`, `""`, `"é"`, `"Ab"`, fmt.Sprintf("%q", longA), fmt.Sprintf("%q", longB),
		`true`, `false`, `null`, `[]`, `[1]`, `["a"]`, `{}`, `{"x":1}`, ``,
		`"a\u0000"`, `"a\u0000b"`, `"a\"b"`, `"a\\b"`, `9007199254740993`, `9007199254740992`, `1E2`, `100.00`, `0.30000000000000004`,
	}
	objs := []string{`{"p":3}`, `[{"p":3}]`, `{"p":"3"}`, `{"q":3}`, `3`, ``}
	var out []string
	for i, v := range vs {
		fields := []string{fmt.Sprintf(`"id":"x%02d"`, i), fmt.Sprintf(`"pk":%q`, []string{"a", "b", "c"}[i%3]), fmt.Sprintf(`"name":"n%d"`, i%5), fmt.Sprintf(`"seq":%d`, i)}
		if v != "" {
			fields = append(fields, `"v":`+v)
		}
		if o := objs[i%len(objs)]; o != "" {
			fields = append(fields, `"o":`+o)
		}
		switch i % 4 {
		case 0:
			fields = append(fields, `"flag":true`)
		case 1:
			fields = append(fields, `"flag":false`)
		case 2:
			fields = append(fields, `"flag":"true"`)
		}
		out = append(out, "{"+strings.Join(fields, ",")+"}")
	}
	return out
}

// vIs returns a filter on c.v with the comparison semantics of Cosmos DB.
func vIs(op string, x any) func(qdoc) bool {
	return func(d qdoc) bool { return isTrue(cmpSame(get(d, "v"), x, op)) }
}

func idsWhere(pred func(qdoc) bool) func([]qdoc) []any {
	return func(d []qdoc) []any { return idsOf(where(d, pred)) }
}

func anyOf(ps ...func(qdoc) bool) func(qdoc) bool {
	return func(d qdoc) bool {
		for _, p := range ps {
			if p(d) {
				return true
			}
		}
		return false
	}
}

func allOf(ps ...func(qdoc) bool) func(qdoc) bool {
	return func(d qdoc) bool {
		for _, p := range ps {
			if !p(d) {
				return false
			}
		}
		return true
	}
}

// indexCases are queries the planner can serve from an index, with
// expectations computed from the documents.
func indexCases() []queryCase {
	startsWith := func(p string) func(qdoc) bool {
		return func(d qdoc) bool { s, ok := get(d, "v").(string); return ok && strings.HasPrefix(s, p) }
	}
	return []queryCase{
		{name: "eq number", query: "SELECT VALUE c.id FROM c WHERE c.v = 1", want: idsWhere(vIs("=", 1.0)), shape: true},
		{name: "eq number written 1e2", query: "SELECT VALUE c.id FROM c WHERE c.v = 100.0", want: idsWhere(vIs("=", 100.0))},
		{name: "eq zero", query: "SELECT VALUE c.id FROM c WHERE c.v = -0", want: idsWhere(vIs("=", 0.0))},
		{name: "eq string", query: "SELECT VALUE c.id FROM c WHERE c.v = 'a'", want: idsWhere(vIs("=", "a"))},
		{name: "eq empty string", query: "SELECT VALUE c.id FROM c WHERE c.v = ''", want: idsWhere(vIs("=", ""))},
		{name: "eq unicode", query: "SELECT VALUE c.id FROM c WHERE c.v = 'é'", want: idsWhere(vIs("=", "é"))},
		{name: "eq long string", query: "SELECT VALUE c.id FROM c WHERE c.v = @s", params: qparams("@s", longB), want: idsWhere(vIs("=", longB))},
		{name: "eq string one", query: "SELECT VALUE c.id FROM c WHERE c.v = '1'", want: idsWhere(vIs("=", "1"))},
		{name: "eq true", query: "SELECT VALUE c.id FROM c WHERE c.v = true", want: idsWhere(vIs("=", true))},
		{name: "eq false", query: "SELECT VALUE c.id FROM c WHERE c.v = false", want: idsWhere(vIs("=", false))},
		{name: "eq null", query: "SELECT VALUE c.id FROM c WHERE c.v = null", want: idsWhere(vIs("=", nil))},
		{name: "eq reversed", query: "SELECT VALUE c.id FROM c WHERE 10 = c.v", want: idsWhere(vIs("=", 10.0))},
		{name: "eq parameter", query: "SELECT VALUE c.id FROM c WHERE c.v = @v", params: qparams("@v", 1.5), want: idsWhere(vIs("=", 1.5))},
		{name: "eq array is no scalar", query: "SELECT VALUE c.id FROM c WHERE c.v = [1]", want: idsWhere(func(d qdoc) bool { return canonJSON(get(d, "v")) == "[1]" && get(d, "v") != undef })},
		{name: "eq object", query: `SELECT VALUE c.id FROM c WHERE c.v = {"x": 1}`, want: idsWhere(func(d qdoc) bool { return get(d, "v") != undef && canonJSON(get(d, "v")) == `{"x":1}` })},
		{name: "eq beyond float precision", query: "SELECT VALUE c.id FROM c WHERE c.v = 9007199254740992", want: idsWhere(vIs("=", 9007199254740992.0))},
		{name: "eq computed float", query: "SELECT VALUE c.id FROM c WHERE c.v = 0.1 + 0.2", want: idsWhere(vIs("=", 0.30000000000000004))},
		{name: "eq string with NUL", query: "SELECT VALUE c.id FROM c WHERE c.v = @s", params: qparams("@s", "a\x00"), want: idsWhere(vIs("=", "a\x00"))},
		{name: "eq string with quote", query: `SELECT VALUE c.id FROM c WHERE c.v = 'a"b' OR c.v = 'a\\b'`, want: idsWhere(anyOf(vIs("=", `a"b`), vIs("=", `a\b`)))},
		{name: "range over NUL", query: `SELECT VALUE c.id FROM c WHERE c.v > 'a' AND c.v < 'a\u0001'`, want: idsWhere(allOf(vIs(">", "a"), vIs("<", "a\x01")))},
		{name: "in mixed types", query: "SELECT VALUE c.id FROM c WHERE c.v IN (1, 'a', true, null, @s)", params: qparams("@s", longA), shape: true,
			want: idsWhere(anyOf(vIs("=", 1.0), vIs("=", "a"), vIs("=", true), vIs("=", nil), vIs("=", longA)))},
		{name: "in empty match", query: "SELECT VALUE c.id FROM c WHERE c.v IN ('zz', 999)", want: idsWhere(anyOf(vIs("=", "zz"), vIs("=", 999.0)))},
		{name: "gt number", query: "SELECT VALUE c.id FROM c WHERE c.v > 1", want: idsWhere(vIs(">", 1.0)), shape: true},
		{name: "ge number", query: "SELECT VALUE c.id FROM c WHERE c.v >= 1", want: idsWhere(vIs(">=", 1.0))},
		{name: "lt negative", query: "SELECT VALUE c.id FROM c WHERE c.v < 0", want: idsWhere(vIs("<", 0.0))},
		{name: "le negative", query: "SELECT VALUE c.id FROM c WHERE c.v <= -2", want: idsWhere(vIs("<=", -2.0))},
		{name: "between numbers", query: "SELECT VALUE c.id FROM c WHERE c.v BETWEEN -10 AND 1.5", want: idsWhere(allOf(vIs(">=", -10.0), vIs("<=", 1.5)))},
		{name: "two-sided range", query: "SELECT VALUE c.id FROM c WHERE c.v > -3 AND c.v < 10", want: idsWhere(allOf(vIs(">", -3.0), vIs("<", 10.0)))},
		{name: "reversed range", query: "SELECT VALUE c.id FROM c WHERE 1 < c.v", want: idsWhere(vIs(">", 1.0))},
		{name: "empty range", query: "SELECT VALUE c.id FROM c WHERE c.v > 5 AND c.v < 2", want: idsWhere(func(qdoc) bool { return false })},
		{name: "mixed-type bounds", query: "SELECT VALUE c.id FROM c WHERE c.v > 0 AND c.v < 'z'", want: idsWhere(allOf(vIs(">", 0.0), vIs("<", "z")))},
		{name: "huge bound", query: "SELECT VALUE c.id FROM c WHERE c.v > -1.7976931348623157e308", want: idsWhere(vIs(">", -math.MaxFloat64))},
		{name: "gt string", query: "SELECT VALUE c.id FROM c WHERE c.v > 'a'", want: idsWhere(vIs(">", "a")), shape: true},
		{name: "lt string", query: "SELECT VALUE c.id FROM c WHERE c.v < 'ab'", want: idsWhere(vIs("<", "ab"))},
		{name: "string range with long bound", query: "SELECT VALUE c.id FROM c WHERE c.v >= @lo AND c.v < @hi", params: qparams("@lo", longA, "@hi", longB),
			want: idsWhere(allOf(vIs(">=", longA), vIs("<", longB)))},
		{name: "string range above long", query: "SELECT VALUE c.id FROM c WHERE c.v > @lo", params: qparams("@lo", longA), want: idsWhere(vIs(">", longA))},
		{name: "between strings", query: "SELECT VALUE c.id FROM c WHERE c.v BETWEEN 'a' AND 'b'", want: idsWhere(allOf(vIs(">=", "a"), vIs("<=", "b")))},
		{name: "starts with", query: "SELECT VALUE c.id FROM c WHERE STARTSWITH(c.v, 'a')", want: idsWhere(startsWith("a")), shape: true},
		{name: "starts with empty", query: "SELECT VALUE c.id FROM c WHERE STARTSWITH(c.v, '')", want: idsWhere(startsWith(""))},
		{name: "starts with long prefix", query: "SELECT VALUE c.id FROM c WHERE STARTSWITH(c.v, @p)", params: qparams("@p", longA[:135]), want: idsWhere(startsWith(longA[:135]))},
		{name: "starts with ignoring case", query: "SELECT VALUE c.id FROM c WHERE STARTSWITH(c.v, 'A', true)",
			want: idsWhere(func(d qdoc) bool {
				s, ok := get(d, "v").(string)
				return ok && strings.HasPrefix(strings.ToLower(s), "a")
			})},
		{name: "is defined", query: "SELECT VALUE c.id FROM c WHERE IS_DEFINED(c.v)", want: idsWhere(func(d qdoc) bool { return get(d, "v") != undef }), shape: true},
		{name: "not defined", query: "SELECT VALUE c.id FROM c WHERE NOT IS_DEFINED(c.v)", want: idsWhere(func(d qdoc) bool { return get(d, "v") == undef })},
		{name: "is defined nested", query: "SELECT VALUE c.id FROM c WHERE IS_DEFINED(c.o.p)", want: idsWhere(func(d qdoc) bool { return get(d, "o", "p") != undef })},
		{name: "bare boolean path", query: "SELECT VALUE c.id FROM c WHERE c.flag", want: idsWhere(func(d qdoc) bool { return get(d, "flag") == true })},
		{name: "nested equality", query: "SELECT VALUE c.id FROM c WHERE c.o.p = 3", want: idsWhere(func(d qdoc) bool { return get(d, "o", "p") == 3.0 })},
		{name: "array element", query: "SELECT VALUE c.id FROM c WHERE c.o[0].p = 3", want: idsWhere(func(d qdoc) bool {
			a, ok := get(d, "o").([]any)
			return ok && len(a) > 0 && get(a[0], "p") == 3.0
		})},
		{name: "array contains", query: "SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.v, 'a')", want: idsWhere(func(d qdoc) bool {
			a, ok := get(d, "v").([]any)
			return ok && slices.Contains(a, any("a"))
		})},
		{name: "or across paths", query: "SELECT VALUE c.id FROM c WHERE c.v = 1 OR c.name = 'n2'", want: idsWhere(anyOf(vIs("=", 1.0), func(d qdoc) bool { return d["name"] == "n2" }))},
		{name: "and of two indexes", query: "SELECT VALUE c.id FROM c WHERE c.name = 'n1' AND c.v >= 0", want: idsWhere(allOf(vIs(">=", 0.0), func(d qdoc) bool { return d["name"] == "n1" }))},
		{name: "order by all types", query: "SELECT VALUE c.id FROM c ORDER BY c.v", want: func(d []qdoc) []any { return idsOf(orderBy(d, asc("v"))) }, shape: true},
		{name: "order by with filter", query: "SELECT VALUE c.id FROM c WHERE c.v >= -2 ORDER BY c.v DESC", want: func(d []qdoc) []any {
			return idsOf(orderBy(where(d, vIs(">=", -2.0)), desc("v")))
		}, shape: true},
		{name: "count by index", query: "SELECT VALUE COUNT(1) FROM c WHERE c.name = 'n0'", want: func(d []qdoc) []any {
			return []any{len(where(d, func(x qdoc) bool { return x["name"] == "n0" }))}
		}},
		{name: "top by index", query: "SELECT TOP 2 VALUE c.id FROM c WHERE c.name IN ('n1', 'n3')", want: func(d []qdoc) []any {
			s := idsOf(where(d, func(x qdoc) bool { return x["name"] == "n1" || x["name"] == "n3" }))
			return s[:min(2, len(s))]
		}},
	}
}

// testQueryIndexPolicyReplace replaces the indexing policy of a container
// holding enough documents for the rebuild to take a while, and checks the
// queries right after each replace and repeatedly while the rebuild runs.
func testQueryIndexPolicyReplace(t *testing.T, db *azcosmos.DatabaseClient, nameOnly *azcosmos.IndexingPolicy) {
	props := pkContainer("live", nil)
	cc := mustContainer(t, db, props)
	var docs []qdoc
	const n = 600
	for i := range n {
		d := qdoc{"id": fmt.Sprintf("r%03d", i), "pk": fmt.Sprintf("p%d", i%7), "name": fmt.Sprintf("n%d", i%10), "v": float64(i % 37), "s": fmt.Sprintf("s%03d", i%50)}
		if _, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString(str(d, "pk")), mustMarshal(t, d), nil); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	cases := []queryCase{
		{query: "SELECT VALUE c.id FROM c WHERE c.v = 5", want: idsWhere(func(d qdoc) bool { return d["v"] == 5.0 })},
		{query: "SELECT VALUE c.id FROM c WHERE c.name = 'n3'", want: idsWhere(func(d qdoc) bool { return d["name"] == "n3" })},
		{query: "SELECT VALUE c.id FROM c WHERE c.v > 30 AND c.name IN ('n1', 'n2')", want: idsWhere(func(d qdoc) bool {
			return num(d, "v") > 30 && (d["name"] == "n1" || d["name"] == "n2")
		})},
		{query: "SELECT VALUE c.id FROM c WHERE STARTSWITH(c.s, 's04')", want: idsWhere(func(d qdoc) bool { return strings.HasPrefix(str(d, "s"), "s04") })},
		{query: "SELECT VALUE COUNT(1) FROM c WHERE IS_DEFINED(c.s)", want: func(d []qdoc) []any { return []any{len(d)} }},
	}
	check := func(what string) {
		t.Helper()
		for _, qc := range cases {
			run, err := runQuery(t, cc, qc.query, azcosmos.NewPartitionKey(), nil)
			if err != nil {
				t.Errorf("%s: %s: %v", what, qc.query, err)
				continue
			}
			if want := qc.want(docs); !sameRows(run.rows, want, false) {
				t.Errorf("%s: %s: %d rows; want %d\ngot  %s\nwant %s", what, qc.query, len(run.rows), len(want), showRows(run.rows), showRows(want))
			}
		}
	}
	check("default policy")
	for _, step := range []struct {
		name   string
		policy *azcosmos.IndexingPolicy
	}{
		{"only /name/?", nameOnly},
		{"everything again", &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent, IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}}}},
		{"/v/? and /s/?", &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
			IncludedPaths: []azcosmos.IncludedPath{{Path: "/v/?"}, {Path: "/s/?"}}, ExcludedPaths: []azcosmos.ExcludedPath{{Path: "/*"}}}},
	} {
		props.IndexingPolicy = step.policy
		if _, err := cc.Replace(ctx, props, nil); err != nil {
			t.Fatalf("replace indexing policy (%s): %v", step.name, err)
		}
		// Right after the replace, and for a while as the rebuild runs, with
		// writes going on (indexed under the new policy).
		deadline := time.Now().Add(300 * time.Millisecond)
		for i := 0; i == 0 || time.Now().Before(deadline); i++ {
			check(fmt.Sprintf("%s, round %d after the replace", step.name, i))
			d := qdoc{"id": fmt.Sprintf("w%03d", len(docs)), "pk": "p0", "name": "n3", "v": 5.0, "s": "s040"}
			if _, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString("p0"), mustMarshal(t, d), nil); err != nil {
				t.Fatal(err)
			}
			docs = append(docs, d)
		}
	}
	// The rebuild ends, and then the new index serves the query: the server
	// reports it in the query's index metrics. How long the rebuild takes
	// depends on the machine (it is paced around this test's own queries);
	// the deadline is a safety net against a rebuild that never ends.
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		resp, err := cc.NewQueryItemsPager("SELECT VALUE c.id FROM c WHERE c.v = 5", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PopulateIndexMetrics: true}).NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if resp.IndexMetrics != nil && slices.Contains(utilizedIndexes(t, *resp.IndexMetrics), "/v/?") {
			t.Logf("the rebuild finished within %v", time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("a minute after the last policy replace, queries on /v/? still do not use its index: the re-index never finished")
		}
	}
	check("after the rebuild")
}

// testQueryOrderedIndex covers ORDER BY served from an index in order (DESC
// reads the index backwards and then the documents without the property; ASC
// when WHERE bounds the same path): over scalar values of every type with ties
// (1, 1.0 and 1e0; -0 and 0; equal long strings), strings longer than the
// indexed prefix inserted out of order, missing values, and a nested path
// whose parent is sometimes an array or a number. Every query must give the
// rows a scan gives, cross-partition, in one partition, and paged by 1, 2, 5,
// also on a container whose composite indexes (/pk with /v, /pk with /o/p)
// serve the ORDER BY of a partition.
func testQueryOrderedIndex(t *testing.T, db *azcosmos.DatabaseClient, nameOnly *azcosmos.IndexingPolicy) {
	indexed := mustContainer(t, db, pkContainer("ordered", nil))
	scanned := mustContainer(t, db, azcosmos.ContainerProperties{
		ID: "ordered-scan", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}, IndexingPolicy: nameOnly,
	})
	// Composite indexes serve the ORDER BY of the queries in one partition.
	composite := mustContainer(t, db, azcosmos.ContainerProperties{
		ID: "ordered-composite", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		IndexingPolicy: &azcosmos.IndexingPolicy{
			Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
			IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}},
			CompositeIndexes: [][]azcosmos.CompositeIndex{
				{{Path: "/pk", Order: azcosmos.CompositeIndexAscending}, {Path: "/v", Order: azcosmos.CompositeIndexDescending}},
				{{Path: "/pk", Order: azcosmos.CompositeIndexAscending}, {Path: "/o/p", Order: azcosmos.CompositeIndexAscending}},
			},
		},
	})
	if props, err := composite.Read(ctx, nil); err != nil || len(props.ContainerProperties.IndexingPolicy.CompositeIndexes) != 2 {
		t.Fatalf("the composite container reads back %+v, %v", props.ContainerProperties, err)
	}
	longA2 := longA + "x"
	vs := []string{`"b"`, `-0`, `1.0`, strconv.Quote(longB), `0`, `1`, `null`, ``, `true`, `"a"`, strconv.Quote(longA), `false`,
		`1e0`, `-5`, strconv.Quote(longB), `""`, `"é"`, ``, `2`, strconv.Quote(longA2), `"b"`, `5`, `null`, ``, strconv.Quote(longA), `-0.0`}
	objs := []string{`{"p":2}`, `[{"p":1}]`, `7`, ``, `{"p":0}`, `{"p":"x"}`, `{"p":2}`}
	var docs []qdoc
	for i, v := range vs {
		fields := []string{fmt.Sprintf(`"id":"o%02d"`, i), fmt.Sprintf(`"pk":%q`, []string{"a", "b", "c"}[i%3]), fmt.Sprintf(`"seq":%d`, i)}
		if v != "" {
			fields = append(fields, `"v":`+v)
		}
		if o := objs[i%len(objs)]; o != "" {
			fields = append(fields, `"o":`+o)
		}
		raw := "{" + strings.Join(fields, ",") + "}"
		var d qdoc
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		docs = append(docs, d)
		for _, cc := range []*azcosmos.ContainerClient{indexed, scanned, composite} {
			if _, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString(str(d, "pk")), []byte(raw), nil); err != nil {
				t.Fatalf("create %s: %v", raw, err)
			}
		}
	}
	ordered := func(keep func(qdoc) bool, keys ...orderKey) func([]qdoc) []any {
		return func(d []qdoc) []any { return idsOf(orderBy(where(d, keep), keys...)) }
	}
	all := func(qdoc) bool { return true }
	isStr := func(d qdoc) bool { _, ok := get(d, "v").(string); return ok }
	cases := []queryCase{
		{query: "SELECT VALUE c.id FROM c ORDER BY c.v DESC", want: ordered(all, desc("v"))},
		{query: "SELECT TOP 3 VALUE c.id FROM c ORDER BY c.v DESC", want: func(d []qdoc) []any { s := ordered(all, desc("v"))(d); return s[:min(3, len(s))] }},
		{query: "SELECT VALUE c.id FROM c ORDER BY c.v DESC OFFSET 4 LIMIT 6", want: func(d []qdoc) []any {
			s := ordered(all, desc("v"))(d)
			return s[min(4, len(s)):min(10, len(s))]
		}},
		{query: "SELECT VALUE c.id FROM c ORDER BY c.v", want: ordered(all, asc("v"))},
		{query: "SELECT VALUE c.id FROM c WHERE c.v >= 0 ORDER BY c.v", want: ordered(vIs(">=", 0.0), asc("v"))},
		{query: "SELECT VALUE c.id FROM c WHERE c.v <= 1 ORDER BY c.v DESC", want: ordered(vIs("<=", 1.0), desc("v"))},
		{query: "SELECT VALUE c.id FROM c WHERE IS_DEFINED(c.v) ORDER BY c.v", want: ordered(func(d qdoc) bool { return get(d, "v") != undef }, asc("v"))},
		{query: "SELECT VALUE c.id FROM c WHERE c.v IN (1, 'b', null, @long) ORDER BY c.v DESC", params: qparams("@long", longB),
			want: ordered(anyOf(vIs("=", 1.0), vIs("=", "b"), vIs("=", nil), vIs("=", longB)), desc("v"))},
		{query: "SELECT VALUE c.id FROM c WHERE STARTSWITH(c.v, 'L') ORDER BY c.v", want: ordered(func(d qdoc) bool { return isStr(d) && strings.HasPrefix(str(d, "v"), "L") }, asc("v"))},
		{query: "SELECT VALUE c.id FROM c WHERE STARTSWITH(c.v, 'L') ORDER BY c.v DESC", want: ordered(func(d qdoc) bool { return isStr(d) && strings.HasPrefix(str(d, "v"), "L") }, desc("v"))},
		{query: "SELECT VALUE c.id FROM c WHERE c.v > 'a' ORDER BY c.v DESC", want: ordered(vIs(">", "a"), desc("v"))},
		{query: "SELECT TOP 5 VALUE c.id FROM c ORDER BY c.v DESC, c.seq DESC", want: func(d []qdoc) []any {
			s := ordered(all, desc("v"), desc("seq"))(d)
			return s[:min(5, len(s))]
		}},
		{query: "SELECT VALUE c.id FROM c WHERE c.v >= -1 ORDER BY c.v, c.seq DESC", want: ordered(vIs(">=", -1.0), asc("v"), desc("seq"))},
		{query: "SELECT VALUE c.id FROM c ORDER BY c.o.p DESC", want: ordered(all, desc("o", "p"))},
		{query: "SELECT TOP 4 VALUE c.id FROM c WHERE c.o.p >= 1 ORDER BY c.o.p", want: func(d []qdoc) []any {
			s := ordered(func(x qdoc) bool { return isTrue(cmpSame(get(x, "o", "p"), 1.0, ">=")) }, asc("o", "p"))(d)
			return s[:min(4, len(s))]
		}},
		{query: "SELECT VALUE c.v FROM c WHERE c.v < 2 ORDER BY c.v DESC", want: func(d []qdoc) []any {
			return mapRows(orderBy(where(d, vIs("<", 2.0)), desc("v")), func(x qdoc) any { return x["v"] })
		}},
	}
	for _, qc := range cases {
		for _, target := range []*azcosmos.ContainerClient{indexed, scanned, composite} {
			for _, size := range []int32{0, 1, 2, 5} {
				run, err := runQuery(t, target, qc.query, azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{QueryParameters: qc.params, PageSizeHint: size})
				if err != nil {
					t.Errorf("%s: %v", qc.query, err)
					continue
				}
				if want := qc.want(docs); !sameRows(run.rows, want, false) {
					t.Errorf("%s on %s (page size %d)\ngot  %s\nwant %s", qc.query, target.ID(), size, showRows(run.rows), showRows(want))
				}
			}
			inB := where(docs, func(d qdoc) bool { return d["pk"] == "b" })
			run, err := runQuery(t, target, qc.query, azcosmos.NewPartitionKeyString("b"), &azcosmos.QueryOptions{QueryParameters: qc.params, PageSizeHint: 2})
			if err != nil {
				t.Errorf("%s in b: %v", qc.query, err)
				continue
			}
			if want := qc.want(inB); !sameRows(run.rows, want, false) {
				t.Errorf("%s on %s in partition b\ngot  %s\nwant %s", qc.query, target.ID(), showRows(run.rows), showRows(want))
			}
		}
	}
	resp, err := indexed.NewQueryItemsPager("SELECT VALUE c.id FROM c ORDER BY c.v DESC", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PopulateIndexMetrics: true, PageSizeHint: 3}).NextPage(ctx)
	if err == nil && resp.IndexMetrics != nil {
		t.Logf("ORDER BY c.v DESC: utilized indexes %v", utilizedIndexes(t, *resp.IndexMetrics))
	}
	// In one partition, the composite container reads its composite index.
	resp, err = composite.NewQueryItemsPager("SELECT VALUE c.id FROM c ORDER BY c.v DESC", azcosmos.NewPartitionKeyString("b"), &azcosmos.QueryOptions{PopulateIndexMetrics: true, PageSizeHint: 3}).NextPage(ctx)
	if err != nil || resp.IndexMetrics == nil {
		t.Fatalf("ORDER BY c.v DESC in b: %v, index metrics %v", err, resp.IndexMetrics)
	}
	if got := utilizedIndexes(t, *resp.IndexMetrics); !slices.Equal(got, []string{"/pk ASC,/v DESC"}) {
		t.Errorf("ORDER BY c.v DESC in b on the composite container: utilized indexes %q, want the composite index", got)
	}
}
