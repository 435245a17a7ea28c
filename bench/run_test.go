package bench

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunAgainstCeiling runs every workload in process, with the ceiling as
// the server under test: it checks the runner (populate, workloads, counts,
// the report) without a lethe binary.
func TestRunAgainstCeiling(t *testing.T) {
	url := startCeiling(t, nil)
	rep, err := Run(context.Background(), &Options{
		Endpoint: url, Workloads: Workloads, Docs: 50, Ops: 40, Concurrency: 3, Warmup: -1, Keys: "zipf",
		FsyncProbe: t.TempDir(), FsyncCount: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Workloads) != len(Workloads) || rep.Interrupted || len(rep.Problems) > 0 {
		t.Fatalf("%d workloads, interrupted %v, problems %q", len(rep.Workloads), rep.Interrupted, rep.Problems)
	}
	if rep.Populate == nil || rep.Populate.Docs != 50 || rep.Populate.Errors != 0 {
		t.Errorf("populate %+v, want 50 documents", rep.Populate)
	}
	for _, w := range rep.Workloads {
		if w.Error != "" || w.Ops != 40 || w.Errors != 0 || w.OpsPerSec <= 0 || w.RUPerSec <= 0 {
			t.Errorf("%s: error %q, %d ops, %d errors %v, %.0f ops/s, %.0f RU/s", w.Workload, w.Error, w.Ops, w.Errors, w.ErrorSample, w.OpsPerSec, w.RUPerSec)
		}
		if w.Latency.P50 <= 0 || w.Latency.P50 > w.Latency.P99 || w.Latency.P99 > w.Latency.P999 || w.Latency.P999 > w.Latency.Max {
			t.Errorf("%s: latency %+v out of order", w.Workload, w.Latency)
		}
		if q := strings.HasPrefix(w.Workload, "query-"); q != (w.RowsPerOp == 10) {
			t.Errorf("%s: %.1f rows per operation", w.Workload, w.RowsPerOp)
		}
		if write := workloads[w.Workload].write; write != (w.FsyncBound != nil) {
			t.Errorf("%s: fsync bound %+v", w.Workload, w.FsyncBound)
		}
		if w.Server != nil || w.Ceiling != nil {
			t.Errorf("%s: server stats or ceiling figures without a pid or --ceiling", w.Workload)
		}
		if (w.Sustained != nil) != workloads[w.Workload].sustained {
			t.Errorf("%s: sustained %+v", w.Workload, w.Sustained)
		}
	}
	// ttl-sustained against an endpoint runs once, and its timeline says
	// the ceiling has no metrics rather than failing.
	s := rep.Workloads[slices.Index(Workloads, "ttl-sustained")].Sustained
	if s == nil || len(s.Runs) != 1 {
		t.Fatalf("ttl-sustained: %+v, want one run", s)
	}
	run := s.Runs[0]
	if run.Purge != "" || run.Measurement == nil || run.Measurement.Ops != 40 || len(run.Timeline) == 0 || run.ScrapeError == "" || s.OpsRatio != 0 {
		t.Errorf("ttl-sustained run: purge %q, measurement %+v, %d samples, scrape error %q, ratio %v", run.Purge, run.Measurement, len(run.Timeline), run.ScrapeError, s.OpsRatio)
	}
	for _, x := range run.Timeline {
		if x.TTL != nil || x.DataDirBytes != nil || x.ServerCPUSec != nil {
			t.Errorf("sample %+v: figures from nowhere", x)
		}
	}
}

// TestPhaseStopsWhenDrained: a phase whose operations run out of work
// (errNoneLeft) ends once every worker has met the end, though its duration
// is an hour, and counts what was done, with no error for the end.
func TestPhaseStopsWhenDrained(t *testing.T) {
	r := &runner{opts: Options{Concurrency: 3, Progress: io.Discard}}
	var left atomic.Int64
	left.Store(50)
	op := func(ctx context.Context, w *worker) (float64, error) {
		if left.Add(-1) < 0 {
			return 0, errNoneLeft
		}
		return 1, nil
	}
	res := r.runPhase(context.Background(), []opFunc{op}, phase{label: "drain", duration: time.Hour})
	if !res.drained || res.ops != 50 || res.errCount != 0 || res.ru != 50 {
		t.Errorf("drained %v, %d ops, %d errors, %v RU: want drained after 50 ops and no error", res.drained, res.ops, res.errCount, res.ru)
	}
	// The delete workload ends when it has claimed every document created.
	del := deleteOp(&env{opts: &Options{Partitions: 100}, num: &numbering{}})
	if _, err := del(context.Background(), &worker{}); !errors.Is(err, errNoneLeft) {
		t.Errorf("delete with nothing created: %v, want errNoneLeft", err)
	}
}

// TestRunInterrupted cancels a run midway, once the read workload has been
// served a few reads: Run returns with what it measured, marked
// interrupted. The workload's duration is an hour, so a Run that ignored the
// interrupt would hit the test binary's timeout.
func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ceiling := NewCeiling(nil)
	var reads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/docs/") && reads.Add(1) == 20 {
			cancel()
		}
		ceiling.ServeHTTP(w, r)
	}))
	defer srv.Close()
	rep, err := Run(ctx, &Options{Endpoint: srv.URL + "/", Workloads: []string{"read", "create"}, Docs: 10, Duration: time.Hour, Concurrency: 2, Warmup: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || len(rep.Workloads) != 1 {
		t.Fatalf("interrupted %v, %d workloads: want the first, interrupted", rep.Interrupted, len(rep.Workloads))
	}
	// Two workers: when the 20th read reached the server, each worker's
	// earlier reads had completed, at least 18 of them.
	if w := rep.Workloads[0]; !w.Interrupted || w.Ops < 18 || w.Errors != 0 {
		t.Errorf("read: interrupted %v, %d ops, %d errors %v; want interrupted, at least 18 ops, no errors", w.Interrupted, w.Ops, w.Errors, w.ErrorSample)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{Workloads: []string{"read", "nope", "delete"}, Keys: "pareto", TTL: 1500 * time.Millisecond, ServeArgs: []string{"--in-memory"}}
	o.EnsureDefaults()
	err := o.Validate()
	if err == nil {
		t.Fatal("bad options were accepted")
	}
	for _, want := range []string{`"nope"`, `"pareto"`, "ttl", "serve-args", "list create before it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	var d Options
	d.EnsureDefaults()
	if err := d.Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
}

// TestRunSpreadsOverEndpoints runs against two in-process ceilings standing
// for two gateways over one store: the set-up (database, containers,
// populating) goes to the first only, the workers are spread round-robin
// (with three, two on the first and one on the second), and the report
// names both gateways and each one's share.
func TestRunSpreadsOverEndpoints(t *testing.T) {
	type counts struct{ setup, populate, reads, creates atomic.Int64 }
	var seen [2]counts
	var urls []string
	for i := range seen {
		ceiling := NewCeiling(nil)
		c := &seen[i]
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			path := strings.Trim(r.URL.Path, "/")
			n := strings.Count(path, "/") + 1
			switch {
			case r.Method == http.MethodDelete || (r.Method == http.MethodPost && (n == 1 || n == 3)):
				c.setup.Add(1) // database create, container delete and create
			case r.Method == http.MethodPost && n == 5 && strings.Contains(path, "/colls/data/"):
				c.populate.Add(1)
			case r.Method == http.MethodPost && n == 5:
				c.creates.Add(1)
			case r.Method == http.MethodGet && n == 6:
				c.reads.Add(1)
			}
			ceiling.ServeHTTP(w, r)
		}))
		defer srv.Close()
		urls = append(urls, srv.URL+"/")
	}
	rep, err := Run(context.Background(), &Options{
		Endpoint: strings.Join(urls, ","), Workloads: []string{"create", "read"}, Docs: 30, Ops: 60, Concurrency: 3, Warmup: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Interrupted || len(rep.Problems) > 0 || len(rep.Workloads) != 2 {
		t.Fatalf("interrupted %v, problems %q, %d workloads", rep.Interrupted, rep.Problems, len(rep.Workloads))
	}
	if rep.Params.Gateways != 2 || len(rep.Gateways) != 2 || rep.Gateways[0].Endpoint != urls[0] || rep.Gateways[1].Endpoint != urls[1] || rep.Server != rep.Gateways[0] {
		t.Errorf("params %+v, server %+v, gateways %+v", rep.Params, rep.Server, rep.Gateways)
	}
	if seen[0].setup.Load() == 0 || seen[1].setup.Load() != 0 {
		t.Errorf("set-up requests: %d and %d, want them all on the first", seen[0].setup.Load(), seen[1].setup.Load())
	}
	if seen[0].populate.Load() != 30 || seen[1].populate.Load() != 0 {
		t.Errorf("populating creates: %d and %d, want 30 on the first", seen[0].populate.Load(), seen[1].populate.Load())
	}
	for i := range seen {
		if seen[i].reads.Load() == 0 || seen[i].creates.Load() == 0 {
			t.Errorf("gateway %d served %d reads, %d creates: want some of each", i+1, seen[i].reads.Load(), seen[i].creates.Load())
		}
	}
	for _, w := range rep.Workloads {
		if w.Error != "" || w.Ops != 60 || w.Errors != 0 || w.Target != "server x2" || len(w.Gateways) != 2 {
			t.Fatalf("%s: error %q, %d ops, %d errors, target %q, gateways %+v", w.Workload, w.Error, w.Ops, w.Errors, w.Target, w.Gateways)
		}
		g1, g2 := w.Gateways[0], w.Gateways[1]
		if g1.Workers != 2 || g2.Workers != 1 || g1.Ops+g2.Ops != w.Ops || g1.Ops == 0 || g2.Ops == 0 || g1.Name != "server 1" || g2.Endpoint != urls[1] {
			t.Errorf("%s: gateways %+v and %+v", w.Workload, g1, g2)
		}
	}
	var text strings.Builder
	rep.WriteText(&text)
	for _, want := range []string{"gateways: 2 over one store", "server 1 at " + urls[0], "server 2 at " + urls[1], "3 clients over 2 gateways", "read on server x2: server 1 2 workers"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("no %q in the report:\n%s", want, text.String())
		}
	}
}

func TestRedactArgs(t *testing.T) {
	got := redactArgs([]string{"--store=postgres://u:secret@h/db", "--store", "postgres://u:secret@h/db", "postgres://u@h/db", "--in-memory"})
	want := []string{"--store=postgres://u:xxxxx@h/db", "--store", "postgres://u:xxxxx@h/db", "postgres://u@h/db", "--in-memory"}
	if !slices.Equal(got, want) {
		t.Errorf("redactArgs: %q, want %q", got, want)
	}
}

// TestRunContainerTTL checks what each workload's container is created with:
// the ttl workload's -1, the others' Options.ContainerTTL, and no defaultTtl
// at all without it.
func TestRunContainerTTL(t *testing.T) {
	for _, containerTTL := range []*int32{nil, new(int32(3600)), new(int32(-1))} {
		var mu sync.Mutex
		created := map[string]map[string]any{}
		ceiling := NewCeiling(nil)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.HasSuffix(strings.Trim(r.URL.Path, "/"), "/colls") {
				var props map[string]any
				if err := json.NewDecoder(r.Body).Decode(&props); err != nil {
					t.Errorf("container create body: %v", err)
				}
				mu.Lock()
				created[props["id"].(string)] = props
				mu.Unlock()
			}
			ceiling.ServeHTTP(w, r)
		}))
		rep, err := Run(context.Background(), &Options{
			Endpoint: srv.URL + "/", Workloads: []string{"create", "read", "ttl"}, Docs: 10, Ops: 10, Concurrency: 2, Warmup: -1, ContainerTTL: containerTTL,
		})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) > 0 || !reflect.DeepEqual(rep.Params.ContainerTTL, containerTTL) {
			t.Errorf("problems %q, params' container ttl %v, want %v", rep.Problems, rep.Params.ContainerTTL, containerTTL)
		}
		want := map[string]any{"create": nil, "data": nil, "ttl": float64(-1)}
		if containerTTL != nil {
			want["create"], want["data"] = float64(*containerTTL), float64(*containerTTL)
		}
		for name, ttl := range want {
			props, ok := created[name]
			if !ok {
				t.Errorf("container %s was not created", name)
				continue
			}
			if got := props["defaultTtl"]; got != ttl {
				t.Errorf("container ttl %v: %s created with defaultTtl %v, want %v", containerTTL, name, got, ttl)
			}
		}
	}
}

// TestSliceSum checks how a target's slices add up to its measurement:
// counts and times summed, latencies merged, errors kept with a sample each,
// the server's CPU summed per gateway and its memory taken after the last.
func TestSliceSum(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	slice := func(start time.Duration, ops int64, lat time.Duration, errClass string, rss int64, cpu [2]time.Duration) sliceResult {
		pr := &phaseResult{
			started: t0.Add(start), elapsed: 2 * time.Second, ops: ops, rows: 10 * ops, ru: float64(ops),
			errs: map[string]int64{}, errText: map[string]string{}, peakRSS: rss + 5,
			byOp: []opTotals{{workers: 2, ops: ops / 2}, {workers: 1, ops: ops - ops/2}},
		}
		for range ops {
			pr.hist.Record(lat)
		}
		if errClass != "" {
			pr.errs[errClass], pr.errText[errClass], pr.errCount = 1, "sample "+errClass, 1
			pr.byOp[0].errs = 1
		}
		return sliceResult{
			pr: pr, client: time.Duration(ops) * 50 * time.Microsecond,
			befores:  []ProcSample{{CPU: time.Second}, {CPU: time.Second}},
			afters:   []ProcSample{{CPU: time.Second + cpu[0], RSS: rss}, {CPU: time.Second + cpu[1], RSS: 2 * rss}},
			okServer: true, other: time.Second, okOther: true, busy: 3 * time.Second, okBusy: true,
		}
	}
	var a sliceSum
	a.add(slice(0, 100, time.Millisecond, "429", 100, [2]time.Duration{time.Second, 2 * time.Second}))
	a.add(slice(4*time.Second, 300, 3*time.Millisecond, "429", 200, [2]time.Duration{time.Second, time.Second}))
	tg := &target{label: "lethe", info: ServerInfo{Name: "lethe", PID: 7}, peers: []*target{{info: ServerInfo{Name: "gw2", PID: 8}}}}
	m := a.measurement(tg)

	if m.Slices != 2 || m.Ops != 400 || m.Seconds != 4 || !m.Started.Equal(t0) || !m.Finished.Equal(t0.Add(6*time.Second)) {
		t.Errorf("slices %d, ops %d, seconds %v, started %v, finished %v: want 2, 400, 4, %v, %v", m.Slices, m.Ops, m.Seconds, m.Started, m.Finished, t0, t0.Add(6*time.Second))
	}
	if m.OpsPerSec != 100 || m.RowsPerOp != 10 || m.RU != 400 || m.Errors != 2 || m.ByStatus["429"] != 2 || m.ErrorSample["429"] != "sample 429" {
		t.Errorf("ops/s %v, rows/op %v, RU %v, errors %d %v %v", m.OpsPerSec, m.RowsPerOp, m.RU, m.Errors, m.ByStatus, m.ErrorSample)
	}
	// A quarter of the operations took 1 ms, the rest 3 ms.
	if m.Latency.P50 < 2900 || m.Latency.P50 > 3100 || m.Latency.Max < 2900 || m.Latency.Mean < 2400 || m.Latency.Mean > 2600 {
		t.Errorf("latency %+v: want p50 and max about 3000 us, mean about 2500", m.Latency)
	}
	if m.ClientCPUPerOp != 50 || m.IdleServerCPU != 2 {
		t.Errorf("client CPU %v us/op, the other server %v s: want 50 and 2", m.ClientCPUPerOp, m.IdleServerCPU)
	}
	s := m.Server
	if s == nil || s.CPUSeconds != 5 || s.CPUPerOp != 12500 || s.RSSBytes != 600 || s.RSSPeakBytes != 600 {
		t.Fatalf("server %+v: want 5 s of CPU, 12500 us/op, RSS 600 after the last slice", s)
	}
	// 6 s busy, of which the client 0.02 s, the other server 2 s and ours 5 s: clamped at zero.
	if m.OtherCPU != 0 || m.MachineBusy != 6.0/(4*float64(runtime.NumCPU())) {
		t.Errorf("other CPU %v, machine busy %v", m.OtherCPU, m.MachineBusy)
	}
	if len(m.Gateways) != 2 || m.Gateways[0].Ops != 200 || m.Gateways[0].Errors != 2 || m.Gateways[0].Workers != 2 ||
		m.Gateways[0].CPUSeconds != 2 || m.Gateways[1].CPUSeconds != 3 || m.Gateways[1].RSSBytes != 400 {
		t.Errorf("gateways %+v", m.Gateways)
	}

	// A slice whose server could not be read leaves the server's figures out.
	bad := slice(8*time.Second, 10, time.Millisecond, "", 1, [2]time.Duration{})
	bad.okServer = false
	a.add(bad)
	if m := a.measurement(tg); m.Server != nil || m.Ops != 410 {
		t.Errorf("after an unreadable slice: server %+v, %d ops", m.Server, m.Ops)
	}

	// One slice is a measurement in one piece: no Slices.
	var one sliceSum
	one.add(slice(0, 10, time.Millisecond, "", 1, [2]time.Duration{}))
	if m := one.measurement(&target{label: "ceiling"}); m.Slices != 0 || m.Ops != 10 {
		t.Errorf("one slice: slices %d, ops %d", m.Slices, m.Ops)
	}
}
