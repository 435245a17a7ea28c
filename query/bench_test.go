package query

import (
	"fmt"
	"sync"
	"testing"

	"github.com/lethe-db/lethe/jsonv"
)

// benchDocs returns n documents like {"id":"7","n":7,"g":"g3","tags":[...]}.
func benchDocs(n int) []*jsonv.Object {
	docs := make([]*jsonv.Object, n)
	for i := range docs {
		o := jsonv.NewObject(5)
		o.Set("id", fmt.Sprint(i))
		o.Set("n", jsonv.NumberFromFloat(float64(i%1000)))
		o.Set("g", fmt.Sprintf("g%d", i%10))
		o.Set("name", fmt.Sprintf("name-%d", i))
		o.Set("tags", []jsonv.Value{"a", "b", jsonv.NumberFromFloat(float64(i % 7))})
		docs[i] = o
	}
	return docs
}

func benchQuery(b *testing.B, src string, docs []*jsonv.Object, pageSize int) {
	q := mustParse(b, src)
	s := newSliceSource(docs)
	params := map[string]jsonv.Value{"v": jsonv.Number("500")}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.i = 0
		if _, err := q.Execute(s, ExecOptions{Params: params, PageSize: pageSize}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(docs)), "ns/doc")
}

// docs100k builds the benchmark documents on first use, not in every test run.
var docs100k = sync.OnceValue(func() []*jsonv.Object { return benchDocs(100_000) })

// An index lookup hands Execute only the matching documents: the cost is
// that of the rows returned.
func BenchmarkIndexedEquality(b *testing.B) {
	var matching []*jsonv.Object
	for _, d := range docs100k() {
		if n, _ := d.Get("n"); n == jsonv.Number("500") {
			matching = append(matching, d)
		}
	}
	benchQuery(b, "SELECT * FROM c WHERE c.n = @v", matching, 100)
}

func BenchmarkScanFilter(b *testing.B) {
	benchQuery(b, "SELECT * FROM c WHERE c.n = @v AND c.g = 'g0'", docs100k(), 100)
}

func BenchmarkScanProject(b *testing.B) {
	benchQuery(b, "SELECT c.id, c.n FROM c WHERE c.n > 990", docs100k(), 1000)
}

func BenchmarkOrderByTop(b *testing.B) {
	benchQuery(b, "SELECT TOP 10 c.id FROM c ORDER BY c.name DESC", docs100k(), 100)
}

func BenchmarkGroupBy(b *testing.B) {
	benchQuery(b, "SELECT c.g, COUNT(1) AS n, AVG(c.n) AS a FROM c GROUP BY c.g", docs100k(), 100)
}

func BenchmarkJoinExists(b *testing.B) {
	benchQuery(b, "SELECT VALUE c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 6)", docs100k()[:10000], 100)
}
