package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// burstResult is what a burst of raw creates got back.
type burstResult struct {
	created, throttled int
	first429           *rawResponse
}

// burst sends up to n raw creates of about 40 KB (21 RU each) into db/coll
// from 16 goroutines, without retries, and stops early at the first 429 when
// untilThrottled. Any status other than 201 and 429 fails the test.
func burst(t *testing.T, s *server, db, coll, prefix string, n int, untilThrottled bool) burstResult {
	t.Helper()
	pad := strings.Repeat("x", 40000)
	var (
		mu   sync.Mutex
		res  burstResult
		stop atomic.Bool
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				i := int(next.Add(1))
				if i > n {
					return
				}
				id := fmt.Sprintf("%s-%d", prefix, i)
				r := s.do(t, http.MethodPost, docsPath(db, coll), hdr("x-ms-documentdb-partitionkey", pkHeader("p")),
					mustMarshal(t, map[string]any{"id": id, "pk": "p", "pad": pad}))
				mu.Lock()
				switch r.Status {
				case http.StatusCreated:
					res.created++
				case http.StatusTooManyRequests:
					res.throttled++
					if res.first429 == nil {
						res.first429 = &r
					}
					if untilThrottled {
						stop.Store(true)
					}
				default:
					t.Errorf("create %s: %d %s", id, r.Status, truncateForLog(r.Body))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res
}

// check429 fails the test unless r is Cosmos DB's throttling answer.
func check429(t *testing.T, what string, r *rawResponse) {
	t.Helper()
	if r == nil {
		t.Fatalf("%s: no 429", what)
	}
	r.wantError(t, what, http.StatusTooManyRequests)
	if ms, err := strconv.Atoi(r.Header.Get("x-ms-retry-after-ms")); err != nil || ms < 1 || ms > 60_000 {
		t.Errorf("%s: x-ms-retry-after-ms %q", what, r.Header.Get("x-ms-retry-after-ms"))
	}
	if r.Header.Get("x-ms-substatus") != "3200" {
		t.Errorf("%s: x-ms-substatus %q, want 3200", what, r.Header.Get("x-ms-substatus"))
	}
}

// offersWhere runs a raw offers query and returns the offers found.
func offersWhere(t *testing.T, s *server, query string) []map[string]any {
	t.Helper()
	r := s.do(t, http.MethodPost, "/offers", hdr("Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"), mustMarshal(t, map[string]any{"query": query}))
	r.wantStatus(t, "offers query "+query, http.StatusOK)
	list, _ := r.json(t)["Offers"].([]any)
	var out []map[string]any
	for _, o := range list {
		out = append(out, o.(map[string]any))
	}
	return out
}

// TestDefaultOffer: a container created without throughput in a database
// without shared throughput has a 400 RU/s manual offer, found by both SDKs'
// offer queries (by offerResourceId, as the Go SDK asks, and by resource, as
// the JavaScript SDK asks), readable by id, stable across a restart of an
// on-disk server (it is derived from the container, so data directories
// written before default offers existed have it too) and, by default, not
// enforced: a burst far beyond 400 RU/s is never throttled. Replaced through
// the offers API, it becomes an explicit offer and throttles.
func TestDefaultOffer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, serverOpts{DataDir: dir})
	c := s.client(t)
	db := mustDatabase(t, c, "dflt")
	cc := mustContainer(t, db, pkContainer("c", nil))
	props, err := cc.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rid, self := props.ContainerProperties.ResourceID, props.ContainerProperties.SelfLink

	r, err := cc.ReadThroughput(ctx, nil)
	if err != nil {
		t.Fatalf("ReadThroughput: %v", err)
	}
	if n, ok := r.ThroughputProperties.ManualThroughput(); !ok || n != 400 {
		t.Fatalf("default throughput %d %v; want 400 manual", n, ok)
	}
	byRID := offersWhere(t, s, "SELECT * FROM root WHERE root.offerResourceId = '"+rid+"'")
	byResource := offersWhere(t, s, `SELECT * from root where root.resource = "`+self+`"`)
	if len(byRID) != 1 || len(byResource) != 1 || byRID[0]["id"] != byResource[0]["id"] {
		t.Fatalf("offers by offerResourceId %v, by resource %v; want the same one offer", byRID, byResource)
	}
	offer := byRID[0]
	id := offer["id"].(string)
	content, _ := offer["content"].(map[string]any)
	if offer["offerResourceId"] != rid || offer["resource"] != self || offer["_self"] != "offers/"+id+"/" || offer["offerVersion"] != "V2" ||
		content["offerThroughput"] != 400.0 || content["offerAutopilotSettings"] != nil || offer["_etag"] == "" || offer["_ts"] != float64(props.ContainerProperties.LastModified.Unix()) {
		t.Errorf("default offer %v", offer)
	}
	one := s.do(t, http.MethodGet, "/offers/"+id, nil, nil)
	one.wantStatus(t, "read the default offer", http.StatusOK)
	if one.Header.Get("etag") != offer["_etag"] || canonJSON(one.json(t)) != canonJSON(offer) {
		t.Errorf("GET /offers/%s: etag %q, body %s; want the queried offer", id, one.Header.Get("etag"), one.Body)
	}
	s.do(t, http.MethodGet, "/offers/"+id, hdr("If-None-Match", one.Header.Get("etag")), nil).wantStatus(t, "read the default offer If-None-Match", http.StatusNotModified)
	feed := s.do(t, http.MethodGet, "/offers", nil, nil)
	if list, _ := feed.json(t)["Offers"].([]any); len(list) != 1 || canonJSON(list[0]) != canonJSON(offer) {
		t.Errorf("offers feed %s; want the default offer", feed.Body)
	}

	// Not enforced: 200 creates of 21 RU in a burst (10 seconds' worth of
	// 400 RU/s) are all admitted.
	if b := burst(t, s, "dflt", "c", "free", 200, false); b.created != 200 || b.throttled != 0 {
		t.Fatalf("burst into an unenforced default offer: %d created, %d throttled; want 200, 0", b.created, b.throttled)
	}

	// A restart derives the same offer. (The restarted server runs on a
	// manual clock, so that the burst below spends its bucket for good.)
	s.stop(t)
	s = startServer(t, serverOpts{DataDir: dir, Args: []string{"--clock", "manual"}})
	again := s.do(t, http.MethodGet, "/offers/"+id, nil, nil)
	again.wantStatus(t, "read the default offer after a restart", http.StatusOK)
	if canonJSON(again.json(t)) != canonJSON(offer) {
		t.Errorf("after a restart the default offer is %s; want %v", again.Body, offer)
	}

	// Replaced, it is explicit: same id, a new etag, and enforced.
	put := s.do(t, http.MethodPut, "/offers/"+id, hdr("If-Match", offer["_etag"].(string)), mustMarshal(t, map[string]any{"id": id, "offerResourceId": rid, "content": map[string]any{"offerThroughput": 400}}))
	put.wantStatus(t, "replace the default offer", http.StatusOK)
	if p := put.json(t); p["id"] != id || p["_etag"] == offer["_etag"] {
		t.Errorf("replaced default offer %s", put.Body)
	}
	b := burst(t, s, "dflt", "c", "paid", 5000, true)
	check429(t, "burst into a replaced default offer", b.first429)
}

// TestEnforcedDefaultOffer: with --enforce-default-throughput a default offer
// throttles like any 400 RU/s offer (429, x-ms-retry-after-ms, substatus
// 3200; nothing created by a refused request), and the SDK, retrying as
// told, completes every create.
func TestEnforcedDefaultOffer(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true, Args: []string{"--enforce-default-throughput", "--clock", "manual"}})
	c := s.client(t)
	db := mustDatabase(t, c, "dflt")
	mustContainer(t, db, pkContainer("c", nil))
	b := burst(t, s, "dflt", "c", "raw", 5000, true)
	check429(t, "burst into an enforced default offer", b.first429)

	obs := throttlingObserver(t, s)
	rc := retryingClient(t, s, obs)
	rcc, _ := rc.NewContainer("dflt", "c")
	const sdkDocs = 40
	sdkBurst(t, rcc, obs, sdkDocs)
	// Counted through the observed client: the burst may have left the
	// bucket spent, and only the observer moves the clock when it is.
	count := mustQuery(t, rcc, "SELECT VALUE COUNT(1) FROM c", azcosmos.NewPartitionKeyString("p"), nil)
	if len(count.rows) != 1 || count.rows[0] != float64(b.created+sdkDocs) {
		t.Errorf("documents: %v; want %d raw + %d SDK (throttled creates make nothing)", count.rows, b.created, sdkDocs)
	}
}

// retryingClient is an SDK client that retries 429s as long as the service
// says, through transport.
func retryingClient(t *testing.T, s *server, transport policy.Transporter) *azcosmos.Client {
	t.Helper()
	cred, _ := azcosmos.NewKeyCredential(emulatorKey)
	rc, err := azcosmos.NewClientWithKey(s.URL+"/", cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: transport,
		Retry:     policy.RetryOptions{MaxRetries: 100, RetryDelay: 10 * time.Millisecond, MaxRetryDelay: 5 * time.Second},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return rc
}
