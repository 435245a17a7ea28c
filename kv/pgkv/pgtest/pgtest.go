// Package pgtest runs a throwaway PostgreSQL server for tests.
//
// A test binary starts at most one server, shared by all its tests, each of
// which gets a fresh schema (cheap: a few catalog rows) or, when it needs one,
// a fresh database:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }
//
//	func TestSomething(t *testing.T) {
//		dsn, schema := pgtest.DSN(t), pgtest.Schema(t)
//		...
//	}
//
// The server starts on the first call to DSN and stops when Run returns. It is
// the one on the PATH (initdb and postgres, PostgreSQL 15 or later; Debian's
// /usr/lib/postgresql/*/bin is searched too), run in a new temporary directory,
// listening on 127.0.0.1 on a free port and on a Unix socket in that directory,
// with fsync on: durability is part of what the tests test. As root, which
// PostgreSQL refuses to run as, it runs as the user postgres.
//
// Environment:
//
//   - LETHE_TEST_POSTGRES_URL: use that server instead of starting one (CI
//     that provides its own). Schemas and databases are still fresh and dropped.
//   - LETHE_SKIP_POSTGRES=1: skip the tests that need PostgreSQL, saying so.
//     Without it, missing binaries fail those tests with what to install.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables read by the package.
const (
	EnvURL  = "LETHE_TEST_POSTGRES_URL"
	EnvSkip = "LETHE_SKIP_POSTGRES"
)

// Timeouts for the server's start and stop. A start covers initdb, which
// writes about 40 MB.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second
	killTimeout  = 5 * time.Second
)

// Start starts a PostgreSQL server in a new temporary directory and returns
// the DSN of its database "postgres" (superuser "postgres", no password) and
// a function that stops the server and removes the directory; stop is safe to
// call more than once. When LETHE_TEST_POSTGRES_URL is set, Start returns it
// and a stop that does nothing. Most tests want the shared server of [Run]
// and [DSN] instead.
func Start() (dsn string, stop func() error, err error) {
	if url := os.Getenv(EnvURL); url != "" {
		return url, func() error { return nil }, nil
	}
	s, err := start()
	if err != nil {
		return "", nil, err
	}
	return s.dsn, s.stop, nil
}

// server is a postgres process started by start, a child of this process.
type server struct {
	dir  string // temporary directory: data/, the socket, postgres.log
	dsn  string
	cmd  *exec.Cmd
	logf *os.File

	exited  chan struct{} // closed when the process has exited
	waitErr error         // its exit status, set before exited is closed

	stopOnce sync.Once
	stopErr  error
}

// binaries finds initdb and postgres.
func binaries() (initdb, postgres string, err error) {
	initdb, err1 := exec.LookPath("initdb")
	postgres, err2 := exec.LookPath("postgres")
	if err1 == nil && err2 == nil {
		return initdb, postgres, nil
	}
	// Debian and Ubuntu install the server outside the PATH.
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Reverse(dirs) // newest major version first (good until version 100)
	for _, dir := range dirs {
		i, p := filepath.Join(dir, "initdb"), filepath.Join(dir, "postgres")
		if isExecutable(i) && isExecutable(p) {
			return i, p, nil
		}
	}
	return "", "", errors.New("pgtest: the PostgreSQL server binaries (initdb, postgres) are not on the PATH " +
		"nor in /usr/lib/postgresql/*/bin. Install PostgreSQL 15 or later (Debian/Ubuntu: apt-get install postgresql; " +
		"macOS: brew install postgresql@15), or point " + EnvURL + " at a server, or set " + EnvSkip +
		"=1 to skip the tests that need it")
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// runAs returns the credentials to run PostgreSQL with: those of the user
// postgres when this process is root, which PostgreSQL refuses to run as, and
// nil (this process's own) otherwise.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and PostgreSQL refuses to: look up the user postgres to run it as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("pgtest: user postgres: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort returns a TCP port on 127.0.0.1 that nothing listens on now.
// Another process may take it before postgres does; start then tries again.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// dirPattern names the temporary directories of servers.
const dirPattern = "lethe-pgtest-"

// staleAge is how old the directory of a server that is not running must be
// before removeStale removes it: older than any start (initdb runs before
// the server writes its pid file).
const staleAge = 2 * startTimeout

// removeStale removes the directories that servers left behind when their
// test binary died without stopping them (the server then stopped by itself,
// see sysProcAttr, and removed its pid file). A directory whose postmaster.pid
// remains may belong to a running server, and stays.
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPattern+"*"))
	for _, dir := range dirs {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < staleAge {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid")); errors.Is(err, os.ErrNotExist) {
			_ = os.RemoveAll(dir)
		}
	}
}

// start initialises a cluster in a new temporary directory and starts
// postgres on it.
func start() (*server, error) {
	initdb, postgres, err := binaries()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	removeStale()
	dir, err := os.MkdirTemp("", dirPattern)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: give %s to the user postgres: %w", dir, err)
		}
	}
	data := filepath.Join(dir, "data")
	// --no-sync: the cluster is thrown away with its directory, so a crash
	// during initdb loses nothing. The server itself runs with fsync on.
	cmd := exec.Command(initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--no-locale", "--no-sync", "--no-instructions")
	cmd.Dir = dir // the test's working directory may be closed to the user postgres
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}

	var lastErr error
	for range 3 { // the free port may be taken before postgres binds it
		s, err := launch(postgres, dir, cred)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

// launch starts postgres on the cluster in dir and waits until it accepts
// connections.
func launch(postgres, dir string, cred *syscall.Credential) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	cmd := exec.Command(postgres, "-D", filepath.Join(dir, "data"),
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+dir,
		"-c", "fsync=on",
		"-c", "synchronous_commit=on",
		"-c", "max_connections=100",
		"-c", "shared_buffers=32MB", // the tests' data is small; the machine may be too
	)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr(cred)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("pgtest: start postgres: %w", err)
	}
	s := &server{
		dir:    dir,
		dsn:    fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		cmd:    cmd,
		logf:   logf,
		exited: make(chan struct{}),
	}
	// The server owns this goroutine: it ends when the process does, which
	// stop (or the process's exit, by the parent-death signal) brings about.
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(); err != nil {
		s.kill()
		logf.Close()
		return nil, fmt.Errorf("%w\n%s", err, s.logTail())
	}
	return s, nil
}

// waitReady waits until the server accepts connections, or fails if it exits
// or does not within startTimeout.
func (s *server) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.dsn)
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("pgtest: postgres exited at start: %w", s.waitErr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgtest: postgres did not accept connections within %v: %w", startTimeout, err)
		}
	}
}

// logTail returns the end of the server's log, for error messages.
func (s *server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// kill stops the process at once (SIGKILL) and waits for it: for a server
// that never became ready.
func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// stop shuts the server down and removes its directory: a fast shutdown
// (SIGINT: open transactions are rolled back, clients disconnected, a
// checkpoint written), then, if that hangs, an immediate one (SIGQUIT), then
// SIGKILL. Only the process this package started is signalled.
func (s *server) stop() error {
	s.stopOnce.Do(func() {
		var errs []error
		steps := []struct {
			sig     os.Signal
			timeout time.Duration
		}{{os.Interrupt, stopTimeout}, {syscall.SIGQUIT, killTimeout}, {os.Kill, killTimeout}}
		stopped := false
		for _, st := range steps {
			if err := s.cmd.Process.Signal(st.sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
				errs = append(errs, fmt.Errorf("pgtest: signal postgres (pid %d): %w", s.cmd.Process.Pid, err))
			}
			select {
			case <-s.exited:
				stopped = true
			case <-time.After(st.timeout):
				errs = append(errs, fmt.Errorf("pgtest: postgres (pid %d) still running %v after %v", s.cmd.Process.Pid, st.timeout, st.sig))
			}
			if stopped {
				break
			}
		}
		s.logf.Close()
		if stopped {
			if err := os.RemoveAll(s.dir); err != nil {
				errs = append(errs, fmt.Errorf("pgtest: %w", err))
			}
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}
