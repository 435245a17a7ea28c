// Command lethe runs the Lethe server: the Azure Cosmos DB (NoSQL) REST API over
// an embedded store, with exact time to live.
//
//	lethe serve [flags]   run the server
//	lethe bench [flags]   drive a server with the official Go SDK and report its speed
//	lethe version         print the version
//	lethe help [command]  print the usage, or a command's flags
//
// Help (-h, --help, help) goes to stdout and exits 0; a command line that
// cannot be run is reported once on stderr and exits 2; a run that fails
// exits 1.
//
// Every serve flag can also be set with an environment variable: --data-dir is
// LETHE_DATA_DIR, and so on. Flags win over the environment.
package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lethe-db/lethe/activity"
	"github.com/lethe-db/lethe/cpuprio"
	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/gateway"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/kv/pebblekv"
	"github.com/lethe-db/lethe/kv/pgkv"
	"github.com/lethe-db/lethe/purgectl"
	"github.com/lethe-db/lethe/tlscert"
)

// EmulatorKey is the Cosmos DB emulator's well-known master key, the default
// for local use.
const EmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes, as Go's own tools use them.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // the command line cannot be run as given
)

// runMain runs the command line args and returns the process's exit code,
// having reported any error on stderr exactly once.
func runMain(args []string, stdout, stderr io.Writer) int {
	err := run(args, stdout, stderr)
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		if ue.err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", ue.cmd, ue.err)
		}
		if ue.help != nil {
			ue.help(stderr)
		} else {
			fmt.Fprintf(stderr, "Run '%s -h' for usage.\n", ue.cmd)
		}
		return exitUsage
	}
	fmt.Fprintln(stderr, "lethe:", err)
	return exitFailure
}

// usageError is a command line that cannot be run as given: no command, an
// unknown command or flag, a flag value that is not accepted. It exits 2 with
// a pointer to the usage, where a failure of the run itself exits 1, so that
// scripts can tell a typo from a server that could not start.
type usageError struct {
	// cmd is the command at fault, "lethe" or "lethe serve", which prefixes
	// the message and names the -h to run.
	cmd string
	// err says what is wrong; nil to show the usage alone.
	err error
	// help prints the usage instead of the one-line pointer to -h; nil for
	// the pointer.
	help func(io.Writer)
}

func (e *usageError) Error() string {
	if e.err == nil {
		return e.cmd + ": usage"
	}
	return e.cmd + ": " + e.err.Error()
}

func (e *usageError) Unwrap() error { return e.err }

// run runs one command line (without the program name).
func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return &usageError{cmd: "lethe", help: usage}
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "bench":
		return runBench(args[1:], stdout, stderr)
	case "version", "--version", "-version", "-v":
		if len(args) > 1 {
			return &usageError{cmd: "lethe", err: fmt.Errorf("%s takes no arguments", args[0])}
		}
		fmt.Fprintln(stdout, "lethe", versionString())
		return nil
	case "help", "-h", "--help", "-help":
		switch {
		case len(args) == 1:
			usage(stdout)
			return nil
		case len(args) == 2 && (args[1] == "serve" || args[1] == "bench"):
			return run([]string{args[1], "-h"}, stdout, stderr)
		}
		return &usageError{cmd: "lethe", err: fmt.Errorf("no help on %q", strings.Join(args[1:], " ")), help: usage}
	}
	return &usageError{cmd: "lethe", err: fmt.Errorf("unknown command %q", args[0]), help: usage}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Lethe: a Cosmos DB-compatible document server with exact time to live.

Usage:
  lethe serve [flags]   run the server (lethe serve -h lists the flags)
  lethe bench [flags]   measure a server's throughput and latency with the official
                        Go SDK, against this machine's ceiling (lethe bench -h)
  lethe version         print the version
  lethe help [command]  print this text, or a command's flags
`)
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if dirty {
				rev += "-dirty"
			}
			return "dev-" + rev
		}
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
	}
	return "dev"
}

// config is the serve command's configuration.
type config struct {
	addr        string
	dataDir     string
	key         string
	tls         bool
	tlsCert     string
	tlsKey      string
	consistency string
	inMemory    bool
	// storeURL is --store: "" for the embedded store at dataDir, else a
	// PostgreSQL connection URL.
	storeURL string
	// writers is --writers as given, and parsed by validate.
	writers    string
	writersN   int
	noPurge    bool
	enforceRU  bool
	logLevel   string
	logFormat  string
	cpuProfile string
	memProfile string
	clock      string
	metrics    bool
	advertise  string
	allQueries bool
	// The purge controller's settings (package purgectl), as given and as
	// parsed by validate.
	purgeTargetAge, purgeMaxShare string
	purge                         purgectl.Settings
	// Storage limits and disk handling, as given and as parsed by validate.
	maxStorage, diskReserve, slowDisk, shutdownTimeout, cacheSize string
	maxStorageBytes, diskReserveBytes, cacheBytes                 int64
	// lookupCache is --lookup-cache; lookupCacheBytes its size, or -1 for
	// auto.
	lookupCache                     string
	lookupCacheBytes                int64
	slowDiskThreshold, shutdownWait time.Duration
	// The all-versions change feed's default retention, as given and parsed.
	feedRetention     string
	feedRetentionTime time.Duration
}

// parseServeFlags parses serve's flags over the LETHE_* environment. On -h or
// --help it prints the usage to help and returns flag.ErrHelp; a command line
// that cannot be run is a *usageError.
func parseServeFlags(args []string, help io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	// The flag package would print each error and the whole usage itself;
	// runMain reports the error once, with a pointer to -h.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&c.addr, "addr", env("LETHE_ADDR", "127.0.0.1:8081"), "listen address; :0 picks a free port (LETHE_ADDR)")
	fs.StringVar(&c.dataDir, "data-dir", env("LETHE_DATA_DIR", "./lethe-data"), "data directory (LETHE_DATA_DIR)")
	fs.StringVar(&c.key, "key", env("LETHE_KEY", EmulatorKey), "base64 master key; the default is the Cosmos emulator's well-known key (LETHE_KEY)")
	fs.BoolVar(&c.tls, "tls", envBool("LETHE_TLS"), "serve https with a self-signed certificate kept in the data dir (LETHE_TLS)")
	fs.StringVar(&c.tlsCert, "tls-cert", env("LETHE_TLS_CERT", ""), "serve https with this certificate file (LETHE_TLS_CERT)")
	fs.StringVar(&c.tlsKey, "tls-key", env("LETHE_TLS_KEY", ""), "private key file for --tls-cert (LETHE_TLS_KEY)")
	fs.StringVar(&c.consistency, "consistency", env("LETHE_CONSISTENCY", "Session"), "account default consistency: Strong, BoundedStaleness, Session, ConsistentPrefix or Eventual (LETHE_CONSISTENCY)")
	fs.StringVar(&c.storeURL, "store", env("LETHE_STORE", ""), "where the data lives: empty for the embedded store in --data-dir; or a PostgreSQL URL, postgres://user:password@host:port/database, where several gateways may run over one database (docs/postgres.md) (LETHE_STORE)")
	fs.StringVar(&c.writers, "writers", env("LETHE_WRITERS", strconv.Itoa(engine.DefaultWriters)), "with --store, how many write transactions the gateways over the database run at once, split evenly among the live ones and rounded up (two each for two or three gateways of 4): more overlap their round trips to the database, and conflict with each other more often (each conflict runs a transaction again); the connection pool holds this many connections more than pgx's default, unless the URL sets pool_max_conns; give every gateway the same (LETHE_WRITERS)")
	fs.BoolVar(&c.inMemory, "in-memory", envBool("LETHE_IN_MEMORY"), "keep everything in memory and write nothing to disk: a throwaway server for test suites (LETHE_IN_MEMORY)")
	// Expiry is decided inline on every request, so turning the purger off
	// changes nothing clients see; tests use it to prove exactly that.
	fs.BoolVar(&c.noPurge, "disable-purger", envBool("LETHE_DISABLE_PURGER"), "never physically delete expired documents (they stay invisible to clients): for tests of TTL semantics (LETHE_DISABLE_PURGER)")
	fs.StringVar(&c.purgeTargetAge, "purge-target-age", env("LETHE_PURGE_TARGET_AGE", purgectl.DefaultTargetAge.String()), "while users are active, the purge takes more of the CPU as its oldest pending expiry ages, up to --purge-max-share at this age: the longest expired documents should wait on disk under a load that never stops (LETHE_PURGE_TARGET_AGE)")
	fs.StringVar(&c.purgeMaxShare, "purge-max-share", env("LETHE_PURGE_MAX_SHARE", strconv.FormatFloat(purgectl.DefaultMaxShare, 'g', -1, 64)), "the most of one core the purge takes while users are active, between 0.06 and 1 (LETHE_PURGE_MAX_SHARE)")
	fs.StringVar(&c.maxStorage, "max-storage", env("LETHE_MAX_STORAGE", "0"), "storage quota on live documents, like 10GiB or 500MB: above it, writes that add documents are refused with Cosmos DB's 403 for an exhausted quota; expired documents do not count; 0 for none (LETHE_MAX_STORAGE)")
	fs.StringVar(&c.diskReserve, "disk-reserve", env("LETHE_DISK_RESERVE", "auto"), "free space kept on the data directory's filesystem for deletes, the TTL purge and the store's own work: below half of it, writes that add data are refused; the other half is held in a ballast file released when the disk fills. auto: 5% of the filesystem, 16MiB to 1GiB; off: no guard (LETHE_DISK_RESERVE)")
	fs.StringVar(&c.lookupCache, "lookup-cache", env("LETHE_LOOKUP_CACHE", "auto"), "memory for the embedded store's cache of documents read or written by id, like 32MiB, kept compressed: a read or a query page that finds its documents there skips the search of the store, and it is exact (a write replaces what it overwrites before it is visible). auto: 32MiB with --in-memory, 8MiB on disk (the hot documents: first pages of repeated queries, documents read again and again); off or 0: none (LETHE_LOOKUP_CACHE)")
	fs.StringVar(&c.cacheSize, "cache-size", env("LETHE_CACHE_SIZE", "auto"), "memory for the embedded store's cache of decoded blocks, like 64MiB: more makes reads and queries of data beyond the newest writes cheaper, at that much more resident memory. auto: 2MiB on disk, 64MiB with --in-memory (LETHE_CACHE_SIZE)")
	fs.StringVar(&c.slowDisk, "slow-disk-threshold", env("LETHE_SLOW_DISK_THRESHOLD", pebblekv.DefaultSlowDiskThreshold.String()), "a disk write or sync taking longer is logged and counted in lethe_disk_slow_operations_total (LETHE_SLOW_DISK_THRESHOLD)")
	fs.StringVar(&c.shutdownTimeout, "shutdown-timeout", env("LETHE_SHUTDOWN_TIMEOUT", "30s"), "on SIGINT or SIGTERM, how long to finish in-flight requests and close the store before exiting regardless; a second signal exits at once (LETHE_SHUTDOWN_TIMEOUT)")
	fs.StringVar(&c.feedRetention, "change-feed-retention", env("LETHE_CHANGE_FEED_RETENTION", "0"), "how long the all versions and deletes change feed keeps changes, in whole minutes (like 60m or 24h), for containers created without a changeFeedPolicy; 0: no log for them, as in Cosmos DB without the policy (LETHE_CHANGE_FEED_RETENTION)")
	fs.BoolVar(&c.enforceRU, "enforce-default-throughput", envBool("LETHE_ENFORCE_DEFAULT_THROUGHPUT"), "throttle containers created without throughput at their default offer's 400 RU/s, as Cosmos DB does; off, like the emulator without /EnableRateLimiting (LETHE_ENFORCE_DEFAULT_THROUGHPUT)")
	fs.StringVar(&c.logLevel, "log-level", env("LETHE_LOG_LEVEL", "info"), "debug, info, warn or error (LETHE_LOG_LEVEL)")
	fs.StringVar(&c.logFormat, "log-format", env("LETHE_LOG_FORMAT", "text"), "text or json (LETHE_LOG_FORMAT)")
	fs.StringVar(&c.clock, "clock", env("LETHE_CLOCK", clockWall), "server clock: wall, or manual to move it only through the admin API /_lethe/clock, for tests of TTL without sleeping (LETHE_CLOCK)")
	fs.BoolVar(&c.metrics, "metrics", envBoolDefault("LETHE_METRICS", true), "serve Prometheus metrics at GET /metrics, without authentication (LETHE_METRICS)")
	fs.StringVar(&c.advertise, "advertise-endpoint", env("LETHE_ADVERTISE_ENDPOINT", ""), "the URL the account advertises to SDKs, which send every later request there; default: the scheme and host each request was sent to (LETHE_ADVERTISE_ENDPOINT)")
	fs.BoolVar(&c.allQueries, "serve-all-cross-partition-queries", envBool("LETHE_SERVE_ALL_CROSS_PARTITION_QUERIES"), "evaluate on the server the cross-partition queries Cosmos DB's gateway refuses (ORDER BY, GROUP BY, aggregates, DISTINCT, TOP, OFFSET LIMIT), for clients without a query pipeline such as the Go SDK (LETHE_SERVE_ALL_CROSS_PARTITION_QUERIES)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", env("LETHE_CPUPROFILE", ""), "write a CPU profile of the whole run to this file, for performance work (LETHE_CPUPROFILE)")
	fs.StringVar(&c.memProfile, "memprofile", env("LETHE_MEMPROFILE", ""), "write a profile of the Go heap to this file at shutdown, before the store closes, for memory work (LETHE_MEMPROFILE)")
	// The usage names the key's default in words: it never prints a key,
	// which would be one set in LETHE_KEY.
	fs.Lookup("key").DefValue = ""
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(help)
			serveUsage(fs)
			return nil, err
		}
		return nil, &usageError{cmd: "lethe serve", err: err}
	}
	if fs.NArg() > 0 {
		return nil, &usageError{cmd: "lethe serve", err: fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))}
	}
	if err := c.validate(); err != nil {
		return nil, &usageError{cmd: "lethe serve", err: err}
	}
	return c, nil
}

// serveUsage prints serve's usage text and flags to fs's output.
func serveUsage(fs *flag.FlagSet) {
	fmt.Fprint(fs.Output(), `Usage: lethe serve [flags]

Runs the server: the Azure Cosmos DB (NoSQL) REST API over an embedded store,
with exact time to live, in the foreground until SIGINT or SIGTERM. It prints
"lethe: listening on URL" on stdout once it accepts connections, and logs on
stderr. Every flag can also be set with the environment variable named in
parentheses; a flag wins over the environment.

Examples:
  lethe serve
  lethe serve --in-memory --addr 127.0.0.1:0
  lethe serve --in-memory --clock manual

Flags:
`)
	fs.PrintDefaults()
}

// validate reports every problem with the configuration at once.
func (c *config) validate() error {
	var errs []error
	if k, err := base64.StdEncoding.DecodeString(c.key); err != nil || len(k) == 0 {
		errs = append(errs, errors.New("--key must be a non-empty base64 string"))
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key go together"))
	}
	levels := map[string]string{"strong": "Strong", "boundedstaleness": "BoundedStaleness", "session": "Session", "consistentprefix": "ConsistentPrefix", "eventual": "Eventual"}
	if l, ok := levels[strings.ToLower(c.consistency)]; ok {
		c.consistency = l
	} else {
		errs = append(errs, fmt.Errorf("--consistency %q is not a consistency level", c.consistency))
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		errs = append(errs, fmt.Errorf("--log-level %q is not a level", c.logLevel))
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format %q is not text or json", c.logFormat))
	}
	if d, err := time.ParseDuration(c.purgeTargetAge); err != nil || d <= purgectl.Grace {
		errs = append(errs, fmt.Errorf("--purge-target-age %q is not a duration over %v (like 5s)", c.purgeTargetAge, purgectl.Grace))
	} else {
		c.purge.TargetAge = d
	}
	if f, err := strconv.ParseFloat(c.purgeMaxShare, 64); err != nil || f < purgectl.MinShare || f > 1 {
		errs = append(errs, fmt.Errorf("--purge-max-share %q is not a share of a core between %.2f and 1", c.purgeMaxShare, purgectl.MinShare))
	} else {
		c.purge.MaxShare = f
	}
	if n, err := parseSize(c.maxStorage); err != nil {
		errs = append(errs, fmt.Errorf("--max-storage: %w", err))
	} else {
		c.maxStorageBytes = n
	}
	switch strings.ToLower(c.diskReserve) {
	case "auto":
		c.diskReserveBytes = 0
	case "off", "0":
		c.diskReserveBytes = -1
	default:
		if n, err := parseSize(c.diskReserve); err != nil {
			errs = append(errs, fmt.Errorf("--disk-reserve: %w, auto or off", err))
		} else {
			c.diskReserveBytes = n
		}
	}
	if !strings.EqualFold(c.cacheSize, "auto") {
		if n, err := parseSize(c.cacheSize); err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("--cache-size %q is not a positive size in bytes (like 64MiB) or auto", c.cacheSize))
		} else {
			c.cacheBytes = n
		}
	}
	switch strings.ToLower(c.lookupCache) {
	case "auto":
		c.lookupCacheBytes = -1
	case "off", "0":
		c.lookupCacheBytes = 0
	default:
		if n, err := parseSize(c.lookupCache); err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("--lookup-cache %q is not a size in bytes (like 32MiB), auto or off", c.lookupCache))
		} else {
			c.lookupCacheBytes = n
		}
	}
	if d, err := time.ParseDuration(c.slowDisk); err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("--slow-disk-threshold %q is not a positive duration (like 5s)", c.slowDisk))
	} else {
		c.slowDiskThreshold = d
	}
	if n, err := strconv.Atoi(c.writers); err != nil || n < 1 || n > 64 {
		errs = append(errs, fmt.Errorf("--writers %q is not a whole number from 1 to 64", c.writers))
	} else {
		c.writersN = n
	}
	if c.storeURL != "" {
		if !isPostgresURL(c.storeURL) {
			errs = append(errs, fmt.Errorf("--store %q is not a PostgreSQL URL (postgres://... or postgresql://...); leave it empty for the embedded store", redactURL(c.storeURL)))
		} else if c.inMemory {
			errs = append(errs, errors.New("--in-memory and --store cannot go together: the data is either in memory or in PostgreSQL"))
		}
	}
	if c.feedRetention == "0" {
		c.feedRetentionTime = 0
	} else if d, err := time.ParseDuration(c.feedRetention); err != nil || d < 0 || d%time.Minute != 0 || d > 366*24*time.Hour {
		errs = append(errs, fmt.Errorf("--change-feed-retention %q is not a whole number of minutes up to a year (like 60m or 24h), or 0", c.feedRetention))
	} else {
		c.feedRetentionTime = d
	}
	if d, err := time.ParseDuration(c.shutdownTimeout); err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout %q is not a positive duration (like 30s)", c.shutdownTimeout))
	} else {
		c.shutdownWait = d
	}
	if c.clock != clockWall && c.clock != clockManual {
		errs = append(errs, fmt.Errorf("--clock %q is not wall or manual", c.clock))
	}
	if c.advertise != "" {
		u, err := url.Parse(c.advertise)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || strings.Trim(u.Path, "/") != "" {
			errs = append(errs, fmt.Errorf("--advertise-endpoint %q is not an http or https URL of a host (like https://db.example.com:8081/)", c.advertise))
		} else {
			c.advertise = u.Scheme + "://" + u.Host + "/"
		}
	}
	return errors.Join(errs...)
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func envBool(name string) bool {
	switch strings.ToLower(os.Getenv(name)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

func newLogger(c *config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.logLevel))
	o := &slog.HandlerOptions{Level: lvl}
	if c.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

func serve(args []string, stdout, stderr io.Writer) error {
	c, err := parseServeFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	raiseHeapFloor()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	started := time.Now()
	// One record of user activity, so that the purge and the store's
	// compactions both step aside while requests are being served. The
	// store's flushes and compactions run at background CPU priority, each
	// holding a P while the kernel makes it wait: Go gets a P for each while
	// it runs, so that requests keep one per core.
	users := &activity.Tracker{}
	procs := cpuprio.StartProcs(pebblekv.BackgroundJobs)
	defer procs.Close()
	defer startIdleRelease(users)()
	store, embedded, err := openBackend(ctx, c, log, users, procs)
	if err != nil {
		return err
	}
	pgStore, _ := store.(*pgkv.Store)
	// On the way out through an error, the store and the engine close here;
	// a signal's shutdown closes them itself, within --shutdown-timeout.
	var eng *engine.Engine
	closeAll := func() {
		if c.memProfile != "" {
			if err := writeHeapProfile(c.memProfile); err != nil {
				log.Error("memory profile", "err", err)
			}
		}
		if eng != nil {
			eng.Close()
		}
		if err := store.Close(); err != nil {
			log.Error("close store", "err", err)
		}
	}
	shuttingDown := false
	defer func() {
		if !shuttingDown {
			closeAll()
		}
	}()
	now, manual := serverClock(c.clock)
	var manualClock gateway.ManualClock
	if manual != nil {
		manualClock = manual
	}
	switch {
	case embedded == nil && manual != nil:
		// Every gateway on the database reads and moves one manual clock.
		shared, err := engine.NewSharedManualClock(ctx, store, time.Now())
		if err != nil {
			return err
		}
		now, manualClock = shared.Now, shared
	case embedded == nil:
		now = nil // the database's time, which every gateway on it shares (engine.Options.Now)
	}
	opts := engine.Options{Store: store, Now: now, Logger: log, DisablePurger: c.noPurge, PurgeControl: c.purge, EnforceDefaultThroughput: c.enforceRU, Activity: users,
		ServeAllCrossPartitionQueries: c.allQueries, MaxStorage: c.maxStorageBytes, ChangeFeedRetention: c.feedRetentionTime,
		Writers: c.writersN}
	if embedded != nil {
		opts.StoreBusy, opts.StoreBacklogged, opts.SpaceLow = embedded.Compacting, embedded.Backlogged, embedded.SpaceLow
	}
	eng, err = engine.Open(ctx, opts)
	if err != nil {
		return err
	}
	if err := catchUpClock(ctx, manualClock, eng); err != nil {
		return err
	}

	key, _ := base64.StdEncoding.DecodeString(c.key)
	srv := gateway.New(gateway.Options{Engine: eng, Key: key, Consistency: c.consistency, Logger: log,
		ManualClock: manualClock, AdvertiseEndpoint: c.advertise, Metrics: newMetrics(c, eng, embedded, pgStore, log)})

	var cert *tls.Certificate
	switch {
	case c.tlsCert != "":
		kp, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return fmt.Errorf("load TLS certificate: %w", err)
		}
		cert = &kp
	case c.tls && c.inMemory:
		kp, _, err := tlscert.Generate()
		if err != nil {
			return err
		}
		cert = &kp
	case c.tls:
		certFile, keyFile, err := tlscert.LoadOrCreate(c.dataDir)
		if err != nil {
			return err
		}
		kp, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("load TLS certificate: %w", err)
		}
		cert = &kp
		log.Info("TLS certificate", "cert", certFile)
	}

	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.addr, err)
	}
	scheme := "http"
	if cert != nil {
		scheme = "https"
	}
	endpoint := scheme + "://" + ln.Addr().String() + "/"
	log.Info("lethe started", "version", versionString(), "endpoint", endpoint, "data_dir", dataDirLabel(c), "clock", c.clock, "startup", time.Since(started).Round(time.Millisecond))
	// A line on stdout that scripts and tests wait for.
	fmt.Fprintln(stdout, "lethe: listening on", endpoint)

	errc := make(chan error, 1)
	go func() {
		if cert != nil {
			errc <- srv.ServeTLS(ln, *cert)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shuttingDown = true
	shutdown(srv, errc, closeAll, c.shutdownWait, log)
	return nil
}

// writeHeapProfile writes a profile of the Go heap to path, as it is after a
// collection: what the server holds, not what it has allocated since the
// last one. Pebble's memtables and block cache are outside the Go heap.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// stoppable is the HTTP side of the server, as shutdown stops it.
type stoppable interface {
	Shutdown(ctx context.Context) error
	Close() error
}

// shutdown stops the server within wait, whatever the store is doing: it
// finishes in-flight requests, then closes the engine and the store. A store
// stuck on its disk (a stalled sync, a write waiting for space) is left
// behind when the time is up, or at a second signal: the process exits
// without closing it, which loses nothing acknowledged, since every write a
// client saw succeed is in the synced write-ahead log and is replayed at the
// next start.
func shutdown(srv stoppable, errc <-chan error, closeAll func(), wait time.Duration, log *slog.Logger) {
	log.Info("shutting down: finishing in-flight requests", "timeout", wait)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	go func() {
		select {
		case <-again:
			log.Warn("second signal: exiting now")
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := srv.Shutdown(ctx); err != nil {
		log.Error("shutdown: requests still in flight", "err", err)
		_ = srv.Close()
	}
	<-errc
	closed := make(chan struct{})
	go func() { // left running if the store never closes; the process exits
		closeAll()
		close(closed)
	}()
	select {
	case <-closed:
		log.Info("stopped")
	case <-ctx.Done():
		log.Error("the store did not close in time; exiting without closing it: every acknowledged write is in the synced write-ahead log and is recovered at the next start")
	}
}

// openStore opens the store, giving up when ctx ends first (a signal): opening
// replays the write-ahead log, which a failing disk can stall, and a server
// asked to stop must stop. The abandoned open holds nothing acknowledged.
func openStore(ctx context.Context, opts pebblekv.Options) (*pebblekv.Store, error) {
	type opened struct {
		s   *pebblekv.Store
		err error
	}
	done := make(chan opened, 1)
	go func() { // left running if ctx ends first; the process then exits
		s, err := pebblekv.Open(opts)
		done <- opened{s, err}
	}()
	select {
	case o := <-done:
		return o.s, o.err
	case <-ctx.Done():
		return nil, errors.New("stopped by a signal while opening the store")
	}
}

func dataDirLabel(c *config) string {
	if c.inMemory {
		return "(in memory)"
	}
	if c.storeURL != "" {
		return redactURL(c.storeURL)
	}
	return c.dataDir
}

// openBackend opens the store --store names: PostgreSQL, or the embedded
// store, which it also returns as embedded for what only it reports (its
// disk, its compactions); embedded is nil on PostgreSQL.
func openBackend(ctx context.Context, c *config, log *slog.Logger, users *activity.Tracker, procs *cpuprio.Procs) (store kv.Store, embedded *pebblekv.Store, err error) {
	if c.storeURL != "" {
		opts := pgkv.Options{DSN: c.storeURL}
		if !strings.Contains(c.storeURL, "pool_max_conns=") {
			// pgx's default pool, for reads and the gateway's own work,
			// and a connection for each writer besides.
			opts.MaxConns = max(4, runtime.NumCPU()) + c.writersN
		}
		pg, err := pgkv.Open(ctx, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("open the PostgreSQL store at %s: %w", redactURL(c.storeURL), err)
		}
		return pg, nil, nil
	}
	lookups := c.lookupCacheBytes
	if lookups < 0 { // auto
		lookups = pebblekv.DefaultLookupCacheSize
		if c.inMemory {
			lookups = pebblekv.DefaultInMemoryLookupCacheSize
		}
	}
	embedded, err = openStore(ctx, pebblekv.Options{Dir: c.dataDir, InMemory: c.inMemory, Logger: log, Foreground: users.Active, Jobs: procs.SetJobs,
		CacheSize: c.cacheBytes, Reserve: c.diskReserveBytes, SlowDiskThreshold: c.slowDiskThreshold,
		LookupCacheSize: lookups, LookupCacheable: engine.LookupCacheable,
		FilterPrefix: engine.DocumentKeyPrefix(), FilterKeys: engine.DocumentKeys})
	if err != nil {
		return nil, nil, err
	}
	return embedded, embedded, nil
}

// isPostgresURL reports whether s is a PostgreSQL connection URL.
func isPostgresURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql")
}

// redactURL returns a connection URL without its password, for logs and
// messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(an unparsable URL)"
	}
	return u.Redacted()
}
