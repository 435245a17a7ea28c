package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// Provisioned throughput through the Go SDK: manual and autoscale offers at
// creation, ReadThroughput and ReplaceThroughput, shared database throughput,
// validation, the raw offers API, and offers going with their resources.
func TestOffers(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	c := s.client(t)
	db := mustDatabase(t, c, "offers")

	manualTP := azcosmos.NewManualThroughputProperties(400)
	if _, err := db.CreateContainer(ctx, pkContainer("manual", nil), &azcosmos.CreateContainerOptions{ThroughputProperties: &manualTP}); err != nil {
		t.Fatal(err)
	}
	autoTP := azcosmos.NewAutoscaleThroughputProperties(4000)
	if _, err := db.CreateContainer(ctx, pkContainer("auto", nil), &azcosmos.CreateContainerOptions{ThroughputProperties: &autoTP}); err != nil {
		t.Fatal(err)
	}
	none := mustContainer(t, db, pkContainer("none", nil))
	manual, _ := db.NewContainer("manual")
	auto, _ := db.NewContainer("auto")

	t.Run("manual round trip", func(t *testing.T) {
		r, err := manual.ReadThroughput(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := r.ThroughputProperties.ManualThroughput(); !ok || n != 400 {
			t.Fatalf("manual throughput %d %v, want 400", n, ok)
		}
		if _, ok := r.ThroughputProperties.AutoscaleMaxThroughput(); ok {
			t.Error("a manual offer has no autoscale settings")
		}
		if r.RequestCharge <= 0 {
			t.Errorf("request charge %v", r.RequestCharge)
		}
		if _, err := manual.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(1200), nil); err != nil {
			t.Fatal(err)
		}
		r, err = manual.ReadThroughput(ctx, nil)
		if n, _ := r.ThroughputProperties.ManualThroughput(); err != nil || n != 1200 {
			t.Fatalf("after replace: %d %v", n, err)
		}
		_, err = manual.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(450), nil)
		wantStatus(t, "replace with 450 RU/s", err, http.StatusBadRequest)
		_, err = manual.ReplaceThroughput(ctx, azcosmos.NewAutoscaleThroughputProperties(4000), nil)
		wantStatus(t, "manual offer to autoscale", err, http.StatusBadRequest)
		stale := azcore.ETag(`"stale"`)
		_, err = manual.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(800), &azcosmos.ThroughputOptions{IfMatchEtag: &stale})
		if statusOf(err) != http.StatusPreconditionFailed && statusOf(err) != http.StatusNotModified {
			t.Errorf("stale If-Match: %v", err)
		}
		r, _ = manual.ReadThroughput(ctx, nil)
		if n, _ := r.ThroughputProperties.ManualThroughput(); n != 1200 {
			t.Fatalf("failed replaces changed the offer to %d", n)
		}
	})

	t.Run("autoscale round trip", func(t *testing.T) {
		r, err := auto.ReadThroughput(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := r.ThroughputProperties.AutoscaleMaxThroughput(); !ok || n != 4000 {
			t.Fatalf("autoscale max %d %v, want 4000", n, ok)
		}
		// Idle: scaled to 10% of the maximum.
		if n, ok := r.ThroughputProperties.ManualThroughput(); !ok || n != 400 {
			t.Errorf("current autoscale throughput %d %v, want 400", n, ok)
		}
		if _, err := auto.ReplaceThroughput(ctx, azcosmos.NewAutoscaleThroughputProperties(6000), nil); err != nil {
			t.Fatal(err)
		}
		r, err = auto.ReadThroughput(ctx, nil)
		if n, _ := r.ThroughputProperties.AutoscaleMaxThroughput(); err != nil || n != 6000 {
			t.Fatalf("after replace: %d %v", n, err)
		}
		_, err = auto.ReplaceThroughput(ctx, azcosmos.NewAutoscaleThroughputProperties(6500), nil)
		wantStatus(t, "autoscale max 6500", err, http.StatusBadRequest)
		_, err = auto.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(400), nil)
		wantStatus(t, "autoscale offer to manual", err, http.StatusBadRequest)
	})

	t.Run("default offer", func(t *testing.T) {
		// Created without throughput in a database without shared
		// throughput: Cosmos DB's default offer, 400 RU/s manual.
		r, err := none.ReadThroughput(ctx, nil)
		if err != nil {
			t.Fatalf("ReadThroughput of a container created without throughput: %v", err)
		}
		if n, ok := r.ThroughputProperties.ManualThroughput(); !ok || n != 400 {
			t.Errorf("default throughput %d %v, want 400 manual", n, ok)
		}
		if _, ok := r.ThroughputProperties.AutoscaleMaxThroughput(); ok {
			t.Error("a default offer has no autoscale settings")
		}
	})

	t.Run("shared database throughput", func(t *testing.T) {
		tp := azcosmos.NewManualThroughputProperties(800)
		if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "shared"}, &azcosmos.CreateDatabaseOptions{ThroughputProperties: &tp}); err != nil {
			t.Fatal(err)
		}
		shared, _ := c.NewDatabase("shared")
		r, err := shared.ReadThroughput(ctx, nil)
		if n, _ := r.ThroughputProperties.ManualThroughput(); err != nil || n != 800 {
			t.Fatalf("database throughput %d %v", n, err)
		}
		if _, err := shared.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(1000), nil); err != nil {
			t.Fatal(err)
		}
		r, _ = shared.ReadThroughput(ctx, nil)
		if n, _ := r.ThroughputProperties.ManualThroughput(); n != 1000 {
			t.Fatalf("database throughput after replace %d", n)
		}
		// Its containers share it and have no offer of their own, not even a
		// default one: the SDK's offers query comes back empty (404).
		inner := mustContainer(t, shared, pkContainer("inner", nil))
		_, err = inner.ReadThroughput(ctx, nil)
		wantStatus(t, "container in a shared database", err, http.StatusNotFound)
		_, err = inner.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(400), nil)
		wantStatus(t, "replace the offer of a container in a shared database", err, http.StatusNotFound)
		atp := azcosmos.NewAutoscaleThroughputProperties(1000)
		if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "sharedauto"}, &azcosmos.CreateDatabaseOptions{ThroughputProperties: &atp}); err != nil {
			t.Fatal(err)
		}
		sa, _ := c.NewDatabase("sharedauto")
		r, err = sa.ReadThroughput(ctx, nil)
		if n, _ := r.ThroughputProperties.AutoscaleMaxThroughput(); err != nil || n != 1000 {
			t.Fatalf("autoscale database %d %v", n, err)
		}
	})

	t.Run("bad throughput at creation", func(t *testing.T) {
		body := mustMarshal(t, map[string]any{"id": "bad", "partitionKey": map[string]any{"paths": []string{"/pk"}}})
		cases := []map[string]string{
			hdr("x-ms-offer-throughput", "300"),
			hdr("x-ms-offer-throughput", "450"),
			hdr("x-ms-offer-throughput", "lots"),
			hdr("x-ms-cosmos-offer-autopilot-settings", `{"maxThroughput":1500}`),
			hdr("x-ms-cosmos-offer-autopilot-settings", `{"maxThroughput":500}`),
			hdr("x-ms-cosmos-offer-autopilot-settings", `nope`),
			hdr("x-ms-offer-throughput", "400", "x-ms-cosmos-offer-autopilot-settings", `{"maxThroughput":4000}`),
		}
		for _, h := range cases {
			s.do(t, http.MethodPost, "/dbs/offers/colls", h, body).wantError(t, fmt.Sprint("create container with ", h), http.StatusBadRequest)
			s.do(t, http.MethodPost, "/dbs", h, mustMarshal(t, map[string]any{"id": "baddb"})).wantError(t, fmt.Sprint("create database with ", h), http.StatusBadRequest)
		}
		s.do(t, http.MethodGet, collPath("offers", "bad"), nil, nil).wantError(t, "a refused create made nothing", http.StatusNotFound)
		s.do(t, http.MethodGet, "/dbs/baddb", nil, nil).wantError(t, "a refused create made nothing", http.StatusNotFound)
	})

	t.Run("raw offers API", func(t *testing.T) {
		props, err := manual.Read(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		rid := props.ContainerProperties.ResourceID
		// The JavaScript SDK's query form (double-quoted string, root alias).
		self := "dbs/" + strings.Split(props.ContainerProperties.SelfLink, "/")[1] + "/colls/" + rid + "/"
		q := s.do(t, http.MethodPost, "/offers", hdr("Content-Type", "application/query+json"), mustMarshal(t, map[string]any{"query": `SELECT * from root where root.resource = "` + self + `"`}))
		q.wantStatus(t, "offers query by resource", http.StatusOK)
		offers, _ := q.json(t)["Offers"].([]any)
		if len(offers) != 1 {
			t.Fatalf("offers query by resource: %s", q.Body)
		}
		offer := offers[0].(map[string]any)
		id := offer["id"].(string)
		if offer["offerResourceId"] != rid || offer["_self"] != "offers/"+id+"/" || offer["offerVersion"] != "V2" || offer["_rid"] != id {
			t.Errorf("offer body: %s", q.Body)
		}
		feed := s.do(t, http.MethodGet, "/offers", nil, nil)
		feed.wantStatus(t, "offers feed", http.StatusOK)
		if n := feed.json(t)["_count"]; n != 5.0 { // manual, auto, none's default, shared, sharedauto
			t.Errorf("offers feed count %v, want 5: %s", n, feed.Body)
		}
		one := s.do(t, http.MethodGet, "/offers/"+id, nil, nil)
		one.wantStatus(t, "read offer", http.StatusOK)
		etag := one.Header.Get("etag")
		if etag == "" || one.json(t)["_etag"] != etag {
			t.Errorf("offer etag header %q, body %s", etag, one.Body)
		}
		s.do(t, http.MethodGet, "/offers/"+id, hdr("If-None-Match", etag), nil).wantStatus(t, "read offer If-None-Match", http.StatusNotModified)
		s.do(t, http.MethodGet, "/offers/zzzz", nil, nil).wantError(t, "unknown offer", http.StatusNotFound)
		s.do(t, http.MethodPut, "/offers/zzzz", nil, []byte(`{"content":{"offerThroughput":400}}`)).wantError(t, "replace unknown offer", http.StatusNotFound)
		for _, b := range []string{`{`, `[]`, `{"content":{}}`, `{"content":{"offerThroughput":"many"}}`, `{"content":{"offerThroughput":100}}`} {
			s.do(t, http.MethodPut, "/offers/"+id, nil, []byte(b)).wantError(t, "replace offer with "+b, http.StatusBadRequest)
		}
		s.do(t, http.MethodPut, "/offers/"+id, hdr("If-Match", `"stale"`), []byte(`{"content":{"offerThroughput":900}}`)).wantError(t, "replace with a stale If-Match", http.StatusPreconditionFailed)
		put := s.do(t, http.MethodPut, "/offers/"+id, hdr("If-Match", etag), []byte(`{"content":{"offerThroughput":900}}`))
		put.wantStatus(t, "replace offer", http.StatusOK)
		if ct := put.json(t)["content"].(map[string]any); ct["offerThroughput"] != 900.0 || put.Header.Get("etag") == etag {
			t.Errorf("replaced offer: %s", put.Body)
		}
		s.do(t, http.MethodPost, "/offers", nil, []byte(`{}`)).wantError(t, "POST /offers without a query", http.StatusBadRequest)
	})

	t.Run("offers go with their resources", func(t *testing.T) {
		tp := azcosmos.NewManualThroughputProperties(400)
		if _, err := db.CreateContainer(ctx, pkContainer("doomed", nil), &azcosmos.CreateContainerOptions{ThroughputProperties: &tp}); err != nil {
			t.Fatal(err)
		}
		mustContainer(t, db, pkContainer("doomed-default", nil))
		for _, id := range []string{"doomed", "doomed-default"} {
			cc, _ := db.NewContainer(id)
			props, _ := cc.Read(ctx, nil)
			rid := props.ContainerProperties.ResourceID
			byRID := mustMarshal(t, map[string]any{"query": "SELECT * FROM c WHERE c.offerResourceId = '" + rid + "'"})
			q := s.do(t, http.MethodPost, "/offers", hdr("Content-Type", "application/query+json"), byRID)
			offers, _ := q.json(t)["Offers"].([]any)
			if len(offers) != 1 {
				t.Fatalf("offer of %s before the delete: %s", id, q.Body)
			}
			offerID := offers[0].(map[string]any)["id"].(string)
			if _, err := cc.Delete(ctx, nil); err != nil {
				t.Fatal(err)
			}
			q = s.do(t, http.MethodPost, "/offers", hdr("Content-Type", "application/query+json"), byRID)
			if q.json(t)["_count"] != 0.0 {
				t.Errorf("offer of deleted container %s: %s", id, q.Body)
			}
			s.do(t, http.MethodGet, "/offers/"+offerID, nil, nil).wantError(t, "read the offer of deleted container "+id, http.StatusNotFound)
		}
	})
}

// throttleObserver is an SDK transport that records each throttled response.
type throttleObserver struct {
	inner *http.Client
	n429  atomic.Int64
	bad   atomic.Value // string: the first malformed 429, if any
	// onThrottle, if set, runs on each 429 before the SDK sees it.
	onThrottle func()
}

func (o *throttleObserver) Do(req *http.Request) (*http.Response, error) {
	resp, err := o.inner.Do(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		o.n429.Add(1)
		ms, perr := strconv.Atoi(resp.Header.Get("x-ms-retry-after-ms"))
		if perr != nil || ms < 1 || resp.Header.Get("x-ms-substatus") != "3200" {
			o.bad.CompareAndSwap(nil, fmt.Sprintf("retry-after %q substatus %q", resp.Header.Get("x-ms-retry-after-ms"), resp.Header.Get("x-ms-substatus")))
		}
		if o.onThrottle != nil {
			o.onThrottle()
		}
	}
	return resp, err
}

// sdkBurst creates n documents of about 40 KB ("sdk-0" ... under partition
// key "p") at once through cc, a client that retries 429s, and fails the
// test for any create that does not complete; then it checks that obs, the
// client's transport, saw at least one well-formed 429.
func sdkBurst(t *testing.T, cc *azcosmos.ContainerClient, obs *throttleObserver, n int) {
	t.Helper()
	pad := strings.Repeat("x", 40000)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			id := fmt.Sprintf("sdk-%d", i)
			_, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"), mustMarshal(t, map[string]any{"id": id, "pk": "p", "pad": pad}), nil)
			if err != nil {
				err = fmt.Errorf("create %s: %w", id, err)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if obs.n429.Load() == 0 {
		t.Error("the SDK burst saw no 429: nothing was throttled")
	}
	if bad := obs.bad.Load(); bad != nil {
		t.Errorf("malformed 429: %v", bad)
	}
}

// throttlingObserver observes an SDK's requests to s, a server on a manual
// clock (--clock manual): its throughput buckets refill only when the clock
// moves, so a bucket a test has spent stays spent, and the next request is
// throttled whatever the speed of the machine. On each 429 the observer moves
// the clock one second before the SDK sees the answer, so that the SDK's
// retry finds a refilled bucket: throttling happens, and ends, on the test's
// cue rather than after some time has passed.
func throttlingObserver(t *testing.T, s *server) *throttleObserver {
	return &throttleObserver{inner: s.httpClient(), onThrottle: func() {
		req, err := http.NewRequest(http.MethodPost, s.URL+"/_lethe/clock", strings.NewReader(`{"advanceSeconds":1}`))
		if err != nil {
			t.Error(err)
			return
		}
		req.Header.Set("x-lethe-master-key", emulatorKey)
		resp, err := s.rawClient().Do(req)
		if err != nil {
			t.Errorf("advance the clock: %v", err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("advance the clock: %s", resp.Status)
		}
	}}
}

// A burst into a 400 RU/s container is throttled: raw requests see 429s
// that change nothing, and the SDK, retrying as told, completes every create.
// The server runs on a manual clock (see throttlingObserver): the raw burst
// spends the bucket for good, so every test step is decided by the requests,
// not by how fast the machine sends them.
func TestThrottling(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true, Args: []string{"--clock", "manual"}})
	c := s.client(t)
	db := mustDatabase(t, c, "throttle")
	tp := azcosmos.NewManualThroughputProperties(400)
	if _, err := db.CreateContainer(ctx, pkContainer("small", nil), &azcosmos.CreateContainerOptions{ThroughputProperties: &tp}); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 40000) // about 40 KB, 21 RU per create: 400 RU/s is about 19 creates a second

	// Raw burst: no retries.
	var mu sync.Mutex
	created := map[string]bool{}
	n429 := 0
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				id := fmt.Sprintf("raw-%d", i)
				r := s.do(t, http.MethodPost, docsPath("throttle", "small"), hdr("x-ms-documentdb-partitionkey", pkHeader("p")),
					mustMarshal(t, map[string]any{"id": id, "pk": "p", "pad": pad}))
				mu.Lock()
				switch r.Status {
				case http.StatusCreated:
					created[id] = true
				case http.StatusTooManyRequests:
					n429++
					if n429 == 1 {
						msg := r.wantError(t, "throttled create", http.StatusTooManyRequests)
						if e := r.json(t); e["code"] != "TooManyRequests" || msg == "" {
							t.Errorf("429 body: %s", r.Body)
						}
						if ms, err := strconv.Atoi(r.Header.Get("x-ms-retry-after-ms")); err != nil || ms < 1 || ms > 60_000 {
							t.Errorf("x-ms-retry-after-ms %q", r.Header.Get("x-ms-retry-after-ms"))
						}
						if r.Header.Get("x-ms-substatus") != "3200" {
							t.Errorf("x-ms-substatus %q, want 3200", r.Header.Get("x-ms-substatus"))
						}
					}
				default:
					t.Errorf("create %s: %d %s", id, r.Status, truncateForLog(r.Body))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range 300 {
		work <- i
	}
	close(work)
	wg.Wait()
	if n429 == 0 || len(created) == 0 {
		t.Fatalf("raw burst: %d created, %d throttled; want both", len(created), n429)
	}

	// The SDK with retries: every create completes; the transport sees 429s
	// (the first one at least: the raw burst left the bucket spent).
	obs := throttlingObserver(t, s)
	cc, _ := retryingClient(t, s, obs).NewContainer("throttle", "small")
	const sdkDocs = 60
	sdkBurst(t, cc, obs, sdkDocs)

	// Exactly the acknowledged documents exist: throttled creates made nothing.
	pager := cc.NewQueryItemsPager("SELECT VALUE c.id FROM c", azcosmos.NewPartitionKeyString("p"), nil)
	got := map[string]bool{}
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			id, _ := strconv.Unquote(string(it))
			got[id] = true
		}
	}
	if len(got) != len(created)+sdkDocs {
		t.Errorf("%d documents exist; want %d raw + %d SDK", len(got), len(created), sdkDocs)
	}
	for id := range created {
		if !got[id] {
			t.Errorf("acknowledged %s is missing", id)
		}
	}
	for i := range sdkDocs {
		if !got[fmt.Sprintf("sdk-%d", i)] {
			t.Errorf("sdk-%d is missing", i)
		}
	}
}
