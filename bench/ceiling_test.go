package bench

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// startCeiling serves a Ceiling on a free loopback port until the test ends.
func startCeiling(tb testing.TB, opts *CeilingOptions) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	c := NewCeiling(opts)
	errc := make(chan error, 1)
	go func() { errc <- c.Serve(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
		if err := <-errc; err != nil {
			tb.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + "/"
}

// TestCeilingWithSDK drives every operation the workloads use through the
// official SDK: the ceiling's canned answers must satisfy it, also when it
// spends CPU on each request first.
func TestCeilingWithSDK(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testCeilingWithSDK(t, nil) })
	t.Run("work", func(t *testing.T) { testCeilingWithSDK(t, &CeilingOptions{Work: 5 * time.Microsecond}) })
}

// TestCeilingWork: a ceiling given CPU time per request burns some, one
// without burns none, and burning is not folded away (more rounds give
// another result).
func TestCeilingWork(t *testing.T) {
	if c := NewCeiling(nil); c.work != 0 {
		t.Errorf("no work asked: %d rounds a request", c.work)
	}
	if c := NewCeiling(&CeilingOptions{Work: time.Nanosecond}); c.work != 1 {
		t.Errorf("1ns of work: %d rounds a request, want the minimum of 1", c.work)
	}
	short, long := NewCeiling(&CeilingOptions{Work: time.Microsecond}), NewCeiling(&CeilingOptions{Work: time.Millisecond})
	if short.work < 1 || long.work <= short.work {
		t.Errorf("rounds a request: %d for 1us, %d for 1ms", short.work, long.work)
	}
	if burn(1) == burn(2) {
		t.Error("burn gives the same result for one round and two")
	}
}

func testCeilingWithSDK(t *testing.T, opts *CeilingOptions) {
	url := startCeiling(t, opts)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cred, err := azcosmos.NewKeyCredential("AAAA") // the ceiling checks nothing
	if err != nil {
		t.Fatal(err)
	}
	client, err := azcosmos.NewClientWithKey(url, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: tr}, Retry: policy.RetryOptions{MaxRetries: -1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatalf("create database: %v", err)
	}
	db, _ := client.NewDatabase("db")
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil); err != nil {
		t.Fatalf("create container: %v", err)
	}
	cc, _ := db.NewContainer("c")
	if _, err := cc.Read(ctx, nil); err != nil {
		t.Fatalf("read container: %v", err)
	}
	pk := azcosmos.NewPartitionKeyString("p1")
	doc := appendDocument(nil, 1, 100, 0, 0, 1024)
	check := func(op string, r azcosmos.ItemResponse, err error, wantBody bool) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if r.RequestCharge <= 0 || r.ActivityID == "" || r.SessionToken == nil || r.ETag == "" {
			t.Errorf("%s: charge %v activity %q session %v etag %q", op, r.RequestCharge, r.ActivityID, r.SessionToken, r.ETag)
		}
		if wantBody != (len(r.Value) > 0) {
			t.Errorf("%s: body %d bytes, want a body: %v", op, len(r.Value), wantBody)
		}
	}
	r, err := cc.CreateItem(ctx, pk, doc, nil)
	check("create", r, err, false)
	r, err = cc.ReadItem(ctx, pk, "d1", nil)
	check("read", r, err, true)
	var got map[string]any
	if err := json.Unmarshal(r.Value, &got); err != nil || got["_rid"] == nil || got["_etag"] == nil || len(r.Value) < 1024 {
		t.Errorf("read: %d bytes, %v: want a 1 KB document with system properties", len(r.Value), err)
	}
	r, err = cc.ReplaceItem(ctx, pk, "d1", doc, nil)
	check("replace", r, err, false)
	r, err = cc.UpsertItem(ctx, pk, doc, nil)
	check("upsert", r, err, false)
	yes := true
	r, err = cc.CreateItem(ctx, pk, doc, &azcosmos.ItemOptions{EnableContentResponseOnWrite: yes})
	check("create with content response", r, err, true)
	if _, err := cc.DeleteItem(ctx, pk, "d1", nil); err != nil {
		t.Errorf("delete: %v", err)
	}
	for _, q := range []struct {
		query     string
		pk        azcosmos.PartitionKey
		continues bool
	}{
		{"SELECT * FROM c WHERE c.pk = 'p1'", pk, true},
		{"SELECT TOP 10 * FROM c WHERE c.k = 1", azcosmos.NewPartitionKey(), false},
	} {
		page, err := cc.NewQueryItemsPager(q.query, q.pk, &azcosmos.QueryOptions{PageSizeHint: 10}).NextPage(ctx)
		if err != nil {
			t.Fatalf("%s: %v", q.query, err)
		}
		if len(page.Items) != 10 || page.RequestCharge <= 0 || page.QueryMetrics == nil || (page.ContinuationToken != nil) != q.continues {
			t.Errorf("%s: %d items, charge %v, metrics %v, continuation %v", q.query, len(page.Items), page.RequestCharge, page.QueryMetrics, page.ContinuationToken)
		}
	}
	// The SDK's partition key range refresh: 200 with an etag, then 304.
	ranges, err := cc.ReadFeedRanges(ctx, nil)
	if err != nil || len(ranges) != 1 {
		t.Errorf("feed ranges: %v, %v", ranges, err)
	}
	hc := &http.Client{Transport: tr}
	resp, err := hc.Get(url + "dbs/db/colls/c/pkranges")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	etag := resp.Header.Get("etag")
	if resp.StatusCode != http.StatusOK || etag == "" {
		t.Fatalf("pkranges: %d, etag %q", resp.StatusCode, etag)
	}
	req, _ := http.NewRequest(http.MethodGet, url+"dbs/db/colls/c/pkranges", nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("pkranges with If-None-Match: %d, want 304", resp.StatusCode)
	}
	if _, err := cc.Delete(ctx, nil); err != nil {
		t.Errorf("delete container: %v", err)
	}
}

func TestCollPath(t *testing.T) {
	for in, want := range map[string]string{
		"dbs/d/colls/c":           "dbs/d/colls/c",
		"dbs/d/colls/c/docs":      "dbs/d/colls/c",
		"dbs/d/colls/c/docs/x/y/": "dbs/d/colls/c",
	} {
		if got := collPath(strings.Trim(in, "/")); got != want {
			t.Errorf("collPath(%q) = %q, want %q", in, got, want)
		}
	}
}
