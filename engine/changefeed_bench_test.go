package engine

import (
	"fmt"
	"testing"
	"time"
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

// BenchmarkChangeFeedReadAllVersions reads a page of 100 changes of the all
// versions and deletes feed from a position 100 changes before the end, in
// containers of several sizes: creates (from the log), or TTL expiries
// (synthesised from the expiry index, no purge having run). The cost should
// not grow with the container.
func BenchmarkChangeFeedReadAllVersions(b *testing.B) {
	for _, kind := range []string{"creates", "expiries"} {
		for _, docs := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/docs=%d", kind, docs), func(b *testing.B) {
				clock := newFakeClock()
				e := benchEngineWith(b, false, clock.Now, `"defaultTtl":-1,"changeFeedPolicy":{"retentionDuration":60}`)
				create := func(i int, ttl string) {
					body := fmt.Appendf(nil, `{"id":"d%d","pk":"p%d","n":%d%s}`, i, i%100, i, ttl)
					if _, err := e.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(fmt.Sprintf("p%d", i%100))}, body); err != nil {
						b.Fatal(err)
					}
				}
				for i := range docs - 100 {
					if kind == "expiries" && i >= docs-200 {
						create(i, `,"ttl":5`) // expire after the mark
					} else {
						create(i, "")
					}
				}
				clock.Advance(time.Second)
				mark, err := e.ReadChangeFeed(ctx, "db", "c", ChangeFeedOptions{Start: FromNow, AllVersions: true})
				if err != nil {
					b.Fatal(err)
				}
				if kind == "creates" {
					for i := docs - 100; i < docs; i++ {
						create(i, "")
					}
				}
				clock.Advance(10 * time.Second)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					page, err := e.ReadChangeFeed(ctx, "db", "c", ChangeFeedOptions{Continuation: mark.ETag, MaxItems: 100, AllVersions: true})
					if err != nil || len(page.Docs) != 100 {
						b.Fatalf("%d records, %v", len(page.Docs), err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/change")
			})
		}
	}
}
