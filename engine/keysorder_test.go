package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/query"
)

// keysPolicy has composite indexes whose paths, after any the queries fix
// with an equality, are several ORDER BY keys: /a and /t; /pk, /b
// (descending) and /t; /a, /b and /t; /s (strings the index cuts) and /b.
const keysPolicy = `,"indexingPolicy":{"compositeIndexes":[` +
	`[{"path":"/a"},{"path":"/t","order":"descending"}],` +
	`[{"path":"/pk"},{"path":"/b","order":"descending"},{"path":"/t"}],` +
	`[{"path":"/a"},{"path":"/b"},{"path":"/t"}],` +
	`[{"path":"/s","order":"descending"},{"path":"/b"}]]}`

// keysBody is document i of the tests of several keys: every document has
// a, b, t and s; a takes values of several types, t numbers that several
// share (spelled apart: 5 and 5.0), s long strings that the index cuts to
// one prefix and short ones. Some have an array arr.
func keysBody(i int, p string) string {
	a := []string{`"x"`, `"y"`, `null`, `true`, `3`, `"xa"`, `false`}[i%7]
	b := fmt.Sprintf("%d", i%5)
	if i%11 == 0 {
		b = fmt.Sprintf(`"b%d"`, i%3)
	}
	t := fmt.Sprintf("%d", i%37)
	if i%9 == 0 {
		t = fmt.Sprintf("%d.0", i%37)
	}
	s := fmt.Sprintf(`"%s%d"`, strings.Repeat("s", 130), i%4)
	if i%3 == 0 {
		s = fmt.Sprintf(`"s%d"`, i%6)
	}
	arr := ""
	if i%4 == 0 {
		arr = fmt.Sprintf(`,"arr":[%d,%d]`, i%3, i%2)
	}
	return fmt.Sprintf(`{"id":"d%d","pk":%q,"a":%s,"b":%s,"t":%s,"s":%s%s}`, i, p, a, b, t, s, arr)
}

// keysQueries are the queries the tests of several keys compare, with the
// partition key of the request, and whether a keysPlan reads them.
var keysQueries = []struct {
	text  string
	pk    lethe.PartitionKey
	reads bool
}{
	{"SELECT c.id, c.a, c.t FROM c ORDER BY c.a, c.t DESC", nil, true},
	{"SELECT * FROM c ORDER BY c.a DESC, c.t", nil, true},
	{"SELECT c.id FROM c WHERE c.pk = 'busy' ORDER BY c.b DESC, c.t", nil, true},
	{"SELECT c.id, c.b, c.t FROM c ORDER BY c.b DESC, c.t", lethe.PartitionKey{"busy"}, true},
	{"SELECT c.id, c.b, c.t FROM c ORDER BY c.b, c.t DESC", lethe.PartitionKey{"p3"}, true},
	{"SELECT c.id FROM c ORDER BY c.a, c.b, c.t", nil, true},
	{"SELECT c.id FROM c ORDER BY c.a, c.b DESC, c.t", nil, true},
	{"SELECT c.id, c.a, c.t FROM c ORDER BY c.a, c.t DESC, c.id", nil, true},
	{"SELECT c.id FROM c WHERE c.a > 'w' ORDER BY c.a, c.t DESC", nil, true},
	{"SELECT c.id FROM c WHERE STARTSWITH(c.a, 'x') ORDER BY c.a DESC, c.t DESC", nil, true},
	{"SELECT c.id FROM c WHERE c.a IN ('y', 3, null) ORDER BY c.a DESC, c.t", nil, true},
	{"SELECT c.id, c.s, c.b FROM c ORDER BY c.s DESC, c.b", nil, true},
	{"SELECT c.id, c.s, c.b FROM c ORDER BY c.s, c.b DESC", nil, true},
	{"SELECT TOP 7 c.id FROM c ORDER BY c.a, c.t DESC", nil, true},
	{"SELECT c.id FROM c ORDER BY c.a, c.t DESC OFFSET 5 LIMIT 20", nil, true},
	{"SELECT c.id, x FROM c JOIN x IN c.arr ORDER BY c.a, c.t DESC", nil, true},
	{"SELECT c.id FROM c WHERE c.t != 4 ORDER BY c.a DESC, c.t DESC", nil, true},
	// Not read in the keys' order: the partition is not fixed, another
	// equality's list is shorter, the keys are not the index's.
	{"SELECT c.id, c.a, c.t FROM c ORDER BY c.a, c.t DESC", lethe.PartitionKey{"busy"}, false},
	{"SELECT c.id FROM c WHERE c.b = 2 ORDER BY c.a, c.t DESC", nil, false},
	{"SELECT c.id FROM c WHERE c.a = 'y' ORDER BY c.a, c.t DESC", lethe.PartitionKey{"p1"}, false},
	{"SELECT c.id FROM c ORDER BY c.t, c.a", nil, false},
	{"SELECT c.id FROM c ORDER BY c.b DESC, c.t", nil, false},
}

// TestCompositeKeysOrder: a container whose composite indexes hold several
// ORDER BY keys gives every page of every query exactly as a container
// without them and one without any index do, after creates, replaces and
// deletes, with expired documents, once a document lacks a key (the read
// is not planned) and once one has an array at a key (the read gives up);
// and a first page reads about a page of entries.
func TestCompositeKeysOrder(t *testing.T) {
	names := []string{"keys", "plain", "scan"}
	te := newTestEngine(t)
	te.mustDB("db")
	createContainers(t, te, names, map[string]string{
		"keys": keysPolicy,
		"scan": `,"indexingPolicy":{"indexingMode":"none","automatic":false}`,
	})
	partition := func(i int) string {
		if i%3 == 0 {
			return "busy"
		}
		return fmt.Sprintf("p%d", i%7)
	}
	put := func(i int, body string) {
		for _, name := range names {
			if _, err := te.UpsertDocument(ctx, DocRef{DB: "db", Coll: name, PK: pk(partition(i))}, []byte(body), Conditions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	const n = 600
	for i := range n {
		body := keysBody(i, partition(i))
		if i%50 == 0 {
			body = strings.Replace(body, `{"id"`, `{"ttl":5,"id"`, 1) // expires below
		}
		put(i, body)
	}
	te.clock.Advance(10 * time.Second)
	for i := 1; i < n; i += 37 {
		ref := func(name string) DocRef {
			return DocRef{DB: "db", Coll: name, ID: fmt.Sprintf("d%d", i), PK: pk(partition(i))}
		}
		if i%2 == 0 {
			for _, name := range names {
				if _, err := te.DeleteDocument(ctx, ref(name), Conditions{}); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		// d<i> takes d<i+2>'s values and keeps its id.
		put(i, strings.Replace(keysBody(i+2, partition(i)), fmt.Sprintf(`"id":"d%d"`, i+2), fmt.Sprintf(`"id":"d%d"`, i), 1))
	}
	// compare compares the pages of every query, of sizes, and checks
	// which are read in the keys' order: none that orders by a path in
	// lacking, but for those scoped to the partition p3.
	compare := func(stage string, lacking string, sizes ...int) {
		t.Helper()
		for _, q := range keysQueries {
			planned := q.reads && (lacking == "" || !strings.Contains(q.text, lacking) || slices.Equal(q.pk, lethe.PartitionKey{"p3"}))
			if got := te.readsKeys("keys", q.text, q.pk); got != planned {
				t.Errorf("%s: %v %q: read in the keys' order: %v", stage, q.pk, q.text, got)
			}
			for _, size := range sizes {
				var pages [3][][]string
				for i, name := range names {
					pages[i], _ = te.allPages(name, QueryOptions{Text: q.text, PK: q.pk, MaxItems: size, ServeAll: true})
					pages[i] = withoutContainerProperties(t, pages[i])
				}
				if len(slices.Concat(pages[0]...)) == 0 {
					t.Fatalf("%s: %v %q: no rows", stage, q.pk, q.text)
				}
				for i := 1; i < len(names); i++ {
					if d := firstDifference(pages[0], pages[i]); d >= 0 {
						t.Fatalf("%s: %v %q, page size %d: page %d of %s is %.400v, of %s %.400v", stage, q.pk, q.text, size, d, names[0], pageAt(pages[0], d), names[i], pageAt(pages[i], d))
					}
				}
			}
		}
	}
	compare("every document has the keys", "", 7, 100)

	// A first page reads about a page of entries, where the path index
	// of /a reads every document of the first value of a.
	var scanned int
	te.withPlan("keys", "SELECT c.id FROM c ORDER BY c.a, c.t DESC", nil, nil, func(src querySource, _ sourcePlan) {
		page, err := parseStatement("SELECT c.id FROM c ORDER BY c.a, c.t DESC")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := page.Execute(src, query.ExecOptions{PageSize: 10, SortedKeys: 2, TiesInSeqOrder: true, Unordered: true}); err != nil {
			t.Fatal(err)
		}
		scanned = src.(*keysSource).entriesRead()
	})
	if scanned == 0 || scanned > 40 {
		t.Errorf("a first page of 10 read %d entries", scanned)
	}

	// So does every later page: it resumes at its cursor's place.
	for _, text := range []string{"SELECT c.id FROM c ORDER BY c.a, c.t DESC", "SELECT c.id FROM c ORDER BY c.a DESC, c.b, c.t", "SELECT c.id FROM c ORDER BY c.a, c.t DESC, c.id"} {
		opts := QueryOptions{Text: text, MaxItems: 10}
		var charges []float64
		for {
			page, err := te.QueryDocuments(ctx, "db", "keys", opts)
			if err != nil {
				t.Fatal(err)
			}
			charges = append(charges, page.Charge)
			if page.Continuation == "" {
				break
			}
			opts.Continuation = page.Continuation
		}
		if len(charges) < 40 || slices.Max(charges) > 2*charges[0] {
			t.Errorf("%q: %d pages of 10, the first charged %.2f, the most %.2f", text, len(charges), charges[0], slices.Max(charges))
		}
	}

	// A document without t: ORDER BY t cannot be read from the index,
	// which has no entry for it.
	put(6, `{"id":"d6","pk":"busy","a":"x","b":1,"s":"s1"}`)
	compare("a document lacks t", "c.t", 9)
	put(6, keysBody(6, partition(6)))
	compare("every document has the keys again", "", 9)

	// An array at a: the read gives up when it meets it, and the page is
	// read again without the index's order.
	put(8, `{"id":"d8","pk":"p1","a":[1,2],"b":{"c":1},"t":4,"s":"s1"}`)
	for _, q := range keysQueries {
		want, _ := te.allPages("plain", QueryOptions{Text: q.text, PK: q.pk, MaxItems: 9, ServeAll: true})
		got, _ := te.allPages("keys", QueryOptions{Text: q.text, PK: q.pk, MaxItems: 9, ServeAll: true})
		got, want = withoutContainerProperties(t, got), withoutContainerProperties(t, want)
		if d := firstDifference(got, want); d >= 0 {
			t.Fatalf("an array at a: %v %q: page %d of keys is %.400v, of plain %.400v", q.pk, q.text, d, pageAt(got, d), pageAt(want, d))
		}
	}
}

// readsKeys reports whether query text, with partition key p in the
// request, reads container coll in the order of several ORDER BY keys.
func (te *testEngine) readsKeys(coll, text string, p lethe.PartitionKey) bool {
	te.t.Helper()
	var uses bool
	te.withPlan(coll, text, nil, p, func(src querySource, plan sourcePlan) {
		_, ok := src.(*keysSource)
		uses = ok && plan.sorted >= 2
	})
	return uses
}

// firstDifference returns the index of the first page where a and b
// differ, -1 when they are equal.
func firstDifference(a, b [][]string) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || !slices.Equal(a[i], b[i]) {
			return i
		}
	}
	return -1
}

// pageAt returns pages[i], or nil past the end.
func pageAt(pages [][]string, i int) []string {
	if i < len(pages) {
		return pages[i]
	}
	return nil
}

// TestOrderedReadsWithTheEqualityOutOfTheIndex: the documents an equality
// selects (here the request's partition key) are counted by their entries
// in the equality path's index, which a policy may leave out: then nothing
// counts them, and documents without the ORDER BY keys, which have no
// composite entry, still come first. (The count once found none of the
// partition's entries and none of the composite's, and took that for every
// document having the keys: the page came back empty.)
func TestOrderedReadsWithTheEqualityOutOfTheIndex(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("idx", `"indexingPolicy":{"includedPaths":[{"path":"/name/?"},{"path":"/n/?"}],"excludedPaths":[{"path":"/*"}],`+
		`"compositeIndexes":[[{"path":"/pk"},{"path":"/name"},{"path":"/n"}],[{"path":"/pk"},{"path":"/n"}]]}`)
	te.mustContainer("scan", `"indexingPolicy":{"indexingMode":"none","automatic":false}`)
	for _, coll := range []string{"idx", "scan"} {
		for _, b := range []string{`{"id":"a","pk":"p"}`, `{"id":"b","pk":"p","n":1}`} {
			if err := te.create(coll, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, text := range []string{"SELECT c.id FROM c ORDER BY c.name, c.n", "SELECT c.id FROM c ORDER BY c.n"} {
		want, _ := te.allPages("scan", QueryOptions{Text: text, PK: pk("p")})
		got, _ := te.allPages("idx", QueryOptions{Text: text, PK: pk("p")})
		if g, w := slices.Concat(got...), slices.Concat(want...); len(w) != 2 || !slices.Equal(g, w) {
			t.Errorf("%q in p: %v, want %v (both documents)", text, g, w)
		}
	}
}
