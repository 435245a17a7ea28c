package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
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
