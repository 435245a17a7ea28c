package bench

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReadProcCountsExitedThreads burns CPU time on a thread that then
// exits (a goroutine that ends locked to its thread takes the thread with
// it, as Lethe's lowered background threads do): ReadProc must still count
// that time. The burn is measured by the thread's own meter, however long
// it takes in wall time, and the test waits for the thread to be gone.
func TestReadProcCountsExitedThreads(t *testing.T) {
	// As in TestReadProcSelf: the accounting lag of running threads and
	// the 10 ms truncation of /proc/<pid>/stat.
	const work, slack = 200 * time.Millisecond, 50 * time.Millisecond
	s0, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		tid   int
		burnt time.Duration
	}
	done := make(chan result)
	var burn func()
	burn = func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if unix.Gettid() == os.Getpid() {
			// The main thread is parked rather than ended when its goroutine
			// exits: hold it while another goroutine, on another thread,
			// burns.
			inner := make(chan struct{})
			go func() {
				defer close(inner)
				burn()
			}()
			<-inner
			runtime.UnlockOSThread()
			return
		}
		start, deadline := threadCPU(t), time.Now().Add(2*time.Minute)
		for threadCPU(t)-start < work && time.Now().Before(deadline) {
			for range 100_000 {
				sink++
			}
		}
		done <- result{unix.Gettid(), threadCPU(t) - start}
	}
	go burn()
	r := <-done
	if r.burnt < work {
		t.Fatalf("the thread counted %v of CPU time in 2 minutes of burning", r.burnt)
	}
	task := "/proc/self/task/" + strconv.Itoa(r.tid)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(task); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d did not exit within a minute", r.tid)
		}
	}
	s1, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := s1.CPU - s0.CPU; d < r.burnt-slack {
		t.Errorf("ReadProc's CPU grew by %v, but an exited thread alone burnt %v", d, r.burnt)
	}
}

// threadCPU is the calling thread's CPU time (getrusage RUSAGE_THREAD).
func threadCPU(t *testing.T) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		t.Error(err)
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
