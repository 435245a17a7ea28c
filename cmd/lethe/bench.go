package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lethe-db/lethe/bench"
)

// benchConfig is the bench command's configuration.
type benchConfig struct {
	opts         bench.Options
	jsonPath     string
	quiet        bool
	serveCeiling bool          // serve the ceiling instead of running a benchmark
	addr         string        // for --serve-ceiling
	ceilingWork  time.Duration // for --serve-ceiling
	repeat       int           // runs of the whole benchmark, summarized by their medians
}

// parseBenchFlags parses bench's flags. On -h or --help it prints the usage to
// help and returns flag.ErrHelp; a command line that cannot be run is a
// *usageError.
func parseBenchFlags(args []string, help io.Writer) (*benchConfig, error) {
	c, err := parseBenchArgs(args, help)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return nil, &usageError{cmd: "lethe bench", err: err}
	}
	return c, err
}

func parseBenchArgs(args []string, help io.Writer) (*benchConfig, error) {
	c := &benchConfig{}
	o := &c.opts
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	// The flag package would print each error and the whole usage itself;
	// runMain reports the error once, with a pointer to -h.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	printUsage := func() {
		fs.SetOutput(help)
		fmt.Fprintf(fs.Output(), `Usage: lethe bench [flags]

Drives a Cosmos DB endpoint with the official Go SDK and reports ops/s,
latency percentiles, RU/s, errors, and the server's memory and CPU when it is
local. Workloads: %s.

Examples:
  lethe bench --spawn --serve-args=--in-memory --workload create,read,query-pk --ceiling
  lethe bench --spawn --serve-args="--in-memory --change-feed-retention=60m" --container-ttl 3600 --ceiling --repeat 3
  lethe bench --endpoint https://localhost:8081/ --insecure-tls --workload mixed --keys zipf
  lethe bench --spawn --workload ttl-sustained --ttl 10s --concurrency 16 --duration 60s
  lethe bench --spawn --gateways 2 --serve-args="--store postgres://localhost/lethe" --workload create,read
  lethe bench --endpoint http://127.0.0.1:8081/,http://127.0.0.1:8082/ --workload read

ttl-sustained writes documents with a short --ttl as fast as it can and
samples the purge's backlog, the data directory and the server's CPU once a
second; with --spawn it runs twice, on fresh servers with the purge off and
then on (as many gateways as --gateways), and compares them. Over a shared
--store it runs on its own.

Flags:
`, strings.Join(bench.Workloads, ", "))
		fs.PrintDefaults()
	}
	var workloads, serveArgs, containerTTL string
	var warmup time.Duration
	fs.StringVar(&o.Endpoint, "endpoint", bench.DefaultEndpoint, "Cosmos DB endpoint to drive (unless --spawn); several comma-separated endpoints, gateways over one store, spread the workers over them round-robin")
	fs.StringVar(&o.Key, "key", bench.EmulatorKey, "the endpoint's base64 master key; the default is the emulator's")
	fs.BoolVar(&o.InsecureTLS, "insecure-tls", false, "accept any TLS certificate from the endpoint (self-signed)")
	fs.BoolVar(&o.Spawn, "spawn", false, "start a local lethe serve from this binary on a free loopback port for the run, and stop it afterwards")
	fs.IntVar(&o.Gateways, "gateways", 1, "with --spawn, how many lethe serve processes to start, each with the --serve-args, its own temporary data dir and port; the workers are spread over them round-robin, the set-up goes through the first; more than one needs a shared --store in --serve-args")
	fs.StringVar(&serveArgs, "serve-args", "", `extra arguments for the spawned server, split on spaces, e.g. "--in-memory" or "--data-dir DIR" (default: a temporary data dir)`)
	fs.IntVar(&o.ServerPID, "server-pid", 0, "process id of the local server at --endpoint, to sample its memory and CPU from /proc")
	fs.StringVar(&workloads, "workload", "create,read", "comma-separated workloads, run one after the other: "+strings.Join(bench.Workloads, ", "))
	fs.IntVar(&o.Docs, "docs", bench.DefaultDocs, "documents populated before the read, replace, upsert, patch, query and mixed workloads (not timed)")
	fs.IntVar(&o.DocSize, "doc-size", bench.DefaultDocSize, "document size in bytes")
	fs.IntVar(&o.Concurrency, "concurrency", bench.DefaultConcurrency, "concurrent clients")
	fs.DurationVar(&o.Duration, "duration", bench.DefaultDuration, "how long each workload is measured")
	fs.Int64Var(&o.Ops, "ops", 0, "measure each workload for this many operations instead of --duration")
	fs.StringVar(&o.Keys, "keys", "uniform", "key distribution of reads, replaces, upserts and queries: uniform or zipf")
	fs.IntVar(&o.Partitions, "partitions", bench.DefaultPartitions, "distinct partition key values")
	fs.DurationVar(&warmup, "warmup", bench.DefaultWarmup, "warmup before each measured workload, not counted")
	fs.DurationVar(&o.TTL, "ttl", bench.DefaultTTL, "time to live of the ttl and ttl-sustained workloads' documents (whole seconds)")
	fs.StringVar(&containerTTL, "container-ttl", "", `defaultTtl of the other workloads' containers: "" (time to live off), -1 (on, no default) or a whole number of seconds such as 3600 or 1h (each document expires that long after its last write)`)
	fs.DurationVar(&o.TimelineInterval, "timeline-interval", bench.DefaultTimelineInterval, "time each row of ttl-sustained's timeline covers (whole seconds; the JSON has every second)")
	fs.IntVar(&o.Slices, "slices", bench.DefaultSlices, "with --ceiling, measure each workload that writes nothing in this many slices on the server and on the ceiling in turns, so that the machine's drift falls on both alike (1: one piece each, server first)")
	fs.IntVar(&o.Rounds, "rounds", 1, "with --spawn, how many pairs of ttl-sustained runs (purge off and on, alternating which goes first); the comparison is the median of their ratios")
	fs.StringVar(&o.DataDirSize, "data-dir-size", "", "data directory of the server at --endpoint, whose size ttl-sustained samples (spawned servers' are measured anyway)")
	fs.IntVar(&o.Retries, "retries", 0, "SDK retries of a failed request (0: every failure is counted)")
	fs.IntVar(&c.repeat, "repeat", 1, "run the whole benchmark this many times, each on freshly spawned servers, and print each figure's median over the runs (not with ttl-sustained, which has --rounds)")
	fs.BoolVar(&o.Ceiling, "ceiling", false, "also run every workload against a storage-free canned-response server and report ratios to it")
	fs.StringVar(&o.FsyncProbe, "fsync-probe", "", "measure a synced 4 KB write's latency in this directory first, to compare durable writes with the fsync bound")
	fs.IntVar(&o.FsyncCount, "fsync-count", bench.DefaultFsyncCount, "synced writes the fsync probe makes")
	fs.StringVar(&c.jsonPath, "json", "", "also write the results to this file as JSON")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress lines on stderr")
	fs.BoolVar(&c.serveCeiling, "serve-ceiling", false, "serve the canned-response ceiling (used by --ceiling) until interrupted, instead of benchmarking")
	fs.StringVar(&c.addr, "addr", "127.0.0.1:0", "listen address of --serve-ceiling")
	fs.DurationVar(&c.ceilingWork, "ceiling-work", 0, "CPU time the --serve-ceiling server spends on each request before answering, such as 20us: to measure what a server's CPU per request costs in the ratios")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage()
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	for w := range strings.SplitSeq(workloads, ",") {
		if w = strings.TrimSpace(w); w != "" {
			o.Workloads = append(o.Workloads, w)
		}
	}
	o.ServeArgs = strings.Fields(serveArgs)
	if containerTTL != "" {
		secs, err := parseContainerTTL(containerTTL)
		if err != nil {
			return nil, err
		}
		o.ContainerTTL = &secs
	}
	o.Warmup = warmup
	if warmup == 0 {
		o.Warmup = -1 // bench.Options: zero means the default, negative none
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["addr"] && !c.serveCeiling {
		return nil, errors.New("--addr goes with --serve-ceiling")
	}
	if set["ceiling-work"] && (!c.serveCeiling || c.ceilingWork < 0) {
		return nil, errors.New("--ceiling-work goes with --serve-ceiling and takes a duration of zero or more, such as 20us")
	}
	if set["ops"] && set["duration"] {
		return nil, errors.New("--ops and --duration do not go together")
	}
	if set["endpoint"] && o.Spawn {
		return nil, errors.New("--endpoint and --spawn do not go together")
	}
	if set["gateways"] && !o.Spawn {
		return nil, errors.New("--gateways needs --spawn; to drive gateways started by hand, list their endpoints: --endpoint URL1,URL2")
	}
	if c.serveCeiling {
		return c, nil
	}
	if warmup < 0 {
		return nil, errors.New("--warmup must not be negative")
	}
	if c.repeat < 1 {
		return nil, errors.New("--repeat must be at least 1")
	}
	if c.repeat > 1 && slices.Contains(o.Workloads, "ttl-sustained") {
		return nil, errors.New("--repeat does not go with ttl-sustained, which repeats its runs with --rounds: run it on its own")
	}
	return c, o.Validate()
}

func runBench(args []string, stdout, stderr io.Writer) error {
	c, err := parseBenchFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	finished := make(chan struct{})
	defer close(finished) // before stop: a normal return is no interruption
	go func() {
		// After the first Ctrl-C (which stops the run and prints what was
		// measured), a second one ends the process at once.
		<-ctx.Done()
		stop()
		select {
		case <-finished:
		default:
			if !c.serveCeiling {
				fmt.Fprintln(stderr, "lethe bench: interrupted: stopping, and reporting what was measured (interrupt again to quit at once)")
			}
		}
	}()
	if c.serveCeiling {
		return serveCeiling(ctx, c, stdout)
	}
	if !c.quiet {
		c.opts.Progress = stderr
	}
	if c.repeat > 1 {
		rep, err := bench.RunRepeated(ctx, &c.opts, c.repeat)
		if rep == nil {
			return err
		}
		for _, r := range rep.Runs {
			r.Version = versionString()
		}
		return errors.Join(err, writeResults(rep, c.jsonPath, stdout))
	}
	rep, err := bench.Run(ctx, &c.opts)
	if rep == nil {
		return err
	}
	rep.Version = versionString()
	return errors.Join(err, writeResults(rep, c.jsonPath, stdout))
}

// writeResults writes a run's (or repeated runs') results as text to stdout
// and, when jsonPath is set, as JSON there.
func writeResults(res interface {
	WriteText(io.Writer)
	WriteJSON(string) error
}, jsonPath string, stdout io.Writer) error {
	res.WriteText(stdout)
	if jsonPath == "" {
		return nil
	}
	if err := res.WriteJSON(jsonPath); err != nil {
		return fmt.Errorf("write %s: %w", jsonPath, err)
	}
	return nil
}

// serveCeiling serves the ceiling until ctx ends, announcing itself on stdout
// as `lethe serve` does.
func serveCeiling(ctx context.Context, c *benchConfig, stdout io.Writer) error {
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.addr, err)
	}
	srv := bench.NewCeiling(&bench.CeilingOptions{DocSize: c.opts.DocSize, Work: c.ceilingWork})
	fmt.Fprintln(stdout, "lethe: listening on", "http://"+ln.Addr().String()+"/")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(srv.Shutdown(shutdownCtx), <-errc)
}

// parseContainerTTL reads --container-ttl: -1, or a positive whole number of
// seconds written as a number (3600) or a duration (1h).
func parseContainerTTL(s string) (int32, error) {
	if n, err := strconv.ParseInt(s, 10, 32); err == nil {
		if n == -1 || n > 0 {
			return int32(n), nil
		}
		return 0, fmt.Errorf("--container-ttl %q: want -1 or a positive number of seconds", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second || d%time.Second != 0 || d/time.Second > math.MaxInt32 {
		return 0, fmt.Errorf("--container-ttl %q: want -1 or a positive whole number of seconds, such as 3600 or 1h", s)
	}
	return int32(d / time.Second), nil
}
