package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/kv/pebblekv"
)

// TestOffsetSkipsWithoutLookups: the documents an OFFSET skips are passed
// over on the index's entries, not looked up, when the index answers WHERE
// and the order (query.Skipper), and the rows are still the right ones
// while documents have expired and wait for the purge, which a lookup would
// have left out.
func TestOffsetSkipsWithoutLookups(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1,"indexingPolicy":{"compositeIndexes":[[{"path":"/k"},{"path":"/n","order":"descending"}]]}`)
	type doc struct {
		id, pk, k string
		n         int
		expires   bool
	}
	var docs []doc
	for i := range 60 {
		d := doc{id: fmt.Sprintf("d%02d", i), pk: fmt.Sprintf("p%d", i%2), k: "xy"[i%3/2:][:1], n: (i * 37) % 60, expires: i%4 == 1}
		docs = append(docs, d)
		ttl := ""
		if d.expires {
			ttl = `,"ttl":5`
		}
		body := fmt.Sprintf(`{"id":%q,"pk":%q,"k":%q,"n":%d%s}`, d.id, d.pk, d.k, d.n, ttl)
		if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(d.pk)}, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	te.clock.Advance(10 * time.Second) // every fourth document expires; nothing purges it
	lookups := func() int64 {
		s := te.store.(*pebblekv.Store).LookupCache()
		return s.Hits + s.Misses
	}
	live := func(keep func(doc) bool, less func(a, b doc) int) []string {
		var ids []string
		var kept []doc
		for _, d := range docs {
			if !d.expires && keep(d) {
				kept = append(kept, d)
			}
		}
		if less != nil {
			slices.SortStableFunc(kept, less)
		}
		for _, d := range kept {
			ids = append(ids, fmt.Sprintf(`{"id":%q}`, d.id))
		}
		return ids
	}
	all := func(doc) bool { return true }
	byN := func(a, b doc) int { return a.n - b.n }
	byNDesc := func(a, b doc) int { return b.n - a.n }
	cases := []struct {
		text string
		p    lethe.PartitionKey
		want []string // every row without OFFSET and LIMIT
	}{
		{"SELECT c.id FROM c", nil, live(all, nil)},
		{"SELECT c.id FROM c ORDER BY c.n", nil, live(all, byN)},
		{"SELECT c.id FROM c ORDER BY c.n DESC", nil, live(all, byNDesc)},
		{"SELECT c.id FROM c WHERE c.k = 'x'", nil, live(func(d doc) bool { return d.k == "x" }, nil)},
		{"SELECT c.id FROM c WHERE c.k = 'y' ORDER BY c.k, c.n DESC", nil, live(func(d doc) bool { return d.k == "y" }, byNDesc)},
		{"SELECT c.id FROM c ORDER BY c.n", pk("p1"), live(func(d doc) bool { return d.pk == "p1" }, byN)},
		{"SELECT c.id FROM c", pk("p0"), live(func(d doc) bool { return d.pk == "p0" }, nil)},
	}
	for _, tc := range cases {
		for _, window := range [][2]int{{12, 4}, {0, 3}, {len(tc.want) - 2, 5}, {100, 5}} {
			offset, limit := window[0], window[1]
			text := fmt.Sprintf("%s OFFSET %d LIMIT %d", tc.text, offset, limit)
			before := lookups()
			page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: text, PK: tc.p, MaxItems: 100})
			if err != nil {
				t.Fatalf("%s: %v", text, err)
			}
			looked := lookups() - before
			want := tc.want[min(offset, len(tc.want)):min(offset+limit, len(tc.want))]
			if got := rowStrings(page.Rows); !slices.Equal(got, want) {
				t.Errorf("%s in %v:\n got %s\nwant %s", text, tc.p, strings.Join(got, " "), strings.Join(want, " "))
			}
			// What the page returns and a document after it to see that
			// the page is full, and a few reads of the scope.
			if looked > int64(limit+4) {
				t.Errorf("%s in %v: %d documents looked up for a page of %d", text, tc.p, looked, limit)
			}
		}
	}
	// A document without the key: a descending read finds it after the
	// index, where the count that proved the others' keys now fails.
	if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk("p0")}, []byte(`{"id":"none","pk":"p0","k":"x"}`)); err != nil {
		t.Fatal(err)
	}
	for text, n := range map[string]int{
		"SELECT c.id FROM c ORDER BY c.n DESC":                      len(live(all, nil)),
		"SELECT c.id FROM c WHERE c.k = 'x' ORDER BY c.k, c.n DESC": len(live(func(d doc) bool { return d.k == "x" }, nil)),
	} {
		text += fmt.Sprintf(" OFFSET %d LIMIT 30", n-3)
		page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: text, MaxItems: 100})
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if got := rowStrings(page.Rows); len(got) == 0 || got[len(got)-1] != `{"id":"none"}` {
			t.Errorf("%s: %s, want the document without n last", text, strings.Join(got, " "))
		}
	}
}

// storeCounter is a reader of a store that counts where the entries are
// (kv.Counter), as PostgreSQL's does; here by scanning, counting its calls.
type storeCounter struct {
	kv.Reader
	calls *int
}

func (c storeCounter) Count(start, end []byte, limit int64) (int64, error) {
	*c.calls++
	return kv.Count(c.Reader, start, end, limit)
}

// countFixture creates, in container "c" of te (time to live on), 90
// documents in three partitions with k one of x, y and z, a fifth of them
// expired and waiting for the purge, and returns the count queries whose
// WHERE one index list answers, with their live counts and whether a store
// that counts (kv.Counter) counts them.
func countFixture(t *testing.T, te *testEngine) []countCase {
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)
	want := map[string]int{}
	for i := range 90 {
		p, k := fmt.Sprintf("p%d", i%3), "xyz"[i%4%3:][:1]
		ttl := ""
		if i%5 == 2 {
			ttl = `,"ttl":5` // expires below, and waits for the purge
		} else {
			want["k="+k]++
			want["pk="+p]++
			if i > 40 {
				want["n>40"]++
			}
		}
		body := fmt.Sprintf(`{"id":"d%02d","pk":%q,"k":%q,"n":%d,"tags":["a"]%s}`, i, p, k, i, ttl)
		if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(p)}, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	te.clock.Advance(10 * time.Second)
	return []countCase{
		{"SELECT VALUE COUNT(1) FROM c WHERE c.k = 'x'", nil, want["k=x"], true},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.k IN ('y', 'z')", nil, want["k=y"] + want["k=z"], true},
		{"SELECT COUNT(1) AS n FROM c WHERE c.k = 'z'", nil, want["k=z"], true},
		{"SELECT VALUE COUNT(1) FROM c", pk("p1"), want["pk=p1"], true},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.k = 'q'", nil, 0, true},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.n > 40", nil, want["n>40"], true},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.n BETWEEN 0 AND 1000", nil, want["k=x"] + want["k=y"] + want["k=z"], true},
		{"SELECT VALUE COUNT(1) FROM c WHERE ARRAY_CONTAINS(c.tags, 'a')", nil, want["k=x"] + want["k=y"] + want["k=z"], false},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.k = 'x' AND c.pk = 'p0'", nil, -1, false},
	}
}

// countCase is a count query of countFixture: want is its live count (-1:
// not checked), stored whether a store that counts counts it.
type countCase struct {
	text   string
	p      lethe.PartitionKey
	want   int
	stored bool
}

// TestCountsByTheStore: on a store that counts (kv.Counter), a count whose
// WHERE is one exact equality, IN or range of numbers, or that is scoped to
// a partition, is counted by the store, less the documents expired and not yet purged that
// have an entry in the ranges counted; the count is the one the entries
// read one by one give. Here the store's count is a scan that counts its
// calls; TestCountsOnPostgres counts on PostgreSQL.
func TestCountsByTheStore(t *testing.T) {
	te := newTestEngine(t)
	for _, c := range countFixture(t, te) {
		q, err := parseStatement(c.text)
		if err != nil {
			t.Fatal(err)
		}
		counted := map[bool]string{}
		calls := 0
		for _, byStore := range []bool{false, true} {
			err := te.store.View(ctx, func(r kv.Reader) error {
				now := te.clock.Now()
				s, err := te.scope(r, "db", "c", now.Unix())
				if err != nil {
					return err
				}
				if byStore {
					r = storeCounter{r, &calls}
				}
				page, err := s.queryPage(r, q, queryHash(c.text, nil), QueryOptions{Text: c.text, PK: c.p, MaxItems: 10}, now, 0)
				if err != nil {
					return err
				}
				counted[byStore] = strings.Join(rowStrings(page.Rows), " ")
				return nil
			})
			if err != nil {
				t.Fatalf("%s: %v", c.text, err)
			}
		}
		if counted[true] != counted[false] {
			t.Errorf("%s in %v: counted by the store %s, read %s", c.text, c.p, counted[true], counted[false])
		}
		if c.want >= 0 && counted[true] != fmt.Sprint(c.want) && counted[true] != fmt.Sprintf(`{"n":%d}`, c.want) {
			t.Errorf("%s in %v: %s, want %d", c.text, c.p, counted[true], c.want)
		}
		if (calls > 0) != c.stored {
			t.Errorf("%s in %v: the store counted %d times, want counted by the store %v", c.text, c.p, calls, c.stored)
		}
	}
}

// TestCountsOnPostgres runs countFixture's counts on PostgreSQL, which
// counts index entries where they are.
func TestCountsOnPostgres(t *testing.T) {
	te := newPostgresEngine(t)
	for _, c := range countFixture(t, te) {
		page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: c.text, PK: c.p, MaxItems: 10})
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		got := strings.Join(rowStrings(page.Rows), " ")
		if c.want >= 0 && got != fmt.Sprint(c.want) && got != fmt.Sprintf(`{"n":%d}`, c.want) {
			t.Errorf("%s in %v: %s, want %d", c.text, c.p, got, c.want)
		}
	}
}

// TestOrderedTiesWithOffsets: an ORDER BY of several keys from a composite
// index, with many documents sharing every key, gives its rows in the
// executor's order (equal keys in insertion order) whichever way each key
// goes, so that an OFFSET that passes over documents unread (query.Skipper)
// skips the right ones, and page after page agrees.
func TestOrderedTiesWithOffsets(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1,"indexingPolicy":{"compositeIndexes":[`+
		`[{"path":"/k"},{"path":"/n","order":"descending"}],[{"path":"/k"},{"path":"/n"}]]}`)
	type doc struct {
		id string
		k  string
		n  int
	}
	var docs []doc
	for i := range 70 {
		d := doc{id: fmt.Sprintf("d%02d", i), k: "xy"[(i/3)%2:][:1], n: (i * 3) % 5}
		docs = append(docs, d)
		body := fmt.Sprintf(`{"id":%q,"pk":"p%d","k":%q,"n":%d}`, d.id, i%3, d.k, d.n)
		if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(fmt.Sprintf("p%d", i%3))}, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	for _, dirs := range [][2]bool{{false, true}, {false, false}, {true, false}, {true, true}} {
		order := func(desc bool) string {
			if desc {
				return " DESC"
			}
			return ""
		}
		text := "SELECT c.id FROM c ORDER BY c.k" + order(dirs[0]) + ", c.n" + order(dirs[1])
		want := slices.Clone(docs)
		slices.SortStableFunc(want, func(a, b doc) int {
			c := strings.Compare(a.k, b.k)
			if dirs[0] {
				c = -c
			}
			if c != 0 {
				return c
			}
			c = a.n - b.n
			if dirs[1] {
				c = -c
			}
			return c
		})
		var ids []string
		for _, d := range want {
			ids = append(ids, fmt.Sprintf(`{"id":%q}`, d.id))
		}
		var plan sourcePlan
		te.withPlan("c", text, nil, nil, func(_ querySource, p sourcePlan) { plan = p })
		if plan.sorted != 2 {
			t.Errorf("%s: read in the order of %d keys, want both from a composite index", text, plan.sorted)
		}
		for _, window := range [][2]int{{0, 70}, {5, 7}, {13, 20}, {31, 2}, {66, 10}} {
			q := fmt.Sprintf("%s OFFSET %d LIMIT %d", text, window[0], window[1])
			w := ids[min(window[0], len(ids)):min(window[0]+window[1], len(ids))]
			for _, size := range []int{3, 100} {
				if got := te.queryAll("c", q, nil, size); !slices.Equal(got, w) {
					t.Errorf("%s, pages of %d:\n got %s\nwant %s", q, size, strings.Join(got, " "), strings.Join(w, " "))
				}
			}
		}
	}
}
