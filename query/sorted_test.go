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
	var made []*countingSource
	rows := pageThrough(t, q, func() Source {
		src := mk()
		made = append(made, src)
		return src
	}, ExecOptions{PageSize: size, SortedKeys: keysIf(sorted), Unordered: sorted}, nil)
	pulled := 0
	for _, src := range made {
		pulled += src.pulled
	}
	return rows, pulled
}

// pageThrough runs q to its last page, each page over a fresh source from
// mk with opts, whose After and Emitted it sets page by page, and returns
// every row; check, when not nil, sees each page.
func pageThrough(t *testing.T, q *Query, mk func() Source, opts ExecOptions, check func(Page)) []string {
	t.Helper()
	var rows []string
	for range 10_000 {
		page, err := q.Execute(mk(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if check != nil {
			check(*page)
		}
		for _, r := range page.Rows {
			rows = append(rows, string(r))
		}
		if !page.More {
			return rows
		}
		opts.After, opts.Emitted = page.Last, page.Emitted
	}
	t.Fatal("no end")
	return nil
}

// byNumber returns sources of docs (document i has seq i+1) sorted by their
// number at name in the direction desc says, ties in seq order, as an index
// in order yields them.
func byNumber(docs []*jsonv.Object, name string, desc bool) func() *countingSource {
	idx := make([]int, len(docs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool {
		ai, _ := docs[idx[i]].Get(name)
		aj, _ := docs[idx[j]].Get(name)
		if desc {
			return ai.(jsonv.Number).Float64() > aj.(jsonv.Number).Float64()
		}
		return ai.(jsonv.Number).Float64() < aj.(jsonv.Number).Float64()
	})
	return func() *countingSource {
		s := &sliceSource{}
		for _, i := range idx {
			s.docs = append(s.docs, docs[i])
			s.seqs = append(s.seqs, uint64(i+1))
		}
		return &countingSource{sliceSource: s}
	}
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
	byA := func(desc bool) func() *countingSource { return byNumber(docs, "a", desc) }
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

// TestTiesInSeqOrder: over a source sorted by the first key with ties in
// ascending seq, a first page of one key and one row per document stops at
// its last row, where hundreds of documents share that row's key; and every
// query (several keys, JOIN, paging) gives exactly the rows of the unsorted
// run.
func TestTiesInSeqOrder(t *testing.T) {
	var docs []*jsonv.Object
	for i := range 2000 {
		o, _ := jsonv.ParseObject([]byte(fmt.Sprintf(`{"id":"d%d","a":%d,"b":"%c","t":[%d,%d]}`, i, i%5, 'a'+rune(i%3), i%7, i%4)))
		docs = append(docs, o)
	}
	byA := func(desc bool) func() *countingSource { return byNumber(docs, "a", desc) }
	plain := func() *countingSource { return &countingSource{sliceSource: newSliceSource(docs)} }
	run := func(q *Query, mk func() *countingSource, size int, sorted, ties bool) []string {
		return pageThrough(t, q, func() Source { return mk() }, ExecOptions{PageSize: size, SortedKeys: keysIf(sorted), Unordered: sorted, TiesInSeqOrder: ties}, nil)
	}
	firstPagePulls := func(q *Query, src *countingSource, ties bool) int {
		if _, err := q.Execute(src, ExecOptions{PageSize: 10, SortedKeys: 1, Unordered: true, TiesInSeqOrder: ties}); err != nil {
			t.Fatal(err)
		}
		return src.pulled
	}
	for _, c := range []struct {
		q     string
		desc  bool
		early bool // one key, one row per document: a page pulls about a page
	}{
		{"SELECT c.id, c.a FROM c ORDER BY c.a DESC", true, true},
		{"SELECT c.id, c.a FROM c ORDER BY c.a", false, true},
		{"SELECT TOP 12 c.id FROM c WHERE c.b != 'c' ORDER BY c.a DESC", true, true},
		{"SELECT c.id FROM c ORDER BY c.a DESC OFFSET 3 LIMIT 9", true, true},
		{"SELECT c.id FROM c ORDER BY c.a, c.b DESC", false, false},
		{"SELECT c.id, x FROM c JOIN x IN c.t ORDER BY c.a DESC", true, false},
	} {
		q, err := Parse(c.q)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{1, 7} {
			want := run(q, plain, size, false, false)
			if got := run(q, byA(c.desc), size, true, true); !slices.Equal(got, want) {
				t.Errorf("%s, pages of %d: ties in seq order give %d rows %.200v, want %d rows %.200v", c.q, size, len(got), got, len(want), want)
			}
		}
		// 400 documents share each value of a.
		with, without := firstPagePulls(q, byA(c.desc)(), true), firstPagePulls(q, byA(c.desc)(), false)
		if c.early && (with > 30 || without < 400) || !c.early && with != without {
			t.Errorf("%s: the first page of 10 pulled %d documents with ties in seq order, %d without", c.q, with, without)
		}
	}
}

// keysIf is 1 for a source sorted by the first key, else 0.
func keysIf(sorted bool) int {
	if sorted {
		return 1
	}
	return 0
}

// TestSortedBySeveralKeys: over a source sorted by two keys, each in its own
// direction, with ties in ascending seq, every query gives exactly the rows
// of the unsorted run; a first page ordered by both keys pulls about a
// page where hundreds of documents share the first key; and ResumeKeys
// returns each page's last row's keys and document.
func TestSortedBySeveralKeys(t *testing.T) {
	var docs []*jsonv.Object
	for i := range 800 {
		o, _ := jsonv.ParseObject([]byte(fmt.Sprintf(`{"id":"d%d","a":%d,"b":"%c%d","t":[%d,%d]}`, i, i%4, 'a'+rune(i%3), i%17, i%7, i%4)))
		docs = append(docs, o)
	}
	// By a ascending, then b descending, then seq: as a composite index of
	// /a and /b read in those directions yields them.
	idx := make([]int, len(docs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool {
		ai, _ := docs[idx[i]].Get("a")
		aj, _ := docs[idx[j]].Get("a")
		if x, y := ai.(jsonv.Number).Float64(), aj.(jsonv.Number).Float64(); x != y {
			return x < y
		}
		bi, _ := docs[idx[i]].Get("b")
		bj, _ := docs[idx[j]].Get("b")
		return bi.(string) > bj.(string)
	})
	sorted := func() *countingSource {
		s := &sliceSource{}
		for _, i := range idx {
			s.docs = append(s.docs, docs[i])
			s.seqs = append(s.seqs, uint64(i+1))
		}
		return &countingSource{sliceSource: s}
	}
	plain := func() *countingSource { return &countingSource{sliceSource: newSliceSource(docs)} }
	run := func(q *Query, src func() *countingSource, size, keys int, check func(Page)) []string {
		return pageThrough(t, q, func() Source { return src() }, ExecOptions{PageSize: size, SortedKeys: keys, Unordered: keys > 0, TiesInSeqOrder: keys > 0}, check)
	}
	for _, text := range []string{
		"SELECT c.id, c.a, c.b FROM c ORDER BY c.a, c.b DESC",
		"SELECT TOP 15 c.id FROM c WHERE c.id != 'd7' ORDER BY c.a, c.b DESC",
		"SELECT c.id FROM c ORDER BY c.a, c.b DESC OFFSET 4 LIMIT 11",
		"SELECT c.id FROM c ORDER BY c.a, c.b DESC, c.id DESC",
		"SELECT c.id, x FROM c JOIN x IN c.t ORDER BY c.a, c.b DESC",
	} {
		q, err := Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{3, 17} {
			want := run(q, plain, size, 0, nil)
			got := run(q, sorted, size, 2, nil)
			if !slices.Equal(got, want) {
				t.Errorf("%s, pages of %d: sorted by two keys gives %d rows %.200v, want %d rows %.200v", text, size, len(got), got, len(want), want)
			}
			if one := run(q, sorted, size, 1, nil); !slices.Equal(one, want) {
				t.Errorf("%s, pages of %d: read as sorted by the first key gives %d rows, want %d", text, size, len(one), len(want))
			}
		}
		// 200 documents share each value of a, 3 or 4 each pair of a and b:
		// sorted by both, a first page stops within a few pairs.
		pulled := func(keys int) int {
			src := sorted()
			if _, err := q.Execute(src, ExecOptions{PageSize: 10, SortedKeys: keys, Unordered: true, TiesInSeqOrder: true}); err != nil {
				t.Fatal(err)
			}
			return src.pulled
		}
		if two, one := pulled(2), pulled(1); two > 20 || one < 200 {
			t.Errorf("%s: the first page of 10 pulled %d documents sorted by two keys, %d by one", text, two, one)
		}
	}
	q, err := Parse("SELECT c.id, c.a, c.b FROM c ORDER BY c.a, c.b DESC")
	if err != nil {
		t.Fatal(err)
	}
	pages := 0
	run(q, sorted, 9, 2, func(p Page) {
		if !p.More {
			return
		}
		pages++
		keys, seq, ok := q.ResumeKeys(p.Last)
		last, _ := jsonv.ParseObject(p.Rows[len(p.Rows)-1])
		a, _ := last.Get("a")
		b, _ := last.Get("b")
		id, _ := last.Get("id")
		if !ok || len(keys) != 2 || !jsonv.Equal(keys[0], a) || !jsonv.Equal(keys[1], b) || fmt.Sprintf("d%d", seq-1) != id {
			t.Fatalf("ResumeKeys of the page ending with %s: %v, seq %d, %v", p.Rows[len(p.Rows)-1], keys, seq, ok)
		}
	})
	if pages < 50 {
		t.Fatalf("%d pages", pages)
	}
	if _, _, ok := q.ResumeKeys(nil); ok {
		t.Error("ResumeKeys of no cursor")
	}
	if q2, _ := Parse("SELECT c.id FROM c ORDER BY c.t"); q2 != nil {
		// An array key: no place to resume at.
		p, err := q2.Execute(plain(), ExecOptions{PageSize: 3})
		if err != nil || !p.More {
			t.Fatal(err)
		}
		if _, _, ok := q2.ResumeKeys(p.Last); ok {
			t.Error("ResumeKeys of a row whose key is an array")
		}
	}
}
