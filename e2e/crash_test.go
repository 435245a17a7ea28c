package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestCrashDurability proves that an acknowledged write survives a crash: eight
// goroutines create documents through the SDK as fast as they can, the server is
// killed with SIGKILL mid-stream, and after a restart on the same data directory
// every create that was acknowledged with 201 is there with its body. At most one
// unacknowledged create per writer (the one in flight at the kill) may also be
// there; nothing else may.
func TestCrashDurability(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, serverOpts{DataDir: dir})
	c := s.client(t)
	cc := mustContainer(t, mustDatabase(t, c, "crash"), pkContainer("c", nil))

	const writers = 8
	runCtx, cancel := context.WithCancel(context.Background())
	acked := make([][]string, writers)
	var ackedN atomic.Int64 // creates acknowledged so far, all writers
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pk := fmt.Sprintf("w%d", w)
			for i := 0; runCtx.Err() == nil; i++ {
				id := fmt.Sprintf("%s-%06d", pk, i)
				body := fmt.Appendf(nil, `{"id":%q,"pk":%q,"i":%d}`, id, pk, i)
				r, err := cc.CreateItem(runCtx, azcosmos.NewPartitionKeyString(pk), body, nil)
				if err != nil {
					return // the server is gone (or the context was cancelled)
				}
				if r.RawResponse.StatusCode == http.StatusCreated {
					acked[w] = append(acked[w], id)
					ackedN.Add(1)
				}
			}
		}()
	}
	// Kill once a good number of creates are acknowledged, however long the
	// machine takes to get there; the deadline is a safety net.
	const wantAcked = 1000
	for deadline := time.Now().Add(time.Minute); ackedN.Load() < wantAcked; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a minute on, only %d creates were acknowledged", ackedN.Load())
		}
	}
	s.kill() // SIGKILL while every writer has a create in flight
	cancel()
	wg.Wait()

	total := 0
	for _, a := range acked {
		total += len(a)
	}
	t.Logf("acknowledged creates before SIGKILL: %d (%d writers)", total, writers)

	s2 := startServer(t, serverOpts{DataDir: dir})
	present := map[string]map[string]any{}
	for _, d := range s2.readFeedAllDocs(t, "crash", "c") {
		id := d["id"].(string)
		if _, dup := present[id]; dup {
			t.Errorf("document %s appears twice after recovery", id)
		}
		present[id] = d
	}
	missing := 0
	for w, ids := range acked {
		for i, id := range ids {
			d, ok := present[id]
			if !ok {
				missing++
				if missing <= 10 {
					t.Errorf("acknowledged create %s is missing after the crash", id)
				}
				continue
			}
			if d["pk"] != fmt.Sprintf("w%d", w) || d["i"] != float64(i) {
				t.Errorf("document %s after the crash = %v", id, d)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged creates lost", missing, total)
	}
	if extra := len(present) - (total - missing); extra > writers {
		t.Errorf("%d unacknowledged documents after recovery; at most %d (one in flight per writer) may be", extra, writers)
	}
	// The recovered server accepts writes.
	if _, err := s2.client(t).CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "after-crash"}, nil); err != nil {
		t.Errorf("write after recovery: %v", err)
	}
}
