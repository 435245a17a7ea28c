package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// writeText writes each run's timeline, a row per every samples, and the
// runs' summaries side by side.
func (s *SustainedResult) writeText(w io.Writer, workload string, every int) {
	for _, run := range s.Runs {
		if run.Measurement == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s on %s", workload, run.Server.Name)
		if run.Server.Command != "" {
			fmt.Fprintf(w, " (%s)", run.Server.Command)
		}
		if run.Server.PID > 0 {
			fmt.Fprintf(w, ", pid %d", run.Server.PID)
		}
		fmt.Fprintln(w, ":")
		writeTimeline(w, timelineRows(run.Timeline, every))
	}
	s.writeSummary(w, workload)
}

// column is one column of a text table: its heading, and each row's cell
// ("-" for a figure it lacks).
type column[R any] struct {
	head string
	cell func(R) string
}

func writeTimeline(w io.Writer, rows []timelineRow) {
	cols := []column[timelineRow]{
		{"t s", func(r timelineRow) string { return fmt.Sprintf("%.0f", r.T) }},
		{"ops/s", func(r timelineRow) string { return fmt.Sprintf("%.0f", r.OpsPerSec) }},
		{"pending docs", func(r timelineRow) string { return num(r.PendingDocs, "%.0f", 1) }},
		{"oldest pending s", func(r timelineRow) string { return num(r.OldestAgeSec, "%.0f", 1) }},
	}
	has := func(f func(timelineRow) bool) bool {
		for _, r := range rows {
			if f(r) {
				return true
			}
		}
		return false
	}
	if has(func(r timelineRow) bool { return r.DataDirBytes != nil }) {
		cols = append(cols,
			column[timelineRow]{"data dir MB", func(r timelineRow) string { return num(mbOf(r.DataDirBytes), "%.1f", 1) }},
			column[timelineRow]{"files MB", func(r timelineRow) string { return num(mbOf(r.DataDirFileBytes), "%.1f", 1) }})
	}
	if has(func(r timelineRow) bool { return r.ServerCores != nil }) {
		cols = append(cols, column[timelineRow]{"srv cores", func(r timelineRow) string { return num(r.ServerCores, "%.2f", 1) }})
	}
	if has(func(r timelineRow) bool { return r.PurgeShare != nil }) {
		cols = append(cols, column[timelineRow]{"purge share", func(r timelineRow) string { return num(r.PurgeShare, "%.3f", 1) }})
	}
	cols = append(cols, column[timelineRow]{"purged/s", func(r timelineRow) string { return num(r.PurgedPerSec, "%.0f", 1) }})
	writeTable(w, cols, rows)
}

func writeTable[R any](w io.Writer, cols []column[R], rows []R) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, c := range cols {
		fmt.Fprintf(tw, "%s\t", c.head)
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		for _, c := range cols {
			fmt.Fprintf(tw, "%s\t", c.cell(r))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// writeSummary writes a figure per line and a run per column, and for a
// purge-off and a purge-on run, their foreground ops/s ratio.
func (s *SustainedResult) writeSummary(w io.Writer, workload string) {
	var runs []*SustainedRun
	for _, run := range s.Runs {
		if run.Measurement != nil {
			runs = append(runs, run)
		}
	}
	if len(runs) == 0 {
		return
	}
	type line struct {
		label string
		cell  func(*SustainedRun) string
		ratio string
	}
	lines := []line{
		{"foreground ops/s", func(r *SustainedRun) string { return fmt.Sprintf("%.0f", r.Measurement.OpsPerSec) }, ""},
		{"foreground ops/s, 2nd half", func(r *SustainedRun) string { return num(r.Summary.SteadyOpsPerSec, "%.0f", 1) }, ""},
		{"p50 latency ms", func(r *SustainedRun) string { return fmt.Sprintf("%.3f", r.Measurement.Latency.P50/1000) }, ""},
		{"p99 latency ms", func(r *SustainedRun) string { return fmt.Sprintf("%.3f", r.Measurement.Latency.P99/1000) }, ""},
		{"errors", func(r *SustainedRun) string { return fmt.Sprintf("%d", r.Measurement.Errors) }, ""},
		{"pending docs at the end", func(r *SustainedRun) string { return num(r.Summary.PendingDocsEnd, "%.0f", 1) }, ""},
		{"pending MB at the end", func(r *SustainedRun) string { return num(r.Summary.PendingBytesEnd, "%.1f", 1/bytesPerMB) }, ""},
		{"oldest pending s, max over 2nd half", func(r *SustainedRun) string { return num(r.Summary.OldestAgeSteadyMaxSec, "%.0f", 1) }, ""},
		{"data dir MB at the end (du)", func(r *SustainedRun) string { return num(mbOf(r.Summary.DataDirBytesEnd), "%.1f", 1) }, ""},
		{"data dir growth MB/s, 2nd half (du)", func(r *SustainedRun) string {
			return num(r.Summary.DataDirGrowthBytesPerSec, "%.2f", 1/bytesPerMB)
		}, ""},
		{"data dir files MB at the end", func(r *SustainedRun) string { return num(mbOf(r.Summary.DataDirFileBytesEnd), "%.1f", 1) }, ""},
		{"data dir files growth MB/s, 2nd half", func(r *SustainedRun) string {
			return num(r.Summary.DataDirFileGrowthBytesPerSec, "%.2f", 1/bytesPerMB)
		}, ""},
		{"purged docs/s", func(r *SustainedRun) string { return num(r.Summary.PurgedPerSec, "%.0f", 1) }, ""},
		{"purge batches deferred", func(r *SustainedRun) string { return num(r.Summary.DeferredBatches, "%.0f", 1) }, ""},
		{"server CPU cores, mean", func(r *SustainedRun) string { return num(r.Summary.ServerCores, "%.2f", 1) }, ""},
	}
	if s.OpsRatio > 0 {
		lines[0].ratio = fmt.Sprintf("%.2f", s.OpsRatio)
	}
	if s.SteadyOpsRatio > 0 {
		lines[1].ratio = fmt.Sprintf("%.2f", s.SteadyOpsRatio)
	}
	if !slices.ContainsFunc(runs, func(r *SustainedRun) bool { return r.Summary.DataDirBytesEnd != nil }) {
		lines = slices.DeleteFunc(lines, func(l line) bool { return strings.HasPrefix(l.label, "data dir") })
	}
	for _, r := range runs {
		if r.Summary.PurgeBusyCores != nil || r.Summary.PurgeShareEnd != nil {
			lines = append(lines,
				line{"purge busy cores, mean", func(r *SustainedRun) string { return num(r.Summary.PurgeBusyCores, "%.3f", 1) }, ""},
				line{"purge share at the end", func(r *SustainedRun) string { return num(r.Summary.PurgeShareEnd, "%.3f", 1) }, ""})
			break
		}
	}
	if slices.ContainsFunc(runs, func(r *SustainedRun) bool { return r.Summary.WriteStallSec != nil }) {
		lines = append(lines, line{"writes stopped s (store stalls)", func(r *SustainedRun) string { return num(r.Summary.WriteStallSec, "%.2f", 1) }, ""})
	}
	width := 0
	for _, l := range lines {
		width = max(width, len(l.label))
	}
	fmt.Fprintf(w, "\n%s summary (steady state: the second half of each run):\n", workload)
	// Right-aligned cells; the labels padded to one width read left-aligned.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\t", width, "")
	for _, r := range runs {
		name := r.Server.Name
		if r.Purge != "" {
			name = "purge " + r.Purge
		}
		if len(s.Rounds) > 1 {
			name = fmt.Sprintf("%s #%d", name, r.Round)
		}
		fmt.Fprintf(tw, "%s\t", name)
	}
	if s.OpsRatio > 0 {
		if len(s.Rounds) > 1 {
			fmt.Fprint(tw, "median on/off\t")
		} else {
			fmt.Fprint(tw, "on/off\t")
		}
	}
	fmt.Fprintln(tw)
	for _, l := range lines {
		cells := []string{fmt.Sprintf("%-*s", width, l.label)}
		for _, r := range runs {
			cells = append(cells, l.cell(r))
		}
		if s.OpsRatio > 0 {
			cells = append(cells, l.ratio)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()
	if len(s.Rounds) > 1 {
		fmt.Fprintln(w, "  on/off by round (foreground ops/s over the run; over its 2nd half):")
		for _, rr := range s.Rounds {
			fmt.Fprintf(w, "    round %d: %.2f; %.2f\n", rr.Round, rr.OpsRatio, rr.SteadyOpsRatio)
		}
	}
}

// notes are the runs' problems for the report's notes: what they could not
// read.
func (s *SustainedResult) notes(workload string) []string {
	var out []string
	for _, run := range s.Runs {
		if run.Measurement == nil {
			continue
		}
		where := workload + " on " + run.Server.Name
		switch {
		case run.ScrapeErrors > 0:
			out = append(out, fmt.Sprintf("%s: %d of %d metrics scrapes failed, e.g. %s", where, run.ScrapeErrors, len(run.Timeline), run.ScrapeError))
		case run.ScrapeError != "":
			out = append(out, fmt.Sprintf("%s: no metrics: %s", where, run.ScrapeError))
		}
		if run.DirErrors > 0 {
			out = append(out, fmt.Sprintf("%s: %d of %d data directory sizes failed, e.g. %s", where, run.DirErrors, len(run.Timeline), run.DirError))
		}
	}
	return out
}

// mbOf converts bytes to MB, keeping nil.
func mbOf(b *int64) *float64 {
	if b == nil {
		return nil
	}
	return ptr(mb(*b))
}

// num formats *v times scale, or "-" when v is nil.
func num(v *float64, format string, scale float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v*scale)
}
