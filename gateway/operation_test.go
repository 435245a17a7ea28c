package gateway

import (
	"net/http"
	"testing"

	"github.com/lethe-db/lethe/metrics"
)

func TestOperationOf(t *testing.T) {
	query := map[string]string{"Content-Type": "application/query+json"}
	cases := []struct {
		method, path string
		hdr          map[string]string
		want         metrics.Operation
	}{
		{"GET", "/", nil, metrics.OpAccount},
		{"POST", "/", nil, metrics.OpUnknown},
		{"GET", "/dbs", nil, metrics.OpListDatabases},
		{"POST", "/dbs", nil, metrics.OpCreateDatabase},
		{"POST", "/dbs", query, metrics.OpQueryDatabases},
		{"POST", "/dbs", map[string]string{"Content-Type": "application/query+json; charset=utf-8"}, metrics.OpQueryDatabases},
		{"PUT", "/dbs", nil, metrics.OpUnknown},
		{"GET", "/dbs/d", nil, metrics.OpReadDatabase},
		{"DELETE", "/dbs/d", nil, metrics.OpDeleteDatabase},
		{"PUT", "/dbs/d", nil, metrics.OpUnknown},
		{"GET", "/dbs/d/colls", nil, metrics.OpListContainers},
		{"POST", "/dbs/d/colls", nil, metrics.OpCreateContainer},
		{"POST", "/dbs/d/colls", query, metrics.OpQueryContainers},
		{"GET", "/dbs/d/colls/c", nil, metrics.OpReadContainer},
		{"PUT", "/dbs/d/colls/c", nil, metrics.OpReplaceContainer},
		{"DELETE", "/dbs/d/colls/c", nil, metrics.OpDeleteContainer},
		{"PATCH", "/dbs/d/colls/c", nil, metrics.OpUnknown},
		{"GET", "/dbs/d/colls/c/pkranges", nil, metrics.OpReadPartitionKeyRanges},
		{"POST", "/dbs/d/colls/c/pkranges", nil, metrics.OpUnknown},
		{"GET", "/dbs/d/colls/c/docs", nil, metrics.OpReadFeed},
		{"GET", "/dbs/d/colls/c/docs", map[string]string{"A-IM": "Incremental feed"}, metrics.OpChangeFeed},
		{"POST", "/dbs/d/colls/c/docs", nil, metrics.OpCreateDocument},
		{"POST", "/dbs/d/colls/c/docs", map[string]string{"x-ms-documentdb-is-upsert": "True"}, metrics.OpUpsertDocument},
		{"POST", "/dbs/d/colls/c/docs", map[string]string{"x-ms-documentdb-is-upsert": "false"}, metrics.OpCreateDocument},
		{"POST", "/dbs/d/colls/c/docs", map[string]string{"x-ms-cosmos-is-batch-request": "true", "x-ms-cosmos-batch-atomic": "true"}, metrics.OpBatch},
		// postDocuments checks the query content type first, then batch, then upsert.
		{"POST", "/dbs/d/colls/c/docs", map[string]string{"x-ms-cosmos-is-batch-request": "true", "x-ms-documentdb-is-upsert": "true"}, metrics.OpBatch},
		{"POST", "/dbs/d/colls/c/docs", map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-is-upsert": "true"}, metrics.OpQueryDocuments},
		{"POST", "/dbs/d/colls/c/docs", query, metrics.OpQueryDocuments},
		{"POST", "/dbs/d/colls/c/docs", map[string]string{"Content-Type": "application/query+json", "x-ms-cosmos-is-query-plan-request": "True"}, metrics.OpQueryPlan},
		{"DELETE", "/dbs/d/colls/c/docs", nil, metrics.OpUnknown},
		{"GET", "/dbs/d/colls/c/docs/x", nil, metrics.OpReadDocument},
		{"PUT", "/dbs/d/colls/c/docs/x", nil, metrics.OpReplaceDocument},
		{"PATCH", "/dbs/d/colls/c/docs/x", nil, metrics.OpPatchDocument},
		{"DELETE", "/dbs/d/colls/c/docs/x", nil, metrics.OpDeleteDocument},
		{"POST", "/dbs/d/colls/c/docs/x", nil, metrics.OpUnknown},
		{"GET", "/dbs/d/colls/c/docs/x/attachments", nil, metrics.OpUnknown},
		{"GET", "/dbs/d/colls/c/sprocs", nil, metrics.OpUnknown},
		{"GET", "/dbs/d/users", nil, metrics.OpUnknown},
		{"GET", "/dbs/d/users/u", nil, metrics.OpUnknown},
		{"GET", "/offers", nil, metrics.OpListOffers},
		{"POST", "/offers", query, metrics.OpQueryOffers},
		{"GET", "/offers/o1", nil, metrics.OpReadOffer},
		{"PUT", "/offers/o1", nil, metrics.OpReplaceOffer},
		{"GET", "/offers/o1/x", nil, metrics.OpUnknown},
		{"GET", "/metrics", nil, metrics.OpUnknown}, // scrapes never reach routing
		{"GET", "/nowhere", nil, metrics.OpUnknown},
		{"HEAD", "/dbs/d/colls/c/docs/x", nil, metrics.OpUnknown},
	}
	for _, c := range cases {
		segs, err := pathSegments(c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		h := http.Header{}
		for k, v := range c.hdr {
			h.Set(k, v)
		}
		if got := operationOf(c.method, segs, h); got != c.want {
			t.Errorf("%s %s %v = %s, want %s", c.method, c.path, c.hdr, got, c.want)
		}
	}
}
