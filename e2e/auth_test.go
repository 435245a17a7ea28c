package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// otherKey is a valid base64 key that is not the server's.
const otherKey = "dGhpcyBpcyBub3QgdGhlIHNlcnZlcidzIGtleSwgaXQgaXMgYW5vdGhlciBvbmUhIQ=="

// send issues a request built by the caller, with no headers added.
func (s *server) send(t testing.TB, method, path string, headers map[string]string, body []byte) rawResponse {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := s.rawClient().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// TestAuth proves master-key authorization: requests without a valid signature
// (missing header, wrong key, tampered signature, a signature for another
// verb, resource or date, a date too far from the server's clock, malformed or
// AAD tokens) get 401 with a Cosmos JSON error body and change nothing; a
// signature sent without url-encoding (a literal '+') is accepted; and an SDK
// client built with the wrong key gets an error with status 401.
func TestAuth(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	c := s.client(t)
	mustDatabase(t, c, "Auth")

	now := func() string { return time.Now().UTC().Format(http.TimeFormat) }
	good := func(method, typ, link, date string) map[string]string {
		return hdr("x-ms-date", date, "x-ms-version", "2020-11-05", "Authorization", signWithKey(emulatorKey, method, typ, link, date))
	}
	// The harness's signer and ours agree (sanity: a good request passes).
	d := now()
	s.send(t, "GET", "/dbs/Auth", good("GET", "dbs", "dbs/Auth", d), nil).wantStatus(t, "well signed request", http.StatusOK)

	tamper := func(h string) string {
		dec, _ := url.QueryUnescape(h)
		i := strings.Index(dec, "sig=") + 4
		b := []byte(dec)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return url.QueryEscape(string(b))
	}
	old := time.Now().Add(-20 * time.Minute).UTC().Format(http.TimeFormat)
	future := time.Now().Add(20 * time.Minute).UTC().Format(http.TimeFormat)
	body := []byte(`{"id":"created-by-attacker"}`)
	cases := []struct {
		name    string
		headers map[string]string
	}{
		{"missing Authorization", hdr("x-ms-date", d, "x-ms-version", "2020-11-05")},
		{"empty Authorization", hdr("x-ms-date", d, "Authorization", "")},
		{"wrong key", hdr("x-ms-date", d, "Authorization", signWithKey(otherKey, "POST", "dbs", "", d))},
		{"tampered signature", hdr("x-ms-date", d, "Authorization", tamper(signWithKey(emulatorKey, "POST", "dbs", "", d)))},
		{"signature for another verb", hdr("x-ms-date", d, "Authorization", signWithKey(emulatorKey, "GET", "dbs", "", d))},
		{"signature for another resource", hdr("x-ms-date", d, "Authorization", signWithKey(emulatorKey, "POST", "colls", "dbs/Auth", d))},
		{"signature for another date", hdr("x-ms-date", d, "Authorization", signWithKey(emulatorKey, "POST", "dbs", "", old))},
		{"date 20 minutes old", hdr("x-ms-date", old, "Authorization", signWithKey(emulatorKey, "POST", "dbs", "", old))},
		{"date 20 minutes ahead", hdr("x-ms-date", future, "Authorization", signWithKey(emulatorKey, "POST", "dbs", "", future))},
		{"missing date", hdr("Authorization", signWithKey(emulatorKey, "POST", "dbs", "", d))},
		{"date not RFC 1123", hdr("x-ms-date", "2024-01-01T00:00:00Z", "Authorization", signWithKey(emulatorKey, "POST", "dbs", "", "2024-01-01T00:00:00Z"))},
		{"malformed token", hdr("x-ms-date", d, "Authorization", "Bearer abc")},
		{"token without sig", hdr("x-ms-date", d, "Authorization", url.QueryEscape("type=master&ver=1.0"))},
		{"signature not base64", hdr("x-ms-date", d, "Authorization", url.QueryEscape("type=master&ver=1.0&sig=!!!"))},
		{"AAD token", hdr("x-ms-date", d, "Authorization", "type=aad&ver=1.0&sig=eyJhbGciOiJub25lIn0.e30.")},
	}
	for _, tc := range cases {
		r := s.send(t, "POST", "/dbs", tc.headers, body)
		r.wantError(t, tc.name, http.StatusUnauthorized)
		if r.Header.Get("x-ms-activity-id") == "" {
			t.Errorf("%s: 401 without x-ms-activity-id", tc.name)
		}
		if r.json(t)["code"] != "Unauthorized" {
			t.Errorf("%s: code %v; want Unauthorized", tc.name, r.json(t)["code"])
		}
		dec, _ := url.QueryUnescape(tc.headers["Authorization"])
		if _, sig, ok := strings.Cut(dec, "sig="); ok && len(sig) > 8 && strings.Contains(string(r.Body), sig) {
			t.Errorf("%s: the error echoes the credential: %s", tc.name, r.Body)
		}
	}
	// Nothing was created by any of them.
	s.do(t, "GET", "/dbs/created-by-attacker", nil, nil).wantError(t, "database created by an unauthorized request", http.StatusNotFound)

	// The link keeps its case: a signature over the lower-cased link is wrong.
	s.send(t, "GET", "/dbs/Auth", good("GET", "dbs", "dbs/auth", d), nil).wantError(t, "link signed lower-cased", http.StatusUnauthorized)
	// Verb, type and date are case-insensitive in the payload.
	s.send(t, "GET", "/dbs/Auth", good("get", "DBS", "dbs/Auth", d), nil).wantStatus(t, "upper-case type", http.StatusOK)

	// A signature sent without url-encoding (literal '+' and '/') is accepted:
	// find a resource whose signature contains '+'.
	found := false
	for i := 0; i < 200 && !found; i++ {
		link := fmt.Sprintf("dbs/missing%d", i)
		sig := signWithKey(emulatorKey, "GET", "dbs", link, d)
		dec, _ := url.QueryUnescape(sig)
		if !strings.Contains(dec, "+") {
			continue
		}
		found = true
		s.send(t, "GET", "/"+link, hdr("x-ms-date", d, "Authorization", dec), nil).wantError(t, "unencoded signature with '+'", http.StatusNotFound)
	}
	if !found {
		t.Error("no signature with '+' in 200 tries")
	}

	t.Run("SDK with the wrong key", func(t *testing.T) {
		bad := s.clientWithKey(t, otherKey)
		_, err := bad.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "sdk-bad-key"}, nil)
		wantStatus(t, "create database with the wrong key", err, http.StatusUnauthorized)
		db, _ := bad.NewDatabase("Auth")
		_, err = db.Read(ctx, nil)
		wantStatus(t, "read database with the wrong key", err, http.StatusUnauthorized)
		// Nothing was created.
		good, _ := c.NewDatabase("sdk-bad-key")
		_, err = good.Read(ctx, nil)
		wantStatus(t, "database created with the wrong key", err, http.StatusNotFound)
	})
}
