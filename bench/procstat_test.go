package bench

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and a parenthesis, as the kernel allows.
	stat := []byte("4242 (we ird) name) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 100 123456789 2500 18446744073709551615\n")
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3250 * time.Millisecond; got != want {
		t.Errorf("cpu = %v, want %v (325 ticks)", got, want)
	}
	if _, err := parseStatCPU([]byte("4242 (x) S 1 2")); err == nil {
		t.Error("a short stat line was accepted")
	}
}

func TestSchedCPUIn(t *testing.T) {
	task := func(t *testing.T, dir, tid, schedstat string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, tid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, tid, "schedstat"), []byte(schedstat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	task(t, dir, "100", "1500000000 2000 30\n")
	task(t, dir, "101", "250000 10 2\n")
	if got, ok := schedCPUIn(dir); !ok || got != 1500250*time.Microsecond {
		t.Errorf("sum = %v, %v; want 1.50025s, true", got, ok)
	}

	// Without scheduler statistics the kernel prints zeros: use /proc/<pid>/stat.
	off := t.TempDir()
	task(t, off, "100", "0 0 0\n")
	task(t, off, "101", "0 0 0\n")
	if got, ok := schedCPUIn(off); ok {
		t.Errorf("all-zero schedstat gave %v, true; want false", got)
	}

	bad := t.TempDir()
	task(t, bad, "100", "many\n")
	if got, ok := schedCPUIn(bad); ok {
		t.Errorf("unparsable schedstat gave %v, true; want false", got)
	}
}

// TestReadProcSelf checks ReadProc against the process's own meter of the
// same quantity. The test burns a fixed amount of CPU time as getrusage counts
// it, however long that takes in wall time, so a busy machine only slows it
// down: ReadProc must then report the same growth, give or take the few
// clock ticks by which the kernel's accounting of a running thread lags, and
// /proc/self/stat must agree to its 10 ms resolution. Nothing here depends on
// the share of the CPU the test gets.
func TestReadProcSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux only")
	}
	// The slack covers the CPU time not yet accounted to a thread that is
	// running when it is read (up to one scheduler tick, 10 ms at HZ=100,
	// for each thread running at that moment) and the 10 ms truncation of
	// /proc/<pid>/stat at each end.
	const work, slack = 200 * time.Millisecond, 50 * time.Millisecond

	before := selfCPU()
	s, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSS <= 0 || s.HWM < s.RSS {
		t.Errorf("RSS %d HWM %d: want 0 < RSS <= HWM", s.RSS, s.HWM)
	}
	// A Go test binary has heap and stacks of its own and runs from a
	// mapped executable; the kernel computes VmRSS as the sum of the
	// anonymous, file and shared parts it reports beside it.
	if s.Anon <= 0 || s.Files <= 0 || s.Anon+s.Files > s.RSS {
		t.Errorf("RSS %d, anonymous %d, files %d: want both parts above 0 and within RSS", s.RSS, s.Anon, s.Files)
	}
	if s.CPU <= 0 {
		t.Errorf("CPU %v: a running process has used some", s.CPU)
	}
	stat0 := statCPU(t)
	start := selfCPU()

	// Burn work of CPU time as this process measures it. The deadline is a
	// safety net against a broken selfCPU, not a figure under test.
	deadline := time.Now().Add(2 * time.Minute)
	burnt := time.Duration(0)
	for burnt < work {
		for range 100_000 {
			sink++
		}
		burnt = selfCPU() - start
		if time.Now().After(deadline) {
			t.Fatalf("getrusage counted %v of CPU time in 2 minutes of burning", burnt)
		}
	}

	end := selfCPU()
	s2, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	stat1 := statCPU(t)
	after := selfCPU()

	d, ds := s2.CPU-s.CPU, stat1-stat0
	// ReadProc's two readings bracket [start, end] and lie within
	// [before, after], so its growth lies between those two, less or more
	// the accounting lag.
	if lo, hi := end-start-slack, after-before+slack; d < lo || d > hi {
		t.Errorf("ReadProc's CPU grew by %v while getrusage counted %v inside and %v around it", d, end-start, after-before)
	}
	if diff := d - ds; diff < -slack || diff > slack {
		t.Errorf("CPU grew by %v (ReadProc) but %v (/proc/self/stat)", d, ds)
	}
}

// sink keeps the burn loop from being optimised away.
var sink int

func statCPU(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	d, err := parseStatCPU(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestParseMachineBusy(t *testing.T) {
	got, ok := parseMachineBusy("cpu  100 5 50 9999 7 3 2 1 40 0")
	if !ok || got != 1610*time.Millisecond {
		t.Errorf("busy = %v, %v; want 1.61s (161 ticks, idle and iowait left out)", got, ok)
	}
	if _, ok := parseMachineBusy("cpu0 1 2 3"); ok {
		t.Error("a short line was accepted")
	}
}
