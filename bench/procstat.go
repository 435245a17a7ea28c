package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat. The
// kernel fixes it at 100 on every mainstream Linux architecture; reading it
// properly needs sysconf(_SC_CLK_TCK), which is not reachable without cgo.
const clockTicks = 100

// ProcSample is one reading of a process's memory and CPU time from /proc.
type ProcSample struct {
	RSS int64 // resident set size now, bytes (VmRSS)
	HWM int64 // peak resident set size over the process's life, bytes (VmHWM)
	// Anon and Files split RSS by what backs its pages (RssAnon and RssFile;
	// the rest is shared memory, RssShmem). Anon is the process's own
	// memory: heap, stacks, a store's memtables, tables and caches. Files
	// are pages of mapped files, mostly the executable's code and read-only
	// data, which the kernel shares with its page cache and maps in large
	// pieces: they say how large the binary is more than how much the
	// process allocated.
	Anon, Files int64
	// CPU is the user + system CPU time used so far by all the process's
	// threads, those that have exited included: utime + stime from
	// /proc/<pid>/stat, which the kernel keeps for the whole thread group
	// but in 10 ms ticks, or the sum of the live threads'
	// /proc/<pid>/task/<tid>/schedstat run times (nanoseconds) when that is
	// larger: exact as long as no thread has exited. The sum alone would
	// lose an exited thread's time and could go backwards, and Lethe ends
	// threads all the time (its store's lowered background threads end with
	// their goroutine, see package cpuprio). So CPU is within about 20 ms of
	// the truth, and exact for a process whose threads all live.
	CPU time.Duration
}

// ReadProc reads process pid's memory and CPU time from /proc. It works on
// Linux only.
func ReadProc(pid int) (ProcSample, error) {
	var s ProcSample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch name {
		case "VmRSS":
			s.RSS, err = parseKB(val)
		case "VmHWM":
			s.HWM, err = parseKB(val)
		case "RssAnon":
			s.Anon, err = parseKB(val)
		case "RssFile":
			s.Files, err = parseKB(val)
		}
		if err != nil {
			return s, fmt.Errorf("read /proc/%d/status: %s: %w", pid, name, err)
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	s.CPU, err = parseStatCPU(stat)
	if err != nil {
		return s, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	if cpu, ok := schedCPU(pid); ok && cpu > s.CPU {
		s.CPU = cpu
	}
	return s, nil
}

// schedCPU sums the run time of every thread of pid from schedstat, in
// nanoseconds. It reports false when any of it cannot be read.
func schedCPU(pid int) (time.Duration, bool) {
	return schedCPUIn(fmt.Sprintf("/proc/%d/task", pid))
}

// schedCPUIn sums the first schedstat field of every task directory under
// dir. A sum of zero reports false: a kernel built or booted without
// scheduler statistics prints "0 0 0" for every thread, and a process that
// is being read has run.
func schedCPUIn(dir string) (time.Duration, bool) {
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			if os.IsNotExist(err) {
				continue // the thread exited meanwhile
			}
			return 0, false
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += time.Duration(ns)
	}
	return sum, sum > 0
}

// parseKB parses a /proc/<pid>/status value such as "   1234 kB".
func parseKB(v string) (int64, error) {
	v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
	n, err := strconv.ParseInt(v, 10, 64)
	return n * 1024, err
}

// parseStatCPU returns utime + stime from the contents of /proc/<pid>/stat.
// The command name (field 2) is in parentheses and may itself contain spaces
// and parentheses, so fields are counted from the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", truncate(string(stat), 80))
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("utime %q stime %q are not integers", f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// machineBusy returns the CPU time all the machine's CPUs have spent busy
// (user, nice, system, irq, softirq and steal in the first line of
// /proc/stat; guest time is already counted in user), with 10 ms resolution.
func machineBusy() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseMachineBusy(line)
}

func parseMachineBusy(line string) (time.Duration, bool) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, true
}
