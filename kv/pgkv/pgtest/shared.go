package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"
)

// shared is the test binary's server, started by the first DSN and stopped by Run.
var shared struct {
	mu      sync.Mutex
	running bool          // Run is running the tests
	started bool          // start was attempted; err or dsn is its outcome
	err     error         // why the server could not start
	dsn     string        // the server's DSN
	stop    func() error  // stops the server
	admin   *pgxpool.Pool // creates and drops schemas and databases
	prefix  string        // of this binary's schema and database names
	seq     int           // names handed out so far
}

// adminTimeout bounds each statement that creates or drops a schema or a
// database.
const adminTimeout = 30 * time.Second

// Run runs the tests of m and returns their exit code, for TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }
//
// The shared server starts when a test first needs it, and Run stops it after
// the tests, whether they passed or not; a failure to stop it fails the run.
// A test binary that panics or times out never returns here: on Linux the
// server then stops by itself (see sysProcAttr), leaving its temporary
// directory behind for a later start to remove.
func Run(m *testing.M) int {
	shared.mu.Lock()
	shared.running = true
	shared.mu.Unlock()

	code := m.Run()

	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.running = false
	var errs []error
	if shared.admin != nil {
		shared.admin.Close()
		shared.admin = nil
	}
	if shared.stop != nil {
		errs = append(errs, shared.stop())
		shared.stop = nil
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stop the server: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// RunLeakChecked is Run for a package whose tests must stop every goroutine
// they start (workers, pools, purgers): once the tests and the server have
// stopped without failing, a goroutine still running fails the package.
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.RunLeakChecked(m)) }
func RunLeakChecked(m *testing.M) int {
	code := Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	return code
}

// DSN returns the DSN of the shared server, starting it on the first call.
// It fails tb if the server cannot start (saying what to install when
// PostgreSQL is missing), and skips tb when LETHE_SKIP_POSTGRES=1. The test
// binary's TestMain must call [Run].
func DSN(tb testing.TB) string {
	tb.Helper()
	dsn, _ := sharedServer(tb)
	return dsn
}

// sharedServer returns the shared server's DSN and its admin pool, starting
// them if needed.
func sharedServer(tb testing.TB) (string, *pgxpool.Pool) {
	tb.Helper()
	if os.Getenv(EnvSkip) == "1" {
		tb.Skipf("%s=1: skipping a test that needs PostgreSQL", EnvSkip)
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.running {
		tb.Fatal("pgtest: the shared server needs TestMain to call pgtest.Run, which stops it")
	}
	if !shared.started {
		shared.started = true
		shared.err = startShared()
	}
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.dsn, shared.admin
}

// startShared starts the shared server and its admin pool. shared.mu is held.
func startShared() error {
	dsn, stop, err := Start()
	if err != nil {
		return err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err == nil {
		cfg.MaxConns = 2
		shared.admin, err = pgxpool.NewWithConfig(context.Background(), cfg)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("pgtest: connect to %s: %w", redact(dsn), err), stop())
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	shared.dsn, shared.stop = dsn, stop
	// Unique across test binaries that share a server (LETHE_TEST_POSTGRES_URL).
	shared.prefix = "t" + hex.EncodeToString(b[:]) + "_"
	return nil
}

// newName returns a new schema or database name, unique on the server.
func newName(tb testing.TB) string {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.seq++
	return fmt.Sprintf("%s%d", shared.prefix, shared.seq)
}

// Schema returns the name of a schema that does not exist yet on the shared
// server (so that the code under test creates it, as a store's Open does),
// and drops it, cascading, when tb ends. Call it before opening anything on
// the schema, so that what is opened is closed (by its own cleanup) first.
func Schema(tb testing.TB) string {
	tb.Helper()
	_, admin := sharedServer(tb)
	name := newName(tb)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("pgtest: drop schema %s: %v", name, err)
		}
	})
	return name
}

// Database creates a new, empty database on the shared server and returns
// its DSN; it is dropped, with any connections left to it, when tb ends.
// A database costs much more than a schema (CREATE DATABASE copies the
// template database and syncs it): prefer Schema.
func Database(tb testing.TB) string {
	tb.Helper()
	dsn, admin := sharedServer(tb)
	name := newName(tb)
	quoted := pgx.Identifier{name}.Sanitize()
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+quoted); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+quoted+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return withDatabase(dsn, name)
}

// withDatabase returns dsn with its database replaced by name. dsn is a URL
// or libpq's key=value form.
func withDatabase(dsn, name string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + name
		return u.String()
	}
	// In key=value form the last of repeated keys wins.
	return strings.TrimSpace(dsn) + " dbname=" + name
}

// redact returns dsn without its password, for messages.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		return u.String()
	}
	if strings.Contains(dsn, "password") {
		return "(a DSN with a password)"
	}
	return dsn
}
