package e2e

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

// emulatorKey is the Cosmos DB emulator's well-known key, Lethe's default.
const emulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// letheBin is the binary under test: $LETHE_BIN, or one built by TestMain.
var letheBin string

func TestMain(m *testing.M) {
	// These tests spend their time sleeping through TTLs and waiting on a
	// separate server process, not on this process's CPUs: let more parallel
	// tests run at once than the default (GOMAXPROCS, 2 on small machines),
	// unless -test.parallel was given explicitly.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "32")
	}
	letheBin = os.Getenv("LETHE_BIN")
	if letheBin == "" {
		dir, err := os.MkdirTemp("", "lethe-e2e-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		letheBin = filepath.Join(dir, "lethe")
		build := exec.Command("go", "build", "-o", letheBin, "../cmd/lethe")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build lethe:", err)
			os.Exit(1)
		}
		code := pgtest.Run(m)
		os.RemoveAll(dir)
		os.Exit(code)
	}
	// pgtest starts a PostgreSQL only for the tests that ask for one, and
	// stops it after the tests.
	os.Exit(pgtest.Run(m))
}

// serverOpts choose how a test server runs.
type serverOpts struct {
	DataDir  string // "" with InMemory false means a fresh t.TempDir()
	InMemory bool
	// Store, if set, is a PostgreSQL URL (--store): the data lives there
	// (DataDir still holds what a server keeps locally, a TLS certificate).
	Store string
	TLS   bool
	Args  []string
}

// server is a running lethe process.
type server struct {
	URL     string
	DataDir string
	cmd     *exec.Cmd
	stderr  *lockedBuffer
	done    chan struct{}
	waitErr error

	mu         sync.Mutex
	transports []*http.Transport // every transport httpClient handed out
	raw        *http.Client      // shared by do
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServer starts lethe on 127.0.0.1:0 and waits for its listening line. The
// server is stopped (SIGTERM) when the test ends, if it is still running.
func startServer(t testing.TB, o serverOpts) *server {
	t.Helper()
	args := []string{"serve", "--addr", "127.0.0.1:0", "--log-level", "warn"}
	if o.InMemory {
		args = append(args, "--in-memory")
	} else {
		if o.DataDir == "" {
			o.DataDir = t.TempDir()
		}
		args = append(args, "--data-dir", o.DataDir)
	}
	if o.TLS {
		args = append(args, "--tls")
	}
	if o.Store != "" {
		args = append(args, "--store", o.Store)
	}
	if !o.InMemory && o.Store == "" && !slices.Contains(o.Args, "--disk-reserve") {
		// Dozens of servers run at once: on a large disk each would hold a
		// 512 MiB ballast (half of the default 1 GiB reserve).
		args = append(args, "--disk-reserve", "32MiB")
	}
	args = append(args, o.Args...)
	cmd := exec.Command(letheBin, args...)
	s := &server{DataDir: o.DataDir, cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = s.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start lethe: %v", err)
	}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "lethe: listening on "); ok {
				urlc <- strings.TrimSuffix(u, "/")
			}
		}
	}()
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	select {
	case s.URL = <-urlc:
	case <-s.done:
		t.Fatalf("lethe exited before listening: %v\n%s", s.waitErr, s.stderr)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("lethe did not start in 30s\n%s", s.stderr)
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop(t testing.TB) {
	t.Helper()
	select {
	case <-s.done:
		return
	default:
	}
	// Go's http.Server.Shutdown waits up to 5 s for connections that were
	// dialed but never carried a request (StateNew), and Go's transport
	// pre-dials such spares under concurrency: close the clients' idle
	// connections first so that stopping does not wait for them.
	s.closeIdleConnections()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		if s.waitErr != nil {
			t.Errorf("lethe exited with %v\n%s", s.waitErr, s.stderr)
		}
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		t.Errorf("lethe did not stop within 30s of SIGTERM\n%s", s.stderr)
	}
}

// kill ends the server with SIGKILL, as a crash would.
func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// httpClient returns a client for the server (trusting its self-signed certificate).
func (s *server) httpClient() *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	s.mu.Lock()
	s.transports = append(s.transports, tr)
	s.mu.Unlock()
	return &http.Client{Timeout: 60 * time.Second, Transport: tr}
}

// rawClient returns the client shared by raw requests.
func (s *server) rawClient() *http.Client {
	s.mu.Lock()
	c := s.raw
	s.mu.Unlock()
	if c == nil {
		c = s.httpClient()
		s.mu.Lock()
		if s.raw == nil {
			s.raw = c
		}
		c = s.raw
		s.mu.Unlock()
	}
	return c
}

// closeIdleConnections closes the idle connections of every client handed out.
func (s *server) closeIdleConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tr := range s.transports {
		tr.CloseIdleConnections()
	}
}

// client returns an official Go SDK client for the server.
func (s *server) client(t testing.TB) *azcosmos.Client {
	t.Helper()
	return s.clientWithKey(t, emulatorKey)
}

// rawResponse is a response to a raw request.
type rawResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends a raw request signed with the master key (unless headers carry their
// own Authorization) and returns the response. path is the escaped path, e.g.
// "/dbs/d/colls/c/docs".
func (s *server) do(t testing.TB, method, path string, headers map[string]string, body []byte) rawResponse {
	t.Helper()
	date := time.Now().UTC().Format(http.TimeFormat)
	merged := map[string]string{"X-Ms-Date": date, "X-Ms-Version": "2020-11-05"}
	if _, ok := headers["Authorization"]; !ok {
		merged["Authorization"] = signRequest(method, path, date)
	}
	for k, v := range headers { // the caller's headers win
		merged[http.CanonicalHeaderKey(k)] = v
	}
	return s.send(t, method, path, merged, body)
}

// signRequest computes the master-key Authorization header for a request,
// independently of the server's code (shared/PROTOCOL.md section 2).
func signRequest(method, escapedPath, date string) string {
	var segs []string
	for _, p := range strings.Split(escapedPath, "/") {
		if p == "" {
			continue
		}
		d, err := url.PathUnescape(p)
		if err != nil {
			d = p
		}
		segs = append(segs, d)
	}
	var typ, link string
	switch {
	case len(segs) == 0:
	case len(segs)%2 == 1:
		typ, link = segs[len(segs)-1], strings.Join(segs[:len(segs)-1], "/")
	default:
		typ, link = segs[len(segs)-2], strings.Join(segs, "/")
	}
	if typ == "offers" && len(segs) == 2 {
		link = strings.ToLower(segs[1])
	}
	payload := strings.ToLower(method) + "\n" + strings.ToLower(typ) + "\n" + link + "\n" + strings.ToLower(date) + "\n\n"
	key, _ := base64.StdEncoding.DecodeString(emulatorKey)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(payload))
	sig := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	return url.QueryEscape("type=master&ver=1.0&sig=" + sig)
}
