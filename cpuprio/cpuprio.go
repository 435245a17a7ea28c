// Package cpuprio runs background work at the operating system's lowest CPU
// priority, so that it takes only the CPU that user requests leave idle.
//
// Go has no goroutine priorities, and its own scheduler, once a background
// goroutine holds a P, lets a runnable request wait behind it for up to a
// 10 ms time slice. The kernel's scheduler does have priorities: a thread at
// nice 19 weighs 1/68 of a thread at nice 0, and a waking nice-0 thread
// preempts it at once. So a background goroutine is pinned to its own OS
// thread and that thread's nice value raised; Go then only needs enough Ps
// for the request goroutines beside it (see ExtraProcs).
//
// An unprivileged process may raise a thread's nice value but not lower it
// again, so a lowered goroutine never unlocks its thread: when the goroutine
// ends, Go ends the thread with it. Lower only goroutines that end when their
// background work is done, never a long-lived or borrowed one.
package cpuprio

import (
	"os"
	"runtime"
)

// BackgroundNice is the nice value of lowered threads: the lowest priority
// short of SCHED_IDLE, which could starve background work that a request is
// waiting for (a memtable flush) for as long as requests keep every core
// busy. At nice 19 it still gets about 1.5% of a contended core.
const BackgroundNice = 19

// LowerCurrentGoroutine pins the calling goroutine to its OS thread and sets
// that thread's nice value to BackgroundNice. It reports whether it did; where
// the platform or the process's permissions do not allow it, it changes
// nothing and reports false. Calling it again on a lowered goroutine is
// harmless.
func LowerCurrentGoroutine() bool {
	runtime.LockOSThread()
	if err := setThreadNice(BackgroundNice); err != nil {
		runtime.UnlockOSThread()
		return false
	}
	return true
}

// ExtraProcs raises GOMAXPROCS by n, unless the GOMAXPROCS environment
// variable fixes it, and returns a function that restores the previous
// value. A lowered goroutine keeps its P while the kernel makes it wait, so
// without n extra Ps for the background goroutines that may run at once,
// request goroutines would have fewer Ps than the machine has cores.
func ExtraProcs(n int) (restore func()) {
	if os.Getenv("GOMAXPROCS") != "" || n <= 0 {
		return func() {}
	}
	prev := runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + n)
	return func() { runtime.GOMAXPROCS(prev) }
}
