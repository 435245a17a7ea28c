package engine

import (
	"fmt"
	"testing"
)

// BenchmarkChangeFeedRead reads a page of 100 changes from a position 100
// changes before the end, in containers of several sizes: the cost should
// not grow with the container (O(changes returned)).
func BenchmarkChangeFeedRead(b *testing.B) {
	for _, docs := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("docs=%d", docs), func(b *testing.B) {
			e := benchEngine(b, false)
			body := func(i int) []byte { return fmt.Appendf(nil, `{"id":"d%d","pk":"p%d","n":%d}`, i, i%100, i) }
			for i := range docs - 100 {
				if _, err := e.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(fmt.Sprintf("p%d", i%100))}, body(i)); err != nil {
					b.Fatal(err)
				}
			}
			mark, err := e.ReadChangeFeed(ctx, "db", "c", ChangeFeedOptions{Start: FromNow})
			if err != nil {
				b.Fatal(err)
			}
			for i := docs - 100; i < docs; i++ {
				if _, err := e.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(fmt.Sprintf("p%d", i%100))}, body(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				page, err := e.ReadChangeFeed(ctx, "db", "c", ChangeFeedOptions{Continuation: mark.ETag, MaxItems: 100})
				if err != nil || len(page.Docs) != 100 {
					b.Fatalf("%d documents, %v", len(page.Docs), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/change")
		})
	}
}
