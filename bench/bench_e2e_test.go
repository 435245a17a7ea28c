package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

// letheBinary returns the lethe binary to run: $LETHE_BIN (as scripts/test
// sets it), or one built from ../cmd/lethe for this test.
func letheBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("LETHE_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "lethe")
	build := exec.Command("go", "build", "-o", bin, "../cmd/lethe")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build lethe: %v\n%s", err, out)
	}
	return bin
}

// runBench runs `lethe bench` with args and a JSON report, and returns the
// report and the text output (logged).
func runBench(t *testing.T, args ...string) (Report, *bytes.Buffer) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, letheBinary(t), append(append([]string{"bench"}, args...), "--json", out)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("lethe bench: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	t.Logf("stdout:\n%s", &stdout)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	return rep, &stdout
}

// everyWorkload is every workload that TestBenchEndToEnd runs: all but
// ttl-sustained, which TestBenchSustainedEndToEnd runs.
var everyWorkload = slices.DeleteFunc(slices.Clone(Workloads), func(w string) bool { return w == "ttl-sustained" })

// TestBenchEndToEnd runs `lethe bench` as users do: it spawns an in-memory
// server and the ceiling, runs every workload but ttl-sustained (below)
// against both (those that write nothing in turns with the ceiling), and
// writes JSON. Each must run without an error: a workload
// whose every request the server refuses measures nothing.
func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns servers")
	}
	rep, stdout := runBench(t, "--spawn", "--serve-args=--in-memory",
		"--workload", strings.Join(everyWorkload, ","), "--docs", "200", "--ops", "300", "--concurrency", "4",
		"--ceiling", "--warmup", "250ms")
	if rep.Interrupted || len(rep.Problems) > 0 {
		t.Errorf("interrupted %v, problems %q", rep.Interrupted, rep.Problems)
	}
	if rep.Machine.NumCPU == 0 || rep.Params.Concurrency != 4 || rep.Started.IsZero() || rep.Finished.Before(rep.Started) {
		t.Errorf("machine %+v, params %+v, started %v, finished %v", rep.Machine, rep.Params, rep.Started, rep.Finished)
	}
	if rep.Server.PID == 0 || rep.Ceiling == nil || rep.Ceiling.PID == 0 {
		t.Errorf("server %+v, ceiling %+v: want both spawned", rep.Server, rep.Ceiling)
	}
	if p := rep.Populate; p == nil || p.Docs != 200 || p.Errors != 0 {
		t.Errorf("populate %+v, want 200 documents", p)
	}
	var names []string
	for _, w := range rep.Workloads {
		names = append(names, w.Workload)
		for _, m := range []*Measurement{&w.Measurement, w.Ceiling} {
			if m == nil {
				t.Errorf("%s: no ceiling figures", w.Workload)
				continue
			}
			if m.Ops <= 0 || m.Errors != 0 || m.Latency.P50 <= 0 || m.Latency.P50 > m.Latency.P99 {
				t.Errorf("%s on %s: %d ops, %d errors %v, latency %+v", w.Workload, m.Target, m.Ops, m.Errors, m.ErrorSample, m.Latency)
			}
			if s := m.Server; s == nil || s.RSSBytes <= 0 || s.CPUPerOp <= 0 {
				t.Errorf("%s on %s: server stats %+v, want RSS and CPU", w.Workload, m.Target, s)
			}
		}
		// delete has no warmup, and create made its 300 and the warmup's.
		if w.Workload == "delete" && (w.Ops != 300 || w.Drained) {
			t.Errorf("delete on lethe: %d ops, drained %v: want 300 of the documents create made", w.Ops, w.Drained)
		}
		// 200 documents in 100 partitions: a partition holds two, a k
		// value ten (across partitions).
		wantRows := map[string]float64{"query-pk": 2, "query-list": 2, "query-order": 2, "query-cross": 10}[w.Workload]
		if w.Workload == "query-range" {
			// k at least a random document's: ten or more documents
			// match, but for the last ten (k 19 and 20)
			if w.RowsPerOp < 5 || w.RowsPerOp > 10 {
				t.Errorf("query-range on lethe: %.1f rows a page, want 5-10", w.RowsPerOp)
			}
		} else if w.RowsPerOp != wantRows {
			t.Errorf("%s on lethe: %.1f rows a page, want %.0f", w.Workload, w.RowsPerOp, wantRows)
		}
		if r := w.Ratio; r == nil || r.OpsPerSec <= 0 || r.ServerCPUPerOp <= 0 {
			t.Errorf("%s: ratio %+v, want ops/s and CPU ratios", w.Workload, r)
		}
		// A workload that writes runs on lethe and then on the ceiling; the
		// others alternate with it, five slices of 60 operations each.
		m, c := &w.Measurement, w.Ceiling
		if c == nil {
			continue
		}
		if workloads[w.Workload].write {
			if m.Slices != 0 || c.Slices != 0 || c.Started.Before(m.Finished) {
				t.Errorf("%s: slices %d and %d, lethe finished %v, ceiling started %v: want one piece each, in turn",
					w.Workload, m.Slices, c.Slices, m.Finished, c.Started)
			}
		} else if m.Slices != 5 || c.Slices != 5 || m.Ops != 300 || c.Ops != 300 ||
			!c.Started.Before(m.Finished) || !m.Started.Before(c.Finished) || m.Finished.Sub(m.Started).Seconds() <= m.Seconds {
			t.Errorf("%s: slices %d and %d, %d and %d ops, lethe %v to %v (%.3fs measured), ceiling %v to %v: want 5 slices of 60 each, interleaved",
				w.Workload, m.Slices, c.Slices, m.Ops, c.Ops, m.Started, m.Finished, m.Seconds, c.Started, c.Finished)
		}
	}
	if !slices.Equal(names, everyWorkload) {
		t.Errorf("workloads %q, want %q", names, everyWorkload)
	}
	if !bytes.Contains(stdout.Bytes(), []byte("x ceiling")) {
		t.Errorf("no table on stdout:\n%s", stdout)
	}
	// Both servers were spawned, so their memory at the end is known; the
	// server holds the documents the ceiling never stores.
	if e := rep.End; e == nil || e.Server == nil || e.Ceiling == nil {
		t.Errorf("memory at the end %+v: want the server's and the ceiling's", e)
	} else {
		for name, m := range map[string]*Memory{"lethe": e.Server, "ceiling": e.Ceiling} {
			if m.AnonBytes <= 0 || m.FileBytes <= 0 || m.AnonBytes+m.FileBytes > m.RSSBytes {
				t.Errorf("%s at the end: %+v: want both parts above 0 and within RSS", name, m)
			}
		}
		if !bytes.Contains(stdout.Bytes(), []byte("memory at the end of the run: lethe ")) {
			t.Errorf("no end memory on stdout:\n%s", stdout)
		}
	}
}

// runSustainedBench runs ttl-sustained on spawned servers for duration, with
// a 1 s ttl and the extra arguments, and returns the report and its one
// workload, which must have its two runs.
func runSustainedBench(t *testing.T, duration string, extra ...string) (Report, *Result, *bytes.Buffer) {
	t.Helper()
	args := append([]string{"--spawn", "--workload", "ttl-sustained", "--ttl", "1s", "--duration", duration,
		"--concurrency", "4", "--warmup", "500ms", "--timeline-interval", "2s"}, extra...)
	rep, stdout := runBench(t, args...)
	if rep.Interrupted || len(rep.Problems) > 0 || len(rep.Workloads) != 1 {
		t.Fatalf("interrupted %v, problems %q, %d workloads", rep.Interrupted, rep.Problems, len(rep.Workloads))
	}
	w := rep.Workloads[0]
	if w.Error != "" || w.Sustained == nil || len(w.Sustained.Runs) != 2 {
		t.Fatalf("error %q, sustained %+v: want two runs", w.Error, w.Sustained)
	}
	return rep, w, stdout
}

// TestBenchSustainedEndToEnd runs ttl-sustained as users do, on spawned
// in-memory servers with a 1 s ttl: the purge-off run ends with a backlog,
// the purge-on run purges, and both have a timeline. It asserts no rate or
// duration: only that each figure is there and which way the purge goes.
func TestBenchSustainedEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns servers")
	}
	rep, w, stdout := runSustainedBench(t, "3s", "--serve-args=--in-memory")
	off, on := w.Sustained.Runs[0], w.Sustained.Runs[1]
	if off.Purge != "off" || on.Purge != "on" || w.Sustained.OpsRatio <= 0 {
		t.Errorf("runs %q then %q, ratio %v: want off then on, and a ratio", off.Purge, on.Purge, w.Sustained.OpsRatio)
	}
	if off.Server.PID == 0 || off.Server.PID == on.Server.PID || off.Server.PID == rep.Server.PID {
		t.Errorf("pids: off %d, on %d, the run's server %d: want a fresh server each", off.Server.PID, on.Server.PID, rep.Server.PID)
	}
	for _, run := range w.Sustained.Runs {
		m := run.Measurement
		if m == nil || m.Ops <= 0 || m.Errors != 0 || run.Error != "" || run.ScrapeErrors != 0 {
			t.Fatalf("purge %s: measurement %+v, error %q, %d failed scrapes (%s)", run.Purge, m, run.Error, run.ScrapeErrors, run.ScrapeError)
		}
		if len(run.Timeline) < 2 {
			t.Fatalf("purge %s: %d samples", run.Purge, len(run.Timeline))
		}
		var ops int64
		for _, x := range run.Timeline {
			ops += x.Ops
			if x.TTL == nil || x.ServerCPUSec == nil || x.ServerRSSBytes == nil || x.DataDirBytes != nil {
				t.Errorf("purge %s: sample %+v: want metrics and /proc figures, and no data directory (in memory)", run.Purge, x)
			}
		}
		if ops != m.Ops {
			t.Errorf("purge %s: the timeline counts %d ops, the measurement %d", run.Purge, ops, m.Ops)
		}
	}
	if p := off.Summary.PendingDocsEnd; p == nil || *p <= 0 {
		t.Errorf("purge off: pending docs at the end %v, want some", deref(p))
	}
	if last := off.Timeline[len(off.Timeline)-1].TTL; last.PurgedTotal != 0 {
		t.Errorf("purge off: %v purged", last.PurgedTotal)
	}
	if last := on.Timeline[len(on.Timeline)-1].TTL; last.PurgedTotal <= 0 {
		t.Errorf("purge on: nothing purged: %+v", last)
	}
	for _, want := range []string{"ttl-sustained on lethe purge off", "ttl-sustained on lethe purge on", "ttl-sustained summary", "on/off"} {
		if !bytes.Contains(stdout.Bytes(), []byte(want)) {
			t.Errorf("no %q on stdout", want)
		}
	}
}

// TestBenchSustainedGatewaysEndToEnd runs ttl-sustained on two gateways over
// one PostgreSQL database, fresh ones for each run: every sample is both
// gateways' (their CPU summed, every gateway's metrics scraped), and the
// purge-on run purges while the purge-off run does not.
func TestBenchSustainedGatewaysEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns servers")
	}
	store := pgtest.Database(t)
	rep, w, stdout := runSustainedBench(t, "4s", "--gateways", "2", "--serve-args=--store "+store)
	pids := map[int]bool{rep.Gateways[0].PID: true, rep.Gateways[1].PID: true}
	for _, run := range w.Sustained.Runs {
		m := run.Measurement
		if m == nil || m.Ops <= 0 || m.Errors != 0 || run.Error != "" || run.ScrapeErrors != 0 {
			t.Fatalf("purge %s: measurement %+v, error %q, %d failed scrapes (%s)", run.Purge, m, run.Error, run.ScrapeErrors, run.ScrapeError)
		}
		if len(run.Gateways) != 2 || run.Gateways[0] != run.Server {
			t.Fatalf("purge %s: server %+v, gateways %+v: want the two gateways, the server first", run.Purge, run.Server, run.Gateways)
		}
		for _, g := range run.Gateways {
			if g.PID == 0 || pids[g.PID] {
				t.Errorf("purge %s: gateway %+v: want a fresh process", run.Purge, g)
			}
			pids[g.PID] = true
		}
		if len(m.Gateways) != 2 {
			t.Errorf("purge %s: the measurement has %d gateways' shares", run.Purge, len(m.Gateways))
		}
		for _, x := range run.Timeline {
			if x.TTL == nil || x.ServerCPUSec == nil || x.ServerRSSBytes == nil {
				t.Fatalf("purge %s: sample %+v: want metrics and /proc figures", run.Purge, x)
			}
		}
	}
	off, on := w.Sustained.Runs[0], w.Sustained.Runs[1]
	// No process purges in the purge-off run, the run's own gateways (idle
	// over the same database) included: every document written 2.5 s or
	// more before its end is still pending, expired by then (its 1 s ttl,
	// _ts in whole seconds, the database's clock read once a second).
	end := off.Timeline[len(off.Timeline)-1]
	var expired int64
	for _, x := range off.Timeline {
		if x.T <= end.T-2.5 {
			expired += x.Ops
		}
	}
	if p := off.Summary.PendingDocsEnd; p == nil || *p <= 0 || *p < float64(expired) {
		t.Errorf("purge off: pending docs at the end %v, want at least the %d written 2.5 s before it", deref(p), expired)
	}
	if end.TTL.PurgedTotal != 0 {
		t.Errorf("purge off: %v purged", end.TTL.PurgedTotal)
	}
	if last := on.Timeline[len(on.Timeline)-1].TTL; last.PurgedTotal <= 0 {
		t.Errorf("purge on: nothing purged: %+v", last)
	}
	if !bytes.Contains(stdout.Bytes(), []byte("ttl-sustained on lethe purge on x2")) {
		t.Errorf("no run on both gateways on stdout:\n%s", stdout)
	}
}

// TestBenchGatewaysEndToEnd spawns two gateways over one PostgreSQL
// database: the workers are spread over both, the set-up goes through the
// first, and the server figures are the sum of both processes'.
func TestBenchGatewaysEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns servers")
	}
	store := pgtest.Database(t)
	rep, stdout := runBench(t, "--spawn", "--gateways", "2", "--serve-args=--store "+store,
		"--workload", "create,read", "--docs", "100", "--duration", "1s", "--concurrency", "4", "--warmup", "250ms")
	if rep.Interrupted || len(rep.Problems) > 0 {
		t.Errorf("interrupted %v, problems %q", rep.Interrupted, rep.Problems)
	}
	if rep.Params.Gateways != 2 || len(rep.Gateways) != 2 || rep.Server != rep.Gateways[0] {
		t.Fatalf("params %+v, server %+v, gateways %+v", rep.Params, rep.Server, rep.Gateways)
	}
	g1, g2 := rep.Gateways[0], rep.Gateways[1]
	if g1.PID == 0 || g2.PID == 0 || g1.PID == g2.PID || g1.Endpoint == g2.Endpoint {
		t.Errorf("gateways %+v and %+v: want two processes on two ports", g1, g2)
	}
	if p := rep.Populate; p == nil || p.Docs != 100 || p.Errors != 0 {
		t.Errorf("populate %+v, want 100 documents", p)
	}
	for _, w := range rep.Workloads {
		if w.Error != "" || w.Ops <= 0 || w.Errors != 0 || w.Target != "lethe x2" {
			t.Errorf("%s: error %q, %d ops, %d errors %v, target %q", w.Workload, w.Error, w.Ops, w.Errors, w.ErrorSample, w.Target)
		}
		s := w.Server
		if s == nil || !slices.Equal(s.PIDs, []int{g1.PID, g2.PID}) || len(w.Gateways) != 2 {
			t.Fatalf("%s: server stats %+v, gateways %+v", w.Workload, s, w.Gateways)
		}
		var rss int64
		var cpu float64
		for _, g := range w.Gateways {
			if g.Workers != 2 || g.Ops <= 0 || g.Errors != 0 || g.RSSBytes <= 0 || g.CPUSeconds <= 0 {
				t.Errorf("%s on %s: %+v", w.Workload, g.Name, g)
			}
			rss += g.RSSBytes
			cpu += g.CPUSeconds
		}
		if s.RSSBytes != rss || math.Abs(s.CPUSeconds-cpu) > 1e-6 {
			t.Errorf("%s: server RSS %d, CPU %.3fs; the gateways' sum %d, %.3fs", w.Workload, s.RSSBytes, s.CPUSeconds, rss, cpu)
		}
	}
	if !bytes.Contains(stdout.Bytes(), []byte("gateways: 2 over one store")) {
		t.Errorf("no gateways on stdout:\n%s", stdout)
	}
}
