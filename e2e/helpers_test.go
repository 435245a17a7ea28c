package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// ctx is the context of every SDK call in these tests; each SDK client carries
// its own timeouts through the harness's http.Client.
var ctx = context.Background()

// --- SDK helpers ---

// clientWithKey returns an official Go SDK client that signs with key (base64).
func (s *server) clientWithKey(t testing.TB, key string) *azcosmos.Client {
	t.Helper()
	cred, err := azcosmos.NewKeyCredential(key)
	if err != nil {
		t.Fatal(err)
	}
	opts := &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: s.httpClient(),
		Retry:     policy.RetryOptions{MaxRetries: 2, RetryDelay: 10 * time.Millisecond},
	}}
	c, err := azcosmos.NewClientWithKey(s.URL+"/", cred, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mustDatabase creates database id through the SDK and returns its client.
func mustDatabase(t testing.TB, c *azcosmos.Client, id string) *azcosmos.DatabaseClient {
	t.Helper()
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: id}, nil); err != nil {
		t.Fatalf("create database %q: %v", id, err)
	}
	db, err := c.NewDatabase(id)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// mustContainer creates a container through the SDK and returns its client.
func mustContainer(t testing.TB, db *azcosmos.DatabaseClient, p azcosmos.ContainerProperties) *azcosmos.ContainerClient {
	t.Helper()
	if _, err := db.CreateContainer(ctx, p, nil); err != nil {
		t.Fatalf("create container %q: %v", p.ID, err)
	}
	cc, err := db.NewContainer(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// pkContainer is the properties of a container partitioned on /pk, with
// defaultTtl set when ttl is non-nil.
func pkContainer(id string, ttl *int32) azcosmos.ContainerProperties {
	return azcosmos.ContainerProperties{
		ID:                     id,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		DefaultTimeToLive:      ttl,
	}
}

func i32(n int32) *int32 { return &n }

// mustMarshal encodes v as JSON.
func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeObject decodes a JSON object.
func decodeObject(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %q: %v", truncateForLog(b), err)
	}
	return m
}

func truncateForLog(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// statusOf returns the HTTP status of an SDK error, or 0 when err is not a
// response error.
func statusOf(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// wantStatus fails the test unless err is an SDK response error with status.
func wantStatus(t testing.TB, what string, err error, status int) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded; want status %d", what, status)
		return
	}
	if got := statusOf(err); got != status {
		t.Errorf("%s: status %d (%v); want %d", what, got, err, status)
	}
}

// withHeader returns a context that makes the SDK add header name: value to
// its request, for headers the SDK has no option for (If-None-Match).
func withHeader(parent context.Context, name, value string) context.Context {
	h := http.Header{}
	h.Set(name, value)
	return policy.WithHTTPHeader(parent, h)
}

// createDoc creates a document through the SDK, with content response on, and
// returns the stored body.
func createDoc(t testing.TB, cc *azcosmos.ContainerClient, pk azcosmos.PartitionKey, doc map[string]any) map[string]any {
	t.Helper()
	r, err := cc.CreateItem(ctx, pk, mustMarshal(t, doc), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
	if err != nil {
		t.Fatalf("create %v: %v", doc["id"], err)
	}
	return decodeObject(t, r.Value)
}

// readStatus reads a document through the SDK and returns 200 or the error status.
func readStatus(t testing.TB, cc *azcosmos.ContainerClient, pk azcosmos.PartitionKey, id string) int {
	t.Helper()
	_, err := cc.ReadItem(ctx, pk, id, nil)
	if err != nil {
		if st := statusOf(err); st != 0 {
			return st
		}
		t.Fatalf("read %q: %v", id, err)
	}
	return http.StatusOK
}

// tsOf returns a document's _ts, which must be a JSON integer.
func tsOf(t testing.TB, doc map[string]any) int64 {
	t.Helper()
	f, ok := doc["_ts"].(float64)
	if !ok || f != float64(int64(f)) || f < 1e9 {
		t.Fatalf("_ts = %#v; want integer Unix seconds", doc["_ts"])
	}
	return int64(f)
}

// sleepUntil sleeps until the wall clock reaches at.
func sleepUntil(at time.Time) {
	if d := time.Until(at); d > 0 {
		time.Sleep(d)
	}
}

// expiryInstant is the first wall-clock instant at which a document written at
// _ts with effective ttl n is expired (_ts + n <= now, in whole seconds), plus a
// small margin for the request's own latency to be irrelevant.
func expiryInstant(ts, n int64) time.Time {
	return time.Unix(ts+n, 0).Add(30 * time.Millisecond)
}

// --- raw request helpers ---

// docsPath is the escaped path of a container's document feed.
func docsPath(db, coll string) string {
	return "/dbs/" + url.PathEscape(db) + "/colls/" + url.PathEscape(coll) + "/docs"
}

// docPath is the escaped path of one document.
func docPath(db, coll, id string) string {
	return docsPath(db, coll) + "/" + url.PathEscape(id)
}

// collPath is the escaped path of a container.
func collPath(db, coll string) string {
	return "/dbs/" + url.PathEscape(db) + "/colls/" + url.PathEscape(coll)
}

// pkHeader renders partition key components as the x-ms-documentdb-partitionkey
// header (JSON).
func pkHeader(components ...any) string {
	b, err := json.Marshal(components)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// hdr builds a header map from name, value pairs.
func hdr(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// json decodes the response body as an object.
func (r rawResponse) json(t testing.TB) map[string]any {
	t.Helper()
	return decodeObject(t, r.Body)
}

// wantError fails the test unless r has the given status and a Cosmos error body
// {"code": <non-empty>, "message": <non-empty>}, and returns the message.
func (r rawResponse) wantError(t testing.TB, what string, status int) string {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s: status %d, body %s; want %d", what, r.Status, truncateForLog(r.Body), status)
		return ""
	}
	var e struct {
		Code    *string `json:"code"`
		Message *string `json:"message"`
	}
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Code == nil || e.Message == nil || *e.Code == "" || *e.Message == "" {
		t.Errorf("%s: error body %q is not {\"code\",\"message\"} JSON", what, truncateForLog(r.Body))
		return ""
	}
	if ch := r.charge(); ch <= 0 {
		t.Errorf("%s: x-ms-request-charge %q on an error response; want > 0", what, r.Header.Get("x-ms-request-charge"))
	}
	return *e.Message
}

// wantStatus fails the test unless r has the given status.
func (r rawResponse) wantStatus(t testing.TB, what string, status int) {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s: status %d, body %s; want %d", what, r.Status, truncateForLog(r.Body), status)
	}
}

// charge parses x-ms-request-charge (0 when absent or malformed).
func (r rawResponse) charge() float64 {
	f, _ := strconv.ParseFloat(r.Header.Get("x-ms-request-charge"), 64)
	return f
}

// feedPage is one decoded read-feed page.
type feedPage struct {
	Docs         []map[string]any
	Continuation string
	Count        int
}

// readFeedPage fetches one raw read-feed page.
func (s *server) readFeedPage(t testing.TB, db, coll string, headers map[string]string) (feedPage, rawResponse) {
	t.Helper()
	r := s.do(t, "GET", docsPath(db, coll), headers, nil)
	if r.Status != http.StatusOK {
		return feedPage{}, r
	}
	var body struct {
		Documents []map[string]any `json:"Documents"`
		Count     *int             `json:"_count"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || body.Count == nil {
		t.Fatalf("read feed body %q: %v", truncateForLog(r.Body), err)
	}
	if *body.Count != len(body.Documents) {
		t.Errorf("read feed _count = %d with %d documents", *body.Count, len(body.Documents))
	}
	return feedPage{Docs: body.Documents, Continuation: r.Header.Get("x-ms-continuation"), Count: *body.Count}, r
}

// readFeedAll follows continuations to the end of a container's read feed with
// the given page size (0: server default) and returns every document's id in
// order. pk, when non-empty, is the partition key header.
func (s *server) readFeedAll(t testing.TB, db, coll string, pageSize int, pk string) []string {
	t.Helper()
	var ids []string
	cont := ""
	for pages := 0; ; pages++ {
		if pages > 100000 {
			t.Fatal("read feed does not end")
		}
		h := hdr()
		if pageSize > 0 {
			h["x-ms-max-item-count"] = strconv.Itoa(pageSize)
		}
		if cont != "" {
			h["x-ms-continuation"] = cont
		}
		if pk != "" {
			h["x-ms-documentdb-partitionkey"] = pk
		}
		p, r := s.readFeedPage(t, db, coll, h)
		if r.Status != http.StatusOK {
			t.Fatalf("read feed: status %d %s", r.Status, truncateForLog(r.Body))
		}
		if pageSize > 0 && len(p.Docs) > pageSize {
			t.Fatalf("read feed page has %d documents; page size %d", len(p.Docs), pageSize)
		}
		for _, d := range p.Docs {
			id, _ := d["id"].(string)
			ids = append(ids, id)
		}
		if p.Continuation == "" {
			return ids
		}
		cont = p.Continuation
	}
}

// signWithKey computes a master-key Authorization header with an arbitrary
// base64 key, for the authentication tests.
func signWithKey(key, method, resourceType, resourceLink, date string) string {
	payload := strings.ToLower(method) + "\n" + strings.ToLower(resourceType) + "\n" + resourceLink + "\n" + strings.ToLower(date) + "\n\n"
	k, _ := base64.StdEncoding.DecodeString(key)
	mac := hmac.New(sha256.New, k)
	mac.Write([]byte(payload))
	sig := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	return url.QueryEscape("type=master&ver=1.0&sig=" + sig)
}

// --- process helpers ---

// terminate sends SIGTERM without waiting.
func (s *server) terminate() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
}

// waitExit waits for the process to exit and returns its error (nil for exit 0).
func (s *server) waitExit(t testing.TB, within time.Duration) error {
	t.Helper()
	select {
	case <-s.done:
		return s.waitErr
	case <-time.After(within):
		_ = s.cmd.Process.Kill()
		<-s.done
		t.Fatalf("lethe did not exit within %v\n%s", within, s.stderr)
		return nil
	}
}

// alive reports whether the process is still running.
func (s *server) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// timeNowUTC is the wall clock in UTC.
func timeNowUTC() time.Time { return time.Now().UTC() }

// queryStrings runs a query whose rows are strings (SELECT VALUE c.id ...)
// through the Go SDK's pager to the end and returns the rows in order.
func queryStrings(ctx context.Context, cc *azcosmos.ContainerClient, q string, pk azcosmos.PartitionKey, opts *azcosmos.QueryOptions) ([]string, error) {
	pager := cc.NewQueryItemsPager(q, pk, opts)
	var out []string
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, item := range page.Items {
			var v string
			if err := json.Unmarshal(item, &v); err != nil {
				return nil, fmt.Errorf("%s: row %s is not a string", q, item)
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// snapshot returns the bodies of GET on each path: everything a refused
// request could have changed, to compare before and after.
func (s *server) snapshot(t testing.TB, paths ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range paths {
		r := s.do(t, "GET", p, nil, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("snapshot %s: %d", p, r.Status)
		}
		out[p] = string(r.Body)
	}
	return out
}

// waitCount waits until c reaches n (acknowledged writes, say), failing the
// test with what after a minute.
func waitCount(t *testing.T, c *atomic.Int64, n int64, what string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); c.Load() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: a minute on, %d of %d", what, c.Load(), n)
		}
	}
}
