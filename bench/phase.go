package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// opFunc performs one operation and returns its request charge.
type opFunc func(ctx context.Context, w *worker) (charge float64, err error)

// worker is one concurrent client. Only its own goroutine touches it until
// the phase ends.
type worker struct {
	rng      *rand.Rand
	hist     Histogram
	ops      int64
	rows     int64 // query rows returned
	ru       float64
	errs     map[string]int64
	errText  map[string]string // the first error of each class
	version  int               // of the documents it replaces or upserts
	counters *counters
}

// counters are the phase's running totals, read by the progress line.
type counters struct {
	ops, errs atomic.Int64
}

// phase is one timed run of an operation by Concurrency workers.
type phase struct {
	label    string        // for progress lines, e.g. "read on lethe"
	duration time.Duration // stop after this long, unless ops is set
	ops      int64         // stop after this many operations (errors count)
	server   *target       // server (all its gateways) to sample for memory, or nil
	seed     uint64
	// watch, when set, runs on a goroutine of its own for the phase's
	// life: it starts before the workers, can read the running count of
	// successful operations, and must return once done is closed, which
	// happens when the workers have stopped. The phase waits for it.
	watch func(ops func() int64, done <-chan struct{})
}

// phaseResult is what a phase measured.
type phaseResult struct {
	started     time.Time
	elapsed     time.Duration
	hist        Histogram
	ops, rows   int64
	ru          float64
	errs        map[string]int64
	errText     map[string]string
	errCount    int64
	peakRSS     int64
	interrupted bool
	drained     bool // a worker ran out of work (errNoneLeft) and stopped early
	// byOp are the successful operations and errors of the workers of each
	// of runPhase's ops (each gateway's), and how many workers ran it.
	byOp []opTotals
}

// opTotals are one op's share of a phase.
type opTotals struct {
	workers   int
	ops, errs int64
}

// runPhase runs ops in concurrency goroutines, worker i running ops[i %
// len(ops)] (with several gateways, one op per gateway), until ph's duration
// or operation count is reached, or ctx ends. An operation cut short by ctx
// is not counted, neither as a success nor as an error.
func (r *runner) runPhase(ctx context.Context, ops []opFunc, ph phase) *phaseResult {
	var (
		c       counters
		stop    atomic.Bool
		drained atomic.Bool
		tickets atomic.Int64
		wg      sync.WaitGroup
	)
	workers := make([]*worker, r.opts.Concurrency)
	res := &phaseResult{started: time.Now()}
	if ph.ops <= 0 {
		t := time.AfterFunc(ph.duration, func() { stop.Store(true) })
		defer t.Stop()
	}
	progressDone := make(chan struct{})
	progressStopped := make(chan struct{})
	go func() {
		defer close(progressStopped)
		r.progress(ph, &c, res, progressDone)
	}()
	watchDone := make(chan struct{})
	watchStopped := make(chan struct{})
	if ph.watch != nil {
		go func() {
			defer close(watchStopped)
			ph.watch(c.ops.Load, watchDone)
		}()
	} else {
		close(watchStopped)
	}
	for i := range workers {
		w := &worker{
			rng:      rand.New(rand.NewPCG(ph.seed, uint64(i))),
			errs:     map[string]int64{},
			errText:  map[string]string{},
			counters: &c,
		}
		workers[i] = w
		op := ops[i%len(ops)]
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				if ph.ops > 0 && tickets.Add(1) > ph.ops {
					return
				}
				t0 := time.Now()
				charge, err := op(ctx, w)
				d := time.Since(t0)
				if ctx.Err() != nil {
					return // interrupted: neither a result nor an error
				}
				if errors.Is(err, errNoneLeft) {
					drained.Store(true)
					return
				}
				if err != nil {
					class := errorClass(err)
					if w.errs[class] == 0 {
						w.errText[class] = truncate(err.Error(), 300)
					}
					w.errs[class]++
					c.errs.Add(1)
					continue
				}
				w.hist.Record(d)
				w.ops++
				w.ru += charge
				c.ops.Add(1)
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(res.started)
	close(progressDone)
	close(watchDone)
	<-progressStopped
	<-watchStopped
	res.interrupted = ctx.Err() != nil
	res.drained = drained.Load()
	res.errs, res.errText = map[string]int64{}, map[string]string{}
	res.byOp = make([]opTotals, len(ops))
	for i, w := range workers {
		by := &res.byOp[i%len(ops)]
		by.workers++
		by.ops += w.ops
		res.hist.Merge(&w.hist)
		res.ops += w.ops
		res.rows += w.rows
		res.ru += w.ru
		for k, n := range w.errs {
			if res.errs[k] == 0 {
				res.errText[k] = w.errText[k]
			}
			res.errs[k] += n
			res.errCount += n
			by.errs += n
		}
	}
	return res
}

// progress prints a line a second while a phase runs, and samples the
// server's memory (the sum over its gateways) for the phase's peak.
func (r *runner) progress(ph phase, c *counters, res *phaseResult, done <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	start := time.Now()
	var last int64
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		ops, errs := c.ops.Load(), c.errs.Load()
		secs := time.Since(start).Seconds()
		line := fmt.Sprintf("bench: %s: %3.0fs %9d ops %8.0f ops/s (last second %6d) %d errors", ph.label, secs, ops, float64(ops)/secs, ops-last, errs)
		last = ops
		if s, ok := ph.server.sample(); ok {
			res.peakRSS = max(res.peakRSS, s.RSS)
			line += fmt.Sprintf(", server RSS %.0f MB", mb(s.RSS))
		}
		fmt.Fprintln(r.opts.Progress, line)
	}
}

// errorClass names an error for the report: the HTTP status of an error
// response, or "timeout" or "transport".
func errorClass(err error) string {
	var re *azcore.ResponseError
	switch {
	case errors.As(err, &re):
		return strconv.Itoa(re.StatusCode)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	}
	return "transport"
}

// bytesPerMB is the megabyte of every report of the benchmark: 10^6 bytes.
const bytesPerMB = 1e6

// mb converts bytes to megabytes (bytesPerMB).
func mb(b int64) float64 { return float64(b) / bytesPerMB }
