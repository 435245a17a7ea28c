package engine

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
)

// queryAll runs a query to completion with the given page size and returns
// every row's JSON.
func (te *testEngine) queryAll(coll, text string, params map[string]jsonv.Value, pageSize int) []string {
	te.t.Helper()
	pages, _ := te.allPages(coll, QueryOptions{Text: text, Params: params, MaxItems: pageSize})
	return slices.Concat(pages...)
}

// TestIndexedQueriesEqualScans: the same random documents in a container with
// the default (index everything) policy and in one with indexing mode none
// answer every query identically, at every page size.
func TestIndexedQueriesEqualScans(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("idx", "")
	te.mustContainer("scan", `"indexingPolicy":{"indexingMode":"none","automatic":false}`)
	rng := rand.New(rand.NewPCG(3, 4))
	vals := []string{`1`, `2`, `3`, `"a"`, `"b"`, `"ab"`, `true`, `null`, `[1]`, `{"k":1}`}
	for i := range 200 {
		body := fmt.Sprintf(`{"id":"d%03d","pk":"p","n":%d`, i, rng.IntN(20))
		if rng.IntN(4) > 0 {
			body += `,"v":` + vals[rng.IntN(len(vals))]
		}
		mixed := []string{`1`, `2.5`, `-4`, `"a"`, `"b"`, `"ab"`, `true`, `false`, `null`, `"` + strings.Repeat("L", 130) + `z"`, `"` + strings.Repeat("L", 130) + `a"`, `"` + strings.Repeat("L", 126) + `"`,
			// numbers that share an index key, and are equal as = compares them
			`5`, `5.0`, `5e0`, `0`, `-0`, `9007199254740992`, `9007199254740993`}
		if rng.IntN(5) > 0 {
			body += `,"m":` + mixed[rng.IntN(len(mixed))]
		}
		body += fmt.Sprintf(`,"s":"%c%d","o":{"w":%s}}`, 'a'+rune(rng.IntN(4)), rng.IntN(10), vals[rng.IntN(len(vals))])
		for _, c := range []string{"idx", "scan"} {
			if err := te.create(c, body); err != nil {
				t.Fatal(err)
			}
		}
	}
	queries := []string{
		"SELECT c.id, c.v FROM c WHERE c.n = 3",
		"SELECT VALUE c.id FROM c WHERE c.n = @n",
		"SELECT c.id FROM c WHERE c.v = 'a'",
		"SELECT c.id FROM c WHERE c.v = true",
		"SELECT c.id FROM c WHERE c.v = null",
		"SELECT c.id FROM c WHERE c.n IN (1, 5, 7) AND c.s >= 'b'",
		"SELECT c.id FROM c WHERE c.n > 15",
		"SELECT c.id FROM c WHERE c.n BETWEEN 3 AND 6",
		"SELECT c.id FROM c WHERE c.s < 'b5'",
		"SELECT c.id FROM c WHERE STARTSWITH(c.s, 'c')",
		"SELECT c.id FROM c WHERE IS_DEFINED(c.v)",
		"SELECT c.id FROM c WHERE IS_DEFINED(c.o.w)",
		"SELECT c.id FROM c WHERE c.o.w = 1",
		"SELECT VALUE COUNT(1) FROM c WHERE c.n < 10",
		"SELECT c.n, COUNT(1) AS k FROM c WHERE c.n > 12 GROUP BY c.n",
		"SELECT c.id, c.n FROM c WHERE c.n >= 5 ORDER BY c.n DESC, c.id",
		"SELECT DISTINCT VALUE c.n FROM c WHERE c.n < 4",
		"SELECT TOP 7 c.id FROM c WHERE c.n > 2",
		"SELECT c.id FROM c WHERE c.n > 2 OFFSET 5 LIMIT 6",
		"SELECT c.id FROM c WHERE c.v IN ('zz')",
		"SELECT c.id, c.m FROM c ORDER BY c.m DESC",
		"SELECT c.id FROM c ORDER BY c.m DESC OFFSET 3 LIMIT 5",
		"SELECT TOP 3 c.id FROM c ORDER BY c.m DESC",
		"SELECT c.id, c.m FROM c WHERE c.m >= 'a' ORDER BY c.m",
		"SELECT c.id FROM c WHERE c.m > 0 ORDER BY c.m OFFSET 0 LIMIT 10",
		"SELECT c.id FROM c WHERE c.m IN (1, 'b', true, null) ORDER BY c.m DESC",
		"SELECT c.id FROM c WHERE IS_DEFINED(c.m) ORDER BY c.m, c.id DESC",
		"SELECT c.id FROM c WHERE STARTSWITH(c.m, 'L') ORDER BY c.m DESC, c.id",
		"SELECT c.id FROM c ORDER BY c.m",
		"SELECT c.id FROM c WHERE c.n = 3 ORDER BY c.m DESC",
		// several equalities: their index lists are read in turns
		"SELECT c.id FROM c WHERE c.v = 'a' AND c.o.w = 1",
		"SELECT c.id, c.m FROM c WHERE c.o.w = 'b' AND c.v = true",
		"SELECT c.id FROM c WHERE c.m = '" + strings.Repeat("L", 130) + "z' AND c.o.w = 2",
		"SELECT c.id FROM c WHERE c.v = null AND c.o.w = null",
		"SELECT c.id FROM c WHERE c.v = 'a' AND c.pk = 'p' AND c.o.w = 1",
		"SELECT TOP 2 c.id FROM c WHERE c.pk = 'p' AND c.o.w = 'a'",
		"SELECT c.id FROM c WHERE c.v IN ('a', 'b') AND c.o.w IN (1, 2)",
		"SELECT c.id FROM c WHERE c.n IN (3, 4, 5) AND c.v = true",
		"SELECT c.id FROM c WHERE c.m = 'ab' AND c.v = 'ab'",
		// numbers that share an index key (see mixed above)
		"SELECT c.id, c.m FROM c WHERE c.m = 5",
		"SELECT c.id, c.m FROM c WHERE c.m = 0",
		"SELECT c.id, c.m FROM c WHERE c.m = -0.0",
		"SELECT c.id, c.m FROM c WHERE c.m = 9007199254740993",
		"SELECT c.id, c.m FROM c WHERE c.m IN (5, -4, 2.5)",
		// values the index holds alike: their documents once each
		"SELECT c.id, c.m FROM c WHERE c.m IN (5, 5.0, -4, 5) ORDER BY c.m",
		"SELECT c.id, c.m FROM c WHERE c.m IN (5, 5.0, -4, 5) ORDER BY c.m DESC",
		"SELECT c.id, c.n FROM c WHERE c.n IN (3, 3, 4)",
		// counts of entries: values that share a key count their documents once
		"SELECT VALUE COUNT(1) FROM c WHERE c.m IN (5, 5.0, 5e0, 'a')",
		"SELECT VALUE COUNT(1) FROM c WHERE c.m = 0 OR c.m = -0 OR c.m = 'ab'",
		"SELECT VALUE COUNT(1) FROM c WHERE c.v = null",
		"SELECT VALUE COUNT(1) FROM c",
		// LIKE: a prefix, or an equality without wildcards
		"SELECT c.id FROM c WHERE c.s LIKE 'c%'",
		"SELECT c.id, c.s FROM c WHERE c.s LIKE 'a_' AND c.n < 10",
		"SELECT c.id FROM c WHERE c.s LIKE 'b3'",
		"SELECT c.id, c.m FROM c WHERE c.m LIKE '" + strings.Repeat("L", 129) + "%'",
		"SELECT c.id FROM c WHERE c.m LIKE 'a!%' ESCAPE '!' OR c.m LIKE 'a'",
		"SELECT c.id FROM c WHERE c.v LIKE @like",
		// an OR of equalities on one path, an IN
		"SELECT c.id, c.n FROM c WHERE c.n = 3 OR c.n = 17 OR c.n IN (4, 5)",
		"SELECT c.id FROM c WHERE (c.v = 'a' OR c.v = null) AND c.o.w = 1",
		"SELECT c.id, c.m FROM c WHERE c.m = 5 OR c.m = 'ab' ORDER BY c.m DESC",
		// an equality and ORDER BY on another path: read in order, racing
		"SELECT c.id, c.m FROM c WHERE c.v = 'a' ORDER BY c.m DESC",
		"SELECT c.id, c.m FROM c WHERE c.n IN (1, 2, 3, 4, 5, 6, 7, 8) ORDER BY c.m DESC",
		// one path only: from its index entries
		"SELECT c.m AS m, COUNT(1) AS k FROM c GROUP BY c.m",
		"SELECT DISTINCT VALUE c.m FROM c",
		"SELECT DISTINCT c.v FROM c",
		"SELECT VALUE c.m FROM c GROUP BY c.m",
		"SELECT VALUE {lo: MIN(c.m), hi: MAX(c.m), k: COUNT(c.m)} FROM c WHERE c.m > 0",
		"SELECT VALUE {s: SUM(c.n), a: AVG(c.n)} FROM c WHERE c.n BETWEEN 3 AND 12",
		"SELECT VALUE COUNT(1) FROM c WHERE c.m >= 'L'",
		"SELECT DISTINCT VALUE c.o.w FROM c WHERE IS_DEFINED(c.o.w)",
		"SELECT c.v, MAX(c.v) AS hi FROM c GROUP BY c.v",
		// a conjunct judged on the entries
		"SELECT c.id, c.m FROM c WHERE CONTAINS(c.m, 'L')",
		"SELECT c.id, c.s FROM c WHERE ENDSWITH(c.s, '3') OR LOWER(c.s) = 'b4'",
		"SELECT c.id, c.m FROM c WHERE IntMod(c.m, 2) = 1",
		"SELECT c.id FROM c WHERE IS_ARRAY(c.v) OR IS_OBJECT(c.v)",
		// the elements of arrays
		"SELECT c.id FROM c WHERE ARRAY_CONTAINS(c.v, 1)",
		"SELECT c.id, t FROM c JOIN t IN c.v WHERE t = 1",
		"SELECT VALUE COUNT(1) FROM c JOIN t IN c.v WHERE t IN (1, 'a')",
		"SELECT c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.v WHERE t = 1)",
		// every document, in key order, parsing only the paths read
		"SELECT c.s, SUM(c.n) AS total FROM c GROUP BY c.s",
		"SELECT VALUE COUNT(1) FROM c WHERE c.n + LENGTH(c.s) > 12",
		"SELECT c.id, c.n FROM c ORDER BY c.n + 0 DESC, c.id",
	}
	params := map[string]jsonv.Value{"n": jsonv.Number("4"), "like": "a%"}
	for _, q := range queries {
		want := te.queryAll("scan", q, params, 1000)
		for _, size := range []int{1, 3, 50} {
			if got := te.queryAll("idx", q, params, size); !slices.Equal(got, want) {
				t.Errorf("%s, page size %d:\n indexed (%d rows) %.300v\n scan    (%d rows) %.300v", q, size, len(got), got, len(want), want)
			}
		}
	}
}

// TestQueriesNeverSeeExpired: expired documents are absent from rows, counts,
// aggregates, groups and DISTINCT, indexed or not, before any purge.
func TestQueriesNeverSeeExpired(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":100`)
	te.fill("c", "long", 5, `,"kind":"x","n":1`)
	te.fill("c", "short", 7, `,"kind":"x","n":1,"ttl":10`)
	te.clock.Advance(10 * time.Second)
	checks := map[string][]string{
		"SELECT VALUE COUNT(1) FROM c":                                        {"5"},
		"SELECT VALUE COUNT(1) FROM c WHERE c.kind = 'x'":                     {"5"},
		"SELECT VALUE SUM(c.n) FROM c WHERE c.n = 1":                          {"5"},
		"SELECT c.kind, COUNT(1) AS k FROM c GROUP BY c.kind":                 {`{"kind":"x","k":5}`},
		"SELECT DISTINCT VALUE c.kind FROM c WHERE STARTSWITH(c.id, 'short')": nil,
		"SELECT VALUE c.id FROM c WHERE c.ttl = 10":                           nil,
	}
	for q, want := range checks {
		if got := te.queryAll("c", q, nil, 2); !slices.Equal(got, want) {
			t.Errorf("%s = %v; want %v", q, got, want)
		}
	}
}

// TestIndexUseIsProportionalToRows: an equality query on an indexed path reads
// only the matching documents, and reports the index it used.
func TestIndexUseIsProportionalToRows(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	for i := range 2000 {
		if err := te.create("c", fmt.Sprintf(`{"id":"d%d","pk":"p","k":%d}`, i, i%200)); err != nil {
			t.Fatal(err)
		}
	}
	page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT * FROM c WHERE c.k = 7", IndexMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Rows) != 10 || page.Examined > 20 {
		t.Errorf("equality query: %d rows, %d examined; want 10 rows, about 10 examined", len(page.Rows), page.Examined)
	}
	if !strings.Contains(decodeMetrics(t, page.IndexMetrics), `"IndexSpec":"/k/?"`) {
		t.Errorf("index metrics = %s", decodeMetrics(t, page.IndexMetrics))
	}
	// A conjunct no index range serves is judged on the path's entries.
	judged, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT * FROM c WHERE c.k + 0 = 7", IndexMetrics: true})
	// (The documents in insertion order race the gathering: they take
	// turns worth as much as the judged entries, see judgedEntryCost.)
	if err != nil || len(judged.Rows) != 10 || judged.Examined > 200 {
		t.Errorf("a conjunct judged on the entries: %d rows, %d examined, %v; want 10 rows, a tenth of the 2,000 documents at most", len(judged.Rows), judged.Examined, err)
	}
	scan, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT * FROM c WHERE c.k + LENGTH(c.id) = 9", IndexMetrics: true})
	if err != nil || len(scan.Rows) != 10 || scan.Examined != 2000 {
		t.Errorf("non-indexable query: %d rows, %d examined, %v", len(scan.Rows), scan.Examined, err)
	}
}

func decodeMetrics(t *testing.T, s string) string {
	t.Helper()
	b, err := base64Decode(s)
	if err != nil {
		t.Fatalf("index metrics %q: %v", s, err)
	}
	return string(b)
}

func TestQueryContinuationsAreBound(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	te.mustContainer("other", "")
	te.fill("c", "d", 5, "")
	page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT * FROM c", MaxItems: 2})
	if err != nil || page.Continuation == "" {
		t.Fatalf("first page: %v", err)
	}
	for _, o := range []QueryOptions{
		{Text: "SELECT c.id FROM c", Continuation: page.Continuation},
		{Text: "SELECT * FROM c WHERE c.x = @x", Params: map[string]jsonv.Value{"x": "1"}, Continuation: page.Continuation},
		{Text: "SELECT * FROM c", Continuation: "bm90IGEgdG9rZW4"},
	} {
		if _, err := te.QueryDocuments(ctx, "db", "c", o); lethe.ErrorCode(err) != lethe.CodeBadRequest {
			t.Errorf("%q with a foreign continuation = %v; want BadRequest", o.Text, err)
		}
	}
	if _, err := te.QueryDocuments(ctx, "db", "other", QueryOptions{Text: "SELECT * FROM c", Continuation: page.Continuation}); lethe.ErrorCode(err) != lethe.CodeBadRequest {
		t.Errorf("continuation in another container = %v", err)
	}
	if _, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT * FROM c WHERE"}); lethe.ErrorCode(err) != lethe.CodeBadRequest || !strings.Contains(lethe.ErrorMessage(err), "1:") {
		t.Errorf("syntax error = %v; want BadRequest with a position", err)
	}
}

// TestOrderedIndexIsProportionalToRows: ORDER BY ... DESC OFFSET 0 LIMIT 10 reads
// about ten documents from the index, not the container.
func TestOrderedIndexIsProportionalToRows(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	for i := range 3000 {
		if err := te.create("c", fmt.Sprintf(`{"id":"d%d","pk":"p","t":%d}`, i, (i*7919)%3000)); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		"SELECT c.id, c.t FROM c ORDER BY c.t DESC OFFSET 0 LIMIT 10",
		"SELECT c.id, c.t FROM c WHERE c.t >= 0 ORDER BY c.t OFFSET 0 LIMIT 10",
	} {
		page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: q, IndexMetrics: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Rows) != 10 || page.Examined > 30 {
			t.Errorf("%s: %d rows, %d examined; want 10 rows and about 10 examined", q, len(page.Rows), page.Examined)
		}
		if !strings.Contains(decodeMetrics(t, page.IndexMetrics), `"/t/?"`) {
			t.Errorf("%s: metrics %s", q, decodeMetrics(t, page.IndexMetrics))
		}
	}
	// A continuation resumes at its row's place in the index: every page of
	// 10 reads about 10 documents, the 30th as the first.
	for _, q := range []string{
		"SELECT c.id, c.t FROM c ORDER BY c.t DESC",
		"SELECT c.id, c.t FROM c WHERE c.t >= 100 ORDER BY c.t",
	} {
		cont, last := "", -1
		for i := range 30 {
			page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: q, MaxItems: 10, Continuation: cont})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Rows) != 10 || page.Examined > 15 || page.Continuation == "" {
				t.Fatalf("%s, page %d: %d rows, %d examined, continuation %q; want 10 rows, about 10 examined and more", q, i, len(page.Rows), page.Examined, page.Continuation)
			}
			var first struct{ T int }
			if err := json.Unmarshal(page.Rows[0], &first); err != nil {
				t.Fatal(err)
			}
			if last >= 0 && (first.T == last || first.T > last == strings.HasSuffix(q, "DESC")) {
				t.Fatalf("%s, page %d starts at t = %d after %d", q, i, first.T, last)
			}
			var end struct{ T int }
			if err := json.Unmarshal(page.Rows[9], &end); err != nil {
				t.Fatal(err)
			}
			cont, last = page.Continuation, end.T
		}
	}
}

// TestExactLookupsSkipWhere: SELECT * with a WHERE that one exact index
// lookup answers (null, booleans, short strings, equality or IN) returns the
// stored documents without parsing them or evaluating WHERE, and the same
// documents as a scan; strings long enough to be cut in the index still have
// WHERE evaluated.
func TestExactLookupsSkipWhere(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("idx", "")
	te.mustContainer("scan", `"indexingPolicy":{"indexingMode":"none","automatic":false}`)
	long := strings.Repeat("L", 130)
	vals := []string{`1`, `1.0`, `1e0`, `2`, `-0`, `0`, `9007199254740992`, `9007199254740993`, `"a"`, `"b"`, `true`, `false`, `null`, `[1]`, `"` + long + `x"`, `"` + long + `y"`, `"` + strings.Repeat("L", 128) + `"`, `"` + strings.Repeat("L", 126) + `"`}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 150 {
		body := fmt.Sprintf(`{"id":"d%03d","pk":"p"`, i)
		if rng.IntN(5) > 0 {
			body += `,"v":` + vals[rng.IntN(len(vals))]
		}
		body += "}"
		for _, c := range []string{"idx", "scan"} {
			if err := te.create(c, body); err != nil {
				t.Fatal(err)
			}
		}
	}
	ids := func(rows []string) []string {
		var out []string
		for _, r := range rows {
			var d struct{ ID string }
			if err := json.Unmarshal([]byte(r), &d); err != nil {
				t.Fatalf("row %s: %v", r, err)
			}
			out = append(out, d.ID)
		}
		return out
	}
	params := map[string]jsonv.Value{"cut": strings.Repeat("L", 128), "short": "a"}
	for _, c := range []struct {
		q       string
		rawOnly bool
		// whereHolds, when rawOnly is not, says that the plan's source
		// yields only documents that satisfy WHERE all the same.
		whereHolds bool
	}{
		{"SELECT * FROM c WHERE c.v = 'a'", true, false},
		{"SELECT * FROM c WHERE c.v = @short", true, false},
		{"SELECT * FROM c WHERE c.v IN ('a', 'b', null, true)", true, false},
		{"SELECT * FROM c WHERE c.v = null", true, false},
		{"SELECT * FROM c WHERE c.v", true, false},
		{"SELECT TOP 3 * FROM c WHERE c.v = 'b'", true, false},
		{"SELECT * FROM c WHERE c.v = 'a' OFFSET 2 LIMIT 3", true, false},
		{"SELECT * FROM c WHERE c.v = @cut", false, false},
		{"SELECT * FROM c WHERE c.v = '" + strings.Repeat("L", 126) + "'", false, false},
		{"SELECT * FROM c WHERE c.v = 1", true, false},
		{"SELECT * FROM c WHERE c.v = 0", true, false},
		{"SELECT * FROM c WHERE c.v IN (9007199254740993, -0.0, 'a')", true, false},
		{"SELECT * FROM c WHERE c.v = 'a' AND c.pk = 'p'", false, false},
		{"SELECT c.id FROM c WHERE c.v = 'a'", false, true},
		{"SELECT * FROM c", true, false},
		{"SELECT TOP 4 * FROM c", true, false},
		{"SELECT * FROM c OFFSET 5 LIMIT 2", true, false},
		{"SELECT c.id FROM c", false, false},
		// Ordered by the path the index orders by: raw, and that path's
		// value only.
		{"SELECT * FROM c ORDER BY c.id", true, false},
		{"SELECT * FROM c WHERE c.v = 'a' ORDER BY c.id", false, true},
		{"SELECT c.id FROM c ORDER BY c.id", false, true},
		{"SELECT * FROM c ORDER BY c.id, c.v", false, true},
	} {
		want := ids(te.queryAll("scan", c.q, params, 1000))
		for _, size := range []int{1, 3, 50} {
			if got := ids(te.queryAll("idx", c.q, params, size)); !slices.Equal(got, want) {
				t.Errorf("%s, page size %d: indexed %v, scan %v", c.q, size, got, want)
			}
		}
		te.withPlan("idx", c.q, params, nil, func(src querySource, plan sourcePlan) {
			got := parsesNoDocument(src)
			if o, ok := src.(*orderedSource); ok {
				got = o.keyPath != nil
			}
			if got != c.rawOnly || plan.whereHolds != (c.rawOnly || c.whereHolds) {
				t.Errorf("%s: reads raw only %v, WHERE holds %v; want %v, %v", c.q, got, plan.whereHolds, c.rawOnly, c.rawOnly || c.whereHolds)
			}
		})
	}
}

// oneRow runs text, a query of one row (a count), in container coll of
// database "db" with partition key p in the request (nil: none), and
// returns that row.
func (te *testEngine) oneRow(coll, text string, p lethe.PartitionKey) string {
	te.t.Helper()
	page, err := te.QueryDocuments(ctx, "db", coll, QueryOptions{Text: text, PK: p, MaxItems: 10})
	if err != nil || len(page.Rows) != 1 {
		te.t.Fatalf("%s in %v: %d rows, %v", text, p, len(page.Rows), err)
	}
	return string(page.Rows[0])
}

// TestCountsParseNoDocument: SELECT VALUE COUNT(1), with no WHERE or one
// exact index lookup, counts the documents its source yields without
// parsing them, and counts exactly what COUNT(c.id), which reads every
// document, counts: in a partition and across them, before and after
// documents expire at their instant (expired means gone from counts too).
func TestCountsParseNoDocument(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":100`)
	for i := range 90 {
		body := fmt.Sprintf(`{"id":"d%d","pk":"p%d","kind":"%c"}`, i, i%3, 'x'+rune(i%2))
		if i%4 == 0 {
			body = fmt.Sprintf(`{"id":"d%d","pk":"p%d","kind":"%c","ttl":10}`, i, i%3, 'x'+rune(i%2))
		}
		if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(fmt.Sprintf("p%d", i%3))}, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	count := func(text string, p lethe.PartitionKey) string { return te.oneRow("c", text, p) }
	check := func(want map[string]string) {
		t.Helper()
		for _, p := range []lethe.PartitionKey{pk("p0"), pk("p1"), nil} {
			for _, where := range []string{"", " WHERE c.kind = 'x'"} {
				got := count("SELECT VALUE COUNT(1) FROM c"+where, p)
				if read := count("SELECT VALUE COUNT(c.id) FROM c"+where, p); got != read {
					t.Errorf("in %v%s: COUNT(1) %s, COUNT(c.id) %s", p, where, got, read)
				}
				if w, ok := want[fmt.Sprint(p)+where]; ok && got != w {
					t.Errorf("in %v%s: %s documents, want %s", p, where, got, w)
				}
			}
		}
	}
	check(map[string]string{"[p0]": "30", "[]": "90", "[] WHERE c.kind = 'x'": "45"})
	te.clock.Advance(10 * time.Second) // every fourth document expires
	check(map[string]string{"[p0]": "22", "[]": "67"})

	for _, c := range []struct {
		text string
		pk   lethe.PartitionKey
		want bool
	}{
		{"SELECT VALUE COUNT(1) FROM c", pk("p0"), true},
		{"SELECT VALUE COUNT(1) FROM c", nil, true},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.kind = 'x'", nil, true},
		// Raced against the partition's list: WHERE judges the candidates.
		{"SELECT VALUE COUNT(1) FROM c WHERE c.kind = 'x'", pk("p0"), false},
		{"SELECT VALUE COUNT(c.id) FROM c", pk("p0"), false},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.kind != 'x'", nil, false},
	} {
		te.withPlan("c", c.text, nil, c.pk, func(src querySource, _ sourcePlan) {
			if got := parsesNoDocument(src); got != c.want {
				t.Errorf("%s in %v: parses no document %v, want %v", c.text, c.pk, got, c.want)
			}
		})
	}
}

// TestCountsLookNothingUp: a count that reads nothing of the documents
// (COUNT(1) with no WHERE or one exact lookup) counts index or insertion
// order entries without looking the documents up, leaving out those that
// have expired and are not yet purged (countWithoutLookups); it gives what
// COUNT(c.id), which reads every document, gives, through expiries by the
// default and by own ttl, documents that never expire, a purge, a default
// raised after documents expired under it (expiry is final), and more
// expired documents than it collects, when it looks them up instead. Over
// a whole container without WHERE it reads the tallies instead
// (liveCountSource), and gives the same.
func TestCountsLookNothingUp(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":100`)
	write := func(from, to int, extra string) {
		t.Helper()
		for i := from; i < to; i++ {
			p := fmt.Sprintf("p%d", i%3)
			body := fmt.Sprintf(`{"id":"d%d","pk":%q,"kind":"%c"%s}`, i, p, 'x'+rune(i%2), extra)
			if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(p)}, []byte(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(0, 300, "")
	write(300, 400, `,"ttl":10`)
	write(400, 450, `,"ttl":-1`)
	count := func(text string, p lethe.PartitionKey) string { return te.oneRow("c", text, p) }
	check := func(stage string, want string, lookups bool) {
		t.Helper()
		for _, p := range []lethe.PartitionKey{pk("p0"), nil} {
			for _, where := range []string{"", " WHERE c.kind = 'x'", " WHERE c.kind IN ('x', 'y')"} {
				text := "SELECT VALUE COUNT(1) FROM c" + where
				got := count(text, p)
				if read := count("SELECT VALUE COUNT(c.id) FROM c"+where, p); got != read {
					t.Errorf("%s: in %v%s: COUNT(1) %s, COUNT(c.id) %s", stage, p, where, got, read)
				}
				if p == nil && where == "" && got != want {
					t.Errorf("%s: %s documents, want %s", stage, got, want)
				}
				if p != nil && where != "" {
					continue // the partition's list races the equality's: WHERE judges
				}
				te.withPlan("c", text, nil, p, func(src querySource, _ sourcePlan) {
					if _, tallies := src.(*liveCountSource); tallies != (p == nil && where == "") {
						t.Errorf("%s: %s in %v counts from the tallies: %v", stage, text, p, tallies)
						return
					} else if tallies {
						return // it reads no entry at all
					}
					if got := src.(recordSource).reader().countOnly; got == lookups {
						t.Errorf("%s: %s in %v counts without lookups: %v, want %v", stage, text, p, got, !lookups)
					}
				})
			}
		}
	}
	check("fresh", "450", false)
	te.clock.Advance(10 * time.Second)
	check("own ttl expired", "350", false)
	te.clock.Advance(95 * time.Second)
	check("the default expired", "50", false)
	te.setDefaultTTL("c", `"defaultTtl":100000`)
	check("the default raised: expiry is final", "50", false)
	if _, err := te.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	check("purged", "50", false)
	write(1000, 1000+maxCountExpired+10, `,"ttl":5`)
	te.clock.Advance(5 * time.Second)
	check("more expired than a count collects", "50", true)
}

// TestSystemPropertiesAreQueryable: a filter on any system property finds
// the document. _self, _attachments and _etag have no index entries
// whatever the policy says, so the planner must not look for them there.
func TestSystemPropertiesAreQueryable(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("idx", "")
	for _, id := range []string{"a", "b"} {
		if err := te.create("idx", `{"id":"`+id+`","pk":"p"}`); err != nil {
			t.Fatal(err)
		}
	}
	row := te.queryAll("idx", "SELECT * FROM c WHERE c.id = 'a'", nil, 10)
	if len(row) != 1 {
		t.Fatalf("document a: %v", row)
	}
	doc, err := jsonv.Parse([]byte(row[0]))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"_self", "_attachments", "_etag", "_rid", "_ts"} {
		v, ok := doc.(*jsonv.Object).Get(name)
		if !ok {
			t.Fatalf("document a has no %s: %s", name, row[0])
		}
		want := `["a"]`
		if name == "_attachments" || name == "_ts" {
			want = `["a","b"]` // shared by both documents (_ts: written in one second)
		}
		params := map[string]jsonv.Value{"v": v}
		for _, text := range []string{
			"SELECT VALUE c.id FROM c WHERE c." + name + " = @v",
			"SELECT VALUE c.id FROM c WHERE c." + name + " >= @v AND c." + name + " <= @v",
			"SELECT VALUE c.id FROM c WHERE IS_DEFINED(c." + name + ") AND c." + name + " = @v",
		} {
			got := te.queryAll("idx", text, params, 10)
			if g := "[" + strings.Join(got, ",") + "]"; g != want {
				t.Errorf("%s with %s: %s, want %s", text, jsonv.Marshal(v), g, want)
			}
		}
	}
}
