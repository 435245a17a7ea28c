package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
)

// compositePolicy has composite indexes on /pk and /t, on /pk and /_ts (the
// newest documents of a partition), and on /a, /b and /t.
const compositePolicy = `,"indexingPolicy":{"compositeIndexes":[` +
	`[{"path":"/pk"},{"path":"/t","order":"descending"}],` +
	`[{"path":"/pk","order":"ascending"},{"path":"/_ts","order":"descending"}],` +
	`[{"path":"/a"},{"path":"/b"},{"path":"/t"}]]}`

// compositeEngine returns a test engine whose database "db" holds the named
// containers among "composite" (compositePolicy), "plain" (the default
// policy) and "scan" (no index), each partitioned on /pk.
func compositeEngine(t *testing.T, names ...string) *testEngine {
	t.Helper()
	te := newTestEngine(t)
	te.mustDB("db")
	createContainers(t, te, names, map[string]string{
		"composite": compositePolicy,
		"scan":      `,"indexingPolicy":{"indexingMode":"none","automatic":false}`,
	})
	return te
}

// compositeBody is document i of the composite tests: t is missing, null, a
// boolean, a short string, a long string that the index cuts (several
// sharing the cut prefix) or a number shared by several documents; a and b
// take a few values, and a is missing from some.
func compositeBody(i int, p string) string {
	var t string
	switch {
	case i%13 == 0:
		t = ""
	case i%17 == 0:
		t = `,"t":null`
	case i%19 == 0:
		t = fmt.Sprintf(`,"t":"%s%d"`, strings.Repeat("s", 130), i%3)
	case i%23 == 0:
		t = fmt.Sprintf(`,"t":"str%d"`, i%5)
	case i%29 == 0:
		t = fmt.Sprintf(`,"t":%v`, i%2 == 0)
	default:
		t = fmt.Sprintf(`,"t":%d`, i%50)
	}
	a := fmt.Sprintf(`,"a":"%c"`, 'x'+i%2)
	if i%11 == 0 {
		a = ""
	}
	o := fmt.Sprintf(`,"o":{"p":%d}`, i%9)
	if i%4 == 0 {
		o = fmt.Sprintf(`,"o":%d`, i%9) // no o.p
	}
	return fmt.Sprintf(`{"id":"d%d","pk":%q%s%s,"b":%d%s}`, i, p, t, a, i%3, o)
}

// compositeQueries are the queries the composite tests compare, each with
// the partition key of its request (nil: every partition).
var compositeQueries = []struct {
	text string
	pk   lethe.PartitionKey
}{
	{"SELECT c.id, c.t FROM c ORDER BY c.t DESC", lethe.PartitionKey{"busy"}},
	{"SELECT c.id, c.t FROM c ORDER BY c.t DESC", lethe.PartitionKey{"p3"}},
	{"SELECT c.id, c.t FROM c ORDER BY c.t", lethe.PartitionKey{"p3"}},
	{"SELECT c.id, c.t FROM c WHERE c.t >= 10 ORDER BY c.t", lethe.PartitionKey{"busy"}},
	{"SELECT c.id, c.t FROM c WHERE c.t < 'z' ORDER BY c.t DESC", lethe.PartitionKey{"busy"}},
	{"SELECT TOP 3 c.id FROM c ORDER BY c.t DESC", lethe.PartitionKey{"p5"}},
	{"SELECT c.id FROM c ORDER BY c.t DESC OFFSET 2 LIMIT 5", lethe.PartitionKey{"p5"}},
	{"SELECT c.id, c._ts FROM c ORDER BY c._ts DESC", lethe.PartitionKey{"busy"}},
	{"SELECT c.id, c._ts FROM c ORDER BY c._ts", lethe.PartitionKey{"p1"}},
	{"SELECT c.id, c._ts FROM c ORDER BY c._ts DESC, c.id", lethe.PartitionKey{"p2"}},
	{"SELECT c.id, c.t FROM c WHERE c.pk = 'p4' ORDER BY c.t DESC", nil},
	{"SELECT c.id, c.t FROM c WHERE c.a = 'x' AND c.b = 2 ORDER BY c.t DESC", nil},
	{"SELECT c.id, c.t FROM c WHERE c.a = 'y' AND c.b = 0 AND c.t > 5 ORDER BY c.t", nil},
	{"SELECT c.id, c.t FROM c WHERE c.a = 'y' AND c.b = 0 ORDER BY c.t DESC", lethe.PartitionKey{"busy"}},
	{"SELECT c.id, c.t FROM c WHERE c.id = 'd3' ORDER BY c.t DESC", lethe.PartitionKey{"busy"}},
	// SELECT * ordered by the path the index orders by: each document is
	// sent as stored, and only the key is read from it.
	{"SELECT * FROM c ORDER BY c.t DESC", lethe.PartitionKey{"busy"}},
	{"SELECT * FROM c ORDER BY c._ts", lethe.PartitionKey{"p1"}},
	{"SELECT * FROM c ORDER BY c._ts DESC", lethe.PartitionKey{"p2"}},
	{"SELECT * FROM c ORDER BY c.o.p DESC", lethe.PartitionKey{"busy"}},
	{"SELECT * FROM c ORDER BY c.o.p DESC", nil},
	{"SELECT * FROM c WHERE c.t >= 10 ORDER BY c.t", lethe.PartitionKey{"busy"}},
	{"SELECT * FROM c WHERE c.pk = 'p4' ORDER BY c._ts DESC", nil},
	{"SELECT * FROM c WHERE c.pk = 'p4' ORDER BY c.t DESC", nil},
	{"SELECT * FROM c WHERE c.a = 'x' AND c.b = 2 ORDER BY c.t DESC", nil},
	{"SELECT * FROM c WHERE c.a = 'x' AND c.b = 2 AND c.id != 'd5' ORDER BY c.t DESC", nil},
}

// TestCompositeOrderBy: a container with composite indexes gives every page
// of every query exactly as a container without them and one without any
// index do, after creates, replaces that move documents within the order,
// and deletes; and the queries whose equalities fix all but the last path of
// a composite index, with that path as the first ORDER BY key, read it.
func TestCompositeOrderBy(t *testing.T) {
	names := []string{"composite", "plain", "scan"}
	te := compositeEngine(t, names...)
	partition := func(i int) string {
		if i%3 == 0 {
			return "busy"
		}
		return fmt.Sprintf("p%d", i%7)
	}
	for i := range 1500 {
		if i%10 == 0 {
			te.clock.Advance(time.Second) // ties of _ts, ten documents each
		}
		for _, name := range names {
			if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: name, PK: pk(partition(i))}, []byte(compositeBody(i, partition(i)))); err != nil {
				t.Fatal(err)
			}
		}
	}
	te.clock.Advance(time.Second)
	for i := 0; i < 1500; i += 37 {
		for _, name := range names {
			ref := DocRef{DB: "db", Coll: name, ID: fmt.Sprintf("d%d", i), PK: pk(partition(i))}
			if i%2 == 0 {
				if _, err := te.DeleteDocument(ctx, ref, Conditions{}); err != nil {
					t.Fatal(err)
				}
				continue
			}
			// d<i> takes d<i+1>'s t, a and b, and keeps its id.
			body := strings.Replace(compositeBody(i+1, partition(i)), fmt.Sprintf(`"id":"d%d"`, i+1), fmt.Sprintf(`"id":"d%d"`, i), 1)
			if _, err := te.ReplaceDocument(ctx, ref, []byte(body), Conditions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range compositeQueries {
		for _, size := range []int{3, 50} {
			var pages [3][][]string
			for i, name := range names {
				pages[i], _ = te.allPages(name, QueryOptions{Text: q.text, PK: q.pk, MaxItems: size, ServeAll: true})
				pages[i] = withoutContainerProperties(t, pages[i])
			}
			if len(slices.Concat(pages[0]...)) == 0 {
				t.Fatalf("%v %q: no rows", q.pk, q.text)
			}
			for i := 1; i < len(names); i++ {
				if !slices.EqualFunc(pages[0], pages[i], slices.Equal) {
					t.Fatalf("%v %q, page size %d: %s gives pages %.300v, %s %.300v", q.pk, q.text, size, names[0], pages[0], names[i], pages[i])
				}
			}
		}
	}
	// Which of them read a composite index: those whose equalities fix its
	// leading paths, with an ORDER BY on its last, unless ascending on a
	// path that some documents lack (they sort first and have no entry)
	// without a condition on it.
	for _, c := range []struct {
		text string
		pk   lethe.PartitionKey
		want bool
	}{
		{"SELECT c.id, c.t FROM c ORDER BY c.t DESC", pk("busy"), true},
		{"SELECT c.id, c.t FROM c ORDER BY c.t DESC", nil, false},
		{"SELECT c.id, c.t FROM c ORDER BY c.t", pk("busy"), false},
		{"SELECT c.id, c.t FROM c WHERE c.t >= 10 ORDER BY c.t", pk("busy"), true},
		{"SELECT c.id, c._ts FROM c ORDER BY c._ts", pk("busy"), true},
		{"SELECT c.id, c.t FROM c WHERE c.pk = 'p4' ORDER BY c.t DESC", nil, true},
		{"SELECT c.id, c.t FROM c WHERE c.a = 'x' AND c.b = 2 ORDER BY c.t DESC", nil, true},
		{"SELECT c.id, c.t FROM c WHERE c.a = 'x' ORDER BY c.t DESC", nil, false},
		{"SELECT c.id, c.t FROM c WHERE c.a = 'x' AND c.b IN (1, 2) ORDER BY c.t DESC", nil, false},
		{"SELECT c.id, c.t FROM c ORDER BY c.b DESC", pk("busy"), false},
		{"SELECT c.id, c.t FROM c WHERE c.id = 'd3' ORDER BY c.t DESC", pk("busy"), false},
		{"SELECT c.id, c.t FROM c WHERE c.b IN (1, 2) ORDER BY c.t DESC", pk("busy"), false},
	} {
		if got := te.readsComposite("composite", c.text, c.pk); got != c.want {
			t.Errorf("%v %q: reads a composite index: %v, want %v", c.pk, c.text, got, c.want)
		}
	}
	// The newest ten of a partition read about ten entries, where the path
	// index of _ts holds every partition's.
	charges := map[string]float64{}
	for _, name := range []string{"composite", "plain"} {
		page, err := te.QueryDocuments(ctx, "db", name, QueryOptions{Text: "SELECT * FROM c ORDER BY c._ts DESC", PK: pk("p3"), MaxItems: 10})
		if err != nil || len(page.Rows) != 10 {
			t.Fatalf("%s: %d rows, %v", name, len(page.Rows), err)
		}
		charges[name] = page.Charge
	}
	if charges["composite"] >= charges["plain"] {
		t.Errorf("the newest ten of a partition: charged %.2f with the composite index, %.2f without", charges["composite"], charges["plain"])
	}
}

// withoutContainerProperties returns pages with the system properties that
// name a document's container (_rid, _self, _etag) taken out of each row
// that has them, so that rows of the same documents in different
// containers compare equal; other rows are left as they are, byte for byte.
func withoutContainerProperties(t *testing.T, pages [][]string) [][]string {
	t.Helper()
	out := make([][]string, len(pages))
	for i, rows := range pages {
		for _, row := range rows {
			if strings.Contains(row, `"_rid"`) {
				o, err := jsonv.ParseObject([]byte(row))
				if err != nil {
					t.Fatalf("row %s: %v", row, err)
				}
				for _, k := range []string{"_rid", "_self", "_etag"} {
					o.Delete(k)
				}
				row = string(jsonv.Marshal(o))
			}
			out[i] = append(out[i], row)
		}
	}
	return out
}

// readsComposite reports whether query text, with partition key p in the
// request, reads a composite index of container coll.
func (te *testEngine) readsComposite(coll, text string, p lethe.PartitionKey) bool {
	te.t.Helper()
	var uses bool
	te.withPlan(coll, text, nil, p, func(src querySource, _ sourcePlan) {
		o, ok := src.(*orderedSource)
		uses = ok && o.plan.composite()
	})
	return uses
}

// TestOrderedContainerValues: documents with an object or an array where an
// index orders make an ordered read give up when it meets them (a descending
// read at once, an ascending one only if its page has not filled first), and
// the page is read again without that order: every page is a scan's, with
// the composite index and with the path index, in one partition and across
// them; once the documents go, the index serves a page again.
func TestOrderedContainerValues(t *testing.T) {
	names := []string{"composite", "plain", "scan"}
	te := compositeEngine(t, names...)
	for _, name := range names {
		for i := range 20 {
			if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: name, PK: pk("p")}, []byte(fmt.Sprintf(`{"id":"d%d","pk":"p","t":%d}`, i, i))); err != nil {
				t.Fatal(err)
			}
		}
		// Arrays the executor orders otherwise than they were written: a
		// read that took them in the index's order would end its page early.
		for _, body := range []string{`{"id":"obj","pk":"p","t":{"x":1}}`, `{"id":"arr","pk":"p","t":[3,1]}`, `{"id":"q","pk":"q","t":[0]}`,
			`{"id":"a3","pk":"p","t":[3]}`, `{"id":"a2","pk":"p","t":[2]}`, `{"id":"a1","pk":"p","t":[1]}`, `{"id":"a0","pk":"p","t":[0]}`, `{"id":"a25","pk":"p","t":[2.5]}`} {
			var doc struct{ PK string }
			_ = json.Unmarshal([]byte(body), &doc)
			if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: name, PK: pk(doc.PK)}, []byte(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	queries := []struct {
		text string
		pk   lethe.PartitionKey
	}{
		{"SELECT c.id FROM c ORDER BY c.t DESC", pk("p")},
		{"SELECT * FROM c ORDER BY c.t DESC", pk("p")},
		{"SELECT c.id FROM c WHERE IS_DEFINED(c.t) ORDER BY c.t", pk("p")},
		{"SELECT c.id FROM c WHERE c.t >= 0 ORDER BY c.t", pk("p")},
		{"SELECT c.id FROM c ORDER BY c.t DESC", nil},
		{"SELECT c.id FROM c WHERE IS_DEFINED(c.t) ORDER BY c.t", nil},
	}
	compare := func() {
		t.Helper()
		for _, q := range queries {
			for _, size := range []int{2, 7, 50} {
				want, _ := te.allPages("scan", QueryOptions{Text: q.text, PK: q.pk, MaxItems: size})
				want = withoutContainerProperties(t, want)
				for _, name := range []string{"composite", "plain"} {
					got, _ := te.allPages(name, QueryOptions{Text: q.text, PK: q.pk, MaxItems: size})
					if got = withoutContainerProperties(t, got); !slices.EqualFunc(got, want, slices.Equal) {
						t.Errorf("%s %v %q, pages of %d: %.300v, a scan gives %.300v", name, q.pk, q.text, size, got, want)
					}
				}
			}
		}
	}
	compare()
	for _, id := range []string{"obj", "arr", "a3", "a2", "a1", "a0", "a25"} {
		for _, name := range names {
			if _, err := te.DeleteDocument(ctx, ref(name, id, "p"), Conditions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	compare()
	if !te.readsComposite("composite", "SELECT c.id FROM c ORDER BY c.t DESC", pk("p")) {
		t.Error("with only numbers at /t in p, the composite index does not serve ORDER BY")
	}
	page, err := te.QueryDocuments(ctx, "db", "composite", QueryOptions{Text: "SELECT c.id FROM c ORDER BY c.t DESC", PK: pk("p"), MaxItems: 5})
	if err != nil || len(page.Rows) != 5 || page.Examined > 7 {
		t.Errorf("the first page of 5 once the objects went: %d rows, %d documents read, %v", len(page.Rows), page.Examined, err)
	}
}

// TestCompositePolicy: composite indexes are validated (400 for a malformed
// one, with nothing changed) and read back as given; adding one to a
// container that holds documents re-indexes them, after which it serves
// queries; and the purge removes expired documents' entries (the engine's
// Check, when the test ends, finds none left).
func TestCompositePolicy(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	for _, bad := range []string{
		`{"compositeIndexes":{}}`,
		`{"compositeIndexes":[{"path":"/a"}]}`,
		`{"compositeIndexes":[[{"path":"/a"}]]}`,
		`{"compositeIndexes":[[{"path":"/a"},{"path":"/b/*"}]]}`,
		`{"compositeIndexes":[[{"path":"/a"},{"path":"/b/[]/c"}]]}`,
		`{"compositeIndexes":[[{"path":"/a"},{"path":"b"}]]}`,
		`{"compositeIndexes":[[{"path":"/a"},{"path":"/a"}]]}`,
		`{"compositeIndexes":[[{"path":"/a"},{"path":"/b","order":"sideways"}]]}`,
		`{"compositeIndexes":[[{"path":"/a"},{"path":7}]]}`,
	} {
		_, err := te.CreateContainer(ctx, "db", []byte(`{"id":"bad","partitionKey":{"paths":["/pk"]},"indexingPolicy":`+bad+`}`))
		if codeOf(err) != lethe.CodeBadRequest {
			t.Errorf("%s: %v, want BadRequest", bad, err)
		}
	}
	if _, _, err := te.ReadContainer(ctx, "db", "bad"); codeOf(err) != lethe.CodeNotFound {
		t.Fatalf("a refused container exists: %v", err)
	}

	te.mustContainer("c", `"defaultTtl":100`)
	for i := range 40 {
		te.clock.Advance(time.Second)
		if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(fmt.Sprintf("p%d", i%2))}, []byte(fmt.Sprintf(`{"id":"d%d","pk":"p%d","t":%d}`, i, i%2, i))); err != nil {
			t.Fatal(err)
		}
	}
	const text = "SELECT c.id FROM c ORDER BY c.t DESC"
	if te.readsComposite("c", text, pk("p1")) {
		t.Fatal("a container without composite indexes reads one")
	}
	policy := `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":100` + compositePolicy + `}`
	res, err := te.ReplaceContainer(ctx, "db", "c", []byte(policy), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Body), `"compositeIndexes":[[{"path":"/pk"},{"path":"/t","order":"descending"}]`) {
		t.Errorf("the container reads back %s", res.Body)
	}
	if te.readsComposite("c", text, pk("p1")) {
		t.Fatal("a composite index serves queries before its documents are indexed")
	}
	if n, err := te.BuildIndexes(ctx); err != nil || n != 40 {
		t.Fatalf("re-indexed %d documents, %v; want 40", n, err)
	}
	if !te.readsComposite("c", text, pk("p1")) {
		t.Fatal("the composite index does not serve once built")
	}
	page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT VALUE c.t FROM c ORDER BY c.t DESC", PK: pk("p1"), MaxItems: 3})
	if err != nil || strings.Join(rowStrings(page.Rows), ",") != "39,37,35" {
		t.Fatalf("the newest three of p1: %s, %v", rowStrings(page.Rows), err)
	}
	// The first 20 expire 100 s after their writes; the purge removes them
	// and their composite entries.
	te.clock.Advance(80 * time.Second)
	if n, err := te.Purge(ctx); err != nil || n != 20 {
		t.Fatalf("purged %d, %v; want 20", n, err)
	}
	page, err = te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT VALUE c.t FROM c ORDER BY c.t", PK: pk("p0"), MaxItems: 3})
	if err != nil || strings.Join(rowStrings(page.Rows), ",") != "20,22,24" {
		t.Fatalf("the oldest three of p0 after the purge: %s, %v", rowStrings(page.Rows), err)
	}
}

func rowStrings(rows [][]byte) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = string(r)
	}
	return out
}

// TestOrderByTiesReadAPage: the newest ten documents of a partition whose
// 400 documents were all written in the same second are the ten a scan
// gives, and a page reads about ten documents, not all that share their
// _ts: ties come in ascending seq (read forwards in a descending read), so
// the executor stops at the page's last row. So it is with the composite
// index and with the path index of _ts, both ways, and on later pages.
func TestOrderByTiesReadAPage(t *testing.T) {
	names := []string{"composite", "plain", "scan"}
	te := compositeEngine(t, names...)
	for i := range 800 {
		p := []string{"p", "q"}[i%2]
		for _, name := range names {
			if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: name, PK: pk(p)}, []byte(fmt.Sprintf(`{"id":"d%d","pk":%q}`, i, p))); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, text := range []string{"SELECT c.id FROM c ORDER BY c._ts DESC", "SELECT c.id FROM c ORDER BY c._ts"} {
		want, _ := te.allPages("scan", QueryOptions{Text: text, PK: pk("p"), MaxItems: 10})
		for _, name := range []string{"composite", "plain"} {
			got, _ := te.allPages(name, QueryOptions{Text: text, PK: pk("p"), MaxItems: 10})
			if !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("%s %q: pages %.200v, a scan gives %.200v", name, text, got, want)
			}
			opts := QueryOptions{Text: text, PK: pk("p"), MaxItems: 10}
			for page := range 3 {
				res, err := te.QueryDocuments(ctx, "db", name, opts)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Rows) != 10 || res.Examined > 14 {
					t.Errorf("%s %q, page %d: %d rows, %d documents read; want 10 for at most 14 (a page, the one after it, the one before it and the look-ahead)", name, text, page+1, len(res.Rows), res.Examined)
				}
				opts.Continuation = res.Continuation
			}
		}
	}
}

// TestCompositeWhereHolds: a SELECT * whose WHERE is nothing but the
// equalities a composite index's prefix fixes, over values it holds whole,
// is answered by the index alone (WHERE is not evaluated, and each
// document is read for its key only), unless documents without the key
// may follow from outside the index; any other WHERE is evaluated.
func TestCompositeWhereHolds(t *testing.T) {
	te := compositeEngine(t, "composite")
	for _, c := range []struct {
		text string
		want bool
	}{
		{"SELECT * FROM c WHERE c.pk = 'p4' ORDER BY c._ts DESC", true},
		{"SELECT * FROM c ORDER BY c._ts DESC", true},
		{"SELECT * FROM c WHERE c.pk = 'p4' ORDER BY c.t DESC", false}, // the tail: t undefined
		{"SELECT * FROM c WHERE c.pk = 'p4' AND c.id != 'x' ORDER BY c._ts DESC", false},
		{"SELECT * FROM c WHERE c.pk = '" + strings.Repeat("L", 130) + "' ORDER BY c._ts DESC", false},
		{"SELECT c.id FROM c WHERE c.pk = 'p4' ORDER BY c._ts DESC", false},
	} {
		te.withPlan("composite", c.text, nil, pk("p4"), func(src querySource, plan sourcePlan) {
			o, ok := src.(*orderedSource)
			if !ok || !o.plan.composite() {
				t.Errorf("%q does not read the composite index", c.text)
				return
			}
			if got := plan.whereHolds && o.keyPath != nil; got != c.want {
				t.Errorf("%q: answered by the index alone %v, want %v", c.text, got, c.want)
			}
		})
	}
}
