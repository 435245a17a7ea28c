package engine

import (
	"cmp"
	"fmt"
	"testing"

	"github.com/lethe-db/lethe"
)

// BenchmarkQueryShapes is the first page of 10 of the queries applications
// commonly run across a container (ServeAll, as
// --serve-all-cross-partition-queries serves them), over
// LETHE_BENCH_QUERY_DOCS documents (default 100,000) in partitions of 100:
// a status of four values, a user of 5,000, a number k that cycles through
// 10,000 values, a number t that is a permutation spread over the
// container, a score, a name and tags. A survey: a shape whose page costs
// tens of milliseconds or more reads every match or every document (groups,
// DISTINCT and CONTAINS do; counts read every entry), where the others read
// about a page.
//
//	go test ./engine -run '^$' -bench QueryShapes -benchtime 5x
func BenchmarkQueryShapes(b *testing.B) {
	n := benchEnv("LETHE_BENCH_QUERY_DOCS", 100_000)
	e, settle, closeAll := openQueryBench(b)
	defer closeAll()
	// "composite" holds the same documents under composite indexes of
	// /status and /t (descending), and of /pk, /status and /t: the ORDER BY
	// of two keys that Cosmos DB serves only with such an index.
	for _, c := range []string{
		`{"id":"idx","partitionKey":{"paths":["/pk"]}}`,
		`{"id":"composite","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"compositeIndexes":[` +
			`[{"path":"/status"},{"path":"/t","order":"descending"}],[{"path":"/pk"},{"path":"/status"},{"path":"/t","order":"descending"}]]}}`,
	} {
		if _, err := e.CreateContainer(ctx, "db", []byte(c)); err != nil {
			b.Fatal(err)
		}
	}
	statuses := []string{"open", "closed", "pending", "failed"}
	ops := make([]BatchOp, 0, 100)
	for _, coll := range []string{"idx", "composite"} {
		for i := 0; i < n; i += 100 {
			ops = ops[:0]
			p := fmt.Sprintf("p%d", i/100)
			for j := i; j < min(n, i+100); j++ {
				ops = append(ops, BatchOp{Type: "Create", Body: []byte(fmt.Sprintf(`{"id":"d%d","pk":"%s","k":%d,"t":%d,"status":"%s","user":"u%d","name":"user %d","tags":["a","b"],"score":%d.5}`, j, p, j%10_000, (j*7919)%n, statuses[j%4], j%5000, j, j%1000))})
			}
			if _, ok, err := e.ExecuteBatch(ctx, "db", coll, lethe.PartitionKey{p}, ops); err != nil || !ok {
				b.Fatalf("load: %v", err)
			}
		}
	}
	settle()
	queries := []struct {
		name, text string
		pk         lethe.PartitionKey
		coll       string // "idx" unless named
	}{
		{"eq-status", "SELECT * FROM c WHERE c.status = 'open'", nil, ""},
		{"eq-status-order-ts", "SELECT * FROM c WHERE c.status = 'open' ORDER BY c._ts DESC", nil, ""},
		{"eq-status-order-t", "SELECT * FROM c WHERE c.status = 'open' ORDER BY c.t DESC", nil, ""},
		{"pk-eq-status-order-ts", "SELECT * FROM c WHERE c.status = 'open' ORDER BY c._ts DESC", lethe.PartitionKey{"p42"}, ""},
		{"top-user-order-t", "SELECT TOP 10 * FROM c WHERE c.user = 'u42' ORDER BY c.t DESC", nil, ""},
		{"range-t-order-t", "SELECT * FROM c WHERE c.t > 50000 ORDER BY c.t", nil, ""},
		{"range-t", "SELECT * FROM c WHERE c.t > 50000", nil, ""},
		{"range-k-order-t", "SELECT * FROM c WHERE c.k > 5000 ORDER BY c.t DESC", nil, ""},
		{"count-status", "SELECT VALUE COUNT(1) FROM c WHERE c.status = 'open'", nil, ""},
		{"count-all", "SELECT VALUE COUNT(1) FROM c", nil, ""},
		{"groupby-status", "SELECT c.status, COUNT(1) AS n FROM c GROUP BY c.status", nil, ""},
		{"startswith", "SELECT * FROM c WHERE STARTSWITH(c.name, 'user 4242')", nil, ""},
		{"array-contains", "SELECT * FROM c WHERE ARRAY_CONTAINS(c.tags, 'a')", nil, ""},
		{"order-t", "SELECT * FROM c ORDER BY c.t", nil, ""},
		{"offset-1000", "SELECT * FROM c ORDER BY c.t OFFSET 1000 LIMIT 10", nil, ""},
		{"offset-1000-desc", "SELECT c.id, c.t FROM c ORDER BY c.t DESC OFFSET 1000 LIMIT 10", nil, ""},
		{"offset-1000-eq-status", "SELECT * FROM c WHERE c.status = 'open' OFFSET 1000 LIMIT 10", nil, ""},
		{"offset-1000-all", "SELECT * FROM c OFFSET 1000 LIMIT 10", nil, ""},
		{"offset-last-desc", "SELECT * FROM c ORDER BY c.t DESC OFFSET 99995 LIMIT 10", nil, ""},
		{"pk-offset-50-ts", "SELECT * FROM c ORDER BY c._ts DESC OFFSET 50 LIMIT 10", lethe.PartitionKey{"p42"}, ""},
		{"in-status-order-ts", "SELECT * FROM c WHERE c.status IN ('open','closed') ORDER BY c._ts DESC", nil, ""},
		{"distinct-status", "SELECT DISTINCT VALUE c.status FROM c", nil, ""},
		{"eq-status-and-k", "SELECT * FROM c WHERE c.status = 'open' AND c.k = 4240", nil, ""},
		{"ne-status", "SELECT * FROM c WHERE c.status != 'open'", nil, ""},
		{"not-defined", "SELECT * FROM c WHERE NOT IS_DEFINED(c.missing)", nil, ""},
		{"like", "SELECT * FROM c WHERE c.name LIKE 'user 4242%'", nil, ""},
		{"contains", "SELECT * FROM c WHERE CONTAINS(c.name, '4242')", nil, ""},
		{"max-t", "SELECT VALUE MAX(c.t) FROM c", nil, ""},
		{"min-t-status", "SELECT VALUE MIN(c.t) FROM c WHERE c.status = 'open'", nil, ""},
		{"select-id-eq", "SELECT c.id FROM c WHERE c.status = 'open'", nil, ""},
		{"or-eq", "SELECT * FROM c WHERE c.user = 'u42' OR c.user = 'u43'", nil, ""},
		{"range-score", "SELECT * FROM c WHERE c.score >= 10 AND c.score < 20", nil, ""},
		{"order-two", "SELECT * FROM c ORDER BY c.status, c.t DESC", nil, ""},
		{"pk-order-t-two", "SELECT * FROM c ORDER BY c.status, c.t DESC", lethe.PartitionKey{"p42"}, ""},
		{"is-defined-order", "SELECT * FROM c WHERE IS_DEFINED(c.user) ORDER BY c.user", nil, ""},
		{"avg-score", "SELECT VALUE AVG(c.score) FROM c", nil, ""},
		{"count-range-t", "SELECT VALUE COUNT(1) FROM c WHERE c.t > 50000", nil, ""},
		{"groupby-k-range", "SELECT c.k, COUNT(1) AS n FROM c WHERE c.k < 100 GROUP BY c.k", nil, ""},
		{"contains-ci", "SELECT * FROM c WHERE CONTAINS(c.name, 'USER 4242', true)", nil, ""},
		{"endswith", "SELECT * FROM c WHERE ENDSWITH(c.name, '4242')", nil, ""},
		{"array-contains-none", "SELECT * FROM c WHERE ARRAY_CONTAINS(c.tags, 'c')", nil, ""},
		{"join-tag-none", "SELECT c.id FROM c JOIN t IN c.tags WHERE t = 'c'", nil, ""},
		{"join-tag", "SELECT c.id FROM c JOIN t IN c.tags WHERE t = 'b'", nil, ""},
		{"exists-tag-none", "SELECT c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'c')", nil, ""},
		{"groupby-status-sum", "SELECT c.status, SUM(c.score) AS s FROM c GROUP BY c.status", nil, ""},
		{"groupby-k", "SELECT c.k, COUNT(1) AS n FROM c GROUP BY c.k", nil, ""},
		{"count-two-paths", "SELECT VALUE COUNT(1) FROM c WHERE c.k + c.t > 100000", nil, ""},
		{"composite-order-two", "SELECT * FROM c ORDER BY c.status, c.t DESC", nil, "composite"},
		{"composite-pk-order-two", "SELECT * FROM c ORDER BY c.status, c.t DESC", lethe.PartitionKey{"p42"}, "composite"},
		{"composite-order-two-asc", "SELECT * FROM c ORDER BY c.status DESC, c.t", nil, "composite"},
		{"composite-range-order-two", "SELECT c.id FROM c WHERE c.status > 'f' ORDER BY c.status, c.t DESC", nil, "composite"},
	}
	for _, q := range queries {
		b.Run(q.name, func(b *testing.B) {
			b.ReportAllocs()
			rows := 0
			coll := cmp.Or(q.coll, "idx")
			for range b.N {
				page, err := e.QueryDocuments(ctx, "db", coll, QueryOptions{Text: q.text, PK: q.pk, MaxItems: 10, ServeAll: true})
				if err != nil {
					b.Fatal(err)
				}
				rows = len(page.Rows)
			}
			b.ReportMetric(float64(rows), "rows")
		})
	}
}
