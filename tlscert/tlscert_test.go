package tlscert

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// parseCertPEM parses the single certificate in certPEM.
func parseCertPEM(tb testing.TB, certPEM []byte) *x509.Certificate {
	tb.Helper()
	block, rest := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) != 0 {
		tb.Fatalf("certificate PEM is not exactly one CERTIFICATE block:\n%s", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		tb.Fatal(err)
	}
	return cert
}

// checkCert verifies the generated certificate's fields and that it verifies
// against itself as a root for every name it should serve.
func checkCert(t *testing.T, cert *x509.Certificate) {
	t.Helper()
	if cert.Subject.CommonName != commonName {
		t.Errorf("CN = %q, want %q", cert.Subject.CommonName, commonName)
	}
	if !cert.IsCA || !cert.BasicConstraintsValid {
		t.Error("certificate is not a CA")
	}
	if cert.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageCertSign {
		t.Errorf("KeyUsage = %v", cert.KeyUsage)
	}
	if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("ExtKeyUsage = %v, want [ServerAuth]", cert.ExtKeyUsage)
	}
	if cert.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("public key algorithm = %v, want ECDSA", cert.PublicKeyAlgorithm)
	}
	if cert.SerialNumber.Sign() <= 0 {
		t.Errorf("serial number %v is not positive", cert.SerialNumber)
	}
	now := time.Now()
	if cert.NotBefore.After(now) {
		t.Errorf("NotBefore %v is in the future", cert.NotBefore)
	}
	if years := cert.NotAfter.Sub(now).Hours() / 24 / 365; years < 9.9 || years > 10.1 {
		t.Errorf("NotAfter %v is %.2f years away, want 10", cert.NotAfter, years)
	}
	if len(cert.DNSNames) != 1 || cert.DNSNames[0] != "localhost" {
		t.Errorf("DNSNames = %v, want [localhost]", cert.DNSNames)
	}
	var ips []string
	for _, ip := range cert.IPAddresses {
		ips = append(ips, ip.String())
	}
	if strings.Join(ips, " ") != "127.0.0.1 ::1" {
		t.Errorf("IPAddresses = %v, want [127.0.0.1 ::1]", ips)
	}

	roots := x509.NewCertPool()
	roots.AddCert(cert)
	for _, name := range []string{"127.0.0.1", "::1", "localhost"} {
		_, err := cert.Verify(x509.VerifyOptions{
			DNSName:   name,
			Roots:     roots,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			t.Errorf("verify for %q: %v", name, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: roots}); err == nil {
		t.Error("certificate verifies for example.com")
	}
}

func TestGenerate(t *testing.T) {
	cert, certPEM, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	parsed := parseCertPEM(t, certPEM)
	checkCert(t, parsed)
	if len(cert.Certificate) != 1 || !bytes.Equal(cert.Certificate[0], parsed.Raw) {
		t.Error("tls.Certificate does not hold the PEM's certificate")
	}

	_, certPEM2, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if parseCertPEM(t, certPEM2).SerialNumber.Cmp(parsed.SerialNumber) == 0 {
		t.Error("two certificates have the same serial number")
	}
}

func TestLoadOrCreate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "tls", "cert.pem"); certFile != want {
		t.Errorf("certFile = %s, want %s", certFile, want)
	}
	if want := filepath.Join(dir, "tls", "key.pem"); keyFile != want {
		t.Errorf("keyFile = %s, want %s", keyFile, want)
	}
	if runtime.GOOS != "windows" {
		wantMode(t, filepath.Join(dir, "tls"), os.ModeDir|0o700)
		wantMode(t, keyFile, 0o600)
		wantMode(t, certFile, 0o644)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "tls"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("tls directory holds %d entries, want 2 (temporary files left behind?)", len(entries))
	}

	certPEM := mustRead(t, certFile)
	keyPEM := mustRead(t, keyFile)
	checkCert(t, parseCertPEM(t, certPEM))
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	certInfo, err := os.Stat(certFile)
	if err != nil {
		t.Fatal(err)
	}

	// A second call returns the same files, unchanged.
	certFile2, keyFile2, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if certFile2 != certFile || keyFile2 != keyFile {
		t.Errorf("second call returned %s, %s", certFile2, keyFile2)
	}
	if !bytes.Equal(mustRead(t, certFile), certPEM) || !bytes.Equal(mustRead(t, keyFile), keyPEM) {
		t.Error("second call changed the files")
	}
	if info, err := os.Stat(certFile); err != nil || !info.ModTime().Equal(certInfo.ModTime()) {
		t.Errorf("second call rewrote %s", certFile)
	}
}

func TestLoadOrCreateReplacesLoneFile(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := mustRead(t, certFile)
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreate(dir); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(mustRead(t, certFile), old) {
		t.Error("cert.pem without its key was kept")
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
}

func TestLoadOrCreateMismatchedPair(t *testing.T) {
	dir := t.TempDir()
	certFile, _, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, otherPEM, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, otherPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = LoadOrCreate(dir)
	if err == nil || !strings.HasPrefix(err.Error(), "tlscert: load ") {
		t.Errorf("LoadOrCreate with a mismatched pair: %v, want a load error", err)
	}
	if !bytes.Equal(mustRead(t, certFile), otherPEM) {
		t.Error("LoadOrCreate overwrote a certificate it could not load")
	}
}

func TestLoadOrCreateUnwritable(t *testing.T) {
	dir := t.TempDir()
	// A regular file where the directory should be.
	if err := os.WriteFile(filepath.Join(dir, "tls"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreate(dir); err == nil || !strings.HasPrefix(err.Error(), "tlscert: ") {
		t.Errorf("LoadOrCreate: %v, want a tlscert error", err)
	}
}

// TestHandshake serves https with a generated certificate and connects with a
// client that trusts only that certificate, by each name it carries.
func TestHandshake(t *testing.T) {
	cert, certPEM, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusting client's handshake failure
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()

	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		t.Fatal("AppendCertsFromPEM found no certificate")
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2: true,
	}}
	defer client.CloseIdleConnections()

	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// The server listens on 127.0.0.1; "localhost" reaches it when it resolves
	// to 127.0.0.1, which the dialer tries among its addresses.
	for _, host := range []string{"127.0.0.1", "localhost"} {
		url := "https://" + net.JoinHostPort(host, port) + "/"
		resp, err := client.Get(url)
		if err != nil {
			t.Errorf("GET %s: %v", url, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "HTTP/2.0" {
			t.Errorf("GET %s: served over %q, want HTTP/2.0", url, body)
		}
	}

	// A client that does not trust the certificate refuses it.
	untrusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: x509.NewCertPool()}}}
	defer untrusting.CloseIdleConnections()
	if resp, err := untrusting.Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Error("a client without the certificate completed the handshake")
	}
}

// TestHandshakeIPv6 connects over ::1 when the host has IPv6 loopback.
func TestHandshakeIPv6(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	cert, certPEM, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatalf("GET %s: %v", srv.URL, err)
	}
	resp.Body.Close()
}

// mustRead returns the contents of path.
func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// wantMode fails the test unless path has exactly the given mode.
func wantMode(tb testing.TB, path string, want os.FileMode) {
	tb.Helper()
	info, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	if info.Mode() != want {
		tb.Errorf("%s has mode %v, want %v", path, info.Mode(), want)
	}
}
