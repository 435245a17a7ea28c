package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
)

// TestAscendingWhenEveryDocumentHasThePath: ORDER BY on a path that not
// every document need have reads the index ascending when every stored
// document has it (definedInEvery), and sorts them all otherwise, since a
// document without the path sorts first and has no entry. Every page is a
// scan's as documents without the path, expired ones and arrays come and
// go.
func TestAscendingWhenEveryDocumentHasThePath(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("idx", `"defaultTtl":-1`)
	te.mustContainer("scan", `"defaultTtl":-1,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/name/?"}]}`)
	names := []string{`"ann"`, `"bob"`, `"Cy"`, `3`, `-1.5`, `null`, `true`, `false`, `""`,
		`"` + strings.Repeat("L", 130) + `b"`, `"` + strings.Repeat("L", 130) + `a"`}
	write := func(id, p, body string) {
		t.Helper()
		for _, coll := range []string{"idx", "scan"} {
			if _, err := te.UpsertDocument(ctx, DocRef{DB: "db", Coll: coll, PK: lethe.PartitionKey{p}}, []byte(body), Conditions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove := func(id, p string) {
		t.Helper()
		for _, coll := range []string{"idx", "scan"} {
			if _, err := te.DeleteDocument(ctx, ref(coll, id, p), Conditions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 300 {
		p := fmt.Sprintf("p%d", i%5)
		write(fmt.Sprintf("d%d", i), p, fmt.Sprintf(`{"id":"d%d","pk":%q,"name":%s}`, i, p, names[(i*7)%len(names)]))
	}
	sorted := func() bool {
		var ok bool
		te.withPlan("idx", "SELECT * FROM c ORDER BY c.name", nil, nil, func(_ querySource, plan sourcePlan) { ok = plan.sorted > 0 })
		return ok
	}
	check := func(stage string, wantSorted bool) {
		t.Helper()
		if got := sorted(); got != wantSorted {
			t.Errorf("%s: the ascending ORDER BY reads the index in order: %v, want %v", stage, got, wantSorted)
		}
		for _, c := range []struct {
			text string
			pk   lethe.PartitionKey
		}{
			{"SELECT c.id, c.name FROM c ORDER BY c.name", nil},
			{"SELECT TOP 5 c.id FROM c ORDER BY c.name ASC", nil},
			{"SELECT c.id FROM c ORDER BY c.name OFFSET 100 LIMIT 10", nil},
			{"SELECT c.id, c.name FROM c ORDER BY c.name", lethe.PartitionKey{"p3"}},
		} {
			want, _ := te.allPages("scan", QueryOptions{Text: c.text, PK: c.pk, MaxItems: 1000})
			for _, size := range []int{7, 100} {
				got, _ := te.allPages("idx", QueryOptions{Text: c.text, PK: c.pk, MaxItems: size})
				if g, w := slices.Concat(got...), slices.Concat(want...); !slices.Equal(g, w) {
					t.Errorf("%s: %q in %v, page size %d:\n index %.300v\n scan  %.300v", stage, c.text, c.pk, size, g, w)
				}
			}
		}
	}
	check("every document has a name", true)
	// Scoped to a partition, the partition's documents are sorted rather
	// than every entry of the container counted.
	te.withPlan("idx", "SELECT * FROM c ORDER BY c.name", nil, lethe.PartitionKey{"p3"}, func(_ querySource, plan sourcePlan) {
		if plan.sorted > 0 {
			t.Error("an ascending ORDER BY in a partition reads the index in order")
		}
	})
	write("none", "p3", `{"id":"none","pk":"p3"}`)
	check("one without", false)
	remove("none", "p3")
	check("it is deleted", true)
	write("short", "p3", `{"id":"short","pk":"p3","ttl":5}`)
	te.clock.Advance(10 * time.Second)
	check("one without has expired, not yet purged", false)
	if _, err := te.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	check("it is purged", true)
	write("arr", "p1", `{"id":"arr","pk":"p1","name":["x"]}`)
	check("an array where the others have scalars", true)
}

// TestMinMaxFromTheIndex: MIN and MAX of an indexed path read the index in
// order and stop at the first document that passes WHERE (planMinMax), and
// give what a container whose policy leaves the path out gives: across
// types (null < false < true < numbers < strings), numbers equal as values
// but spelled apart (the first written is kept), strings longer than the
// indexed prefix, documents without the path, expired ones, WHERE on the
// path and on others, a partition, and an array, which makes them undefined:
// MIN then does not read the index, and MAX's descending read meets the
// array first and gives up.
func TestMinMaxFromTheIndex(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("idx", `"defaultTtl":-1`)
	te.mustContainer("ref", `"defaultTtl":-1,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/v/?"}]}`)
	long := strings.Repeat("L", 130)
	values := []string{`null`, `false`, `true`, `-3`, `7`, `7.0`, `7e0`, `"a"`, `"b"`, `"` + long + `a"`, `"` + long + `b"`, `""`, ``}
	write := func(id, p, body string) {
		t.Helper()
		for _, coll := range []string{"idx", "ref"} {
			if _, err := te.UpsertDocument(ctx, DocRef{DB: "db", Coll: coll, PK: lethe.PartitionKey{p}}, []byte(body), Conditions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 200 {
		p := fmt.Sprintf("p%d", i%4)
		v := values[(i*5)%len(values)]
		if v != "" {
			v = `,"v":` + v
		}
		ttl := ""
		if i%9 == 0 {
			ttl = `,"ttl":10`
		}
		write(fmt.Sprintf("d%d", i), p, fmt.Sprintf(`{"id":"d%d","pk":%q,"k":%d%s%s}`, i, p, i%3, v, ttl))
	}
	queries := []struct {
		text    string
		pk      lethe.PartitionKey
		ordered bool // read in the path's order
	}{
		{"SELECT VALUE MAX(c.v) FROM c", nil, true},
		{"SELECT VALUE MIN(c.v) FROM c", nil, true},
		{"SELECT MAX(c.v) AS hi, MAX(c.v) AS again FROM c", nil, true},
		{"SELECT VALUE MAX(c.v) FROM c WHERE c.v < 7", nil, true},
		{"SELECT VALUE MIN(c.v) FROM c WHERE c.v > false", nil, true},
		{"SELECT VALUE MAX(c.v) FROM c WHERE c.k > 0", nil, true},
		{"SELECT VALUE MIN(c.v) FROM c WHERE STARTSWITH(c.id, 'd1')", nil, true},
		{"SELECT VALUE MAX(c.v) FROM c", lethe.PartitionKey{"p2"}, true},
		{"SELECT VALUE MIN(c.v) FROM c WHERE c.v >= 'zzz'", nil, true},
		// an equality on another path: its list of 66 races the read in
		// order; an id's list of one is read at once
		{"SELECT VALUE MIN(c.v) FROM c WHERE c.k = 1", nil, true},
		{"SELECT VALUE MAX(c.v) FROM c WHERE c.k IN (0, 2)", nil, true},
		{"SELECT VALUE MAX(c.v) FROM c WHERE c.id = 'd5'", nil, false},
	}
	// minFromIndex: MIN reads the index in order (not once a document holds
	// an array there: an ascending read would stop before its marker). MAX
	// always plans to, and a descending read that meets a marker gives up.
	check := func(stage string, minFromIndex bool) {
		t.Helper()
		for _, q := range queries {
			want, _ := te.allPages("ref", QueryOptions{Text: q.text, PK: q.pk, MaxItems: 10})
			got, _ := te.allPages("idx", QueryOptions{Text: q.text, PK: q.pk, MaxItems: 10})
			if g, w := slices.Concat(got...), slices.Concat(want...); !slices.Equal(g, w) {
				t.Errorf("%s: %q in %v: index %v, reference %v", stage, q.text, q.pk, g, w)
			}
			if q.pk != nil {
				continue // the partition's list races the read in order
			}
			te.withPlan("idx", q.text, nil, nil, func(_ querySource, plan sourcePlan) {
				want := q.ordered && (minFromIndex || strings.Contains(q.text, "MAX("))
				if plan.firstDecides != want {
					t.Errorf("%s: %q reads the index in order: %v, want %v", stage, q.text, plan.firstDecides, want)
				}
			})
		}
	}
	check("written", true)
	te.clock.Advance(10 * time.Second)
	check("every ninth expired", true)
	write("arr", "p1", `{"id":"arr","pk":"p1","v":[1]}`)
	check("an array", false)
}

// TestAscendingResumesPastTheUndefined: where some documents lack the
// ORDER BY path, no count can prove that none does, and the first page of an
// ascending ORDER BY sorts every document; but a page that resumes after a
// row whose key is defined has every document without the key behind it, so
// it reads the index in order and costs about a page. Every page is a
// scan's, through documents without the path coming and going, and on
// PostgreSQL, which keeps no proofs, only the first page counts.
func TestAscendingResumesPastTheUndefined(t *testing.T) {
	for _, store := range []string{"pebble", "postgres"} {
		t.Run(store, func(t *testing.T) {
			var te *testEngine
			if store == "postgres" {
				te = newPostgresEngine(t)
			} else {
				te = newTestEngine(t)
			}
			te.mustDB("db")
			te.mustContainer("idx", `"defaultTtl":-1`)
			te.mustContainer("scan", `"defaultTtl":-1,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/name/?"}]}`)
			names := []string{`"ann"`, `"bob"`, `3`, `null`, `false`, `"cy"`}
			write := func(i int, body string) {
				t.Helper()
				for _, coll := range []string{"idx", "scan"} {
					if _, err := te.UpsertDocument(ctx, DocRef{DB: "db", Coll: coll, PK: lethe.PartitionKey{fmt.Sprintf("p%d", i%4)}}, []byte(body), Conditions{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			doc := func(i int, named bool) string {
				name := ""
				if named {
					name = `,"name":` + names[(i*5)%len(names)]
				}
				return fmt.Sprintf(`{"id":"d%d","pk":"p%d","kind":"%c","ttl":%d%s}`, i, i%4, 'a'+i%3, 1000+i, name)
			}
			for i := range 240 {
				write(i, doc(i, i%10 != 3))
			}
			// The equality's 80 documents race the read in order (see
			// raceList), so its pages may read them all: only its rows are
			// checked.
			queries := []string{
				"SELECT c.id, c.name FROM c ORDER BY c.name",
				"SELECT c.id, c.kind FROM c ORDER BY c.name ASC",
				"SELECT c.id FROM c ORDER BY c.name OFFSET 30 LIMIT 100",
				"SELECT c.id FROM c WHERE c.kind = 'b' ORDER BY c.name",
			}
			// check pages each query in both containers and returns the
			// most documents a page of the index's read that resumed after
			// a defined key, and how many times the index's pages counted.
			check := func(stage string) (most int, counts int64) {
				t.Helper()
				for _, text := range queries {
					want, _ := te.allPages("scan", QueryOptions{Text: text, MaxItems: 1000})
					opts := QueryOptions{Text: text, MaxItems: 10}
					var got [][]string
					before := definednessCounts.Load()
					for page := 0; ; page++ {
						p, err := te.QueryDocuments(ctx, "db", "idx", opts)
						if err != nil {
							t.Fatalf("%s: %q: %v", stage, text, err)
						}
						// The rows this container's pages return hold the
						// key where the query selects it, so a page that
						// resumes after a row with a name is known by it.
						if page > 0 && resumedDefined(got[len(got)-1]) && !strings.Contains(text, "WHERE") {
							most = max(most, p.Examined)
						}
						got = append(got, rowStrings(p.Rows))
						if opts.Continuation = p.Continuation; p.Continuation == "" {
							break
						}
					}
					counts += definednessCounts.Load() - before
					if g, w := slices.Concat(got...), slices.Concat(want...); !slices.Equal(g, w) {
						t.Errorf("%s: %q:\n index %.300v\n scan  %.300v", stage, text, g, w)
					}
				}
				return most, counts
			}
			// Documents without a name sort first: 24 of them, so the first
			// three pages of the first two queries sort every document.
			if most, _ := check("one in ten without a name"); most > 25 {
				t.Errorf("one in ten without a name: a page that resumed after a name read %d documents, want about a page", most)
			}
			for i := 3; i < 240; i += 10 {
				write(i, doc(i, true))
			}
			most, counts := check("every document has a name")
			if most > 25 {
				t.Errorf("every document has a name: a page that resumed after a name read %d documents, want about a page", most)
			}
			if store == "postgres" && counts > int64(len(queries)) {
				t.Errorf("every document has a name: the pages counted %d times, want at most once a query", counts)
			}
			write(13, doc(13, false))
			te.clock.Advance(1010 * time.Second) // d0 to d9 expire
			if most, _ := check("one without a name again, ten expired"); most > 25 {
				t.Errorf("one without a name again: a page that resumed after a name read %d documents, want about a page", most)
			}
		})
	}
}

// resumedDefined reports whether a page of TestAscendingResumesPastTheUndefined
// whose last row is the last of rows ends on a row with a name: the next
// page resumes after a defined key. Rows of SELECT c.id alone (they hold no
// name) count as defined unless the test wrote them without one, which the
// ids tell: d3, d13, d23 and so on.
func resumedDefined(rows []string) bool {
	if len(rows) == 0 {
		return false
	}
	last := rows[len(rows)-1]
	if strings.Contains(last, `"name"`) {
		return true
	}
	var id int
	if _, err := fmt.Sscanf(last[strings.Index(last, `"id":"d`)+len(`"id":"d`):], "%d", &id); err != nil {
		return false
	}
	return id%10 != 3
}
