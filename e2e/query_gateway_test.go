package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestCrossPartitionQueriesNeedingPlans: by default Lethe refuses, as Cosmos
// DB's gateway does, a cross-partition query whose rows must be combined by
// the client (ORDER BY, aggregates, ...), with 400, substatus 1004 and the
// query plan in additionalErrorInfo; a partition key, a partition key range
// or a WHERE that pins the partition key makes it a single-partition query,
// served as usual. With --serve-all-cross-partition-queries the server
// evaluates it itself.
func TestCrossPartitionQueriesNeedingPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	load := func(s *server) *azcosmos.ContainerClient {
		db := mustDatabase(t, s.client(t), "plans")
		cc := mustContainer(t, db, pkContainer("c", nil))
		for _, d := range []struct{ id, pk string }{{"3", "a"}, {"1", "b"}, {"2", "a"}} {
			createDoc(t, cc, azcosmos.NewPartitionKeyString(d.pk), map[string]any{"id": d.id, "pk": d.pk})
		}
		return cc
	}
	ids := func(cc *azcosmos.ContainerClient, q string, pk azcosmos.PartitionKey) ([]string, error) {
		return queryStrings(ctx, cc, q, pk, nil)
	}
	const ordered = "SELECT VALUE c.id FROM c ORDER BY c.id"

	s := startServer(t, serverOpts{InMemory: true})
	cc := load(s)
	_, err := ids(cc, ordered, azcosmos.NewPartitionKey())
	wantStatus(t, "cross-partition ORDER BY through the Go SDK", err, http.StatusBadRequest)
	if err == nil || !strings.Contains(err.Error(), "cross partition query can not be directly served by the gateway") {
		t.Fatalf("error %v does not give the gateway's message", err)
	}
	r := s.do(t, "POST", docsPath("plans", "c"), hdr("Content-Type", "application/query+json", "x-ms-documentdb-isquery", "true",
		"x-ms-documentdb-query-enablecrosspartition", "true"), []byte(`{"query":"SELECT VALUE COUNT(1) FROM c"}`))
	r.wantError(t, "cross-partition COUNT", http.StatusBadRequest)
	if got := r.Header.Get("x-ms-substatus"); got != "1004" {
		t.Errorf("substatus %q, want 1004", got)
	}
	var plan struct {
		Version int `json:"partitionedQueryExecutionInfoVersion"`
	}
	if info, _ := r.json(t)["additionalErrorInfo"].(string); json.Unmarshal([]byte(info), &plan) != nil || plan.Version != 2 {
		t.Errorf("additionalErrorInfo %q is not a query plan", info)
	}

	for _, c := range []struct {
		what string
		q    string
		pk   azcosmos.PartitionKey
		want string
	}{
		{"with a partition key", ordered, azcosmos.NewPartitionKeyString("a"), "2,3"},
		{"pinned by WHERE", "SELECT VALUE c.id FROM c WHERE c.pk = 'a' ORDER BY c.id DESC", azcosmos.NewPartitionKey(), "3,2"},
		{"streaming", "SELECT VALUE c.id FROM c WHERE c.id != '2'", azcosmos.NewPartitionKey(), "3,1"},
	} {
		got, err := ids(cc, c.q, c.pk)
		if err != nil || strings.Join(got, ",") != c.want {
			t.Errorf("%s: %v, %v; want %s", c.what, got, err, c.want)
		}
	}
	ranged := s.do(t, "POST", docsPath("plans", "c"), hdr("Content-Type", "application/query+json", "x-ms-documentdb-isquery", "true",
		"x-ms-documentdb-partitionkeyrangeid", "0"), []byte(`{"query":"SELECT VALUE COUNT(1) FROM c"}`))
	ranged.wantStatus(t, "COUNT over partition key range 0", http.StatusOK)
	if docs, _ := ranged.json(t)["Documents"].([]any); len(docs) != 1 || docs[0] != float64(3) {
		t.Errorf("COUNT over range 0: %v, want [3]", docs)
	}

	all := startServer(t, serverOpts{InMemory: true, Args: allQueries})
	got, err := ids(load(all), ordered, azcosmos.NewPartitionKey())
	if err != nil || strings.Join(got, ",") != "1,2,3" {
		t.Errorf("with --serve-all-cross-partition-queries: %v, %v; want 1,2,3", got, err)
	}
}
