package cpuprio

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// threadsAtNice counts this process's threads whose nice value is nice, from
// /proc/self/task/*/stat (field 19). The main thread is left out when
// notMain is set: Go never ends it, but parks it for good instead when a
// goroutine locked to it exits.
func threadsAtNice(t *testing.T, nice int, notMain bool) int {
	t.Helper()
	stats, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	main := strconv.Itoa(os.Getpid())
	for _, p := range stats {
		if notMain && filepath.Base(filepath.Dir(p)) == main {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended meanwhile
		}
		// The command name, field 2, is in parentheses and may hold spaces.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if v, err := strconv.Atoi(fields[16]); err == nil && v == nice {
			n++
		}
	}
	return n
}

func TestLowerCurrentGoroutine(t *testing.T) {
	if runtime.GOOS != "linux" {
		if LowerCurrentGoroutine() {
			t.Fatal("lowered a thread on a platform without per-thread priorities")
		}
		t.Skip("per-thread priorities are Linux only")
	}
	if got := threadsAtNice(t, BackgroundNice, true); got != 0 {
		t.Fatalf("%d threads at nice %d before any was lowered", got, BackgroundNice)
	}
	before := threadsAtNice(t, BackgroundNice, false) // a parked main thread from an earlier run
	type result struct {
		ok, again bool
		nice      int
		err       error
	}
	lowered := make(chan result)
	release := make(chan struct{})
	go func() {
		var r result
		r.ok = LowerCurrentGoroutine()
		r.again = LowerCurrentGoroutine()
		r.nice, r.err = threadNice()
		lowered <- r
		<-release // hold the thread while the test looks at the others
	}()
	r := <-lowered
	if !r.ok || !r.again || r.err != nil || r.nice != BackgroundNice {
		t.Fatalf("lowered goroutine: ok %v, again %v, nice %d, err %v; want true, true, %d", r.ok, r.again, r.nice, r.err, BackgroundNice)
	}
	if got := threadsAtNice(t, BackgroundNice, false); got != before+1 {
		t.Errorf("%d threads at nice %d, want exactly the lowered one", got, BackgroundNice)
	}
	// Every other goroutine, this one included, runs on a thread at nice 0.
	if nice, err := threadNice(); err != nil || nice != 0 {
		t.Errorf("test goroutine's thread at nice %d (err %v), want 0", nice, err)
	}

	// When the lowered goroutine ends, its thread ends with it (or, the main
	// thread, is parked for good), so no other goroutine ever runs at the
	// lowered priority.
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for threadsAtNice(t, BackgroundNice, true) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the lowered thread outlived its goroutine")
		}
		time.Sleep(time.Millisecond)
	}
	niceOf := make(chan int)
	for range 4 * runtime.GOMAXPROCS(0) {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			nice, err := threadNice()
			if err != nil {
				nice = -100
			}
			niceOf <- nice
		}()
	}
	for range 4 * runtime.GOMAXPROCS(0) {
		if nice := <-niceOf; nice != 0 {
			t.Fatalf("a goroutine ran on a thread at nice %d after the lowered one ended", nice)
		}
	}
}

// waitProcs waits until GOMAXPROCS is want, or fails the test after a
// generous deadline (the change comes from the Procs goroutine).
func waitProcs(t *testing.T, want int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); runtime.GOMAXPROCS(0) != want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("GOMAXPROCS is %d, want %d", runtime.GOMAXPROCS(0), want)
		}
	}
}

func TestProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	before := runtime.GOMAXPROCS(0)
	p := StartProcs(2)
	p.SetJobs(1)
	waitProcs(t, before+1)
	p.SetJobs(2)
	waitProcs(t, before+2)
	p.SetJobs(1)
	waitProcs(t, before+1) // after procsSettle
	p.SetJobs(5)           // more jobs than extra Ps allowed
	waitProcs(t, before+2)
	p.SetJobs(0)
	waitProcs(t, before)
	p.SetJobs(1)
	waitProcs(t, before+1)
	p.Close() // restores GOMAXPROCS
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d after Close, want %d", got, before)
	}
	p.Close()

	// A GOMAXPROCS the operator chose is left alone.
	t.Setenv("GOMAXPROCS", strconv.Itoa(before))
	p = StartProcs(2)
	p.SetJobs(2)
	p.Close()
	if got, changes := runtime.GOMAXPROCS(0), p.changes.Load(); got != before || changes != 0 {
		t.Errorf("GOMAXPROCS %d after %d changes with the variable set, want it left at %d", got, changes, before)
	}
}
