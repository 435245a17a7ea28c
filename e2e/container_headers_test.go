package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// quotaFields parses an x-ms-resource-quota or x-ms-resource-usage value
// (name=value pairs, each ended by ';') into numbers, failing on anything
// else, and returns the names in order too.
func quotaFields(t *testing.T, header string) (map[string]int64, []string) {
	t.Helper()
	if !strings.HasSuffix(header, ";") {
		t.Errorf("%q does not end with ';' as Cosmos DB's does", header)
	}
	out := map[string]int64{}
	var names []string
	for _, kv := range strings.Split(strings.TrimSuffix(header, ";"), ";") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			t.Fatalf("%q: field %q is not name=integer", header, kv)
		}
		out[k] = n
		names = append(names, k)
	}
	return out, names
}

// TestContainerReadHeaders: every container read carries
// x-ms-documentdb-collection-index-transformation-progress (100 unless a
// re-index is pending), a lazy container's also
// x-ms-documentdb-collection-lazy-indexing-progress, and with
// PopulateQuotaInfo the quota and usage headers in Cosmos DB's format: the
// same fields in the same order, sizes in KB, documentSize the collection's
// size in MB, positive size quotas, expired documents not counted.
func TestContainerReadHeaders(t *testing.T) {
	t.Parallel()
	// A manual clock: the documents expire when the test moves it.
	s := startServer(t, serverOpts{InMemory: true, Args: []string{"--disable-purger", "--clock", "manual"}})
	c := s.client(t)
	db := mustDatabase(t, c, "hdr")
	consistent := mustContainer(t, db, pkContainer("consistent", i32(-1)))
	lazy := mustContainer(t, db, azcosmos.ContainerProperties{ID: "lazy", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		IndexingPolicy: &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingMode("Lazy")}})
	none := mustContainer(t, db, azcosmos.ContainerProperties{ID: "none", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		IndexingPolicy: &azcosmos.IndexingPolicy{IndexingMode: azcosmos.IndexingModeNone}})

	for _, x := range []struct {
		cc   *azcosmos.ContainerClient
		lazy bool
	}{{consistent, false}, {lazy, true}, {none, false}} {
		for _, o := range []*azcosmos.ReadContainerOptions{nil, {PopulateQuotaInfo: true}} {
			resp, err := x.cc.Read(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			h := resp.RawResponse.Header
			if got := h.Get("x-ms-documentdb-collection-index-transformation-progress"); got != "100" {
				t.Errorf("%s (options %+v): index transformation progress %q; want 100", x.cc.ID(), o, got)
			}
			if got, want := h.Get("x-ms-documentdb-collection-lazy-indexing-progress"), map[bool]string{true: "100"}[x.lazy]; got != want {
				t.Errorf("%s: lazy indexing progress %q; want %q", x.cc.ID(), got, want)
			}
			if (o != nil) != (h.Get("x-ms-resource-quota") != "") {
				t.Errorf("%s (options %+v): x-ms-resource-quota %q", x.cc.ID(), o, h.Get("x-ms-resource-quota"))
			}
		}
	}

	pk := azcosmos.NewPartitionKeyString("p")
	pad := strings.Repeat("x", 3000)
	for i := range 4 {
		createDoc(t, consistent, pk, map[string]any{"id": fmt.Sprintf("short%d", i), "pk": "p", "ttl": 2, "pad": pad})
	}
	for i := range 3 {
		createDoc(t, consistent, pk, map[string]any{"id": fmt.Sprintf("kept%d", i), "pk": "p", "pad": pad})
	}
	usage := func() map[string]int64 {
		resp, err := consistent.Read(ctx, &azcosmos.ReadContainerOptions{PopulateQuotaInfo: true})
		if err != nil {
			t.Fatal(err)
		}
		quota, names := quotaFields(t, resp.RawResponse.Header.Get("x-ms-resource-quota"))
		order := "functions storedProcedures triggers documentSize documentsSize documentsCount collectionSize"
		if strings.Join(names, " ") != order {
			t.Errorf("quota fields %v; want %s", names, order)
		}
		if quota["collectionSize"] <= 0 || quota["documentsSize"] <= 0 || quota["documentSize"] != quota["collectionSize"]/1024 || quota["documentsCount"] != -1 {
			t.Errorf("quota %v: sizes must be positive (clients compare usage with them), documentSize in MB, documentsCount -1", quota)
		}
		u, names := quotaFields(t, resp.RawResponse.Header.Get("x-ms-resource-usage"))
		if strings.Join(names, " ") != order {
			t.Errorf("usage fields %v; want %s", names, order)
		}
		if u["functions"] != 0 || u["storedProcedures"] != 0 || u["triggers"] != 0 || u["documentSize"] != u["collectionSize"]/1024 || u["collectionSize"] < u["documentsSize"] {
			t.Errorf("usage %v", u)
		}
		return u
	}
	if u := usage(); u["documentsCount"] != 7 || u["documentsSize"] < 7*3 {
		t.Errorf("usage of 7 documents of 3 KB: %v", u)
	}
	s.advanceClock(t, 2)
	if u := usage(); u["documentsCount"] != 3 || u["documentsSize"] < 9 || u["documentsSize"] > 12 || u["collectionSize"] < u["documentsSize"] {
		t.Errorf("usage once 4 of 7 documents expired (not purged: the purger is off): %v; want 3 documents, 9 to 12 KB", u)
	}
}

// TestIndexTransformationProgress: after an indexing policy replace, a
// container read reports the re-index's progress, never decreasing, until it
// says 100, and from then on queries use the new policy's index.
func TestIndexTransformationProgress(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	c := s.client(t)
	db := mustDatabase(t, c, "hdr")
	cc := mustContainer(t, db, pkContainer("c", nil))
	pk := azcosmos.NewPartitionKeyString("p")
	for i := range 600 {
		if _, err := cc.CreateItem(ctx, pk, mustMarshal(t, map[string]any{"id": fmt.Sprintf("d%d", i), "pk": "p", "a": i, "b": i}), nil); err != nil {
			t.Fatal(err)
		}
	}
	props, err := cc.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := *props.ContainerProperties
	p.IndexingPolicy = &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
		IncludedPaths: []azcosmos.IncludedPath{{Path: "/a/?"}}, ExcludedPaths: []azcosmos.ExcludedPath{{Path: "/*"}}}
	if _, err := cc.Replace(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	last := -1
	var seen []int
	deadline := time.Now().Add(2 * time.Minute) // a safety net only: the loop waits on the status itself
	for last != 100 {
		if time.Now().After(deadline) {
			t.Fatalf("the re-index did not finish: progress stays at %d", last)
		}
		r := s.do(t, http.MethodGet, collPath("hdr", "c"), nil, nil)
		r.wantStatus(t, "read the container", http.StatusOK)
		n, err := strconv.Atoi(r.Header.Get("x-ms-documentdb-collection-index-transformation-progress"))
		if err != nil || n < last || n < 0 || n > 100 {
			t.Fatalf("index transformation progress %q after %d", r.Header.Get("x-ms-documentdb-collection-index-transformation-progress"), last)
		}
		if n < 100 {
			time.Sleep(5 * time.Millisecond)
		}
		if n != last {
			seen = append(seen, n)
		}
		last = n
	}
	t.Logf("progress reported: %v", seen)
	resp, err := cc.NewQueryItemsPager("SELECT VALUE c.id FROM c WHERE c.a = 42", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PopulateIndexMetrics: true}).NextPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != 1 || string(resp.Items[0]) != `"d42"` || resp.IndexMetrics == nil {
		t.Fatalf("query at progress 100: %q, metrics %v", resp.Items, resp.IndexMetrics)
	}
	if specs := utilizedIndexes(t, *resp.IndexMetrics); len(specs) != 1 || specs[0] != "/a/?" {
		t.Errorf("at progress 100 the query used %v; want the new policy's /a/?", specs)
	}
}
