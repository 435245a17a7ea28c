// Package cpuprio runs background work at the operating system's lowest CPU
// priority, so that it takes only the CPU that user requests leave idle.
//
// Go has no goroutine priorities, and its own scheduler, once a background
// goroutine holds a P, lets a runnable request wait behind it for up to a
// 10 ms time slice. The kernel's scheduler does have priorities: a thread at
// nice 19 weighs 1/68 of a thread at nice 0, and a waking nice-0 thread
// preempts it at once. So a background goroutine is pinned to its own OS
// thread and that thread's nice value raised; Go then only needs enough Ps
// for the request goroutines beside it (see Procs).
//
// An unprivileged process may raise a thread's nice value but not lower it
// again, so a lowered goroutine never unlocks its thread: when the goroutine
// ends, Go ends the thread with it. Lower only goroutines that end when their
// background work is done, never a long-lived or borrowed one.
package cpuprio

import (
	"os"
	"runtime"
	"sync/atomic"
	"time"
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

// Procs gives Go an extra P for each background job that runs, and only
// while it runs. A lowered goroutine keeps its P while the kernel makes it
// wait, so without an extra P request goroutines would have fewer Ps than the
// machine has cores. But extra Ps cost the requests while no job runs: with
// more Ps than cores, idle Ps spin looking for work and more threads compete
// for the cores (measured on 2 cores with GOMAXPROCS 4 against 2: 52 against
// 41 us of server CPU per point read). So GOMAXPROCS follows the number of
// running jobs (SetJobs): raised at once when a job starts, lowered once the
// count has stayed lower for procsSettle, since each change briefly stops the
// world.
//
// A Procs owns one goroutine, which Close stops; Close restores GOMAXPROCS.
type Procs struct {
	base, most int // GOMAXPROCS at start; the most extra Ps given
	jobs       atomic.Int64
	wake       chan struct{}
	stop       chan struct{}
	done       chan struct{}
	changes    atomic.Int64 // GOMAXPROCS changes made, for tests
}

// procsSettle is how long the number of running jobs must stay lower before
// GOMAXPROCS follows it down: a compaction often starts as another ends.
const procsSettle = 50 * time.Millisecond

// StartProcs returns a Procs that gives Go up to most extra Ps, one per
// running job. When the GOMAXPROCS environment variable fixes the count, or
// most is not positive, it changes nothing (SetJobs only counts).
func StartProcs(most int) *Procs {
	p := &Procs{base: runtime.GOMAXPROCS(0), most: most, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if os.Getenv("GOMAXPROCS") != "" || most <= 0 {
		close(p.done)
		return p
	}
	go p.run()
	return p
}

// SetJobs reports how many background jobs run now. It never blocks: it may
// be called from a storage engine's event callbacks.
func (p *Procs) SetJobs(n int) {
	p.jobs.Store(int64(n))
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Close stops the goroutine and restores GOMAXPROCS to what it was at start.
// Calling it again is harmless.
func (p *Procs) Close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

func (p *Procs) run() {
	defer close(p.done)
	extra := 0
	set := func(n int) {
		if n != extra {
			runtime.GOMAXPROCS(p.base + n)
			p.changes.Add(1)
			extra = n
		}
	}
	defer set(0)
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
		case <-settle.C:
			set(p.want())
			continue
		}
		switch want := p.want(); {
		case want > extra:
			set(want)
			settle.Stop()
		case want < extra:
			settle.Reset(procsSettle)
		default:
			settle.Stop()
		}
	}
}

// want is the number of extra Ps the running jobs call for.
func (p *Procs) want() int {
	return int(min(max(p.jobs.Load(), 0), int64(p.most)))
}
