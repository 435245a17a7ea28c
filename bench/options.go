package bench

import (
	"errors"
	"fmt"
	"io"
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
var Workloads = []string{"create", "read", "replace", "upsert", "query-pk", "query-cross", "mixed", "ttl", "ttl-sustained"}

// Options configure a benchmark run. A zero field takes its default.
type Options struct {
	// Endpoint is the Cosmos DB endpoint to drive, unless Spawn is set. The
	// default is DefaultEndpoint.
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
	// one SDK client). The default is 8.
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
	// Retries is the number of times the SDK retries a failed request.
	// The default, 0, retries nothing: every failure is counted.
	Retries int

	// Ceiling also runs every workload, in the same run, against the
	// canned-response Ceiling server (spawned as `lethe bench
	// --serve-ceiling`), and reports each figure as a ratio to it.
	Ceiling bool
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
	if o.Spawn && o.ServerPID != 0 {
		errs = append(errs, errors.New("spawn and server-pid do not go together: a spawned server is sampled anyway"))
	}
	if !o.Spawn && len(o.ServeArgs) > 0 {
		errs = append(errs, errors.New("serve-args needs spawn"))
	}
	if o.FsyncCount < 0 {
		errs = append(errs, errors.New("fsync count must be positive"))
	}
	if o.Rounds < 0 {
		errs = append(errs, errors.New("rounds must be positive"))
	}
	if o.TimelineInterval < 0 || o.TimelineInterval%time.Second != 0 {
		errs = append(errs, fmt.Errorf("timeline interval %v must be a positive whole number of seconds", o.TimelineInterval))
	}
	if o.Spawn && o.DataDirSize != "" {
		errs = append(errs, errors.New("spawn and data-dir-size do not go together: spawned servers' data directories are measured anyway"))
	}
	return errors.Join(errs...)
}
