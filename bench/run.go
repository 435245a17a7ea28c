package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// databaseID is the database the benchmark works in. It creates the database
// if needed, and deletes and recreates each container it uses.
const databaseID = "lethe-bench"

// stopTimeout bounds how long a spawned server may take to stop.
const stopTimeout = 30 * time.Second

// runner holds a run's state.
type runner struct {
	opts    Options
	rep     *Report
	keys    Keys
	server  *target
	ceiling *target // nil without Options.Ceiling
	seed    uint64  // advanced per phase
	exe     string  // the lethe binary servers are spawned from
}

// target is a server the workloads run against.
type target struct {
	info      ServerInfo
	child     *child // when spawned
	canned    bool   // the ceiling: nothing to populate
	tr        *http.Transport
	db        *azcosmos.DatabaseClient
	ready     map[string]*azcosmos.ContainerClient
	populated bool
	seq       atomic.Int64
}

// Run runs the benchmark described by o: it starts the servers it needs, runs
// each workload against the server and then (with Ceiling) against the
// ceiling, stops the servers, and returns the report. Failed operations are
// counted, never fatal. When ctx ends (Ctrl-C) the run stops early and the
// report covers what was measured; Run returns an error only when nothing
// could be measured (bad options, a server that does not start).
func Run(ctx context.Context, o *Options) (rep *Report, err error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	r := &runner{opts: opts, rep: &Report{Started: time.Now(), Params: paramsOf(&opts), Machine: machineInfo()}}
	defer func() {
		r.close()
		r.rep.Machine.LoadEnd = loadAverage()
		r.rep.Finished = time.Now()
		r.rep.Interrupted = ctx.Err() != nil
	}()
	if r.keys, err = NewKeys(opts.Keys, max(opts.Docs, 1)); err != nil {
		return nil, err
	}
	if opts.FsyncProbe != "" {
		// Before any server runs, so that nothing else writes to the disk.
		f, err := ProbeFsync(opts.FsyncProbe, opts.FsyncCount)
		if err != nil {
			r.problem("%v", err)
		}
		r.rep.Fsync = f
	}
	if err := r.startServers(ctx); err != nil {
		return r.rep, err
	}
	for _, name := range opts.Workloads {
		if ctx.Err() != nil {
			break
		}
		wl := workloads[name]
		if wl.sustained {
			r.rep.Workloads = append(r.rep.Workloads, r.runSustained(ctx, wl))
		} else {
			r.rep.Workloads = append(r.rep.Workloads, r.runWorkload(ctx, wl))
		}
		if c := r.server.child; c != nil && c.exited() {
			r.problem("the server exited during the run: %v\n%s", c.waitErr, c.tail)
			break
		}
	}
	return r.rep, nil
}

func (r *runner) problem(format string, args ...any) {
	r.rep.Problems = append(r.rep.Problems, fmt.Sprintf(format, args...))
}

// startServers spawns or connects to the server (and the ceiling), and makes
// sure the benchmark's database exists on each.
func (r *runner) startServers(ctx context.Context) error {
	o := &r.opts
	exe := o.Executable
	if exe == "" && (o.Spawn || o.Ceiling) {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("%w: %w", errNoExecutable, err)
		}
	}
	r.exe = exe
	if o.Spawn {
		args, tmp, err := serveArgs(o.ServeArgs)
		if err != nil {
			return err
		}
		if r.server, err = r.spawn("lethe", args, tmp); err != nil {
			return err
		}
	} else {
		r.server = r.newTarget(ServerInfo{Name: "server", Endpoint: o.Endpoint, PID: o.ServerPID})
	}
	r.rep.Server = r.server.info
	if o.Ceiling {
		args := []string{"bench", "--serve-ceiling", "--addr", "127.0.0.1:0", "--doc-size", strconv.Itoa(o.DocSize)}
		var err error
		if r.ceiling, err = r.spawn("ceiling", args, ""); err != nil {
			return fmt.Errorf("start the ceiling server: %w", err)
		}
		r.ceiling.canned = true
		info := r.ceiling.info
		r.rep.Ceiling = &info
	}
	for _, t := range r.targets() {
		if err := t.init(ctx, r.opts); err != nil {
			return fmt.Errorf("%s at %s: %w", t.info.Name, t.info.Endpoint, err)
		}
	}
	return nil
}

// spawn starts `lethe` with args from the run's executable and returns it as
// a target named name. dir, if not empty, is a temporary data directory that
// goes with the server: removed when it stops, or at once if it does not
// start.
func (r *runner) spawn(name string, args []string, dir string) (*target, error) {
	cleanup := func() {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
	c, err := startChild(r.exe, args, r.opts.Progress)
	if err != nil {
		cleanup()
		return nil, err
	}
	c.cleanup = cleanup
	t := r.newTarget(ServerInfo{Name: name, Endpoint: c.URL, PID: c.PID(), Command: "lethe " + strings.Join(args, " ")})
	t.child = c
	return t, nil
}

func (r *runner) targets() []*target {
	ts := []*target{}
	for _, t := range []*target{r.server, r.ceiling} {
		if t != nil {
			ts = append(ts, t)
		}
	}
	return ts
}

// close stops the spawned servers.
func (r *runner) close() {
	for _, t := range r.targets() {
		// Close the idle connections first: a server's graceful shutdown
		// would otherwise wait for them.
		t.tr.CloseIdleConnections()
		if t.child != nil {
			if err := t.child.stop(stopTimeout); err != nil {
				r.problem("stop %s: %v", t.info.Name, err)
			}
		}
	}
}

// newTarget returns a target with an SDK client for info's endpoint. The
// client has its own connection pool, large enough for every worker to keep
// its connection, and retries nothing unless Options.Retries says so.
func (r *runner) newTarget(info ServerInfo) *target {
	o := &r.opts
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   2*o.Concurrency + 16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{InsecureSkipVerify: o.InsecureTLS}, //nolint:gosec // opted in with --insecure-tls
	}
	return &target{info: info, tr: tr, ready: map[string]*azcosmos.ContainerClient{}}
}

// init creates the SDK client and the benchmark's database.
func (t *target) init(ctx context.Context, o Options) error {
	key := o.Key
	if t.canned {
		key = EmulatorKey // the ceiling checks nothing
	}
	cred, err := azcosmos.NewKeyCredential(key)
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	retries := int32(o.Retries)
	if retries == 0 {
		retries = -1 // azcore: less than zero means no retries
	}
	client, err := azcosmos.NewClientWithKey(t.info.Endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: t.tr, Timeout: 65 * time.Second},
		Retry:     policy.RetryOptions{MaxRetries: retries},
	}})
	if err != nil {
		return err
	}
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: databaseID}, nil); err != nil && !isStatus(err, http.StatusConflict) {
		return fmt.Errorf("create database %s: %w", databaseID, err)
	}
	t.db, err = client.NewDatabase(databaseID)
	return err
}

// container returns the named container, deleting and recreating it the
// first time, so that every run starts from an empty container.
func (t *target) container(ctx context.Context, name string, ttl bool) (*azcosmos.ContainerClient, error) {
	if cc, ok := t.ready[name]; ok {
		return cc, nil
	}
	cc, err := t.db.NewContainer(name)
	if err != nil {
		return nil, err
	}
	if _, err := cc.Delete(ctx, nil); err != nil && !isStatus(err, http.StatusNotFound) {
		return nil, fmt.Errorf("delete container %s: %w", name, err)
	}
	props := azcosmos.ContainerProperties{ID: name, PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}
	if ttl {
		on := int32(-1) // on, with no default: each document's own ttl applies
		props.DefaultTimeToLive = &on
	}
	if _, err := t.db.CreateContainer(ctx, props, nil); err != nil {
		return nil, fmt.Errorf("create container %s: %w", name, err)
	}
	t.ready[name] = cc
	return cc, nil
}

// Quiescing: before each workload, wait (up to quiesceMax) until the local
// servers (the run's, and the one about to be measured if it is an extra one)
// are idle, each using less than quiesceCPU of a core over
// quiesceWindow, so that background work left over from an earlier workload
// (compactions, the purge, garbage collection) does not compete for the
// cores with the next measurement.
const (
	quiesceMax    = 15 * time.Second
	quiesceWindow = 250 * time.Millisecond
	quiesceCPU    = 0.05
)

func (r *runner) quiesce(ctx context.Context, extra *target) {
	start := time.Now()
	ts := r.targets()
	if extra != nil && !slices.Contains(ts, extra) {
		ts = append(ts, extra)
	}
	for _, t := range ts {
		for ctx.Err() == nil && time.Since(start) < quiesceMax {
			s0, ok := t.sample()
			if !ok {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(quiesceWindow):
			}
			s1, ok := t.sample()
			if !ok || (s1.CPU-s0.CPU).Seconds() < quiesceCPU*quiesceWindow.Seconds() {
				break
			}
		}
	}
	if d := time.Since(start); d > time.Second {
		fmt.Fprintf(r.opts.Progress, "bench: waited %.1fs for the servers to finish background work\n", d.Seconds())
	}
}

// other returns the run's other target than t, or nil.
func (r *runner) other(t *target) *target {
	if t == r.server {
		return r.ceiling
	}
	return r.server
}

// sample reads the target's process, if it is known (t may be nil).
func (t *target) sample() (ProcSample, bool) {
	if t == nil || t.info.PID <= 0 {
		return ProcSample{}, false
	}
	s, err := ReadProc(t.info.PID)
	return s, err == nil
}

// runWorkload runs wl against the server and then the ceiling.
func (r *runner) runWorkload(ctx context.Context, wl workload) *Result {
	res := &Result{Workload: wl.name}
	m, err := r.measure(ctx, r.server, wl, nil)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Measurement = *m
	if wl.write && r.rep.Fsync != nil {
		res.FsyncBound = newFsyncBound(r.rep.Fsync, r.opts.Concurrency, m.OpsPerSec)
	}
	if r.ceiling == nil || ctx.Err() != nil {
		return res
	}
	c, err := r.measure(ctx, r.ceiling, wl, nil)
	if err != nil {
		res.Error = "ceiling: " + err.Error()
		return res
	}
	res.Ceiling = c
	if c.OpsPerSec > 0 && m.Ops > 0 {
		res.Ratio = &Ratio{OpsPerSec: m.OpsPerSec / c.OpsPerSec}
		if m.Server != nil && c.Server != nil && c.Server.CPUPerOp > 0 {
			res.Ratio.ServerCPUPerOp = m.Server.CPUPerOp / c.Server.CPUPerOp
		}
	}
	return res
}

// measure prepares wl's container on t (populating it if needed), warms up,
// and measures. watch, if not nil, watches the measured phase (phase.watch).
func (r *runner) measure(ctx context.Context, t *target, wl workload, watch func(ops func() int64, done <-chan struct{})) (*Measurement, error) {
	cc, err := t.container(ctx, wl.container, wl.ttl)
	if err != nil {
		return nil, err
	}
	e := &env{cc: cc, opts: &r.opts, keys: r.keys, seq: &t.seq}
	if wl.populated && !t.populated && !t.canned {
		t.populated = true
		pr := r.runPhase(ctx, populateOp(e), r.phase("populate "+strconv.Itoa(r.opts.Docs)+" documents on "+t.info.Name, t, 0, int64(r.opts.Docs)))
		r.rep.Populate = &Populate{
			Docs: pr.ops, Seconds: pr.elapsed.Seconds(), DocsPerSec: float64(pr.ops) / pr.elapsed.Seconds(),
			Errors: pr.errCount, ByStatus: pr.errs,
		}
		if pr.errCount > 0 {
			r.problem("populate: %d of %d documents failed, e.g. %s", pr.errCount, r.opts.Docs, firstValue(pr.errText))
		}
	}
	op := wl.newOp(e)
	r.quiesce(ctx, t)
	if r.opts.Warmup > 0 && ctx.Err() == nil {
		r.runPhase(ctx, op, r.phase(wl.name+" warmup on "+t.info.Name, t, r.opts.Warmup, 0))
	}
	if ctx.Err() != nil {
		return nil, errors.New("interrupted before it was measured")
	}
	other := r.other(t)
	otherBefore, okOther := other.sample()
	before, okBefore := t.sample()
	busy0, okBusy := machineBusy()
	cpu0 := selfCPU()
	ph := r.phase(wl.name+" on "+t.info.Name, t, r.opts.Duration, r.opts.Ops)
	ph.watch = watch
	pr := r.runPhase(ctx, op, ph)
	cpu1 := selfCPU()
	busy1, okBusy1 := machineBusy()
	after, okAfter := t.sample()
	otherAfter, okOtherAfter := other.sample()

	m := &Measurement{
		Target: t.info.Name, Started: pr.started, Finished: pr.started.Add(pr.elapsed), Seconds: pr.elapsed.Seconds(),
		Ops: pr.ops, RU: pr.ru, Errors: pr.errCount, Interrupted: pr.interrupted,
		Latency: Latency{
			P50: micros(pr.hist.Percentile(0.50)), P99: micros(pr.hist.Percentile(0.99)), P999: micros(pr.hist.Percentile(0.999)),
			Mean: micros(pr.hist.Mean()), Max: micros(pr.hist.Max()),
		},
	}
	if pr.errCount > 0 {
		m.ByStatus, m.ErrorSample = pr.errs, pr.errText
	}
	if secs := pr.elapsed.Seconds(); secs > 0 {
		m.OpsPerSec, m.RUPerSec = float64(pr.ops)/secs, pr.ru/secs
	}
	if pr.ops > 0 {
		m.RowsPerOp = float64(pr.rows) / float64(pr.ops)
		m.ClientCPUPerOp = micros(cpu1-cpu0) / float64(pr.ops)
	}
	if okOther && okOtherAfter {
		m.IdleServerCPU = (otherAfter.CPU - otherBefore.CPU).Seconds()
	}
	if okBusy && okBusy1 {
		ours := (cpu1 - cpu0).Seconds() + m.IdleServerCPU
		if okBefore && okAfter {
			ours += (after.CPU - before.CPU).Seconds()
		}
		m.OtherCPU = max((busy1-busy0).Seconds()-ours, 0)
		if secs := pr.elapsed.Seconds(); secs > 0 {
			m.MachineBusy = (busy1 - busy0).Seconds() / (secs * float64(runtime.NumCPU()))
		}
	}
	if okBefore && okAfter {
		cpu := after.CPU - before.CPU
		m.Server = &ServerStats{
			PID: t.info.PID, RSSBytes: after.RSS, RSSPeakBytes: max(pr.peakRSS, after.RSS), HWMBytes: after.HWM,
			CPUSeconds: cpu.Seconds(),
		}
		if pr.ops > 0 {
			m.Server.CPUPerOp = micros(cpu) / float64(pr.ops)
		}
	}
	return m, nil
}

func (r *runner) phase(label string, t *target, d time.Duration, ops int64) phase {
	r.seed++
	return phase{label: label, duration: d, ops: ops, pid: t.info.PID, seed: r.seed}
}

func paramsOf(o *Options) Params {
	p := Params{
		Endpoint: o.Endpoint, Spawn: o.Spawn, ServeArgs: o.ServeArgs, Workloads: o.Workloads, Docs: o.Docs, DocSize: o.DocSize,
		Concurrency: o.Concurrency, Ops: o.Ops, Keys: o.Keys, Partitions: o.Partitions, WarmupSec: o.Warmup.Seconds(),
		TTLSec: o.TTL.Seconds(), Retries: o.Retries, Ceiling: o.Ceiling, FsyncProbeDir: o.FsyncProbe,
		TimelineIntervalSec: o.TimelineInterval.Seconds(), DataDirSize: o.DataDirSize,
	}
	if o.Ops <= 0 {
		p.DurationSec = o.Duration.Seconds()
	}
	if o.Spawn {
		p.Endpoint = ""
	}
	return p
}

func isStatus(err error, status int) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == status
}

func firstValue(m map[string]string) string {
	for _, v := range m {
		return v
	}
	return ""
}
