package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
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

// TestBenchEndToEnd runs `lethe bench` as users do: it spawns an in-memory
// server and the ceiling, runs three workloads against both, and writes JSON.
func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns servers")
	}
	bin := letheBinary(t)
	out := filepath.Join(t.TempDir(), "out.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "bench", "--spawn", "--serve-args=--in-memory",
		"--workload", "create,read,query-pk", "--docs", "200", "--ops", "300", "--concurrency", "4",
		"--ceiling", "--warmup", "250ms", "--json", out)
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
		if r := w.Ratio; r == nil || r.OpsPerSec <= 0 || r.ServerCPUPerOp <= 0 {
			t.Errorf("%s: ratio %+v, want ops/s and CPU ratios", w.Workload, r)
		}
	}
	if want := []string{"create", "read", "query-pk"}; !slices.Equal(names, want) {
		t.Errorf("workloads %q, want %q", names, want)
	}
	if !bytes.Contains(stdout.Bytes(), []byte("x ceiling")) {
		t.Errorf("no table on stdout:\n%s", &stdout)
	}
}
