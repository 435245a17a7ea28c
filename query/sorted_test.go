package query

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/lethe-db/lethe/jsonv"
)

// countingSource counts the documents an execution pulls.
type countingSource struct {
	*sliceSource
	pulled int
}

func (c *countingSource) Next() (*jsonv.Object, uint64, bool, error) {
	o, seq, ok, err := c.sliceSource.Next()
	if ok {
		c.pulled++
	}
	return o, seq, ok, err
}

// runPages runs q to completion with the given page size over fresh sources
// from mk, and returns every row and the documents pulled in total.
func runPages(t *testing.T, q *Query, mk func() *countingSource, size int, sorted bool) ([]string, int) {
	t.Helper()
	var rows []string
	var after Cursor
	emitted, pulled := 0, 0
	for range 10_000 {
		src := mk()
		page, err := q.Execute(src, ExecOptions{PageSize: size, After: after, Emitted: emitted, SortedByFirstKey: sorted, Unordered: sorted})
		if err != nil {
			t.Fatal(err)
		}
		pulled += src.pulled
		for _, r := range page.Rows {
			rows = append(rows, string(r))
		}
		if !page.More {
			return rows, pulled
		}
		after, emitted = page.Last, page.Emitted
	}
	t.Fatal("no end")
	return nil, 0
}

// TestSortedByFirstKey: an ORDER BY over a source sorted by the first key gives
// exactly the rows of the unsorted run, reading about the page's worth of
// documents instead of all of them.
func TestSortedByFirstKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var docs []*jsonv.Object
	for i := range 2000 {
		o, _ := jsonv.ParseObject([]byte(fmt.Sprintf(`{"id":"d%d","a":%d,"b":"%c"}`, i, rng.IntN(300), 'a'+rune(rng.IntN(5)))))
		docs = append(docs, o)
	}
	byA := func(desc bool) func() *countingSource {
		sorted := slices.Clone(docs)
		sort.SliceStable(sorted, func(i, j int) bool {
			ai, _ := sorted[i].Get("a")
			aj, _ := sorted[j].Get("a")
			if desc {
				return ai.(jsonv.Number).Float64() > aj.(jsonv.Number).Float64()
			}
			return ai.(jsonv.Number).Float64() < aj.(jsonv.Number).Float64()
		})
		return func() *countingSource {
			// Keep each document's own seq: the source order differs from seq order.
			s := &sliceSource{}
			for _, d := range sorted {
				idx := slices.Index(docs, d)
				s.docs = append(s.docs, d)
				s.seqs = append(s.seqs, uint64(idx+1))
			}
			return &countingSource{sliceSource: s}
		}
	}
	plain := func() *countingSource { return &countingSource{sliceSource: newSliceSource(docs)} }
	for _, c := range []struct {
		q    string
		desc bool
	}{
		{"SELECT c.id, c.a FROM c ORDER BY c.a OFFSET 0 LIMIT 10", false},
		{"SELECT c.id, c.a FROM c ORDER BY c.a DESC OFFSET 0 LIMIT 10", true},
		{"SELECT c.id FROM c ORDER BY c.a, c.b DESC", false},
		{"SELECT TOP 25 c.id FROM c WHERE c.b != 'c' ORDER BY c.a DESC, c.id", true},
	} {
		q, err := Parse(c.q)
		if err != nil {
			t.Fatal(err)
		}
		want, scanned := runPages(t, q, plain, 7, false)
		got, pulled := runPages(t, q, byA(c.desc), 7, true)
		if !slices.Equal(got, want) {
			t.Errorf("%s: sorted source gives\n%v\nwant\n%v", c.q, got, want)
		}
		t.Logf("%s: %d rows; pulled %d documents sorted vs %d unsorted", c.q, len(want), pulled, scanned)
		if len(want) <= 25 && pulled*10 > scanned {
			t.Errorf("%s: the sorted run pulled %d documents, the scan %d: no early stop", c.q, pulled, scanned)
		}
	}
}
