package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// Repeated is the result of running one benchmark several times, each run
// starting its servers afresh (with Spawn): on a shared machine one run's
// figures move by more than most changes do, so comparisons rest on the
// median of several runs, and the runs' spread shows how far to trust it.
type Repeated struct {
	Runs []*Report `json:"runs"`
	// Medians has a row for each workload measured in every run, in the
	// order the workloads ran.
	Medians []*MedianRow `json:"medians"`
	// End is the servers' resident memory at the end of each run
	// (Report.End), over the runs that measured it.
	End EndSpread `json:"end_memory"`
}

// EndSpread is EndMemory over several runs, in bytes.
type EndSpread struct {
	ServerRSS   Spread `json:"server_rss_bytes"`
	ServerAnon  Spread `json:"server_anon_bytes"`
	CeilingRSS  Spread `json:"ceiling_rss_bytes"`
	CeilingAnon Spread `json:"ceiling_anon_bytes"`
}

// MedianRow is one workload's figures over the runs: each run's and their
// median. A figure a run did not measure (no ceiling, no local server) is
// left out of it.
type MedianRow struct {
	Workload string `json:"workload"`
	// Ratio is the server's ops/s over the ceiling's in the same run.
	Ratio     Spread `json:"ratio"`
	OpsPerSec Spread `json:"ops_per_sec"`
	// ServerCPUPerOp and CeilingCPUPerOp are microseconds of the server's
	// (the ceiling's) CPU per operation.
	ServerCPUPerOp  Spread `json:"server_cpu_us_per_op"`
	CeilingCPUPerOp Spread `json:"ceiling_cpu_us_per_op"`
	// RSSBytes is the server's resident memory at the end of the workload.
	RSSBytes Spread `json:"rss_bytes"`
}

// Spread is a figure measured once per run: every run's value, in run order,
// and their median (the mean of the middle two for an even count).
type Spread struct {
	Median float64   `json:"median"`
	Runs   []float64 `json:"runs"`
}

func (s *Spread) add(v float64) { s.Runs = append(s.Runs, v) }

func (s *Spread) settle() {
	v := slices.Sorted(slices.Values(s.Runs))
	switch n := len(v); {
	case n == 0:
		s.Median = 0
	case n%2 == 1:
		s.Median = v[n/2]
	default:
		s.Median = (v[n/2-1] + v[n/2]) / 2
	}
}

// RunRepeated runs the benchmark o describes n times, one Run after the
// other, and summarizes every workload that completed in each run with
// its median figures. It stops early when ctx ends or a run fails; the
// result then holds the runs made so far.
func RunRepeated(ctx context.Context, o *Options, n int) (*Repeated, error) {
	if n < 1 {
		return nil, fmt.Errorf("bench: %d runs: want at least one", n)
	}
	if o != nil && slices.ContainsFunc(o.Workloads, func(w string) bool { return workloads[w].sustained }) {
		return nil, fmt.Errorf("bench: ttl-sustained repeats its runs itself (Options.Rounds): run it on its own")
	}
	rep := &Repeated{}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		if o != nil && o.Progress != nil {
			fmt.Fprintf(o.Progress, "run %d of %d\n", i+1, n)
		}
		r, err := Run(ctx, o)
		if r != nil {
			rep.Runs = append(rep.Runs, r)
		}
		if err != nil {
			rep.summarize()
			return rep, err
		}
		if r.Interrupted {
			break
		}
	}
	rep.summarize()
	return rep, nil
}

// summarize fills Medians from the runs that were not interrupted: a row
// for each workload that every one of them measured without error.
func (rep *Repeated) summarize() {
	rep.Medians = nil
	rep.End = EndSpread{}
	runs := rep.complete()
	if len(runs) == 0 {
		return
	}
	for _, run := range runs {
		e := run.End
		if e == nil {
			continue
		}
		if e.Server != nil {
			rep.End.ServerRSS.add(float64(e.Server.RSSBytes))
			rep.End.ServerAnon.add(float64(e.Server.AnonBytes))
		}
		if e.Ceiling != nil {
			rep.End.CeilingRSS.add(float64(e.Ceiling.RSSBytes))
			rep.End.CeilingAnon.add(float64(e.Ceiling.AnonBytes))
		}
	}
	for _, s := range []*Spread{&rep.End.ServerRSS, &rep.End.ServerAnon, &rep.End.CeilingRSS, &rep.End.CeilingAnon} {
		s.settle()
	}
	for _, first := range runs[0].Workloads {
		row := &MedianRow{Workload: first.Workload}
		complete := true
		for _, run := range runs {
			i := slices.IndexFunc(run.Workloads, func(res *Result) bool { return res.Workload == first.Workload })
			if i < 0 || run.Workloads[i].Ops == 0 || run.Workloads[i].Error != "" {
				complete = false
				break
			}
			res := run.Workloads[i]
			row.OpsPerSec.add(res.OpsPerSec)
			if res.Ratio != nil {
				row.Ratio.add(res.Ratio.OpsPerSec)
			}
			if s := res.Server; s != nil {
				row.ServerCPUPerOp.add(s.CPUPerOp)
				row.RSSBytes.add(float64(s.RSSBytes))
			}
			if res.Ceiling != nil && res.Ceiling.Server != nil {
				row.CeilingCPUPerOp.add(res.Ceiling.Server.CPUPerOp)
			}
		}
		if !complete {
			continue
		}
		for _, s := range []*Spread{&row.Ratio, &row.OpsPerSec, &row.ServerCPUPerOp, &row.CeilingCPUPerOp, &row.RSSBytes} {
			s.settle()
		}
		rep.Medians = append(rep.Medians, row)
	}
}

// complete returns the runs that were not interrupted: an interrupted run's
// last workload covers only part of its time, so it is left out of the
// medians.
func (rep *Repeated) complete() []*Report {
	var runs []*Report
	for _, r := range rep.Runs {
		if !r.Interrupted {
			runs = append(runs, r)
		}
	}
	return runs
}

// WriteText writes every run's report, then the medians as a table.
func (rep *Repeated) WriteText(w io.Writer) {
	for i, r := range rep.Runs {
		fmt.Fprintf(w, "== run %d of %d\n", i+1, len(rep.Runs))
		r.WriteText(w)
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "== median of %d runs (each run's figure in brackets, in run order)\n", len(rep.complete()))
	if n := len(rep.Runs) - len(rep.complete()); n > 0 {
		fmt.Fprintf(w, "(%d interrupted run left out)\n", n)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tx ceiling\tops/s\tsrv CPU us/op\tceiling CPU us/op\tRSS MB\t")
	for _, m := range rep.Medians {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", m.Workload,
			m.Ratio.format("%.2f", 1), m.OpsPerSec.format("%.0f", 1), m.ServerCPUPerOp.format("%.0f", 1),
			m.CeilingCPUPerOp.format("%.0f", 1), m.RSSBytes.format("%.0f", bytesPerMB))
	}
	tw.Flush()
	if e := rep.End; len(e.ServerRSS.Runs) > 0 || len(e.CeilingRSS.Runs) > 0 {
		fmt.Fprintln(w, "memory at the end of the run, MB:")
		if len(e.ServerRSS.Runs) > 0 {
			fmt.Fprintf(w, "  server   %s resident, %s anonymous\n", e.ServerRSS.format("%.1f", bytesPerMB), e.ServerAnon.format("%.1f", bytesPerMB))
		}
		if len(e.CeilingRSS.Runs) > 0 {
			fmt.Fprintf(w, "  ceiling  %s resident, %s anonymous\n", e.CeilingRSS.format("%.1f", bytesPerMB), e.CeilingAnon.format("%.1f", bytesPerMB))
		}
	}
}

// format writes the median and the runs' values, each divided by unit; an
// empty string when no run measured the figure.
func (s Spread) format(verb string, unit float64) string {
	if len(s.Runs) == 0 {
		return ""
	}
	runs := make([]string, len(s.Runs))
	for i, v := range s.Runs {
		runs[i] = fmt.Sprintf(verb, v/unit)
	}
	return fmt.Sprintf(verb, s.Median/unit) + " [" + strings.Join(runs, " ") + "]"
}

// WriteJSON writes the runs and the medians to path as indented JSON.
func (rep *Repeated) WriteJSON(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
