package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// usageOf reads the container with PopulateQuotaInfo and returns the
// documentsCount of x-ms-resource-usage, failing unless both quota headers
// are there.
func usageOf(t *testing.T, cc *azcosmos.ContainerClient) int {
	t.Helper()
	resp, err := cc.Read(context.Background(), &azcosmos.ReadContainerOptions{PopulateQuotaInfo: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp.RawResponse.Header.Get("x-ms-resource-quota") == "" {
		t.Fatal("no x-ms-resource-quota header")
	}
	usage := resp.RawResponse.Header.Get("x-ms-resource-usage")
	for _, kv := range strings.Split(usage, ";") {
		if v, ok := strings.CutPrefix(kv, "documentsCount="); ok {
			var n int
			if _, err := fmt.Sscan(v, &n); err != nil {
				t.Fatalf("documentsCount in %q: %v", usage, err)
			}
			return n
		}
	}
	t.Fatalf("no documentsCount in x-ms-resource-usage %q", usage)
	return 0
}

// TestQuotaUsageExcludesExpired runs with the purger off, so the expired
// documents are certainly still stored when usage stops counting them.
func TestQuotaUsageExcludesExpired(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true, Args: []string{"--disable-purger"}})
	c := s.client(t)
	db := mustDatabase(t, c, "quota")
	cc := mustContainer(t, db, pkContainer("c", i32(-1)))
	pk := azcosmos.NewPartitionKeyString("p")

	plain, err := cc.Read(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := plain.RawResponse.Header.Get("x-ms-resource-usage"); h != "" {
		t.Errorf("usage reported without PopulateQuotaInfo: %q", h)
	}
	var ts int64
	for i := range 3 {
		doc := createDoc(t, cc, pk, map[string]any{"id": fmt.Sprintf("short%d", i), "pk": "p", "ttl": 2})
		ts = max(ts, tsOf(t, doc))
	}
	createDoc(t, cc, pk, map[string]any{"id": "kept", "pk": "p"})
	if n := usageOf(t, cc); n != 4 && time.Now().Before(expiryInstant(ts-1, 2)) {
		t.Fatalf("documentsCount %d before expiry, want 4", n)
	}
	sleepUntil(expiryInstant(ts, 2))
	if n := usageOf(t, cc); n != 1 {
		t.Fatalf("documentsCount %d after the short-lived documents expired, want 1", n)
	}
	if got := readStatus(t, cc, pk, "short0"); got != 404 {
		t.Fatalf("expired document read: %d, want 404", got)
	}
}
