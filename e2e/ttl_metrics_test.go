package e2e

import (
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestTTLMetricsShowTheBacklog drives expiry with the manual clock and the
// purge by hand, and reads the expiry backlog from /metrics at each step.
func TestTTLMetricsShowTheBacklog(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true, Args: []string{"--clock=manual", "--disable-purger"}})
	c := s.client(t)
	db := mustDatabase(t, c, "m")
	cc := mustContainer(t, db, pkContainer("sessions", i32(60)))
	pk := azcosmos.NewPartitionKeyString("p")
	for i := range 3 {
		createDoc(t, cc, pk, map[string]any{"id": fmt.Sprintf("s%d", i), "pk": "p"})
	}
	want := func(when, name string, lo, hi float64) {
		t.Helper()
		v, ok := seriesValue(scrape(t, s), name, map[string]string{"database": "m", "container": "sessions"})
		if !ok || v < lo || v > hi {
			t.Errorf("%s: %s = %v (present %v), want %v..%v", when, name, v, ok, lo, hi)
		}
	}
	want("before expiry", "lethe_ttl_expired_pending_documents", 0, 0)
	s.advanceClock(t, 70) // expired 10 s ago
	want("after expiry", "lethe_ttl_expired_pending_documents", 3, 3)
	want("after expiry", "lethe_ttl_expired_pending_bytes", 3*50, 3*1000)
	want("after expiry", "lethe_ttl_oldest_pending_age_seconds", 10, 10)
	want("after expiry", "lethe_ttl_purged_documents_total", 0, 0)
	if n := s.purgeNow(t); n != 3 {
		t.Fatalf("purge deleted %d, want 3", n)
	}
	want("after the purge", "lethe_ttl_expired_pending_documents", 0, 0)
	want("after the purge", "lethe_ttl_oldest_pending_age_seconds", 0, 0)
	want("after the purge", "lethe_ttl_purged_documents_total", 3, 3)
}
