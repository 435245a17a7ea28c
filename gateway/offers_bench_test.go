package gateway

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/lethe-db/lethe/engine"
)

// BenchmarkHandlerReadBudgeted is BenchmarkHandlerRead in a container with
// provisioned throughput (large enough never to throttle): the cost of
// admitting and charging every request against its RU budget.
func BenchmarkHandlerReadBudgeted(b *testing.B) {
	srv, key := benchServer(b)
	tp, err := engine.ParseThroughput("1000000", "")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := srv.opts.Engine.CreateContainerWithThroughput(context.Background(), "db", []byte(`{"id":"budgeted","partitionKey":{"paths":["/pk"]}}`), tp); err != nil {
		b.Fatal(err)
	}
	postBenchDocs(srv, key, "budgeted", 1000, 1)
	benchServe(b, srv, func(i int) *http.Request {
		return signedRequest("GET", fmt.Sprintf("/dbs/db/colls/budgeted/docs/%d", i%1000), key, nil, map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
	}, wantStatus(b, "read", http.StatusOK))
}
