package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// Defaults of Options.
const (
	DefaultEndpoint    = "http://127.0.0.1:8081/"
	DefaultDocs        = 10_000
	DefaultDocSize     = 1024
	DefaultConcurrency = 8
	DefaultDuration    = 10 * time.Second
	DefaultPartitions  = 100
	DefaultWarmup      = time.Second
	DefaultSlices      = 5
	DefaultTTL         = 5 * time.Second
	DefaultFsyncCount  = 200
	// DefaultTimelineInterval is the row interval of ttl-sustained's
	// timeline table.
	DefaultTimelineInterval = 5 * time.Second
	// EmulatorKey is the Cosmos DB emulator's well-known master key.
	EmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
)

// Workloads lists every workload, in the order they are described in the
// package documentation.
var Workloads = []string{"create", "read", "replace", "upsert", "patch", "delete", "query-pk", "query-cross", "query-list", "query-order", "query-range", "mixed", "ttl", "ttl-sustained"}

// Options configure a benchmark run. A zero field takes its default.
type Options struct {
	// Endpoint is the Cosmos DB endpoint to drive, unless Spawn is set. The
	// default is DefaultEndpoint. It may list several comma-separated
	// endpoints, gateways over one shared store (started by hand): the
	// workers are spread over them round-robin, as over spawned Gateways,
	// and the set-up goes through the first (see Endpoints).
	Endpoint string
	// Key is the endpoint's base64 master key. The default is EmulatorKey.
	Key string
	// InsecureTLS accepts any certificate from an https endpoint (the
	// emulator's and Lethe's are self-signed).
	InsecureTLS bool

	// Spawn starts `lethe serve` (Executable) on a free loopback port for the
	// run, instead of using Endpoint, and stops it afterwards. ServeArgs are
	// added to its command line; without --in-memory or --data-dir among
	// them, the server gets a temporary data directory, removed afterwards.
	Spawn     bool
	ServeArgs []string
	// Gateways is the number of `lethe serve` processes Spawn starts, each
	// with the same ServeArgs, its own temporary data directory and its own
	// free loopback port. The default is 1. More than one needs a shared
	// store (--store in ServeArgs, or LETHE_STORE): worker i of each
	// workload uses gateway i % Gateways, each gateway through an SDK client
	// and HTTP transport of its own, and the set-up (database, containers,
	// populating) goes through the first.
	Gateways int
	// ServerPID is the process id of a local server at Endpoint, to sample
	// its memory and CPU time from /proc. Spawned servers are sampled anyway.
	ServerPID int
	// Executable is the lethe binary to spawn servers from (Spawn, Ceiling).
	// The default is this process's own executable.
	Executable string

	// Workloads to run, one after the other (see the Workloads variable).
	// The default is create and read.
	Workloads []string
	// Docs is the number of documents populated before the workloads that
	// address existing documents. The default is 10,000.
	Docs int
	// DocSize is the size of each document in bytes. The default is 1024.
	DocSize int
	// Concurrency is the number of concurrent clients (goroutines sharing
	// one SDK client per gateway). The default is 8.
	Concurrency int
	// Duration is how long each workload is measured, unless Ops is set.
	// The default is 10s.
	Duration time.Duration
	// Ops, when positive, measures each workload for this many operations
	// (counting errors) instead of for Duration.
	Ops int64
	// Keys is the key distribution of the workloads that address existing
	// documents: "uniform" or "zipf" (YCSB's theta 0.99). The default is
	// uniform.
	Keys string
	// Partitions is the number of distinct partition key values. The
	// default is 100.
	Partitions int
	// Warmup is run before each measured workload and not counted. The
	// default is 1s; a negative value means no warmup.
	Warmup time.Duration
	// TTL is the time to live of the ttl and ttl-sustained workloads'
	// documents, whole seconds. The default is 5s.
	TTL time.Duration
	// ContainerTTL is the defaultTtl of the containers of every workload
	// but ttl and ttl-sustained (whose containers get -1, their documents
	// a ttl of their own), as Cosmos DB has it: nil leaves time to live
	// off; -1 turns it on with no default; n > 0 makes each document expire
	// n seconds after its last write. Time to live on is how applications
	// that keep sessions, events or caches run; with n shorter than the run,
	// reads and queries meet expired documents and fail or find fewer.
	ContainerTTL *int32
	// Retries is the number of times the SDK retries a failed request.
	// The default, 0, retries nothing: every failure is counted.
	Retries int

	// Ceiling also runs every workload, in the same run, against the
	// canned-response Ceiling server (spawned as `lethe bench
	// --serve-ceiling`), and reports each figure as a ratio to it.
	Ceiling bool
	// Slices, with Ceiling, measures each workload that writes nothing on
	// the server and on the ceiling in turns, this many slices each of
	// Duration/Slices (or Ops/Slices operations), alternating which goes
	// first, so that the machine's drift during the run falls on both
	// alike. Workloads that write are measured in one piece on each, since
	// their background work would run during the other's slices. The
	// default is DefaultSlices; 1 measures every workload in one piece.
	Slices int
	// FsyncProbe, when set, is a directory in which to measure the latency
	// of a synced 4 KB write (FsyncCount times, default 200) before the
	// workloads, to compare durable writes with the fsync bound.
	FsyncProbe string
	FsyncCount int

	// TimelineInterval is the time each row of ttl-sustained's timeline
	// table covers, a whole number of seconds (the timeline is sampled once
	// a second; the JSON report has every sample). The default is 5s.
	TimelineInterval time.Duration
	// DataDirSize is the data directory of the server at Endpoint, whose
	// disk usage ttl-sustained samples once a second. Without it, and for an
	// in-memory server, the timeline has no data directory size. Spawned
	// servers' directories are measured anyway.
	DataDirSize string
	// Rounds is how many times ttl-sustained, with Spawn, runs its pair of
	// servers (purge off and on), alternating which goes first, so that the
	// machine's drift between minutes falls on both; the comparison is the
	// median of the rounds' ratios. The default is 1.
	Rounds int

	// Progress receives a progress line per second, and spawned servers'
	// logs. The default discards them.
	Progress io.Writer
}

// EnsureDefaults fills in the zero fields.
func (o *Options) EnsureDefaults() {
	if o.Endpoint == "" {
		o.Endpoint = DefaultEndpoint
	}
	if o.Key == "" {
		o.Key = EmulatorKey
	}
	if len(o.Workloads) == 0 {
		o.Workloads = []string{"create", "read"}
	}
	if o.Docs == 0 {
		o.Docs = DefaultDocs
	}
	if o.DocSize == 0 {
		o.DocSize = DefaultDocSize
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Gateways == 0 {
		o.Gateways = 1
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Keys == "" {
		o.Keys = "uniform"
	}
	if o.Partitions == 0 {
		o.Partitions = DefaultPartitions
	}
	if o.Warmup == 0 {
		o.Warmup = DefaultWarmup
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.FsyncCount == 0 {
		o.FsyncCount = DefaultFsyncCount
	}
	if o.Rounds == 0 {
		o.Rounds = 1
	}
	if o.Slices == 0 {
		o.Slices = DefaultSlices
	}
	if o.TimelineInterval == 0 {
		o.TimelineInterval = DefaultTimelineInterval
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// Validate reports every problem with the options at once.
func (o *Options) Validate() error {
	var errs []error
	for _, w := range o.Workloads {
		if !slices.Contains(Workloads, w) {
			errs = append(errs, fmt.Errorf("unknown workload %q (known: %s)", w, strings.Join(Workloads, ", ")))
		}
	}
	if i := slices.Index(o.Workloads, "delete"); i >= 0 && !slices.Contains(o.Workloads[:i], "create") {
		errs = append(errs, errors.New("the delete workload deletes what the create workload made: list create before it"))
	}
	if o.Docs < 0 {
		errs = append(errs, errors.New("docs must be positive"))
	}
	if o.DocSize < 0 || o.DocSize > 2<<20 {
		errs = append(errs, errors.New("doc size must be between 1 byte and 2 MB"))
	}
	if o.Concurrency < 0 {
		errs = append(errs, errors.New("concurrency must be positive"))
	}
	if o.Duration < 0 || o.Ops < 0 {
		errs = append(errs, errors.New("duration and ops must be positive"))
	}
	if o.Keys != "uniform" && o.Keys != "zipf" {
		errs = append(errs, fmt.Errorf("key distribution %q is not uniform or zipf", o.Keys))
	}
	if o.Partitions < 0 {
		errs = append(errs, errors.New("partitions must be positive"))
	}
	if o.TTL < 0 || o.TTL%time.Second != 0 {
		errs = append(errs, fmt.Errorf("ttl %v must be a positive whole number of seconds", o.TTL))
	}
	if o.ContainerTTL != nil && (*o.ContainerTTL == 0 || *o.ContainerTTL < -1) {
		errs = append(errs, fmt.Errorf("container ttl %d must be -1 or a positive number of seconds", *o.ContainerTTL))
	}
	if o.Spawn && o.ServerPID != 0 {
		errs = append(errs, errors.New("spawn and server-pid do not go together: a spawned server is sampled anyway"))
	}
	if !o.Spawn && len(o.ServeArgs) > 0 {
		errs = append(errs, errors.New("serve-args needs spawn"))
	}
	errs = append(errs, o.validateGateways()...)
	if o.FsyncCount < 0 {
		errs = append(errs, errors.New("fsync count must be positive"))
	}
	if o.Rounds < 0 {
		errs = append(errs, errors.New("rounds must be positive"))
	}
	if o.Slices < 0 {
		errs = append(errs, errors.New("slices must be positive"))
	}
	if o.TimelineInterval < 0 || o.TimelineInterval%time.Second != 0 {
		errs = append(errs, fmt.Errorf("timeline interval %v must be a positive whole number of seconds", o.TimelineInterval))
	}
	if o.Spawn && o.DataDirSize != "" {
		errs = append(errs, errors.New("spawn and data-dir-size do not go together: spawned servers' data directories are measured anyway"))
	}
	return errors.Join(errs...)
}

// Endpoints returns the endpoints Endpoint lists, comma-separated, without
// surrounding spaces: one for each gateway driven (unless Spawn is set).
func (o *Options) Endpoints() []string {
	var es []string
	for e := range strings.SplitSeq(o.Endpoint, ",") {
		es = append(es, strings.TrimSpace(e))
	}
	return es
}

// gatewayCount returns the number of gateways the workloads are spread over.
func (o *Options) gatewayCount() int {
	if o.Spawn {
		return max(o.Gateways, 1)
	}
	return len(o.Endpoints())
}

// validateGateways checks the options that concern several gateways.
func (o *Options) validateGateways() []error {
	var errs []error
	if o.Gateways < 0 {
		errs = append(errs, errors.New("gateways must be positive"))
	}
	if o.Gateways > 1 && !o.Spawn {
		errs = append(errs, errors.New("gateways needs spawn: to drive gateways started by hand, list their endpoints, comma-separated"))
	}
	if !o.Spawn {
		for _, e := range o.Endpoints() {
			if e == "" {
				errs = append(errs, fmt.Errorf("endpoint list %q has an empty endpoint", o.Endpoint))
				break
			}
		}
	}
	if o.sustainedOnSharedStore() && len(o.Workloads) > 1 {
		errs = append(errs, errors.New("ttl-sustained over a shared store (--store) runs on its own: the run's own gateways see its container, so they run without the purge"))
	}
	n := o.gatewayCount()
	if n <= 1 {
		return errs
	}
	if o.Spawn {
		if storeArg(o.ServeArgs) == "" && os.Getenv("LETHE_STORE") == "" {
			errs = append(errs, fmt.Errorf("%d gateways need a shared store: add --store postgres://... to serve-args (without one, each gateway would serve its own data directory)", n))
		}
		if hasFlag(o.ServeArgs, "data-dir") {
			errs = append(errs, errors.New("several gateways and --data-dir in serve-args do not go together: each spawned gateway gets a temporary data directory of its own"))
		}
	}
	if !o.Spawn && o.ServerPID != 0 {
		errs = append(errs, errors.New("server-pid names one process: it does not go with several endpoints"))
	}
	if o.Concurrency < n {
		errs = append(errs, fmt.Errorf("concurrency %d is less than the %d gateways: each gateway needs a worker", o.Concurrency, n))
	}
	return errs
}

// sustainedOnSharedStore reports whether ttl-sustained runs on spawned
// servers over a shared store (--store in Options.ServeArgs, or
// LETHE_STORE): the run's own gateways, idle meanwhile, see the container of
// its runs too, so they are started with the purge off, and no other
// workload may run beside it (validateGateways).
func (o *Options) sustainedOnSharedStore() bool {
	return o.Spawn && slices.Contains(o.Workloads, "ttl-sustained") &&
		(storeArg(o.ServeArgs) != "" || os.Getenv("LETHE_STORE") != "")
}

// storeArg returns the value of the last --store flag in a `lethe serve`
// command line, or "".
func storeArg(args []string) string {
	store := ""
	for i := 0; i < len(args); i++ {
		name, val, hasVal := flagOf(args[i])
		if name != "store" {
			continue
		}
		if !hasVal && i+1 < len(args) {
			i++
			val = args[i]
		}
		store = val
	}
	return store
}

// hasFlag reports whether a command line has the flag name (-name, --name or
// --name=value).
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if n, _, _ := flagOf(a); n == name {
			return true
		}
	}
	return false
}
