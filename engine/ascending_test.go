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
// every document need have reads the index ascending, and when a count
// finds a stored document without the path (which sorts first and has no
// entry) it first yields those documents, found by the seqs the entries
// lack (orderedHead). Every page is a scan's as documents without the
// path, expired ones and arrays come and go.
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
	// check compares the pages, then the plan: with a document without the
	// path, one with a head; otherwise, once those pages have proved it
	// (definedProofs), one without.
	check := func(stage string, wantHead bool) {
		t.Helper()
		defer te.withPlan("idx", "SELECT * FROM c ORDER BY c.name", nil, nil, func(src querySource, plan sourcePlan) {
			o, ok := src.(*orderedSource)
			if !ok || plan.sorted == 0 {
				t.Errorf("%s: the ascending ORDER BY does not read the index in order", stage)
			} else if head := o.head != nil; head != wantHead {
				t.Errorf("%s: the read in order first yields the documents without the path: %v, want %v", stage, head, wantHead)
			}
		})
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
	check("every document has a name", false)
	// Scoped to a partition, the partition's documents are sorted rather
	// than every entry of the container counted.
	te.withPlan("idx", "SELECT * FROM c ORDER BY c.name", nil, lethe.PartitionKey{"p3"}, func(_ querySource, plan sourcePlan) {
		if plan.sorted > 0 {
			t.Error("an ascending ORDER BY in a partition reads the index in order")
		}
	})
	write("none", "p3", `{"id":"none","pk":"p3"}`)
	check("one without", true)
	remove("none", "p3")
	check("it is deleted", false)
	write("short", "p3", `{"id":"short","pk":"p3","ttl":5}`)
	te.clock.Advance(10 * time.Second)
	check("one without has expired, not yet purged", true)
	if _, err := te.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	check("it is purged", false)
	write("arr", "p1", `{"id":"arr","pk":"p1","name":["x"]}`)
	check("an array where the others have scalars", false)
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

// TestAscendingPagesCostAPage: where some documents lack the ORDER BY
// path, no count can prove that none does, yet every page of an ascending
// ORDER BY costs about a page: the documents without the path come first,
// found by the seqs the path's entries lack (orderedHead, on the embedded
// store), and a page that resumes after a row whose key is defined has them
// all behind it, so it reads the index in order without counting (on
// PostgreSQL, which keeps no proofs, only the first page counts). Every page is a scan's, through
// documents without the path coming and going and expiring, and a page
// that resumes among them after they have all gained the path.
func TestAscendingPagesCostAPage(t *testing.T) {
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
				"SELECT * FROM c ORDER BY c.name",
				"SELECT c.id FROM c ORDER BY c.name OFFSET 30 LIMIT 100",
				"SELECT c.id FROM c WHERE c.kind = 'b' ORDER BY c.name",
			}
			// check pages each query in both containers (the rows of
			// SELECT * by their ids) and returns the most documents a page
			// of the index's read examined, and how many times its pages
			// counted.
			check := func(stage string) (most int, counts int64) {
				t.Helper()
				for _, text := range queries {
					want, _ := te.allPages("scan", QueryOptions{Text: text, MaxItems: 1000})
					opts := QueryOptions{Text: text, MaxItems: 10}
					var got [][]string
					before := definednessCounts.Load()
					for {
						p, err := te.QueryDocuments(ctx, "db", "idx", opts)
						if err != nil {
							t.Fatalf("%s: %q: %v", stage, text, err)
						}
						// On PostgreSQL the pages that end among the
						// documents without a name read and sort every
						// document (see planOrdered); the next resumes
						// after a row that shows a name.
						bounded := store == "pebble" || len(got) > 0 && strings.Contains(last(got), `"name"`)
						if bounded && !strings.Contains(text, "WHERE") && !strings.Contains(text, "OFFSET") {
							most = max(most, p.Examined) // (skipped rows count as examined)
						}
						got = append(got, rowStrings(p.Rows))
						if opts.Continuation = p.Continuation; p.Continuation == "" {
							break
						}
					}
					counts += definednessCounts.Load() - before
					if g, w := idsOf(slices.Concat(got...)), idsOf(slices.Concat(want...)); !slices.Equal(g, w) {
						t.Errorf("%s: %q:\n index %.300v\n scan  %.300v", stage, text, g, w)
					}
				}
				return most, counts
			}
			// A page is ten rows, read ahead by one, and a resumed page reads the
			// previous page's last row again.
			const page = 15
			if most, _ := check("one in ten without a name"); most > page {
				t.Errorf("one in ten without a name: a page read %d documents, want about a page", most)
			}
			// A page that ends among the documents without a name resumes
			// after all of them have gained one: at the index's start.
			first, err := te.QueryDocuments(ctx, "db", "idx", QueryOptions{Text: queries[0], MaxItems: 10})
			if err != nil {
				t.Fatal(err)
			}
			for i := 3; i < 240; i += 10 {
				write(i, doc(i, true))
			}
			rest, _ := te.allPages("idx", QueryOptions{Text: queries[0], MaxItems: 10, Continuation: first.Continuation})
			if want, _ := te.allPages("scan", QueryOptions{Text: queries[0], MaxItems: 1000}); !slices.Equal(slices.Concat(rest...), slices.Concat(want...)) {
				t.Errorf("resumed among the documents without a name, now named:\n index %.300v\n scan  %.300v", slices.Concat(rest...), slices.Concat(want...))
			}
			most, counts := check("every document has a name")
			if most > page {
				t.Errorf("every document has a name: a page read %d documents, want about a page", most)
			}
			if store == "postgres" && counts > int64(len(queries)) {
				t.Errorf("every document has a name: the pages counted %d times, want at most once a query", counts)
			}
			write(13, doc(13, false))
			write(240, doc(240, false))
			te.clock.Advance(1010 * time.Second) // d0 to d10 expire, d13 among them
			if most, _ := check("two without a name again, eleven expired"); most > page {
				t.Errorf("two without a name again, eleven expired: a page read %d documents, want about a page", most)
			}
		})
	}
}

// last returns the last row of pages, or "" when they hold none.
func last(pages [][]string) string {
	for i := len(pages) - 1; i >= 0; i-- {
		if n := len(pages[i]); n > 0 {
			return pages[i][n-1]
		}
	}
	return ""
}

// idsOf returns the rows with each SELECT * row cut to its id, which the
// two containers of a test share (their system properties differ).
func idsOf(rows []string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r
		if strings.Contains(r, `"_rid"`) {
			out[i] = r[:strings.Index(r, `","pk"`)]
		}
	}
	return out
}

// TestOrderedHeadHolds: the head's set of seqs with an entry answers the
// walk's questions, asked in ascending seq, alike as a bitmap (dense seqs)
// and as a sorted slice (sparse ones), gathered in any order.
func TestOrderedHeadHolds(t *testing.T) {
	for _, c := range []struct {
		name   string
		seqs   []uint64
		bitmap bool
	}{
		{"dense", []uint64{70, 3, 64, 65, 5, 127, 128, 4}, true},
		{"one", []uint64{1 << 40}, true},
		{"sparse", []uint64{900, 3, 1 << 20, 64, 5}, false},
		{"none", nil, false},
	} {
		h := &orderedHead{have: slices.Clone(c.seqs)}
		h.gathered()
		if (h.bits != nil) != c.bitmap {
			t.Errorf("%s: a bitmap: %v, want %v", c.name, h.bits != nil, c.bitmap)
		}
		top := uint64(0)
		for _, s := range c.seqs {
			top = max(top, s)
		}
		asked := []uint64{0, 1, 2, 3, 4, 5, 6, 63, 64, 65, 66, 69, 70, 71, 126, 127, 128, 129, 899, 900, 901, 1 << 20, 1<<20 + 1, 1<<40 - 1, 1 << 40, 1<<40 + 1, top + 64}
		slices.Sort(asked)
		for _, seq := range slices.Compact(asked) {
			if got, want := h.holds(seq), slices.Contains(c.seqs, seq); got != want {
				t.Errorf("%s: holds(%d) = %v, want %v", c.name, seq, got, want)
			}
		}
	}
}
