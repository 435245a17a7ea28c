package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSpreadMedian(t *testing.T) {
	for _, tc := range []struct {
		runs []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{0.9, 0.7, 0.8}, 0.8},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		s := Spread{Runs: slices.Clone(tc.runs)}
		s.settle()
		if s.Median != tc.want || !slices.Equal(s.Runs, tc.runs) {
			t.Errorf("runs %v: median %v, runs %v; want %v and the runs in their order", tc.runs, s.Median, s.Runs, tc.want)
		}
	}
}

// TestSummarizeKeepsCompleteWorkloads builds the runs by hand: a workload
// that one run did not measure, or measured with an error, gets no row, an
// interrupted run counts in no median, and each row's figures are the runs'
// in run order.
func TestSummarizeKeepsCompleteWorkloads(t *testing.T) {
	result := func(name string, ops, ratio, cpu, ceilingCPU float64, rss int64) *Result {
		return &Result{Workload: name,
			Measurement: Measurement{Ops: 100, OpsPerSec: ops, Server: &ServerStats{CPUPerOp: cpu, RSSBytes: rss}},
			Ceiling:     &Measurement{Ops: 100, Server: &ServerStats{CPUPerOp: ceilingCPU}},
			Ratio:       &Ratio{OpsPerSec: ratio}}
	}
	failed := result("read", 1, 1, 1, 1, 1)
	failed.Error = "set-up failed"
	rep := &Repeated{Runs: []*Report{
		{Workloads: []*Result{result("create", 900, 0.6, 80, 30, 200e6), result("read", 1000, 0.9, 40, 30, 210e6), result("query-pk", 300, 0.7, 150, 60, 220e6)}},
		{Workloads: []*Result{result("create", 1100, 0.8, 70, 32, 190e6), failed, result("query-pk", 320, 0.75, 140, 58, 230e6)}},
		{Workloads: []*Result{result("create", 1000, 0.7, 90, 31, 210e6), result("read", 1000, 0.9, 40, 30, 210e6)}},
	}}
	interrupted := &Report{Interrupted: true, Workloads: []*Result{result("create", 1, 0.01, 1, 1, 1)}}
	rep.Runs = append(rep.Runs, interrupted)
	rep.summarize()
	if len(rep.Medians) != 1 {
		t.Fatalf("rows %+v, want create's alone", rep.Medians)
	}
	m := rep.Medians[0]
	if m.Workload != "create" || m.Ratio.Median != 0.7 || !slices.Equal(m.Ratio.Runs, []float64{0.6, 0.8, 0.7}) ||
		m.OpsPerSec.Median != 1000 || m.ServerCPUPerOp.Median != 80 || m.CeilingCPUPerOp.Median != 31 || m.RSSBytes.Median != 200e6 {
		t.Errorf("create: %+v", m)
	}
	var text strings.Builder
	rep.WriteText(&text)
	// Each run's table and the medians print RSS in the same megabytes:
	// 200e6 bytes are 200.0 MB in the first run's row and 200 in the medians.
	for _, want := range []string{"== run 4 of 4", "== median of 3 runs", "(1 interrupted run left out)", "0.70 [0.60 0.80 0.70]", "80 [80 70 90]", "200 [200 190 210]", " 200.0 "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("no %q in\n%s", want, text.String())
		}
	}
}

// TestRunRepeated runs the runner three times in process against the
// ceiling as the server under test, and checks that each run is reported
// and summarized.
func TestRunRepeated(t *testing.T) {
	url := startCeiling(t, nil)
	// The ceiling serves from this process, whose PID stands for a local
	// server's.
	rep, err := RunRepeated(context.Background(), &Options{Endpoint: url, ServerPID: os.Getpid(), Workloads: []string{"create", "read"}, Docs: 20, Ops: 30, Concurrency: 2, Warmup: -1}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 3 || len(rep.Medians) != 2 || rep.Medians[0].Workload != "create" || rep.Medians[1].Workload != "read" {
		t.Fatalf("%d runs, medians %+v", len(rep.Runs), rep.Medians)
	}
	for _, m := range rep.Medians {
		if len(m.OpsPerSec.Runs) != 3 || m.OpsPerSec.Median <= 0 || len(m.Ratio.Runs) != 0 {
			t.Errorf("%s: ops/s %+v, ratio %+v: want three runs' ops/s and no ratio without a ceiling", m.Workload, m.OpsPerSec, m.Ratio)
		}
		for i, v := range m.OpsPerSec.Runs {
			if v != rep.Runs[i].Workloads[slices.IndexFunc(rep.Runs[i].Workloads, func(r *Result) bool { return r.Workload == m.Workload })].OpsPerSec {
				t.Errorf("%s: run %d's ops/s %v is not that run's", m.Workload, i+1, v)
			}
		}
	}
	if e := rep.End; len(e.ServerRSS.Runs) != 3 || len(e.ServerAnon.Runs) != 3 || len(e.CeilingRSS.Runs) != 0 || e.ServerRSS.Median <= 0 {
		t.Errorf("end memory %+v: want the server's in each of three runs, no ceiling", e)
	} else {
		for i, run := range rep.Runs {
			if got, want := e.ServerRSS.Runs[i], float64(run.End.Server.RSSBytes); got != want {
				t.Errorf("run %d: end RSS %v in the spread, %v in the run", i+1, got, want)
			}
		}
	}
	var out strings.Builder
	rep.WriteText(&out)
	if !strings.Contains(out.String(), "memory at the end of the run, MB:\n  server ") {
		t.Errorf("no end memory in the text:\n%s", out.String())
	}
	path := filepath.Join(t.TempDir(), "out.json")
	if err := rep.WriteJSON(path); err != nil {
		t.Fatal(err)
	}

	if _, err := RunRepeated(context.Background(), &Options{Endpoint: url}, 0); err == nil {
		t.Error("0 runs: no error")
	}
	if _, err := RunRepeated(context.Background(), &Options{Endpoint: url, Workloads: []string{"ttl-sustained"}}, 2); err == nil || !strings.Contains(err.Error(), "ttl-sustained") {
		t.Errorf("ttl-sustained repeated: %v, want an error", err)
	}
}
