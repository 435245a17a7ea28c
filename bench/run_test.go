package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunAgainstCeiling runs every workload in process, with the ceiling as
// the server under test: it checks the runner (populate, workloads, counts,
// the report) without a lethe binary.
func TestRunAgainstCeiling(t *testing.T) {
	url := startCeiling(t)
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
		if q := w.Workload == "query-pk" || w.Workload == "query-cross"; q != (w.RowsPerOp == 10) {
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
	o := Options{Workloads: []string{"read", "nope"}, Keys: "pareto", TTL: 1500 * time.Millisecond, ServeArgs: []string{"--in-memory"}}
	o.EnsureDefaults()
	err := o.Validate()
	if err == nil {
		t.Fatal("bad options were accepted")
	}
	for _, want := range []string{`"nope"`, `"pareto"`, "ttl", "serve-args"} {
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
