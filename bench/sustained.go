package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The ttl-sustained workload writes documents with a short ttl as fast as
// Options.Concurrency clients can, for Options.Duration, and samples the
// purge's backlog once a second: does the purge keep up with a load that
// never stops, and what does it cost the load? With Options.Spawn it runs
// twice on fresh servers, first with the purge off and then on, so the
// report compares the two; against an endpoint it runs once.

// scrapeTimeout bounds one GET /metrics of the sampler.
const scrapeTimeout = 5 * time.Second

// SustainedResult is the ttl-sustained workload's runs and their comparison.
type SustainedResult struct {
	Runs []*SustainedRun `json:"runs"`
	// OpsRatio is the purge-on run's foreground ops/s divided by the
	// purge-off run's, when both ran: 0.9 means the purge cost the load 10%.
	// SteadyOpsRatio is the same over the second half of each run, when the
	// purge has had work all along. With several rounds both are the
	// medians of the rounds' ratios, which Rounds lists.
	OpsRatio       float64       `json:"ops_ratio_on_off,omitempty"`
	SteadyOpsRatio float64       `json:"steady_ops_ratio_on_off,omitempty"`
	Rounds         []RoundRatios `json:"rounds,omitempty"`
}

// RoundRatios are one round's on/off ratios.
type RoundRatios struct {
	Round          int     `json:"round"`
	OpsRatio       float64 `json:"ops_ratio_on_off,omitempty"`
	SteadyOpsRatio float64 `json:"steady_ops_ratio_on_off,omitempty"`
}

// SustainedRun is one ttl-sustained run on one server.
type SustainedRun struct {
	// Round numbers the pair of runs this one belongs to, from 1 (0 for an
	// endpoint).
	Round int `json:"round,omitempty"`
	// Purge is "off" or "on" for a spawned server (started with
	// --disable-purger or without), "" for an endpoint, whose configuration
	// the benchmark does not know.
	Purge  string     `json:"purge,omitempty"`
	Server ServerInfo `json:"server"`
	// Gateways are the run's gateways, Server first, when there are
	// several: the timeline's figures are all of theirs (mergeTTL).
	Gateways []ServerInfo `json:"gateways,omitempty"`
	// DataDir is the data directory whose size the timeline has, if any.
	DataDir     string           `json:"data_dir,omitempty"`
	Measurement *Measurement     `json:"measurement,omitempty"`
	Summary     SustainedSummary `json:"summary"`
	// Timeline is every sample, the first at the start of the measured phase.
	Timeline []Sample `json:"timeline"`
	// ScrapeErrors counts the samples whose GET /metrics failed, and
	// ScrapeError says why the first did; DirErrors and DirError the same
	// for the data directory's size.
	ScrapeErrors int    `json:"scrape_errors,omitempty"`
	ScrapeError  string `json:"scrape_error,omitempty"`
	DirErrors    int    `json:"dir_errors,omitempty"`
	DirError     string `json:"dir_error,omitempty"`
	// Error is why the run did not happen or was cut short, if it was.
	Error string `json:"error,omitempty"`
}

// compare fills in the comparison of the purge-off and purge-on runs of
// each round, and their medians.
func (s *SustainedResult) compare() {
	s.Rounds = nil
	byRound := map[int][2]*SustainedRun{}
	var rounds []int
	for _, run := range s.Runs {
		pair, seen := byRound[run.Round]
		if !seen {
			rounds = append(rounds, run.Round)
		}
		switch run.Purge {
		case "off":
			pair[0] = run
		case "on":
			pair[1] = run
		}
		byRound[run.Round] = pair
	}
	var whole, steady []float64
	for _, round := range rounds {
		off, on := byRound[round][0], byRound[round][1]
		if off == nil || on == nil || off.Measurement == nil || on.Measurement == nil {
			continue
		}
		rr := RoundRatios{Round: round}
		if off.Measurement.OpsPerSec > 0 {
			rr.OpsRatio = on.Measurement.OpsPerSec / off.Measurement.OpsPerSec
			whole = append(whole, rr.OpsRatio)
		}
		if a, b := off.Summary.SteadyOpsPerSec, on.Summary.SteadyOpsPerSec; a != nil && b != nil && *a > 0 {
			rr.SteadyOpsRatio = *b / *a
			steady = append(steady, rr.SteadyOpsRatio)
		}
		s.Rounds = append(s.Rounds, rr)
	}
	s.OpsRatio, s.SteadyOpsRatio = median(whole), median(steady)
}

// median returns the median of xs, 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// runSustained runs wl (ttl-sustained): with Options.Spawn on two fresh
// servers, purge off then on, one at a time; else once against the run's
// server. The result's own Measurement is its last run's (with Spawn, the
// purge-on run: the server's normal configuration), so that a reader of
// every workload's figures finds them where it looks; the ceiling does not
// run it.
func (r *runner) runSustained(ctx context.Context, wl workload) *Result {
	res := &Result{Workload: wl.name, Sustained: &SustainedResult{}}
	if r.opts.Spawn {
		for round := 1; round <= r.opts.Rounds; round++ {
			order := []bool{false, true}
			if round%2 == 0 {
				order = []bool{true, false}
			}
			for _, purge := range order {
				if ctx.Err() != nil {
					break
				}
				run := r.spawnedSustainedRun(ctx, wl, purge)
				run.Round = round
				res.Sustained.Runs = append(res.Sustained.Runs, run)
			}
		}
	} else {
		run := &SustainedRun{}
		r.sustainedRun(ctx, r.server, wl, run, r.opts.DataDirSize)
		res.Sustained.Runs = append(res.Sustained.Runs, run)
	}
	res.Sustained.compare()
	var errs []string
	for _, run := range res.Sustained.Runs {
		if run.Measurement != nil {
			res.Measurement = *run.Measurement
		}
		if run.Error != "" {
			errs = append(errs, run.Server.Name+": "+run.Error)
		}
	}
	res.Error = strings.Join(errs, "; ")
	if wl.write && r.rep.Fsync != nil && res.Ops > 0 {
		res.FsyncBound = newFsyncBound(r.rep.Fsync, r.opts.Concurrency, res.OpsPerSec)
	}
	return res
}

// spawnedSustainedRun starts a fresh server with the purge off or on (as
// many gateways as Options.Gateways, over the store the ServeArgs name),
// runs wl on it, and stops it (and removes its data directories) before
// returning, so that no two sustained servers ever share the cores.
func (r *runner) spawnedSustainedRun(ctx context.Context, wl workload, purge bool) *SustainedRun {
	run := &SustainedRun{Purge: "off", Server: ServerInfo{Name: "lethe purge off"}}
	if purge {
		run.Purge, run.Server.Name = "on", "lethe purge on"
	}
	n := r.opts.gatewayCount()
	var t *target
	defer func() {
		if t == nil {
			return
		}
		for _, g := range t.all() {
			g.tr.CloseIdleConnections()
			if err := g.child.stop(stopTimeout); err != nil {
				if run.Error != "" {
					run.Error += "; "
				}
				run.Error += "stop " + g.info.Name + ": " + err.Error()
			}
		}
	}()
	var dir string // the first gateway's, whose size the timeline has
	for i := range n {
		var gwDir string
		if !inMemoryArgs(r.opts.ServeArgs) {
			var err error
			if gwDir, err = os.MkdirTemp("", "lethe-bench-sustained"); err != nil {
				run.Error = err.Error()
				return run
			}
		}
		name := run.Server.Name
		if n > 1 {
			name += " " + strconv.Itoa(i+1)
		}
		g, err := r.spawn(name, sustainedServeArgs(r.opts.ServeArgs, gwDir, purge), gwDir)
		if err != nil {
			run.Error = err.Error()
			return run
		}
		if t == nil {
			t, dir = g, gwDir
		} else {
			t.peers = append(t.peers, g)
		}
	}
	if n > 1 {
		t.label = run.Server.Name + " x" + strconv.Itoa(n)
	}
	if err := t.init(ctx, r.opts); err != nil {
		run.Server = t.info
		run.Error = err.Error()
		return run
	}
	r.sustainedRun(ctx, t, wl, run, dir)
	return run
}

// sustainedRun measures wl on t with the sampler watching, into run.
// dataDir is the server's data directory to measure, or "".
func (r *runner) sustainedRun(ctx context.Context, t *target, wl workload, run *SustainedRun, dataDir string) {
	run.Server, run.DataDir = t.info, dataDir
	if len(t.peers) > 0 {
		for _, g := range t.all() {
			run.Gateways = append(run.Gateways, g.info)
		}
	}
	s := &sampler{ctx: ctx, dataDir: dataDir, progress: r.opts.Progress, label: wl.name + " on " + t.label}
	for _, g := range t.all() {
		sc, err := newMetricsScraper(g.info.Endpoint, g.tr, scrapeTimeout)
		if err != nil {
			s.scrapers, s.scrapeErr = nil, err
			break
		}
		s.scrapers = append(s.scrapers, sc)
		if g.info.PID > 0 {
			s.pids = append(s.pids, g.info.PID)
		}
	}
	m, err := r.measure(ctx, t, wl, s.watch)
	if err != nil {
		run.Error = err.Error()
		return
	}
	run.Measurement = m
	run.Timeline = s.samples
	run.Summary = summarize(s.samples)
	run.ScrapeErrors, run.DirErrors = s.scrapeErrors, s.dirErrors
	if s.scrapeErr != nil {
		run.ScrapeError = s.scrapeErr.Error()
	}
	if s.dirErr != nil {
		run.DirError = s.dirErr.Error()
	}
}

// sampler takes a sustained run's samples (see Sample). Its watch method is
// the measured phase's watcher: only that goroutine touches the sampler
// until the phase has ended. With several gateways a sample is all of
// theirs together: their processes' CPU and memory summed, their metrics
// merged (mergeTTL).
type sampler struct {
	ctx      context.Context
	scrapers []*metricsScraper // one per gateway; none: no metrics
	pids     []int             // processes to read from /proc, if known
	dataDir  string            // data directory to measure, or ""
	progress io.Writer
	label    string

	samples      []Sample
	lastOps      int64
	scrapeErrors int
	scrapeErr    error // the first (or why there is no scraper)
	dirErrors    int
	dirErr       error // the first
}

// watch samples at once, then once a second, and once more when done is
// closed, so that the timeline counts every operation of the phase.
func (s *sampler) watch(ops func() int64, done <-chan struct{}) {
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	s.take(start, ops)
	for {
		select {
		case <-done:
			s.take(start, ops)
			s.mergeShortLast(250 * time.Millisecond)
			return
		case <-tick.C:
			s.take(start, ops)
			s.report()
		}
	}
}

// take records one sample: the operation count and the server's CPU first,
// at the same moment, then the data directory and the metrics, which take
// longer.
func (s *sampler) take(start time.Time, ops func() int64) {
	x := Sample{T: time.Since(start).Seconds()}
	n := ops()
	x.Ops, s.lastOps = n-s.lastOps, n
	var prev *Sample
	if k := len(s.samples); k > 0 {
		prev = &s.samples[k-1]
	}
	dt := 0.0
	if prev != nil {
		dt = x.T - prev.T
	}
	if dt > 0 {
		x.OpsPerSec = float64(x.Ops) / dt
	}
	if cpu, rss, ok := readProcs(s.pids); ok {
		x.ServerCPUSec, x.ServerRSSBytes = ptr(cpu), ptr(rss)
		if prev != nil && prev.ServerCPUSec != nil && dt > 0 {
			x.ServerCores = ptr((*x.ServerCPUSec - *prev.ServerCPUSec) / dt)
		}
	}
	if s.dataDir != "" {
		if disk, files, err := dirSize(s.dataDir); err == nil {
			x.DataDirBytes, x.DataDirFileBytes = &disk, &files
		} else {
			s.dirErrors++
			if s.dirErr == nil {
				s.dirErr = err
			}
		}
	}
	if len(s.scrapers) > 0 {
		var ms []*TTLMetrics
		var failed error
		for _, sc := range s.scrapers {
			m, err := sc.scrape(s.ctx)
			if err != nil {
				failed = err
				break
			}
			ms = append(ms, m)
		}
		switch {
		case failed == nil:
			x.TTL = mergeTTL(ms)
		case s.ctx.Err() == nil:
			s.scrapeErrors++
			if s.scrapeErr == nil {
				s.scrapeErr = failed
			}
		}
	}
	s.samples = append(s.samples, x)
}

// readProcs returns the CPU time, seconds, and the resident memory of the
// processes together; ok is false when there are none or one cannot be read.
func readProcs(pids []int) (cpu float64, rss int64, ok bool) {
	for _, pid := range pids {
		p, err := ReadProc(pid)
		if err != nil {
			return 0, 0, false
		}
		cpu, rss = cpu+p.CPU.Seconds(), rss+p.RSS
	}
	return cpu, rss, len(pids) > 0
}

// mergeTTL combines the metrics of gateways over one store, scraped one
// after another. The backlog is the store's, which each of them measures:
// the largest of their figures (the latest scraped may have seen more
// expire). What the purge did is each gateway's own (one purges a
// container at a time, under its lease): summed, and its share the largest.
func mergeTTL(ms []*TTLMetrics) *TTLMetrics {
	if len(ms) == 1 {
		return ms[0]
	}
	out := &TTLMetrics{}
	for _, m := range ms {
		out.PendingDocs = max(out.PendingDocs, m.PendingDocs)
		out.PendingBytes = max(out.PendingBytes, m.PendingBytes)
		out.OldestPendingAgeSec = max(out.OldestPendingAgeSec, m.OldestPendingAgeSec)
		out.PurgedTotal += m.PurgedTotal
		out.DeferredTotal += m.DeferredTotal
		out.PurgeShare = mergeOptional(out.PurgeShare, m.PurgeShare, func(a, b float64) float64 { return max(a, b) })
		out.PurgeBusySecTotal = mergeOptional(out.PurgeBusySecTotal, m.PurgeBusySecTotal, add)
		out.WriteStallSecTotal = mergeOptional(out.WriteStallSecTotal, m.WriteStallSecTotal, add)
	}
	return out
}

func add(a, b float64) float64 { return a + b }

// mergeOptional combines two figures a server may not export: either alone
// if the other is absent, else both by f.
func mergeOptional(a, b *float64, f func(x, y float64) float64) *float64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return ptr(f(*a, *b))
}

// mergeShortLast folds the last sample into the one before when they are
// less than d apart (the phase ended just after a tick), so that no sample's
// rates rest on a sliver of time: the merged sample has the last one's
// levels and both ones' operations.
func (s *sampler) mergeShortLast(d time.Duration) {
	n := len(s.samples)
	if n < 3 || s.samples[n-1].T-s.samples[n-2].T >= d.Seconds() {
		return
	}
	last, base := s.samples[n-1], s.samples[n-3]
	last.Ops += s.samples[n-2].Ops
	last.OpsPerSec, last.ServerCores = 0, nil
	if dt := last.T - base.T; dt > 0 {
		last.OpsPerSec = float64(last.Ops) / dt
		if last.ServerCPUSec != nil && base.ServerCPUSec != nil {
			last.ServerCores = ptr((*last.ServerCPUSec - *base.ServerCPUSec) / dt)
		}
	}
	s.samples = append(s.samples[:n-2], last)
}

// report prints the last sample's backlog on the progress writer.
func (s *sampler) report() {
	x := s.samples[len(s.samples)-1]
	line := fmt.Sprintf("bench: %s: %3.0fs", s.label, x.T)
	if m := x.TTL; m != nil {
		line += fmt.Sprintf(" pending %.0f docs, oldest %.0fs, purged %.0f", m.PendingDocs, m.OldestPendingAgeSec, m.PurgedTotal)
	} else {
		line += " no metrics"
	}
	if x.DataDirBytes != nil {
		line += fmt.Sprintf(", data dir %.1f MB (files %.1f MB)", mb(*x.DataDirBytes), mb(*x.DataDirFileBytes))
	}
	if x.ServerCores != nil {
		line += fmt.Sprintf(", server %.2f cores", *x.ServerCores)
	}
	fmt.Fprintln(s.progress, line)
}

// inMemoryArgs reports whether a server started with these extra arguments
// (and this process's environment) keeps its data in memory: the last
// --in-memory flag decides, else LETHE_IN_MEMORY, as `lethe serve` reads
// them.
func inMemoryArgs(extra []string) bool {
	switch strings.ToLower(os.Getenv("LETHE_IN_MEMORY")) {
	case "1", "true", "yes", "on":
		return inMemoryFlag(extra, true)
	}
	return inMemoryFlag(extra, false)
}

func inMemoryFlag(extra []string, def bool) bool {
	on := def
	for _, a := range extra {
		name, val, hasVal := flagOf(a)
		if name != "in-memory" {
			continue
		}
		on = true
		if hasVal {
			on, _ = strconv.ParseBool(val)
		}
	}
	return on
}

// sustainedServeArgs returns the `lethe serve` command line of a
// ttl-sustained server: the extra arguments less any data directory or
// purge setting; dataDir, unless it is "" (in memory); and the purge off or
// on, last, so that it overrides LETHE_DISABLE_PURGER.
func sustainedServeArgs(extra []string, dataDir string, purge bool) []string {
	args := []string{"serve", "--addr", "127.0.0.1:0", "--log-level", "warn"}
	if dataDir != "" {
		args = append(args, "--data-dir", dataDir)
	}
	for i := 0; i < len(extra); i++ {
		name, _, hasVal := flagOf(extra[i])
		switch name {
		case "data-dir":
			if !hasVal {
				i++ // its value is the next argument
			}
			continue
		case "disable-purger":
			continue
		}
		args = append(args, extra[i])
	}
	return append(args, "--disable-purger="+strconv.FormatBool(!purge))
}

// flagOf splits a command-line flag, -name, --name or --name=value, into
// its name and value; name is "" for an argument that is not a flag.
func flagOf(a string) (name, val string, hasVal bool) {
	if !strings.HasPrefix(a, "-") {
		return "", "", false
	}
	name, val, hasVal = strings.Cut(strings.TrimLeft(a, "-"), "=")
	return name, val, hasVal
}
