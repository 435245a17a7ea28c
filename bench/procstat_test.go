package bench

import (
	"os"
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

func TestReadProcSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux only")
	}
	s, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSS <= 0 || s.HWM < s.RSS {
		t.Errorf("RSS %d HWM %d: want 0 < RSS <= HWM", s.RSS, s.HWM)
	}
	// Burn some CPU: the measured time must grow by about as much, and agree
	// with the 10 ms-resolution figure of /proc/<pid>/stat.
	stat0 := statCPU(t)
	burn := 300 * time.Millisecond
	for start := time.Now(); time.Since(start) < burn; {
	}
	s2, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	stat1 := statCPU(t)
	d, ds := s2.CPU-s.CPU, stat1-stat0
	if d < burn*8/10 || d > burn*3 {
		t.Errorf("CPU grew by %v while burning %v", d, burn)
	}
	if diff := d - ds; diff < -50*time.Millisecond || diff > 50*time.Millisecond {
		t.Errorf("CPU grew by %v (schedstat) but %v (stat)", d, ds)
	}
}

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
