package gateway

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/lethe-db/lethe"
)

// emulatorKey is the Cosmos DB emulator's well-known account key, Lethe's default.
const emulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// testDate is a fixed request date and testNow the server clock that goes with it.
const testDate = "Mon, 02 Jan 2006 15:04:05 GMT"

var testNow = time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC)

// mustDecodeKey returns the decoded emulator key.
func mustDecodeKey(tb testing.TB) []byte {
	tb.Helper()
	k, err := base64.StdEncoding.DecodeString(emulatorKey)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func TestResourceFromPath(t *testing.T) {
	tests := []struct {
		path     string
		wantType string
		wantLink string
	}{
		{"", "", ""},
		{"/", "", ""},
		{"//", "", ""},
		{"/dbs", "dbs", ""},
		{"/dbs/", "dbs", ""},
		{"/dbs/db1", "dbs", "dbs/db1"},
		{"/dbs/db1/", "dbs", "dbs/db1"},
		{"/dbs/db1/colls", "colls", "dbs/db1"},
		{"/dbs/db1/colls/c1", "colls", "dbs/db1/colls/c1"},
		{"/dbs/db1/colls/c1/docs", "docs", "dbs/db1/colls/c1"},
		{"/dbs/db1/colls/c1/docs/d1", "docs", "dbs/db1/colls/c1/docs/d1"},
		{"/dbs/db1/colls/c1/pkranges", "pkranges", "dbs/db1/colls/c1"},
		{"/dbs//db1///colls/c1", "colls", "dbs/db1/colls/c1"},
		// An id containing a slash is one segment: split first, decode after.
		{"/dbs/db1/colls/c1/docs/a%2Fb", "docs", "dbs/db1/colls/c1/docs/a/b"},
		{"/dbs/db1/colls/c1/docs/a%2fb", "docs", "dbs/db1/colls/c1/docs/a/b"},
		{"/dbs/my%20db/colls/c%201", "colls", "dbs/my db/colls/c 1"},
		// '+' is literal in a path, and "%2B" is a '+' too.
		{"/dbs/a+b/colls/c%2Bd", "colls", "dbs/a+b/colls/c+d"},
		{"/dbs/%C3%BCn%C3%AF/colls/%F0%9F%98%80", "colls", "dbs/ünï/colls/😀"},
		{"/dbs/ünï", "dbs", "dbs/ünï"},
		{"/dbs/100%25", "dbs", "dbs/100%"},
		{"/dbs/Db1/Colls/C1", "Colls", "dbs/Db1/Colls/C1"},
		// Offers are RID-based: the link is the lower-cased offer id.
		{"/offers", "offers", ""},
		{"/offers/ABC", "offers", "abc"},
		{"/offers/AbC9/", "offers", "abc9"},
	}
	for _, tt := range tests {
		typ, link, err := resourceFromPath(tt.path)
		if err != nil {
			t.Errorf("resourceFromPath(%q): %v", tt.path, err)
			continue
		}
		if typ != tt.wantType || link != tt.wantLink {
			t.Errorf("resourceFromPath(%q) = (%q, %q), want (%q, %q)", tt.path, typ, link, tt.wantType, tt.wantLink)
		}
	}
}

func TestResourceFromPathInvalidEscape(t *testing.T) {
	for _, p := range []string{"/dbs/%", "/dbs/%zz", "/dbs/db1/colls/%4", "/%G0"} {
		_, _, err := resourceFromPath(p)
		if !lethe.IsCode(err, lethe.CodeBadRequest) {
			t.Errorf("resourceFromPath(%q) error = %v, want BadRequest", p, err)
		}
	}
}

// TestSignMasterKeyKnownValue pins signatures computed outside Go, with
//
//	printf 'get\ndbs\ndbs/db1\nmon, 02 jan 2006 15:04:05 gmt\n\n' |
//	  openssl dgst -sha256 -mac HMAC -macopt hexkey:<hex of the decoded key> -binary | base64
func TestSignMasterKeyKnownValue(t *testing.T) {
	key := mustDecodeKey(t)
	tests := []struct {
		verb, typ, link string
		wantSig         string
	}{
		{"GET", "dbs", "dbs/db1", "BkAGNqVX5pvETnrJOkGBUBRWYuuqFk9ClgX+yd5bm9g="},
		{"GET", "", "", "Fs7cFai6PY1sh281w9RsVkR7c3JDiFFEUjSLtjbp3/4="},
	}
	for _, tt := range tests {
		got := signMasterKey(tt.verb, tt.typ, tt.link, testDate, key)
		want := url.QueryEscape("type=master&ver=1.0&sig=" + tt.wantSig)
		if got != want {
			t.Errorf("signMasterKey(%q, %q, %q) = %q, want %q", tt.verb, tt.typ, tt.link, got, want)
		}
		// The encoded form has no literal '+', '/' or '=' left.
		if strings.ContainsAny(got, "+/=&") {
			t.Errorf("signMasterKey result %q is not fully encoded", got)
		}
		r := newSignedRequest(tt.verb, tt.typ, tt.link, testDate, key)
		if err := checkMasterKey(r, tt.typ, tt.link, key, testNow); err != nil {
			t.Errorf("checkMasterKey: %v", err)
		}
	}
}

// newSignedRequest returns a request carrying a valid master-key signature.
func newSignedRequest(verb, typ, link, date string, key []byte) *http.Request {
	r := httptest.NewRequest(verb, "/", nil)
	r.Header.Set("x-ms-date", date)
	r.Header.Set("Authorization", signMasterKey(verb, typ, link, date, key))
	return r
}

// wantUnauthorized fails the test unless err is a 401 domain error without a
// substatus.
func wantUnauthorized(t *testing.T, name string, err error) {
	t.Helper()
	if !lethe.IsCode(err, lethe.CodeUnauthorized) {
		t.Errorf("%s: error = %v, want Unauthorized", name, err)
		return
	}
	if e := err.(*lethe.Error); e.SubStatus != 0 {
		t.Errorf("%s: substatus = %d, want 0", name, e.SubStatus)
	}
}

func TestCheckMasterKeyRoundTrip(t *testing.T) {
	key := mustDecodeKey(t)
	for _, tc := range []struct{ verb, typ, link string }{
		{"GET", "", ""},
		{"POST", "dbs", ""},
		{"GET", "dbs", "dbs/db1"},
		{"DELETE", "docs", "dbs/db1/colls/c1/docs/a/b"},
		{"PUT", "docs", "dbs/db1/colls/c1/docs/ünï 😀+x"},
		{"PATCH", "offers", "abc"},
	} {
		r := newSignedRequest(tc.verb, tc.typ, tc.link, testDate, key)
		if err := checkMasterKey(r, tc.typ, tc.link, key, testNow); err != nil {
			t.Errorf("%v: %v", tc, err)
		}
	}
}

func TestCheckMasterKeyHeaderForms(t *testing.T) {
	key := mustDecodeKey(t)
	sig := base64.StdEncoding.EncodeToString(computeMAC(stringToSign("GET", "dbs", "dbs/db1", testDate), key))
	forms := map[string]string{
		"QueryEscape":        url.QueryEscape("type=master&ver=1.0&sig=" + sig),
		"encodeURIComponent": strings.NewReplacer("=", "%3D", "&", "%26", "+", "%2B", "/", "%2F").Replace("type=master&ver=1.0&sig=" + sig),
		"unencoded":          "type=master&ver=1.0&sig=" + sig,
		"reordered":          url.QueryEscape("sig=" + sig + "&ver=1.0&type=master"),
		// Lower-case hex digits in the escapes (the signature itself keeps its case).
		"lower-case hex": strings.NewReplacer("%3D", "%3d", "%2B", "%2b", "%2F", "%2f").Replace(url.QueryEscape("type=master&ver=1.0&sig=" + sig)),
	}
	for name, h := range forms {
		r := httptest.NewRequest("GET", "/dbs/db1", nil)
		r.Header.Set("x-ms-date", testDate)
		r.Header.Set("Authorization", h)
		if err := checkMasterKey(r, "dbs", "dbs/db1", key, testNow); err != nil {
			t.Errorf("%s (%q): %v", name, h, err)
		}
	}
}

func TestCheckMasterKeyDateHeader(t *testing.T) {
	key := mustDecodeKey(t)
	// Without x-ms-date, the Date header is signed.
	r := httptest.NewRequest("GET", "/dbs/db1", nil)
	r.Header.Set("Date", testDate)
	r.Header.Set("Authorization", signMasterKey("GET", "dbs", "dbs/db1", testDate, key))
	if err := checkMasterKey(r, "dbs", "dbs/db1", key, testNow); err != nil {
		t.Errorf("Date header: %v", err)
	}
	// x-ms-date wins over Date.
	r.Header.Set("x-ms-date", "Mon, 02 Jan 2006 15:04:06 GMT")
	wantUnauthorized(t, "x-ms-date differs from signed Date", checkMasterKey(r, "dbs", "dbs/db1", key, testNow))

	// "UTC" instead of "GMT" is accepted.
	utc := "Mon, 02 Jan 2006 15:04:05 UTC"
	r = newSignedRequest("GET", "dbs", "dbs/db1", utc, key)
	if err := checkMasterKey(r, "dbs", "dbs/db1", key, testNow); err != nil {
		t.Errorf("UTC date: %v", err)
	}
}

func TestCheckMasterKeyRejects(t *testing.T) {
	key := mustDecodeKey(t)
	otherKey := append([]byte(nil), key...)
	otherKey[0] ^= 1

	good := func() *http.Request {
		return newSignedRequest("GET", "docs", "dbs/db1/colls/c1/docs/d1", testDate, key)
	}

	t.Run("wrong key", func(t *testing.T) {
		err := checkMasterKey(good(), "docs", "dbs/db1/colls/c1/docs/d1", otherKey, testNow)
		wantUnauthorized(t, "wrong key", err)
		msg := lethe.ErrorMessage(err)
		wantPayload := `'get\ndocs\ndbs/db1/colls/c1/docs/d1\nmon, 02 jan 2006 15:04:05 gmt\n\n'`
		if !strings.Contains(msg, "The input authorization token can't serve the request") || !strings.Contains(msg, wantPayload) {
			t.Errorf("message %q does not name the signed payload %s", msg, wantPayload)
		}
	})
	t.Run("tampered verb", func(t *testing.T) {
		r := good()
		r.Method = "DELETE"
		wantUnauthorized(t, "verb", checkMasterKey(r, "docs", "dbs/db1/colls/c1/docs/d1", key, testNow))
	})
	t.Run("tampered type", func(t *testing.T) {
		wantUnauthorized(t, "type", checkMasterKey(good(), "colls", "dbs/db1/colls/c1/docs/d1", key, testNow))
	})
	t.Run("tampered link", func(t *testing.T) {
		wantUnauthorized(t, "link", checkMasterKey(good(), "docs", "dbs/db1/colls/c1/docs/d2", key, testNow))
		// The link is case-sensitive.
		wantUnauthorized(t, "link case", checkMasterKey(good(), "docs", "dbs/db1/colls/c1/docs/D1", key, testNow))
	})
	t.Run("tampered date", func(t *testing.T) {
		r := good()
		r.Header.Set("x-ms-date", "Mon, 02 Jan 2006 15:04:06 GMT")
		wantUnauthorized(t, "date", checkMasterKey(r, "docs", "dbs/db1/colls/c1/docs/d1", key, testNow))
	})
	t.Run("truncated signature", func(t *testing.T) {
		r := good()
		sig := base64.StdEncoding.EncodeToString(computeMAC(stringToSign("GET", "docs", "dbs/db1/colls/c1/docs/d1", testDate), key)[:16])
		r.Header.Set("Authorization", url.QueryEscape("type=master&ver=1.0&sig="+sig))
		wantUnauthorized(t, "short sig", checkMasterKey(r, "docs", "dbs/db1/colls/c1/docs/d1", key, testNow))
	})
}

func TestCheckMasterKeyClockSkew(t *testing.T) {
	key := mustDecodeKey(t)
	for _, tc := range []struct {
		offset time.Duration
		ok     bool
	}{
		{0, true},
		{14 * time.Minute, true},
		{-14 * time.Minute, true},
		{15 * time.Minute, true},
		{-15 * time.Minute, true},
		{16 * time.Minute, false},
		{-16 * time.Minute, false},
		{24 * time.Hour, false},
	} {
		// The request is dated offset away from the server's clock.
		date := testNow.Add(tc.offset).Format(http.TimeFormat)
		r := newSignedRequest("GET", "dbs", "dbs/db1", date, key)
		err := checkMasterKey(r, "dbs", "dbs/db1", key, testNow)
		if tc.ok {
			if err != nil {
				t.Errorf("skew %v: %v", tc.offset, err)
			}
			continue
		}
		wantUnauthorized(t, fmt.Sprintf("skew %v", tc.offset), err)
		if msg := lethe.ErrorMessage(err); !strings.Contains(msg, "not valid at the current time") {
			t.Errorf("skew %v: message %q", tc.offset, msg)
		}
	}
}

func TestCheckMasterKeyMalformed(t *testing.T) {
	key := mustDecodeKey(t)
	sig := base64.StdEncoding.EncodeToString(computeMAC(stringToSign("GET", "dbs", "dbs/db1", testDate), key))
	auths := map[string]string{
		"empty":             "",
		"spaces":            "   ",
		"no sig":            url.QueryEscape("type=master&ver=1.0"),
		"empty sig":         url.QueryEscape("type=master&ver=1.0&sig="),
		"bad base64":        url.QueryEscape("type=master&ver=1.0&sig=!!!not-base64!!!"),
		"no type":           url.QueryEscape("ver=1.0&sig=" + sig),
		"unknown type":      url.QueryEscape("type=bogus&ver=1.0&sig=" + sig),
		"wrong version":     url.QueryEscape("type=master&ver=2.0&sig=" + sig),
		"no equals":         "type",
		"bad escape":        "type%3Dmaster%26ver%3D1.0%26sig%3D%ZZ",
		"truncated escape":  "type%3Dmaster%26ver%3D1.0%26sig%3",
		"garbage":           "\x00\xff%%%&&&===",
		"aad":               "type=aad&ver=1.0&sig=eyJhbGciOiJIUzI1NiJ9.e30.c2ln",
		"resource token":    url.QueryEscape("type=resource&ver=1.0&sig=abc"),
		"bearer":            "Bearer abc",
		"query-escaped '+'": strings.ReplaceAll("type=master&ver=1.0&sig="+sig, "+", " "),
	}
	for name, h := range auths {
		r := httptest.NewRequest("GET", "/dbs/db1", nil)
		r.Header.Set("x-ms-date", testDate)
		if h != "" {
			r.Header["Authorization"] = []string{h}
		}
		wantUnauthorized(t, name, checkMasterKey(r, "dbs", "dbs/db1", key, testNow))
	}
	if !strings.Contains(sig, "+") {
		t.Fatalf("test signature %q has no '+'; the query-escaped case tests nothing", sig)
	}

	dates := map[string]string{
		"missing":     "",
		"garbage":     "yesterday",
		"RFC 3339":    "2006-01-02T15:04:05Z",
		"other zone":  "Mon, 02 Jan 2006 15:04:05 PST",
		"numeric":     "Mon, 02 Jan 2006 15:04:05 +0000",
		"no weekday":  "02 Jan 2006 15:04:05 GMT",
		"bad weekday": "Xyz, 02 Jan 2006 15:04:05 GMT",
	}
	for name, d := range dates {
		r := newSignedRequest("GET", "dbs", "dbs/db1", d, key)
		if d == "" {
			r.Header.Del("x-ms-date")
		}
		wantUnauthorized(t, "date "+name, checkMasterKey(r, "dbs", "dbs/db1", key, testNow))
	}
}

// sdkRequest is one request the Go SDK sent to an sdkRecorder.
type sdkRequest struct {
	method, path string // path is escaped, as on the wire
	header       http.Header
	authErr      error // the verdict of checkMasterKey on it
}

// sdkRecorder is a fake Cosmos DB endpoint for the real Go SDK (azcosmos). It
// answers just enough for the SDK to proceed (the account, database reads and the
// offers query), answers everything else 404, and checks every request's
// signature with resourceFromPath and checkMasterKey.
type sdkRecorder struct {
	srv    *httptest.Server
	client *azcosmos.Client
	mu     struct {
		sync.Mutex
		reqs []sdkRequest // every request received, in order
	}
}

// newSDKRecorder starts an sdkRecorder and a Go SDK client for it that signs
// with the emulator key. Both are closed when the test ends.
func newSDKRecorder(tb testing.TB) *sdkRecorder {
	tb.Helper()
	key := mustDecodeKey(tb)
	rec := &sdkRecorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		typ, link, err := resourceFromPath(r.URL.EscapedPath())
		if err == nil {
			err = checkMasterKey(r, typ, link, key, time.Now())
		}
		rec.mu.Lock()
		rec.mu.reqs = append(rec.mu.reqs, sdkRequest{r.Method, r.URL.EscapedPath(), r.Header.Clone(), err})
		rec.mu.Unlock()

		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-ms-request-charge", "1")
		w.Header().Set("x-ms-activity-id", "00000000-0000-0000-0000-000000000000")
		base := "http://" + r.Host + "/"
		switch {
		case r.URL.Path == "/":
			fmt.Fprintf(w, `{"id":"lethe","_rid":"lethe.localhost","_self":"","_dbs":"//dbs/","media":"//media/","addresses":"//addresses/",`+
				`"writableLocations":[{"name":"South Central US","databaseAccountEndpoint":%q}],`+
				`"readableLocations":[{"name":"South Central US","databaseAccountEndpoint":%q}],`+
				`"enableMultipleWriteLocations":false,"userConsistencyPolicy":{"defaultConsistencyLevel":"Session"}}`, base, base)
		case r.Method == "GET" && strings.Count(strings.Trim(r.URL.Path, "/"), "/") == 1 && strings.HasPrefix(r.URL.Path, "/dbs/"):
			fmt.Fprintf(w, `{"id":%q,"_rid":"AAAAAA==","_self":"dbs/AAAAAA==/","_etag":"\"1\"","_ts":1}`, strings.TrimPrefix(r.URL.Path, "/dbs/"))
		case r.Method == "POST" && r.URL.Path == "/offers":
			w.Header().Set("x-ms-item-count", "1")
			io.WriteString(w, `{"_rid":"","Offers":[`+testOffer+`],"_count":1}`)
		case strings.HasPrefix(r.URL.Path, "/offers/"):
			io.WriteString(w, testOffer)
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"code":"NotFound","message":"not found by sdkRecorder"}`)
		}
	}))
	tb.Cleanup(rec.srv.Close)

	cred, err := azcosmos.NewKeyCredential(emulatorKey)
	if err != nil {
		tb.Fatal(err)
	}
	rec.client, err = azcosmos.NewClientWithKey(rec.srv.URL, cred, &azcosmos.ClientOptions{
		ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(rec.client.Close)
	return rec
}

// testOffer is the offer the sdkRecorder serves; its mixed-case id checks that
// the SDK signs offers with the lower-cased id.
const testOffer = `{"id":"AbC9","_rid":"AbC9","_self":"offers/AbC9/","resource":"dbs/AAAAAA==/",` +
	`"offerResourceId":"AAAAAA==","offerType":"Invalid","offerVersion":"V2","content":{"offerThroughput":400},"_etag":"\"1\"","_ts":1}`

// requests returns the requests received so far and forgets them.
func (rec *sdkRecorder) requests() []sdkRequest {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	reqs := rec.mu.reqs
	rec.mu.reqs = nil
	return reqs
}

// TestCheckMasterKeyGoSDK signs requests with the real Go SDK and checks that the
// server side derives the same type and link and accepts every signature.
func TestCheckMasterKeyGoSDK(t *testing.T) {
	rec := newSDKRecorder(t)
	ctx := context.Background()
	ids := []string{"d1", "a/b", "with space", "plus+sign", "100%", "ünï 😀", "q?x#y", "Mixed.Case-_~"}

	// Every call after the first GET / is expected to fail with 404 except the
	// ones the recorder answers; only the signatures matter here.
	for _, id := range ids {
		db := mustDatabase(t, rec.client, id)
		_, _ = db.Read(ctx, nil)
		c := mustContainer(t, db, id)
		_, _ = c.Read(ctx, nil)
		pk := azcosmos.NewPartitionKeyString(id)
		_, _ = c.ReadItem(ctx, pk, id, nil)
		_, _ = c.DeleteItem(ctx, pk, id, nil)
		_, _ = c.ReplaceItem(ctx, pk, id, []byte(`{"id":"x"}`), nil)
		_, _ = c.CreateItem(ctx, pk, []byte(`{"id":"x"}`), nil)
		_, _ = c.UpsertItem(ctx, pk, []byte(`{"id":"x"}`), nil)
		pager := c.NewQueryItemsPager("SELECT * FROM c", pk, nil)
		_, _ = pager.NextPage(ctx)
	}
	_, _ = rec.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "new"}, nil)
	db := mustDatabase(t, rec.client, "db1")
	if _, err := db.ReadThroughput(ctx, nil); err != nil {
		t.Errorf("ReadThroughput: %v", err)
	}

	reqs := rec.requests()
	t.Logf("the SDK sent %d requests", len(reqs))
	if len(reqs) < 8*len(ids) {
		t.Errorf("the SDK sent only %d requests, want at least %d", len(reqs), 8*len(ids))
	}
	seen := map[string]bool{}
	for _, r := range reqs {
		seen[r.method+" "+r.path] = true
		if r.authErr != nil {
			t.Errorf("%s %s: %v", r.method, r.path, r.authErr)
		}
	}
	for _, want := range []string{
		"GET /",
		"GET /dbs/a%2Fb/colls/a%2Fb/docs/a%2Fb",
		"GET /dbs/with%20space/colls/with%20space/docs/with%20space",
		"GET /dbs/plus+sign/colls/plus+sign/docs/plus+sign",
		"GET /offers/AbC9/",
	} {
		if !seen[want] {
			t.Errorf("the SDK did not send %s; it sent:", want)
			for _, r := range reqs {
				t.Logf("  %s %s", r.method, r.path)
			}
		}
	}
}

// mustDatabase returns a database client, failing the test on error.
func mustDatabase(tb testing.TB, c *azcosmos.Client, id string) *azcosmos.DatabaseClient {
	tb.Helper()
	db, err := c.NewDatabase(id)
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

// mustContainer returns a container client, failing the test on error.
func mustContainer(tb testing.TB, db *azcosmos.DatabaseClient, id string) *azcosmos.ContainerClient {
	tb.Helper()
	c, err := db.NewContainer(id)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func FuzzCheckMasterKey(f *testing.F) {
	key := mustDecodeKey(f)
	f.Add("GET", signMasterKey("GET", "dbs", "dbs/db1", testDate, key), testDate)
	f.Add("get", "type=master&ver=1.0&sig=BkAGNqVX5pvETnrJOkGBUBRWYuuqFk9ClgX+yd5bm9g=", testDate)
	f.Add("POST", "type%3Dmaster%26ver%3D1.0%26sig%3D%", "Mon, 02 Jan 2006 15:04:05 UTC")
	f.Add("PUT", "type=aad&ver=1.0&sig=x.y.z", "")
	f.Add("DELETE", "&&&===%%%", "Mon, 99 Foo 2006 99:99:99 GMT")
	f.Add("GET", "sig=&sig=&type=master", " GMT")
	f.Fuzz(func(t *testing.T, verb, auth, date string) {
		// Requests with invalid methods cannot reach a handler; keep the fuzzer on
		// the header parsing.
		r := httptest.NewRequest("GET", "/dbs/db1", nil)
		r.Method = verb
		r.Header["Authorization"] = []string{auth}
		r.Header["X-Ms-Date"] = []string{date}
		err := checkMasterKey(r, "dbs", "dbs/db1", key, testNow)
		if err != nil && !lethe.IsCode(err, lethe.CodeUnauthorized) {
			t.Fatalf("error %v is not Unauthorized", err)
		}
		if err == nil && auth != signMasterKey(verb, "dbs", "dbs/db1", date, key) {
			// Accepting a header other than the canonical one is fine only if
			// it carries the right signature for the same payload.
			tok, perr := parseAuthorization(auth)
			if perr != nil || string(tok.sig[:]) != string(computeMAC(stringToSign(verb, "dbs", "dbs/db1", date), key)) {
				t.Fatalf("accepted auth %q for date %q", auth, date)
			}
		}
	})
}

// referenceRequestDate is parseRequestDate as it was, with time.Parse and the
// zone: parseRequestDate must accept the same headers, as the same instants.
func referenceRequestDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasSuffix(s, " GMT") && !strings.HasSuffix(s, " UTC") {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC1123, s)
	return t, err == nil
}

var requestDateSeeds = []string{
	"Thu, 26 Nov 2026 22:06:51 GMT",
	"Thu, 26 Nov 2026 22:06:51 UTC",
	"thu, 26 nov 2026 22:06:51 GMT",
	"Fri, 26 Nov 2026 22:06:51 GMT", // a wrong weekday is not checked
	" Thu, 26 Nov 2026 22:06:51 GMT ",
	"Thu, 26 Nov 2026 22:06:51   GMT",
	"Thu, 26 Nov 2026 2:06:51 GMT",
	"Thu, 6 Nov 2026 22:06:51 GMT",
	"Thu, 31 Nov 2026 22:06:51 GMT",
	"Thu, 26 Nov 2026 24:06:51 GMT",
	"Thu, 26 Nov 2026 22:60:51 GMT",
	"Thu, 26 Nov 2026 22:06:51.123 GMT",
	"Thu, 26 Nov 2026 22:06:51 PST",
	"Thu, 26 Nov 2026 22:06:51 +0000",
	"Thu, 26 Nov 2026 22:06:51GMT",
	"Thursday, 26 Nov 2026 22:06:51 GMT",
	"Thu, 26 Nov 26 22:06:51 GMT",
	" GMT",
	"GMT",
	"",
}

func TestParseRequestDateAgreesWithTimeParse(t *testing.T) {
	for _, s := range requestDateSeeds {
		compareRequestDate(t, s)
	}
	if _, ok := parseRequestDate(requestDateSeeds[0]); !ok {
		t.Fatalf("%q refused", requestDateSeeds[0])
	}
	if n := testing.AllocsPerRun(100, func() { parseRequestDate(requestDateSeeds[0]) }); n != 0 {
		t.Errorf("parseRequestDate allocates %v times, want 0", n)
	}
}

func FuzzParseRequestDate(f *testing.F) {
	for _, s := range requestDateSeeds {
		f.Add(s)
	}
	f.Fuzz(compareRequestDate)
}

func compareRequestDate(t *testing.T, s string) {
	got, ok := parseRequestDate(s)
	want, wantOK := referenceRequestDate(s)
	if ok != wantOK || ok && !got.Equal(want) {
		t.Fatalf("parseRequestDate(%q) = %v, %v; time.Parse gives %v, %v", s, got, ok, want, wantOK)
	}
	for _, when := range []string{"parsed", "remembered"} {
		if got, ok := parseSignedDate(s); ok != wantOK || ok && !got.Equal(want) {
			t.Fatalf("parseSignedDate(%q), %s = %v, %v; time.Parse gives %v, %v", s, when, got, ok, want, wantOK)
		}
	}
}

// TestAppendLower: the payload's lower-casing agrees with strings.ToLower,
// for the ASCII that SDKs send and for anything else.
func TestAppendLower(t *testing.T) {
	for _, s := range []string{"", "GET", "docs", "Mon, 02 Jan 2006 15:04:05 GMT", "@[`{AZaz09", "ÄÖÜ Straße", "İ", "x\xffY"} {
		if got, want := string(appendLower([]byte("pre:"), s)), "pre:"+strings.ToLower(s); got != want {
			t.Errorf("appendLower(%q) = %q, want %q", s, got, want)
		}
	}
}

// referenceStringToSign is the payload as it was built by concatenating
// lower-cased strings: appendStringToSign must build the same bytes.
func referenceStringToSign(verb, resourceType, resourceLink, date string) string {
	return strings.ToLower(verb) + "\n" + strings.ToLower(resourceType) + "\n" + resourceLink + "\n" + strings.ToLower(date) + "\n\n"
}

func FuzzAppendStringToSign(f *testing.F) {
	f.Add("GET", "docs", "dbs/db1/colls/c1/docs/d1", testDate)
	f.Add("Post", "Dbs", "", "MON, 02 JAN 2006 15:04:05 GMT")
	f.Add("DELETE", "offers", "abcd", "ÄÖÜ İ \xff")
	f.Fuzz(func(t *testing.T, verb, resourceType, resourceLink, date string) {
		want := referenceStringToSign(verb, resourceType, resourceLink, date)
		if got := string(appendStringToSign([]byte("pre"), verb, resourceType, resourceLink, date)); got != "pre"+want {
			t.Fatalf("payload %q, want %q", got, "pre"+want)
		}
	})
}

// referenceParseAuthorization is parseAuthorization as it was, with
// url.PathUnescape and strings: the allocation-free parser must accept the
// same headers, with the same signatures, and refuse the rest with the same
// errors.
func referenceParseAuthorization(raw string) ([]byte, error) {
	s := raw
	if strings.Contains(s, "%") {
		dec, err := url.PathUnescape(s)
		if err != nil {
			return nil, malformedAuthError()
		}
		s = dec
	}
	var typ, ver, sig string
	var haveSig bool
	for part := range strings.SplitSeq(s, "&") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, malformedAuthError()
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "type":
			typ = strings.TrimSpace(v)
		case "ver":
			ver = strings.TrimSpace(v)
		case "sig":
			sig, haveSig = strings.TrimSpace(v), true
		}
	}
	switch strings.ToLower(typ) {
	case "master":
	case "aad":
		return nil, authErrorf("Microsoft Entra ID (AAD) tokens are not supported by Lethe. Authenticate with the account key.")
	case "resource", "sas":
		return nil, authErrorf("Resource tokens are not supported by Lethe. Authenticate with the account key.")
	default:
		return nil, malformedAuthError()
	}
	if ver != "1.0" || !haveSig {
		return nil, malformedAuthError()
	}
	b, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(b) != 32 {
		return nil, malformedAuthError()
	}
	return b, nil
}

var authHeaderSeeds = []string{
	"type%3Dmaster%26ver%3D1.0%26sig%3DBkAGNqVX5pvETnrJOkGBUBRWYuuqFk9ClgX%2Byd5bm9g%3D",
	"type=master&ver=1.0&sig=BkAGNqVX5pvETnrJOkGBUBRWYuuqFk9ClgX+yd5bm9g=",
	" Sig = BkAGNqVX5pvETnrJOkGBUBRWYuuqFk9ClgX+yd5bm9g= & VER=1.0 & TYPE = Master ",
	"type=master&ver=1.0&sig=BkAGNqVX5pvETnrJ\r\nOkGBUBRWYuuqFk9ClgX+yd5bm9g=",
	"type=maſter&ver=1.0&sig=BkAGNqVX5pvETnrJOkGBUBRWYuuqFk9ClgX+yd5bm9g=",
	"type=master&ver=1.0&ſig=BkAGNqVX5pvETnrJOkGBUBRWYuuqFk9ClgX+yd5bm9g=",
	"type=aad&ver=1.0&sig=x.y.z", "type=SAS&ver=1.0&sig=x", "type=resource",
	"type%3Dmaster%26ver%3D1.0%26sig%3D%", "%zz", "%4", "&&&===%%%", "sig=&sig=&type=master", "",
	"type=master&ver=1.0&sig=" + strings.Repeat("QUFB", 100),
}

// TestParseAuthorizationAsBefore runs the seeds through both parsers;
// FuzzParseAuthorization explores further.
func TestParseAuthorizationAsBefore(t *testing.T) {
	for _, raw := range authHeaderSeeds {
		checkAuthAsBefore(t, raw)
	}
	ok := authHeaderSeeds[0]
	if n := testing.AllocsPerRun(100, func() { _, _ = parseAuthorization(ok) }); n != 0 {
		t.Errorf("parsing a valid header allocates %v times", n)
	}
}

func FuzzParseAuthorization(f *testing.F) {
	for _, s := range authHeaderSeeds {
		f.Add(s)
	}
	f.Fuzz(checkAuthAsBefore)
}

func checkAuthAsBefore(t *testing.T, raw string) {
	want, wantErr := referenceParseAuthorization(raw)
	tok, err := parseAuthorization(raw)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("%q: error %v, before %v", raw, err, wantErr)
	case err != nil && err.Error() != wantErr.Error():
		t.Fatalf("%q: error %q, before %q", raw, err, wantErr)
	case err == nil && string(tok.sig[:]) != string(want):
		t.Fatalf("%q: signature %x, before %x", raw, tok.sig, want)
	}
}

// BenchmarkCheckMasterKey: the signature check every request makes, on a
// header as the Go SDK sends it.
func BenchmarkCheckMasterKey(b *testing.B) {
	key := mustDecodeKey(b)
	r := httptest.NewRequest("GET", "/dbs/db1/colls/c1/docs/d1", nil)
	r.Header["Authorization"] = []string{signMasterKey("GET", "docs", "dbs/db1/colls/c1/docs/d1", testDate, key)}
	r.Header["X-Ms-Date"] = []string{testDate}
	b.ReportAllocs()
	for b.Loop() {
		if err := checkMasterKey(r, "docs", "dbs/db1/colls/c1/docs/d1", key, testNow); err != nil {
			b.Fatal(err)
		}
	}
}
