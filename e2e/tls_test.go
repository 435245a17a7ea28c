package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestTLS proves --tls: the server generates a self-signed certificate in
// data-dir/tls (cert.pem, and key.pem readable by the owner only), serves https
// (HTTP/2) and advertises an https endpoint, the SDK does a full CRUD round trip
// over it, a client that trusts only cert.pem connects to both
// https://127.0.0.1 and https://localhost, a client that trusts nothing extra is
// refused, and a restart reuses the same certificate.
func TestTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, serverOpts{DataDir: dir, TLS: true})
	if !strings.HasPrefix(s.URL, "https://") {
		t.Fatalf("URL %s; want https", s.URL)
	}
	certFile := filepath.Join(dir, "tls", "cert.pem")
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatalf("read %s: %v", certFile, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "tls", "key.pem")); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("key.pem: %v, mode %v; want it private to the owner", err, fi.Mode())
	}

	// The account advertises https (the JS SDK uses the advertised scheme as is).
	r := s.do(t, "GET", "/", nil, nil)
	r.wantStatus(t, "GET /", http.StatusOK)
	if locs, _ := r.json(t)["writableLocations"].([]any); len(locs) != 1 || locs[0].(map[string]any)["databaseAccountEndpoint"] != s.URL+"/" {
		t.Errorf("writableLocations = %v; want %s/", locs, s.URL)
	}

	t.Run("SDK CRUD over https", func(t *testing.T) {
		c := s.client(t)
		cc := mustContainer(t, mustDatabase(t, c, "tls"), pkContainer("c", nil))
		pk := azcosmos.NewPartitionKeyString("p")
		cr, err := cc.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p","v":1}`), nil)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if cr.RawResponse.ProtoMajor != 2 {
			t.Errorf("protocol %s; want HTTP/2 over TLS", cr.RawResponse.Proto)
		}
		rr, err := cc.ReadItem(ctx, pk, "a", nil)
		if err != nil || decodeObject(t, rr.Value)["v"] != float64(1) {
			t.Fatalf("read: %v %s", err, rr.Value)
		}
		if _, err := cc.ReplaceItem(ctx, pk, "a", []byte(`{"id":"a","pk":"p","v":2}`), nil); err != nil {
			t.Errorf("replace: %v", err)
		}
		var ops azcosmos.PatchOperations
		ops.AppendIncrement("/v", 1)
		if _, err := cc.PatchItem(ctx, pk, "a", ops, nil); err != nil {
			t.Errorf("patch: %v", err)
		}
		b := cc.NewTransactionalBatch(pk)
		b.ReadItem("a", nil)
		if br, err := cc.ExecuteTransactionalBatch(ctx, b, nil); err != nil || !br.Success || decodeObject(t, br.OperationResults[0].ResourceBody)["v"] != float64(3) {
			t.Errorf("batch read: %v", err)
		}
		if _, err := cc.DeleteItem(ctx, pk, "a", nil); err != nil {
			t.Errorf("delete: %v", err)
		}
		if st := readStatus(t, cc, pk, "a"); st != http.StatusNotFound {
			t.Errorf("read after delete: %d", st)
		}
	})

	t.Run("trusting only cert.pem", func(t *testing.T) {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(certPEM) {
			t.Fatal("cert.pem holds no certificate")
		}
		u, _ := url.Parse(s.URL)
		for _, host := range []string{"127.0.0.1", "localhost"} {
			endpoint := "https://" + host + ":" + u.Port() + "/"
			c := s.sdkClient(t, endpoint, &tls.Config{RootCAs: pool})
			db, _ := c.NewDatabase("tls")
			if _, err := db.Read(ctx, nil); err != nil {
				t.Errorf("%s with RootCAs = cert.pem: %v", endpoint, err)
			}
		}
		// Without it, verification fails: the pool is what made it work.
		c := s.sdkClient(t, s.URL+"/", &tls.Config{RootCAs: x509.NewCertPool()})
		db, _ := c.NewDatabase("tls")
		if _, err := db.Read(ctx, nil); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("a client that does not trust cert.pem connected: %v", err)
		}
	})

	t.Run("restart keeps the certificate", func(t *testing.T) {
		s.stop(t)
		s2 := startServer(t, serverOpts{DataDir: dir, TLS: true})
		again, err := os.ReadFile(certFile)
		if err != nil || string(again) != string(certPEM) {
			t.Errorf("cert.pem changed across a restart (%v)", err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(certPEM)
		db, _ := s2.sdkClient(t, s2.URL+"/", &tls.Config{RootCAs: pool}).NewDatabase("tls")
		if _, err := db.Read(ctx, nil); err != nil {
			t.Errorf("read after restart with the original certificate trusted: %v", err)
		}
	})
}

// sdkClient returns an SDK client for endpoint (one of s's addresses) with the
// given TLS configuration.
func (s *server) sdkClient(t *testing.T, endpoint string, tc *tls.Config) *azcosmos.Client {
	t.Helper()
	cred, err := azcosmos.NewKeyCredential(emulatorKey)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true}
	s.mu.Lock()
	s.transports = append(s.transports, tr) // closed before the server stops
	s.mu.Unlock()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: tr}
	c, err := azcosmos.NewClientWithKey(endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: hc,
		Retry:     policy.RetryOptions{MaxRetries: -1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
