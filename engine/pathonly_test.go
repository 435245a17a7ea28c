package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
)

// TestPathOnlyFromTheIndex: a query that looks at one path only is served
// from that path's index entries, and every page of it is what a container
// whose policy leaves the path out (so that its documents are read) gives:
// across values of every type, numbers spelled apart, strings longer than
// the indexed prefix, documents without the path, expiry by the default and
// by their own ttl, a default raised after documents expired under it, a
// purge, and an array at the path (whose entry is a marker: its document
// is read). Reading a number's value where its spelling is returned, leaving out
// the documents without the path, or counting the expired entries fails it.
func TestPathOnlyFromTheIndex(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	const scanPolicy = `"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/v/?"},{"path":"/v/*"},{"path":"/n/?"}]}`
	te.mustContainer("idx", `"defaultTtl":100`)
	te.mustContainer("scan", `"defaultTtl":100,`+scanPolicy)
	long := strings.Repeat("L", 130)
	values := []string{`"a"`, `"b"`, `"ab"`, `""`, `"` + long + `x"`, `"` + long + `y"`, `"` + long + `x"`,
		`5`, `5.0`, `5e0`, `0`, `-0`, `9007199254740993`, `9007199254740992`, `-2.5`, `true`, `false`, `null`}
	write := func(from, to int, extra string) {
		t.Helper()
		for i := from; i < to; i++ {
			p := fmt.Sprintf("p%d", i%4)
			body := fmt.Sprintf(`{"id":"d%d","pk":%q,"n":%d`, i, p, i%7)
			if i%5 != 0 { // every fifth document has no v
				body += `,"v":` + values[(i*3)%len(values)]
			}
			for _, coll := range []string{"idx", "scan"} {
				if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: coll, PK: pk(p)}, []byte(body+extra+"}")); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	write(0, 200, "")
	write(200, 260, `,"ttl":10`)
	write(260, 300, `,"ttl":-1`)

	queries := []struct {
		text     string
		pathOnly bool // served from the index in the idx container
	}{
		{"SELECT DISTINCT VALUE c.v FROM c", true},
		{"SELECT DISTINCT c.v FROM c", true},
		{"SELECT c.v, COUNT(1) AS n FROM c GROUP BY c.v", true},
		{"SELECT VALUE COUNT(1) FROM c GROUP BY c.v", true},
		{"SELECT c.v AS v, MAX(c.v) AS hi FROM c GROUP BY c.v", true},
		{"SELECT DISTINCT VALUE c.v FROM c WHERE IS_STRING(c.v) ORDER BY c.v", true},
		{"SELECT DISTINCT VALUE c.v FROM c WHERE c.v >= 'a' AND c.v < 'b'", true},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.v IN ('a', 5, null)", false}, // so is an IN's
		{"SELECT VALUE COUNT(c.v) FROM c", true},
		{"SELECT VALUE {s: SUM(c.n), a: AVG(c.n), k: COUNT(c.n)} FROM c WHERE c.n > 2", true},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.n >= 3", true},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.v BETWEEN -1 AND 5", true},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.v > '" + long + "x'", true}, // widened to the cut prefix
		{"SELECT c.n % 2 = 0 AS even, COUNT(1) AS k FROM c GROUP BY c.n % 2 = 0", true},
		{"SELECT DISTINCT VALUE c.v ?? 'none' FROM c", true},
		{"SELECT DISTINCT VALUE c.n FROM c", true},
		{"SELECT c.n AS n FROM c GROUP BY c.n", true},
		{"SELECT DISTINCT VALUE c.n FROM c WHERE c.n > 2 ORDER BY c.n DESC", true},
		{"SELECT DISTINCT VALUE c.n > 2 FROM c", true},
		{"SELECT VALUE COUNT(1) FROM c WHERE NOT IS_DEFINED(c.v)", true},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.v = 'a'", false}, // a count of an exact lookup
		{"SELECT c.v, COUNT(1) AS n FROM c WHERE c.n > 2 GROUP BY c.v", false},
	}
	check := func(stage string, arrays bool) {
		t.Helper()
		for _, q := range queries {
			var got bool
			te.withPlan("idx", q.text, nil, nil, func(src querySource, _ sourcePlan) {
				_, got = src.(*pathOnlySource)
			})
			if want := q.pathOnly && !arrays; got != want {
				t.Errorf("%s: %s reads the path's index entries only: %v, want %v", stage, q.text, got, want)
			}
			for _, size := range []int{1, 4, 100} {
				te.samePages([]string{"idx", "scan"}, QueryOptions{Text: q.text, MaxItems: size})
			}
			// Scoped to a partition, the partition's documents are read.
			te.withPlan("idx", q.text, nil, pk("p1"), func(src querySource, _ sourcePlan) {
				if _, ok := src.(*pathOnlySource); ok {
					t.Errorf("%s: %s in a partition reads the path's index entries", stage, q.text)
				}
			})
			idx, _ := te.allPages("idx", QueryOptions{Text: q.text, PK: pk("p1"), MaxItems: 3})
			scan, _ := te.allPages("scan", QueryOptions{Text: q.text, PK: pk("p1"), MaxItems: 3})
			if !slices.EqualFunc(idx, scan, slices.Equal) {
				t.Errorf("%s: %s in a partition: pages %v, reading the documents %v", stage, q.text, idx, scan)
			}
		}
	}
	check("fresh", false)
	te.clock.Advance(10 * time.Second)
	check("own ttl expired", false)
	te.clock.Advance(91 * time.Second)
	write(300, 330, "")
	check("the default expired", false)
	te.setDefaultTTL("idx", `"defaultTtl":100000`)
	te.setDefaultTTL("scan", `"defaultTtl":100000,`+scanPolicy)
	check("the default raised: expiry is final", false)
	if _, err := te.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	check("purged", false)
	for _, coll := range []string{"idx", "scan"} {
		if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: coll, PK: pk("p1")}, []byte(`{"id":"arr","pk":"p1","v":["a"],"n":[1]}`)); err != nil {
			t.Fatal(err)
		}
	}
	check("an array at the path", false)
	for _, coll := range []string{"idx", "scan"} {
		if _, err := te.DeleteDocument(ctx, ref(coll, "arr", "p1"), Conditions{}); err != nil {
			t.Fatal(err)
		}
	}
	check("the array deleted", false)
}

// TestPathOnlyReadsNoDocument: a query served from the index reads no
// document whose value the index holds exactly, and its charge is well
// under the read of every document.
func TestPathOnlyReadsNoDocument(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("idx", "")
	te.mustContainer("scan", `"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/status/?"}]}`)
	pad := strings.Repeat("x", 800)
	for i := range 300 {
		for _, coll := range []string{"idx", "scan"} {
			body := fmt.Sprintf(`{"id":"d%d","pk":"p%d","status":"s%d","pad":%q}`, i, i%10, i%4, pad)
			if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: coll, PK: lethe.PartitionKey{fmt.Sprintf("p%d", i%10)}}, []byte(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	text := "SELECT c.status, COUNT(1) AS n FROM c GROUP BY c.status"
	page, err := te.QueryDocuments(ctx, "db", "idx", QueryOptions{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Rows) != 4 || page.Examined != 0 {
		t.Fatalf("%d groups, %d documents read; want 4 groups and no document: %q", len(page.Rows), page.Examined, page.Rows)
	}
	charges := te.samePages([]string{"idx", "scan"}, QueryOptions{Text: text})
	if charges[0]*2 > charges[1] {
		t.Errorf("charge %.2f from the index, %.2f reading the documents", charges[0], charges[1])
	}
	// Of each value, the first entry is all DISTINCT needs: the others
	// are skipped.
	for _, text := range []string{"SELECT DISTINCT VALUE c.status FROM c", "SELECT VALUE c.status FROM c GROUP BY c.status"} {
		te.samePages([]string{"idx", "scan"}, QueryOptions{Text: text})
		te.withPlan("idx", text, nil, nil, func(src querySource, _ sourcePlan) {
			n := 0
			for {
				_, _, ok, err := src.Next()
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				n++
			}
			w, _ := src.work()
			if n != 4 || w.IndexEntries > 4*(skipAfter+1) {
				t.Errorf("%s: %d documents from %d entries, want 4 from at most %d", text, n, w.IndexEntries, 4*(skipAfter+1))
			}
		})
	}
}
