package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestChangeFeedAcrossKills: writers create documents through the Go SDK
// while a reader follows the change feed (latest version) with its
// continuation, and the server is killed with SIGKILL and restarted, three
// times. The reader's continuation survives each restart, and at the end it
// has read every acknowledged create exactly once, each writer's in the order
// they were written, and nothing that is not stored: the feed serves only
// durable writes, so nothing it served can be lost by the kill.
func TestChangeFeedAcrossKills(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, serverOpts{DataDir: dir})
	cc := mustContainer(t, mustDatabase(t, s.client(t), "cf"), pkContainer("c", nil))
	ranges, err := cc.ReadFeedRanges(ctx, nil)
	if err != nil || len(ranges) != 1 {
		t.Fatalf("feed ranges %v, %v", ranges, err)
	}

	const writers, rounds = 4, 3
	acked := make([][]string, writers) // per writer, in write order
	var (
		seen     []string // every id the reader got, in feed order
		seenMu   sync.Mutex
		token    string // the reader's continuation
		tokenSet bool
	)
	// read drains the feed from the reader's position until a 304, with a
	// client of the current server.
	read := func(cc *azcosmos.ContainerClient) error {
		for {
			opts := &azcosmos.ChangeFeedOptions{MaxItemCount: 50}
			if tokenSet {
				opts.Continuation = &token
			} else {
				opts.FeedRange = &ranges[0]
			}
			resp, err := cc.ReadChangeFeed(context.Background(), opts)
			if err != nil {
				return err
			}
			seenMu.Lock()
			for _, it := range resp.Items {
				var d struct{ ID string }
				if err := json.Unmarshal(it, &d); err != nil {
					seenMu.Unlock()
					return err
				}
				seen = append(seen, d.ID)
			}
			seenMu.Unlock()
			token, tokenSet = resp.ContinuationToken, true
			if resp.RawResponse.StatusCode == http.StatusNotModified || resp.Count == 0 {
				return nil
			}
		}
	}

	next := make([]int, writers)
	for round := range rounds {
		cc, err := s.client(t).NewContainer("cf", "c")
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var ackedN atomic.Int64
		for w := range writers {
			wg.Go(func() {
				pk := fmt.Sprintf("w%d", w)
				for runCtx.Err() == nil {
					id := fmt.Sprintf("%s-%06d", pk, next[w])
					_, err := cc.CreateItem(runCtx, azcosmos.NewPartitionKeyString(pk), fmt.Appendf(nil, `{"id":%q,"pk":%q}`, id, pk), nil)
					if err != nil {
						return // the server is gone
					}
					acked[w] = append(acked[w], id)
					next[w]++
					ackedN.Add(1)
				}
			})
		}
		// The reader follows the writes while they run.
		readerDone := make(chan struct{})
		go func() {
			defer close(readerDone)
			for runCtx.Err() == nil {
				if read(cc) != nil {
					return // the server is gone
				}
			}
		}()
		waitCount(t, &ackedN, 300, fmt.Sprintf("round %d: creates acknowledged", round))
		s.kill()
		cancel()
		wg.Wait()
		<-readerDone
		// A create in flight at the kill may or may not have been stored:
		// its writer goes on after it, so no id is written twice.
		for w := range next {
			next[w]++
		}
		s = startServer(t, serverOpts{DataDir: dir})
	}
	cc, err = s.client(t).NewContainer("cf", "c")
	if err != nil {
		t.Fatal(err)
	}
	if err := read(cc); err != nil {
		t.Fatalf("the final read: %v", err)
	}

	stored := map[string]bool{}
	for _, d := range s.readFeedAllDocs(t, "cf", "c") {
		stored[d["id"].(string)] = true
	}
	count := map[string]int{}
	lastOf := map[string]int{} // writer -> last index seen
	for _, id := range seen {
		count[id]++
		if !stored[id] {
			t.Errorf("the feed served %s, which the store does not hold after the kills", id)
		}
		w, i, _ := strings.Cut(id, "-")
		n, _ := strconv.Atoi(i)
		if last, ok := lastOf[w]; ok && n <= last {
			t.Errorf("writer %s: %s came after index %d in the feed", w, id, last)
		}
		lastOf[w] = n
	}
	total := 0
	for _, ids := range acked {
		for _, id := range ids {
			total++
			if count[id] != 1 {
				t.Errorf("acknowledged create %s was read %d times, want once", id, count[id])
			}
		}
	}
	for id, n := range count {
		if n > 1 && !t.Failed() {
			t.Errorf("%s read %d times", id, n)
		}
	}
	if len(stored) != len(count) {
		t.Errorf("the store holds %d documents, the feed served %d", len(stored), len(count))
	}
	t.Logf("%d acknowledged creates over %d kills; the reader read %d documents", total, rounds, len(seen))
}
