package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
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

// target is a server the workloads run against: one process, or several
// gateways over one store (the first, with the others as its peers).
type target struct {
	info      ServerInfo
	label     string // in measurements and progress lines: info.Name, or e.g. "lethe x2" for gateways
	child     *child // when spawned
	canned    bool   // the ceiling: nothing to populate
	tr        *http.Transport
	db        *azcosmos.DatabaseClient
	ready     map[string]*azcosmos.ContainerClient
	populated bool
	numbers   map[string]*numbering // by container, created on first use
	// peers are the other gateways over the same store when the workloads
	// are spread over several (each has its own SDK client and transport):
	// the set-up (database, containers, populating) goes through this one,
	// the first, and worker i of a workload uses all()[i % len(all())].
	peers []*target
}

// numbering counts the documents the create and ttl workloads created in
// one container of a target, across its gateways, and those the delete
// workload has claimed since, in the same order.
type numbering struct{ created, deleted atomic.Int64 }

// numbering returns the numbering of t's container name.
func (t *target) numbering(name string) *numbering {
	if t.numbers == nil {
		t.numbers = map[string]*numbering{}
	}
	n := t.numbers[name]
	if n == nil {
		n = &numbering{}
		t.numbers[name] = n
	}
	return n
}

// all returns t's gateways, t first.
func (t *target) all() []*target {
	return append([]*target{t}, t.peers...)
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
		if r.serverExited() {
			break
		}
	}
	r.rep.End = r.endMemory()
	return r.rep, nil
}

// endMemory reads the resident memory of the server (every gateway's,
// summed) and of the ceiling after the last workload; nil when neither
// process is known.
func (r *runner) endMemory() *EndMemory {
	var end EndMemory
	if s, ok := r.server.sample(); ok {
		end.Server = memoryOf(s)
	}
	if s, ok := r.ceiling.sample(); ok {
		end.Ceiling = memoryOf(s)
	}
	if end.Server == nil && end.Ceiling == nil {
		return nil
	}
	return &end
}

// serverExited reports whether a spawned gateway of the run's server has
// exited, as a problem.
func (r *runner) serverExited() bool {
	exited := false
	for _, g := range r.server.all() {
		if c := g.child; c != nil && c.exited() {
			r.problem("%s exited during the run: %v\n%s", g.info.Name, c.waitErr, c.tail)
			exited = true
		}
	}
	return exited
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
	n := o.gatewayCount()
	name := func(base string, i int) string {
		if n == 1 {
			return base
		}
		return base + " " + strconv.Itoa(i+1)
	}
	if o.Spawn {
		for i := range n {
			// Each gateway gets a temporary data directory of its own.
			args, tmp, err := serveArgs(o.ServeArgs)
			if err != nil {
				return err
			}
			if o.sustainedOnSharedStore() {
				// ttl-sustained's own servers purge, or not, its container.
				args = append(args, "--disable-purger")
			}
			g, err := r.spawn(name("lethe", i), args, tmp)
			if err != nil {
				return err // r.close stops the gateways already started
			}
			r.addGateway(g)
		}
	} else {
		for i, e := range o.Endpoints() {
			r.addGateway(r.newTarget(ServerInfo{Name: name("server", i), Endpoint: e, PID: o.ServerPID}))
		}
	}
	if n > 1 {
		base := "server"
		if o.Spawn {
			base = "lethe"
		}
		r.server.label = base + " x" + strconv.Itoa(n)
	}
	r.rep.Server = r.server.info
	for _, g := range r.server.all() {
		r.rep.Gateways = append(r.rep.Gateways, g.info)
	}
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
			return err
		}
	}
	return nil
}

// addGateway adds g to the run's server: as the server itself if it is the
// first, else as a peer of the first.
func (r *runner) addGateway(g *target) {
	if r.server == nil {
		r.server = g
		return
	}
	r.server.peers = append(r.server.peers, g)
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
	t := r.newTarget(ServerInfo{Name: name, Endpoint: c.URL, PID: c.PID(), Command: "lethe " + strings.Join(redactArgs(args), " ")})
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

// close stops the spawned servers, every gateway of each.
func (r *runner) close() {
	for _, t := range r.targets() {
		for _, g := range t.all() {
			// Close the idle connections first: a server's graceful
			// shutdown would otherwise wait for them.
			g.tr.CloseIdleConnections()
			if g.child != nil {
				if err := g.child.stop(stopTimeout); err != nil {
					r.problem("stop %s: %v", g.info.Name, err)
				}
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
	return &target{info: info, label: info.Name, tr: tr, ready: map[string]*azcosmos.ContainerClient{}}
}

// init creates the SDK client of each of t's gateways, and the benchmark's
// database through the first; the others must then see it, as gateways over
// one store do.
func (t *target) init(ctx context.Context, o Options) error {
	for i, g := range t.all() {
		if err := g.connect(ctx, o, i == 0); err != nil {
			return fmt.Errorf("%s at %s: %w", g.info.Name, g.info.Endpoint, err)
		}
	}
	return nil
}

// connect creates t's SDK client and its client of the benchmark's
// database: creating the database if create is set, else checking that it
// exists.
func (t *target) connect(ctx context.Context, o Options, create bool) error {
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
	if create {
		if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: databaseID}, nil); err != nil && !isStatus(err, http.StatusConflict) {
			return fmt.Errorf("create database %s: %w", databaseID, err)
		}
	}
	if t.db, err = client.NewDatabase(databaseID); err != nil {
		return err
	}
	if !create {
		if _, err := t.db.Read(ctx, nil); err != nil {
			if isStatus(err, http.StatusNotFound) {
				return fmt.Errorf("database %s, created through the first gateway, is not found here: do the gateways share one store? %w", databaseID, err)
			}
			return fmt.Errorf("read database %s: %w", databaseID, err)
		}
	}
	return nil
}

// containers returns a client of the named container for each of t's
// gateways, t's first: the container is deleted and recreated through t
// (see container), the others' clients just address it.
func (t *target) containers(ctx context.Context, name string, defaultTTL *int32, policy *azcosmos.IndexingPolicy) ([]*azcosmos.ContainerClient, error) {
	cc, err := t.container(ctx, name, defaultTTL, policy)
	if err != nil {
		return nil, err
	}
	ccs := []*azcosmos.ContainerClient{cc}
	for _, p := range t.peers {
		pc, err := p.db.NewContainer(name)
		if err != nil {
			return nil, err
		}
		ccs = append(ccs, pc)
	}
	return ccs, nil
}

// container returns the named container, deleting and recreating it the
// first time, so that every run starts from an empty container. defaultTTL
// is its defaultTtl; nil leaves time to live off. policy is its indexing
// policy; nil is the default.
func (t *target) container(ctx context.Context, name string, defaultTTL *int32, policy *azcosmos.IndexingPolicy) (*azcosmos.ContainerClient, error) {
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
	props := azcosmos.ContainerProperties{ID: name, PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}, DefaultTimeToLive: defaultTTL, IndexingPolicy: policy}
	if _, err := t.db.CreateContainer(ctx, props, nil); err != nil {
		return nil, fmt.Errorf("create container %s: %w", name, err)
	}
	t.ready[name] = cc
	return cc, nil
}

// Quiescing: before each workload, wait (up to quiesceMax) until the local
// servers (the run's, every gateway of each, and the one about to be
// measured if it is an extra one) are idle, each process using less than
// quiesceCPU of a core over
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
	var procs []*target
	for _, t := range ts {
		procs = append(procs, t.all()...)
	}
	for _, p := range procs {
		for ctx.Err() == nil && time.Since(start) < quiesceMax {
			s0, ok := p.procSample()
			if !ok {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(quiesceWindow):
			}
			s1, ok := p.procSample()
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

// procSample reads the target's own process (not its peers'), if it is
// known.
func (t *target) procSample() (ProcSample, bool) {
	if t.info.PID <= 0 {
		return ProcSample{}, false
	}
	s, err := ReadProc(t.info.PID)
	return s, err == nil
}

// samples reads the process of each of t's gateways, t's first; it reports
// false unless every one could be read (t may be nil).
func (t *target) samples() ([]ProcSample, bool) {
	if t == nil {
		return nil, false
	}
	var ss []ProcSample
	for _, g := range t.all() {
		s, ok := g.procSample()
		if !ok {
			return nil, false
		}
		ss = append(ss, s)
	}
	return ss, true
}

// sample reads t's processes, if they are known (t may be nil): with several
// gateways, the sum of their RSS, of their peak RSS and of their CPU time.
func (t *target) sample() (ProcSample, bool) {
	ss, ok := t.samples()
	return sumSamples(ss), ok
}

func sumSamples(ss []ProcSample) ProcSample {
	var sum ProcSample
	for _, s := range ss {
		sum.RSS += s.RSS
		sum.HWM += s.HWM
		sum.Anon += s.Anon
		sum.Files += s.Files
		sum.CPU += s.CPU
	}
	return sum
}

// runWorkload runs wl against the server and then the ceiling, or against
// both in turns (measureInterleaved) when Options.Slices says so and wl
// writes nothing.
func (r *runner) runWorkload(ctx context.Context, wl workload) *Result {
	res := &Result{Workload: wl.name}
	var m, c *Measurement
	var err error
	if r.ceiling != nil && r.opts.Slices > 1 && !wl.write {
		m, c, err = r.measureInterleaved(ctx, wl, r.opts.Slices)
	} else {
		m, c, err = r.measureOneAfterOther(ctx, wl)
	}
	if err != nil {
		res.Error = err.Error()
	}
	if m == nil {
		return res
	}
	res.Measurement, res.Ceiling = *m, c
	if wl.write && r.rep.Fsync != nil {
		res.FsyncBound = newFsyncBound(r.rep.Fsync, r.opts.Concurrency, m.OpsPerSec)
	}
	if c != nil && c.OpsPerSec > 0 && m.Ops > 0 {
		res.Ratio = &Ratio{OpsPerSec: m.OpsPerSec / c.OpsPerSec}
		if m.Server != nil && c.Server != nil && c.Server.CPUPerOp > 0 {
			res.Ratio.ServerCPUPerOp = m.Server.CPUPerOp / c.Server.CPUPerOp
		}
	}
	return res
}

// measureOneAfterOther measures wl on the server in one piece, then, when
// the run has one and was not interrupted, on the ceiling.
func (r *runner) measureOneAfterOther(ctx context.Context, wl workload) (server, ceiling *Measurement, err error) {
	if server, err = r.measure(ctx, r.server, wl, nil); err != nil || r.ceiling == nil || ctx.Err() != nil {
		return server, nil, err
	}
	if ceiling, err = r.measure(ctx, r.ceiling, wl, nil); err != nil {
		err = fmt.Errorf("ceiling: %w", err)
	}
	return server, ceiling, err
}

// measure prepares wl's container on t (populating it if needed, through
// t's first gateway), warms up, and measures, with the workers spread over
// t's gateways. watch, if not nil, watches the measured phase
// (phase.watch).
func (r *runner) measure(ctx context.Context, t *target, wl workload, watch func(ops func() int64, done <-chan struct{})) (*Measurement, error) {
	ops, err := r.prepare(ctx, t, wl)
	if err != nil {
		return nil, err
	}
	r.quiesce(ctx, t)
	r.warmup(ctx, t, wl, ops)
	if ctx.Err() != nil {
		return nil, errors.New("interrupted before it was measured")
	}
	ph := r.phase(wl.name+" on "+t.label, t, r.opts.Duration, r.opts.Ops)
	ph.watch = watch
	var acc sliceSum
	acc.add(r.slice(ctx, t, ops, ph))
	return acc.measurement(t), nil
}

// measureInterleaved measures wl on the server and on the ceiling in turns:
// n slices each, of Duration/n (or Ops/n operations), alternating which of
// the two goes first, so that the machine's drift during the run (other
// virtual machines on the same host, which no process here can see) falls
// on both alike. Each target's figures are the sum of its slices. Only
// workloads that write nothing are measured so: a write leaves work behind
// (flushes, compactions) that would run during the other target's slice.
func (r *runner) measureInterleaved(ctx context.Context, wl workload, n int) (server, ceiling *Measurement, err error) {
	targets := [2]*target{r.server, r.ceiling}
	var ops [2][]opFunc
	for i, t := range targets {
		if ops[i], err = r.prepare(ctx, t, wl); err != nil {
			if i == 1 {
				err = fmt.Errorf("ceiling: %w", err)
			}
			return nil, nil, err
		}
	}
	r.quiesce(ctx, nil)
	for i, t := range targets {
		r.warmup(ctx, t, wl, ops[i])
	}
	if ctx.Err() != nil {
		return nil, nil, errors.New("interrupted before it was measured")
	}
	d, count := r.opts.Duration/time.Duration(n), int64(0)
	if r.opts.Ops > 0 {
		count = max(r.opts.Ops/int64(n), 1)
	}
	var acc [2]sliceSum
	for k := 0; k < n && ctx.Err() == nil; k++ {
		for j := 0; j < 2 && ctx.Err() == nil; j++ {
			i := (j + k) % 2
			label := fmt.Sprintf("%s on %s, slice %d of %d", wl.name, targets[i].label, k+1, n)
			acc[i].add(r.slice(ctx, targets[i], ops[i], r.phase(label, targets[i], d, count)))
		}
	}
	server = acc[0].measurement(targets[0])
	if acc[1].n > 0 { // none when interrupted during the server's first slice
		ceiling = acc[1].measurement(targets[1])
	}
	return server, ceiling, nil
}

// prepare returns wl's operations on t, one per gateway, after preparing its
// container (and populating it, through t's first gateway, if wl needs
// documents that t does not have yet).
func (r *runner) prepare(ctx context.Context, t *target, wl workload) ([]opFunc, error) {
	ccs, err := t.containers(ctx, wl.container, wl.defaultTTL(&r.opts), r.opts.indexingPolicy(wl.container))
	if err != nil {
		return nil, err
	}
	ops := make([]opFunc, len(ccs))
	var first *env
	num := t.numbering(wl.container)
	for i, cc := range ccs {
		e := &env{cc: cc, opts: &r.opts, keys: r.keys, num: num}
		if i == 0 {
			first = e
		}
		ops[i] = wl.newOp(e)
	}
	if wl.populated && !t.populated && !t.canned {
		t.populated = true
		pr := r.runPhase(ctx, []opFunc{populateOp(first)}, r.phase("populate "+strconv.Itoa(r.opts.Docs)+" documents on "+t.info.Name, t, 0, int64(r.opts.Docs)))
		r.rep.Populate = &Populate{
			Docs: pr.ops, Seconds: pr.elapsed.Seconds(), DocsPerSec: float64(pr.ops) / pr.elapsed.Seconds(),
			Errors: pr.errCount, ByStatus: pr.errs,
		}
		if pr.errCount > 0 {
			r.problem("populate: %d of %d documents failed, e.g. %s", pr.errCount, r.opts.Docs, firstValue(pr.errText))
		}
	}
	return ops, nil
}

// warmup runs wl's ops on t for Options.Warmup, uncounted, unless wl
// consumes what an earlier workload made.
func (r *runner) warmup(ctx context.Context, t *target, wl workload, ops []opFunc) {
	if r.opts.Warmup > 0 && !wl.consumes && ctx.Err() == nil {
		r.runPhase(ctx, ops, r.phase(wl.name+" warmup on "+t.label, t, r.opts.Warmup, 0))
	}
}

// sliceResult is one measured phase on a target, with the CPU time that
// the client, the target's processes, the run's other target and the whole
// machine used meanwhile; each ok says whether its figure could be read.
type sliceResult struct {
	pr              *phaseResult
	client          time.Duration
	befores, afters []ProcSample // t's gateways, t's first
	okServer        bool
	other           time.Duration // the run's other target
	okOther         bool
	busy            time.Duration // the machine, from /proc/stat
	okBusy          bool
}

// slice runs phase ph of ops on t and samples the CPU around it.
func (r *runner) slice(ctx context.Context, t *target, ops []opFunc, ph phase) sliceResult {
	other := r.other(t)
	otherBefore, okOther := other.sample()
	befores, okBefore := t.samples()
	busy0, okBusy := machineBusy()
	cpu0 := selfCPU()
	pr := r.runPhase(ctx, ops, ph)
	cpu1 := selfCPU()
	busy1, okBusy1 := machineBusy()
	afters, okAfter := t.samples()
	otherAfter, okOtherAfter := other.sample()
	return sliceResult{
		pr: pr, client: cpu1 - cpu0,
		befores: befores, afters: afters, okServer: okBefore && okAfter && len(befores) == len(afters),
		other: otherAfter.CPU - otherBefore.CPU, okOther: okOther && okOtherAfter,
		busy: busy1 - busy0, okBusy: okBusy && okBusy1,
	}
}

// sliceSum sums the slices of one target's measurement.
type sliceSum struct {
	n          int
	pr         phaseResult // the slices' sum; elapsed is their measured time
	finished   time.Time   // when the last slice ended
	client     time.Duration
	gatewayCPU []time.Duration // each gateway's CPU time, t's first
	last       []ProcSample    // the gateways after the last slice
	okServer   bool
	other      time.Duration
	okOther    bool
	busy       time.Duration
	okBusy     bool
}

func (a *sliceSum) add(s sliceResult) {
	p := s.pr
	if a.n == 0 {
		a.pr = phaseResult{started: p.started, errs: map[string]int64{}, errText: map[string]string{}, byOp: make([]opTotals, len(p.byOp))}
		a.okServer, a.okOther, a.okBusy = true, true, true
		a.gatewayCPU = make([]time.Duration, len(s.befores))
	}
	a.n++
	a.finished = p.started.Add(p.elapsed)
	a.pr.elapsed += p.elapsed
	a.pr.hist.Merge(&p.hist)
	a.pr.ops += p.ops
	a.pr.rows += p.rows
	a.pr.ru += p.ru
	a.pr.errCount += p.errCount
	for k, n := range p.errs {
		if a.pr.errs[k] == 0 {
			a.pr.errText[k] = p.errText[k]
		}
		a.pr.errs[k] += n
	}
	a.pr.peakRSS = max(a.pr.peakRSS, p.peakRSS)
	a.pr.interrupted = a.pr.interrupted || p.interrupted
	a.pr.drained = a.pr.drained || p.drained
	for i, by := range p.byOp {
		if i < len(a.pr.byOp) {
			a.pr.byOp[i].workers = by.workers
			a.pr.byOp[i].ops += by.ops
			a.pr.byOp[i].errs += by.errs
		}
	}
	a.client += s.client
	a.okServer = a.okServer && s.okServer && len(s.befores) == len(a.gatewayCPU)
	if a.okServer {
		for i := range a.gatewayCPU {
			a.gatewayCPU[i] += s.afters[i].CPU - s.befores[i].CPU
		}
		a.last = s.afters
	}
	a.other += s.other
	a.okOther = a.okOther && s.okOther
	a.busy += s.busy
	a.okBusy = a.okBusy && s.okBusy
}

// measurement returns the sum of the slices as t's measurement.
func (a *sliceSum) measurement(t *target) *Measurement {
	pr := &a.pr
	m := &Measurement{
		Target: t.label, Started: pr.started, Finished: a.finished, Seconds: pr.elapsed.Seconds(),
		Ops: pr.ops, RU: pr.ru, Errors: pr.errCount, Interrupted: pr.interrupted, Drained: pr.drained,
		Latency: Latency{
			P50: micros(pr.hist.Percentile(0.50)), P99: micros(pr.hist.Percentile(0.99)), P999: micros(pr.hist.Percentile(0.999)),
			Mean: micros(pr.hist.Mean()), Max: micros(pr.hist.Max()),
		},
	}
	if a.n > 1 {
		m.Slices = a.n
	}
	if pr.errCount > 0 {
		m.ByStatus, m.ErrorSample = pr.errs, pr.errText
	}
	if secs := pr.elapsed.Seconds(); secs > 0 {
		m.OpsPerSec, m.RUPerSec = float64(pr.ops)/secs, pr.ru/secs
	}
	if pr.ops > 0 {
		m.RowsPerOp = float64(pr.rows) / float64(pr.ops)
		m.ClientCPUPerOp = micros(a.client) / float64(pr.ops)
	}
	var cpu time.Duration
	for _, c := range a.gatewayCPU {
		cpu += c
	}
	if a.okOther {
		m.IdleServerCPU = a.other.Seconds()
	}
	if a.okBusy {
		ours := a.client.Seconds() + m.IdleServerCPU
		if a.okServer {
			ours += cpu.Seconds()
		}
		m.OtherCPU = max(a.busy.Seconds()-ours, 0)
		if secs := pr.elapsed.Seconds(); secs > 0 {
			m.MachineBusy = a.busy.Seconds() / (secs * float64(runtime.NumCPU()))
		}
	}
	if a.okServer {
		after := sumSamples(a.last)
		m.Server = &ServerStats{
			PID: t.info.PID, RSSBytes: after.RSS, RSSPeakBytes: max(pr.peakRSS, after.RSS), HWMBytes: after.HWM,
			CPUSeconds: cpu.Seconds(),
		}
		if pr.ops > 0 {
			m.Server.CPUPerOp = micros(cpu) / float64(pr.ops)
		}
	}
	if len(t.peers) > 0 {
		m.Gateways = gatewayStats(t, pr, a)
		if m.Server != nil {
			for _, g := range t.all() {
				m.Server.PIDs = append(m.Server.PIDs, g.info.PID)
			}
		}
	}
	return m
}

// gatewayStats returns each of t's gateways' share of a measurement, with
// its process's figures when every slice could read them.
func gatewayStats(t *target, pr *phaseResult, a *sliceSum) []GatewayStats {
	var gs []GatewayStats
	for i, g := range t.all() {
		s := GatewayStats{Name: g.info.Name, Endpoint: g.info.Endpoint, PID: g.info.PID}
		if i < len(pr.byOp) {
			by := pr.byOp[i]
			s.Workers, s.Ops, s.Errors = by.workers, by.ops, by.errs
			if secs := pr.elapsed.Seconds(); secs > 0 {
				s.OpsPerSec = float64(by.ops) / secs
			}
		}
		if a.okServer && i < len(a.gatewayCPU) && i < len(a.last) {
			cpu := a.gatewayCPU[i]
			s.RSSBytes, s.CPUSeconds = a.last[i].RSS, cpu.Seconds()
			if s.Ops > 0 {
				s.CPUPerOp = micros(cpu) / float64(s.Ops)
			}
		}
		gs = append(gs, s)
	}
	return gs
}

func (r *runner) phase(label string, t *target, d time.Duration, ops int64) phase {
	r.seed++
	return phase{label: label, duration: d, ops: ops, server: t, seed: r.seed}
}

func paramsOf(o *Options) Params {
	p := Params{
		Endpoint: o.Endpoint, Spawn: o.Spawn, Gateways: o.gatewayCount(), ServeArgs: redactArgs(o.ServeArgs), Workloads: o.Workloads, Docs: o.Docs, DocSize: o.DocSize,
		Concurrency: o.Concurrency, Ops: o.Ops, Keys: o.Keys, Partitions: o.Partitions, WarmupSec: o.Warmup.Seconds(),
		TTLSec: o.TTL.Seconds(), ContainerTTL: o.ContainerTTL, Retries: o.Retries, Ceiling: o.Ceiling, FsyncProbeDir: o.FsyncProbe,
		TimelineIntervalSec: o.TimelineInterval.Seconds(), DataDirSize: o.DataDirSize,
	}
	if o.Ops <= 0 {
		p.DurationSec = o.Duration.Seconds()
	}
	if o.Ceiling {
		p.Slices = o.Slices
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

// redactArgs returns args with the password of any URL in them (a --store
// postgres://user:password@host/db) replaced, for the report.
func redactArgs(args []string) []string {
	if args == nil {
		return nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = redactArg(a)
	}
	return out
}

func redactArg(a string) string {
	prefix, rest := "", a
	if name, val, ok := flagOf(a); name != "" && ok {
		prefix, rest = a[:len(a)-len(val)], val
	}
	if !strings.Contains(rest, "://") {
		return a
	}
	u, err := url.Parse(rest)
	if err != nil || u.User == nil {
		return a
	}
	if _, ok := u.User.Password(); !ok {
		return a
	}
	return prefix + u.Redacted()
}
