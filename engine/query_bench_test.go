package engine

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/kv/pebblekv"
	"github.com/lethe-db/lethe/kv/pgkv"
	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

// Query benchmarks over LETHE_BENCH_QUERY_DOCS documents (default 100,000) in
// two containers with the same documents: "idx" with the default indexing
// policy and "scan" with indexing mode none, which forces every query to scan.
//
//	go test ./engine -run '^$' -bench Query -benchtime 20x
//
// Compare ns/op of the index/… and scan/… runs of the same query.

// openQueryBench returns an engine over an in-memory store, serving every
// cross-partition query, with database "db", a function to call once the
// benchmark has loaded its documents, and a function that closes them.
//
// With LETHE_BENCH_STORE=postgres the store is a fresh schema of the test
// binary's PostgreSQL (pgtest) instead of an in-memory Pebble store, and
// settling it runs VACUUM ANALYZE on its table, as autovacuum does soon
// after a load in a running database: until then PostgreSQL plans with no
// statistics and counts index entries by visiting the table.
func openQueryBench(b *testing.B) (e *Engine, settle, closeAll func()) {
	var store kv.Store
	var err error
	settle = func() {}
	if os.Getenv("LETHE_BENCH_STORE") == "postgres" {
		dsn, schema := pgtest.DSN(b), pgtest.Schema(b)
		store, err = pgkv.Open(context.Background(), pgkv.Options{DSN: dsn, Schema: schema})
		settle = func() {
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, "VACUUM ANALYZE "+pgx.Identifier{schema, "kv"}.Sanitize()); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		store, err = pebblekv.Open(pebblekv.Options{InMemory: true})
	}
	if err != nil {
		b.Fatal(err)
	}
	e, err = Open(context.Background(), Options{Store: store, DisableBackground: true, ServeAllCrossPartitionQueries: true})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.CreateDatabase(ctx, []byte(`{"id":"db"}`)); err != nil {
		b.Fatal(err)
	}
	return e, settle, func() { e.Close(); store.Close() }
}

// queryBenchEngine loads the two containers and returns the engine and a
// function that closes it and its store.
func queryBenchEngine(b *testing.B) (*Engine, func()) {
	n := benchEnv("LETHE_BENCH_QUERY_DOCS", 100_000)
	e, settle, closeAll := openQueryBench(b)
	{
		for _, c := range []string{
			`{"id":"idx","partitionKey":{"paths":["/pk"]}}`,
			`{"id":"scan","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"indexingMode":"none","automatic":false}}`,
		} {
			if _, err := e.CreateContainer(ctx, "db", []byte(c)); err != nil {
				b.Fatal(err)
			}
		}
		ops := make([]BatchOp, 0, 100)
		for i := 0; i < n; i += 100 {
			ops = ops[:0]
			p := fmt.Sprintf("p%d", i/100)
			for j := i; j < min(n, i+100); j++ {
				// k has 10,000 distinct values: an equality matches n/10,000 documents.
				ops = append(ops, BatchOp{Type: "Create", Body: []byte(fmt.Sprintf(`{"id":"d%d","pk":"%s","k":%d,"t":%d,"name":"user %d","tags":["a","b"]}`, j, p, j%10_000, (j*7919)%n, j))})
			}
			for _, c := range []string{"idx", "scan"} {
				if _, ok, err := e.ExecuteBatch(ctx, "db", c, lethe.PartitionKey{p}, ops); err != nil || !ok {
					b.Fatalf("load: %v", err)
				}
			}
		}
	}
	settle()
	return e, closeAll
}

func BenchmarkQuery(b *testing.B) {
	e, closeAll := queryBenchEngine(b)
	defer closeAll()
	queries := []struct{ name, text string }{
		{"equality", "SELECT * FROM c WHERE c.k = 4242"},
		{"in-100rows", "SELECT * FROM c WHERE c.k IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)"},
		{"orderby-desc-limit10", "SELECT c.id, c.t FROM c ORDER BY c.t DESC OFFSET 0 LIMIT 10"},
		{"orderby-range-limit10", "SELECT c.id, c.t FROM c WHERE c.t >= 0 ORDER BY c.t OFFSET 0 LIMIT 10"},
		{"orderby-asc-limit10", "SELECT c.id, c.t FROM c ORDER BY c.t OFFSET 0 LIMIT 10"},
		{"like-prefix", "SELECT * FROM c WHERE c.name LIKE 'user 4242%'"},
		{"or-equalities", "SELECT * FROM c WHERE c.k = 4242 OR c.k = 17"},
	}
	for _, q := range queries {
		for _, coll := range []string{"idx", "scan"} {
			b.Run(q.name+"/"+coll, func(b *testing.B) {
				rows := 0
				for range b.N {
					page, err := e.QueryDocuments(ctx, "db", coll, QueryOptions{Text: q.text, MaxItems: 100})
					if err != nil {
						b.Fatal(err)
					}
					rows = len(page.Rows)
				}
				b.ReportMetric(float64(rows), "rows/op")
			})
		}
	}
}

// BenchmarkQueryFirstPage is the first page of 10 of queries that match many
// more documents: the cost should follow the page, not the matches (issue
// 21). Each partition holds 100 documents; every document has tags "a", "b".
// A partition's scan reads its partition through the partition key's index,
// where a scan of the container would read every document inserted before.
//
//	go test ./engine -run '^$' -bench QueryFirstPage -benchmem
func BenchmarkQueryFirstPage(b *testing.B) {
	e, closeAll := queryBenchEngine(b)
	defer closeAll()
	queries := []struct {
		name, text string
		pk         lethe.PartitionKey
	}{
		{"pk-100matches", "SELECT * FROM c WHERE c.pk = 'p42'", lethe.PartitionKey{"p42"}},
		{"scan-reference", "SELECT * FROM c", nil},
		{"partition-scan", "SELECT * FROM c", lethe.PartitionKey{"p142"}},
		{"in-2x100matches", "SELECT * FROM c WHERE c.pk IN ('p42', 'p7')", nil},
		// ranges over the whole container: most of it, and a tenth
		{"range-most", "SELECT * FROM c WHERE c.t >= 1000", nil},
		{"range-tenth", "SELECT * FROM c WHERE c.t < 10000", nil},
	}
	for _, q := range queries {
		b.Run(q.name, func(b *testing.B) {
			b.ReportAllocs()
			if rows := benchPages(b, e, "idx", QueryOptions{Text: q.text, PK: q.pk, MaxItems: 10}); rows != 10 {
				b.Fatalf("%d rows, want a page of 10", rows)
			}
		})
	}
}

// BenchmarkReadFeedPage is a page of the read feed (a container's documents
// in insertion order), of all partitions and of one.
//
//	go test ./engine -run '^$' -bench ReadFeedPage -benchmem
func BenchmarkReadFeedPage(b *testing.B) {
	e, closeAll := queryBenchEngine(b)
	defer closeAll()
	for _, c := range []struct {
		name string
		pk   lethe.PartitionKey
		size int
	}{{"all-100", nil, 100}, {"pk-10", lethe.PartitionKey{"p42"}, 10}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			docs := 0
			for range b.N {
				page, err := e.ReadFeed(ctx, "db", "idx", FeedOptions{PK: c.pk, MaxItems: c.size})
				if err != nil {
					b.Fatal(err)
				}
				docs = len(page.Docs)
			}
			if docs != c.size {
				b.Fatalf("%d documents, want a page of %d", docs, c.size)
			}
		})
	}
}

// BenchmarkQueryLaterPage is the 50th page of 10 of queries read from the
// index: a continuation resumes at its row's place, so it should cost what
// the first page costs. The last two run after a document without t is
// stored, which no count can then prove every document has: the first page
// of an ascending ORDER BY c.t finds it by the seqs t's entries lack, and a
// later one resumes after a defined t, with every document without it
// behind.
//
//	go test ./engine -run '^$' -bench QueryLaterPage -benchmem
func BenchmarkQueryLaterPage(b *testing.B) {
	e, closeAll := queryBenchEngine(b)
	defer closeAll()
	later := func(name, text string, pk lethe.PartitionKey) {
		b.Run(name, func(b *testing.B) {
			cont := ""
			for range 49 {
				page, err := e.QueryDocuments(ctx, "db", "idx", QueryOptions{Text: text, PK: pk, MaxItems: 10, Continuation: cont})
				if err != nil || page.Continuation == "" {
					b.Fatalf("paging to the 50th page: %v", err)
				}
				cont = page.Continuation
			}
			b.ReportAllocs()
			b.ResetTimer()
			if rows := benchPages(b, e, "idx", QueryOptions{Text: text, PK: pk, MaxItems: 10, Continuation: cont}); rows != 10 {
				b.Fatalf("%d rows, want a page of 10", rows)
			}
		})
	}
	later("orderby-desc", "SELECT c.id, c.t FROM c ORDER BY c.t DESC", nil)
	later("orderby-asc", "SELECT c.id, c.t FROM c ORDER BY c.t", nil)
	later("orderby-range", "SELECT c.id, c.t FROM c WHERE c.t >= 0 ORDER BY c.t", nil)
	later("in-6x100matches", "SELECT * FROM c WHERE c.pk IN ('p1', 'p2', 'p3', 'p4', 'p5', 'p6')", nil)
	if _, err := e.CreateDocument(ctx, DocRef{DB: "db", Coll: "idx", PK: lethe.PartitionKey{"p0"}}, []byte(`{"id":"no-t","pk":"p0"}`)); err != nil {
		b.Fatal(err)
	}
	later("orderby-asc-one-lacks", "SELECT c.id, c.t FROM c ORDER BY c.t", nil)
	// The first page: the document without t first, then nine from the
	// index.
	b.Run("orderby-asc-one-lacks-first", func(b *testing.B) {
		b.ReportAllocs()
		if rows := benchPages(b, e, "idx", QueryOptions{Text: "SELECT c.id, c.t FROM c ORDER BY c.t", MaxItems: 10}); rows != 10 {
			b.Fatalf("%d rows, want a page of 10", rows)
		}
	})
}

// BenchmarkPartitionEquality is the first page of 10 of a partition-scoped
// query whose WHERE is an equality on another path, over 20,000 documents in
// 1,000 partitions of 20 (loaded partition by partition): a value most
// documents share, whose index list holds every partition's, and a value
// one document holds. The first should cost about the partition, the second
// about its one entry (see equalityRace); and, across partitions, the
// common value and the one-document value together; ORDER BY oid DESC in
// a partition written early (last in that order) and late; and a range most
// documents fall in, and one that five do.
//
//	go test ./engine -run '^$' -bench PartitionEquality -benchmem
func BenchmarkPartitionEquality(b *testing.B) {
	e := benchEngine(b, false)
	for p := range 1000 {
		ops := make([]BatchOp, 0, 20)
		for j := range 20 {
			typ := "order"
			if j%5 == 0 {
				typ = "user"
			}
			ops = append(ops, BatchOp{Type: "Create", Body: []byte(fmt.Sprintf(`{"id":"d%d","pk":"p%d","type":%q,"oid":%d}`, j, p, typ, p*20+j))})
		}
		if _, ok, err := e.ExecuteBatch(ctx, "db", "c", lethe.PartitionKey{fmt.Sprintf("p%d", p)}, ops); err != nil || !ok {
			b.Fatalf("load: %v", err)
		}
	}
	for _, q := range []struct {
		name, text string
		pk         lethe.PartitionKey
	}{
		{"common-value", "SELECT * FROM c WHERE c.type = 'order'", lethe.PartitionKey{"p700"}},
		{"one-document", "SELECT * FROM c WHERE c.oid = 14005", lethe.PartitionKey{"p700"}},
		{"common-values-in", "SELECT * FROM c WHERE c.type IN ('order', 'refund')", lethe.PartitionKey{"p700"}},
		{"cross-partition-two-values", "SELECT * FROM c WHERE c.type = 'order' AND c.oid = 14006", nil},
		{"orderby-early-partition", "SELECT * FROM c ORDER BY c.oid DESC", lethe.PartitionKey{"p100"}},
		{"orderby-late-partition", "SELECT * FROM c ORDER BY c.oid DESC", lethe.PartitionKey{"p999"}},
		{"range-common", "SELECT * FROM c WHERE c.oid >= 2000", lethe.PartitionKey{"p100"}},
		{"range-rare", "SELECT * FROM c WHERE c.oid >= 19995", lethe.PartitionKey{"p999"}},
	} {
		b.Run(q.name, func(b *testing.B) {
			b.ReportAllocs()
			if benchPages(b, e, "c", QueryOptions{Text: q.text, PK: q.pk, MaxItems: 10}) == 0 {
				b.Fatal("no rows")
			}
		})
	}
}

// benchPages runs the query page opts b.N times in container coll of
// database "db" and returns the rows of the last.
func benchPages(b *testing.B, e *Engine, coll string, opts QueryOptions) int {
	rows := 0
	for range b.N {
		page, err := e.QueryDocuments(ctx, "db", coll, opts)
		if err != nil {
			b.Fatal(err)
		}
		rows = len(page.Rows)
	}
	return rows
}

// BenchmarkPartitionOrderByInterleaved is an ORDER BY in one partition of
// 100 written in turns (20,000 documents): the partition's documents are
// spread evenly down the index, the case between a partition written lately
// and one written long ago, where the ordered read and the partition cost
// about the same (see raceOrdered).
//
//	go test ./engine -run '^$' -bench PartitionOrderByInterleaved -benchmem
func BenchmarkPartitionOrderByInterleaved(b *testing.B) {
	e := benchEngine(b, false)
	for i := range 20000 {
		p := fmt.Sprintf("p%d", i%100)
		if _, err := e.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: lethe.PartitionKey{p}}, []byte(fmt.Sprintf(`{"id":"d%d","pk":%q,"oid":%d}`, i, p, i))); err != nil {
			b.Fatal(err)
		}
	}
	for _, size := range []int{10, 100} {
		b.Run(fmt.Sprintf("page-%d", size), func(b *testing.B) {
			b.ReportAllocs()
			if rows := benchPages(b, e, "c", QueryOptions{Text: "SELECT * FROM c ORDER BY c.oid DESC", PK: lethe.PartitionKey{"p50"}, MaxItems: size}); rows != size {
				b.Fatalf("%d rows, want a page of %d", rows, size)
			}
		})
	}
}

// BenchmarkPartitionNewest is `lethe bench`'s query-order workload below
// HTTP: the newest ten documents of one partition (ORDER BY c._ts DESC, the
// partition key in the request) among 30,000 in 100 partitions written in
// turns, 7,500 a second as bench's population writes them, so that about 75
// of each partition share each _ts. With a composite index on /pk and /_ts a
// page reads about ten entries and ten documents; with the path index of
// _ts it reads a page of the partition among every partition's entries.
//
//	go test ./engine -run '^$' -bench PartitionNewest -benchmem
func BenchmarkPartitionNewest(b *testing.B) {
	for _, c := range []struct{ name, extra string }{
		{"path-index", ""},
		{"composite", `"indexingPolicy":{"compositeIndexes":[[{"path":"/pk"},{"path":"/_ts","order":"descending"}]]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			clock := newFakeClock()
			e := benchEngineWith(b, false, clock.Now, c.extra)
			for i := range 30000 {
				if i%7500 == 0 {
					clock.Advance(time.Second)
				}
				p := fmt.Sprintf("p%d", i%100)
				if _, err := e.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: lethe.PartitionKey{p}}, []byte(fmt.Sprintf(`{"id":"d%d","pk":%q,"k":%d}`, i, p, i/10))); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			if rows := benchPages(b, e, "c", QueryOptions{Text: "SELECT * FROM c ORDER BY c._ts DESC", PK: lethe.PartitionKey{"p42"}, MaxItems: 10}); rows != 10 {
				b.Fatalf("%d rows, want 10", rows)
			}
		})
	}
}

// BenchmarkPartitionCount counts one partition's documents (SELECT VALUE
// COUNT(1) FROM c, the key in the request) among 30,000 1 KB documents in
// 100 partitions: the count looks each document up, to leave out those that
// have expired, but parses none (Query.ReadsNoDocument).
//
//	go test ./engine -run '^$' -bench PartitionCount -benchmem
func BenchmarkPartitionCount(b *testing.B) {
	e := benchEngine(b, false)
	for i := range 30000 {
		p := fmt.Sprintf("p%d", i%100)
		if _, err := e.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: lethe.PartitionKey{p}}, []byte(fmt.Sprintf(`{"id":"d%d","pk":%q,"k":%d,"pad":"%0900d"}`, i, p, i/10, i))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	page, err := e.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT VALUE COUNT(1) FROM c", PK: lethe.PartitionKey{"p42"}})
	if err != nil || len(page.Rows) != 1 || string(page.Rows[0]) != "300" {
		b.Fatalf("count %q, %v; want 300", page.Rows, err)
	}
	benchPages(b, e, "c", QueryOptions{Text: "SELECT VALUE COUNT(1) FROM c", PK: lethe.PartitionKey{"p42"}})
}

// BenchmarkEqualityOrderBy is the first page of 10 of cross-partition
// queries that order by an indexed path and filter on another with an
// equality or IN: "the newest open items". Among 30,000 documents, 7,500 a
// second, a quarter "open", the ordered read finds a page after about forty
// entries, where the equality's list is 7,500 documents to read and sort;
// an id's equality is a list of one, read without a race.
//
//	go test ./engine -run '^$' -bench EqualityOrderBy -benchmem
func BenchmarkEqualityOrderBy(b *testing.B) {
	clock := newFakeClock()
	e := benchEngineWith(b, false, clock.Now, "")
	statuses := []string{"open", "closed", "pending", "failed"}
	for i := range 30000 {
		if i%7500 == 0 {
			clock.Advance(time.Second)
		}
		p := fmt.Sprintf("p%d", i%100)
		body := fmt.Sprintf(`{"id":"d%d","pk":%q,"status":%q,"t":%d}`, i, p, statuses[i%4], (i*7919)%30000)
		if _, err := e.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: lethe.PartitionKey{p}}, []byte(body)); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct{ name, text string }{
		{"eq-ts-desc", "SELECT * FROM c WHERE c.status = 'open' ORDER BY c._ts DESC"},
		{"in-t-desc", "SELECT * FROM c WHERE c.status IN ('open', 'failed') ORDER BY c.t DESC"},
		{"id-ts", "SELECT * FROM c WHERE c.id = 'd4242' ORDER BY c._ts"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			want := 10
			if c.name == "id-ts" {
				want = 1
			}
			if rows := benchPages(b, e, "c", QueryOptions{Text: c.text, MaxItems: 10, ServeAll: true}); rows != want {
				b.Fatalf("%d rows, want %d", rows, want)
			}
		})
	}
}

// BenchmarkRangeFirstPage is the first page of 10 of a range over a whole
// container of 30,000 documents of a kilobyte, whose matches lie where
// insertion order puts them: late ("n", which grows with insertion, as a
// creation time or a counter does) or spread over the container ("u", a
// permutation, as prices or scores are). Gathering the range's entries
// costs about its matches; the container in insertion order costs a page
// when the matches are spread, and every earlier document when they lie
// late; the two race (newScanRace).
//
// Documents are written in batches of 100 of one partition, in order, on
// the store openQueryBench opens (LETHE_BENCH_STORE).
//
//	go test ./engine -run '^$' -bench RangeFirstPage -benchmem
func BenchmarkRangeFirstPage(b *testing.B) {
	e, settle, closeAll := openQueryBench(b)
	defer closeAll()
	if _, err := e.CreateContainer(ctx, "db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]}}`)); err != nil {
		b.Fatal(err)
	}
	ops := make([]BatchOp, 0, 100)
	for i := 0; i < 30000; i += 100 {
		ops = ops[:0]
		p := fmt.Sprintf("p%d", i/100%100)
		for j := i; j < i+100; j++ {
			ops = append(ops, BatchOp{Type: "Create", Body: []byte(fmt.Sprintf(`{"id":"d%d","pk":%q,"n":%d,"u":%d,"pad":"%0900d"}`, j, p, j, (j*7919)%30000, j))})
		}
		if _, ok, err := e.ExecuteBatch(ctx, "db", "c", lethe.PartitionKey{p}, ops); err != nil || !ok {
			b.Fatalf("load: %v", err)
		}
	}
	settle()
	for _, c := range []struct{ name, text string }{
		{"spread-half", "SELECT * FROM c WHERE c.u >= 15000"},
		{"late-half", "SELECT * FROM c WHERE c.n >= 15000"},
		{"late-tenth", "SELECT * FROM c WHERE c.n >= 27000"},
		{"late-most", "SELECT * FROM c WHERE c.n >= 1000"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			if rows := benchPages(b, e, "c", QueryOptions{Text: c.text, MaxItems: 10}); rows != 10 {
				b.Fatalf("%d rows, want 10", rows)
			}
		})
	}
}
