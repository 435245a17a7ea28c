package bench

import (
	"math"
	"testing"
)

// synthetic returns a timeline of n+1 samples a second apart (t = 0..n):
// 1,000 ops/s; the server using half a core; the purge purging 100 docs/s
// with 2 deferrals/s and busy a tenth of the time; the data directory
// growing 1 MB/s from 10 MB, its files 0.5 MB/s from 5 MB; pending docs rising by 50/s; the oldest age
// equal to t, except a spike of 99 at t = 1 (first half).
func synthetic(n int) []Sample {
	var out []Sample
	for i := 0; i <= n; i++ {
		t := float64(i)
		x := Sample{T: t, ServerCPUSec: ptr(10 + t/2), DataDirBytes: ptr(int64(10<<20 + i<<20)), DataDirFileBytes: ptr(int64(5<<20 + i<<19))}
		if i > 0 {
			x.Ops, x.OpsPerSec = 1000, 1000
		}
		age := t
		if i == 1 {
			age = 99
		}
		x.TTL = &TTLMetrics{
			PendingDocs: 50 * t, PendingBytes: 50 * 1024 * t, OldestPendingAgeSec: age,
			PurgedTotal: 500 + 100*t, DeferredTotal: 7 + 2*t,
			PurgeShare: ptr(0.1 * t), PurgeBusySecTotal: ptr(3 + 0.1*t), WriteStallSecTotal: ptr(1 + 0.25*t),
		}
		out = append(out, x)
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSummarize(t *testing.T) {
	s := summarize(synthetic(10))
	checks := []struct {
		name string
		got  *float64
		want float64
	}{
		{"pending docs at the end", s.PendingDocsEnd, 500},
		{"pending bytes at the end", s.PendingBytesEnd, 500 * 1024},
		{"oldest age, max over t >= 5 (the spike at t = 1 is not steady state)", s.OldestAgeSteadyMaxSec, 10},
		{"data dir growth", s.DataDirGrowthBytesPerSec, 1 << 20},
		{"data dir files growth", s.DataDirFileGrowthBytesPerSec, 1 << 19},
		{"purged/s", s.PurgedPerSec, 100},
		{"deferred over the run", s.DeferredBatches, 20},
		{"server cores", s.ServerCores, 0.5},
		{"purge busy cores", s.PurgeBusyCores, 0.1},
		{"purge share at the end", s.PurgeShareEnd, 1},
		{"writes stopped over the run", s.WriteStallSec, 2.5},
	}
	for _, c := range checks {
		if c.got == nil || !near(*c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, deref(c.got), c.want)
		}
	}
	if s.DataDirBytesEnd == nil || *s.DataDirBytesEnd != 20<<20 || s.DataDirFileBytesEnd == nil || *s.DataDirFileBytesEnd != 10<<20 {
		t.Errorf("data dir at the end: %v, files %v, want 20 MB and 10 MB", deref(s.DataDirBytesEnd), deref(s.DataDirFileBytesEnd))
	}
}

// TestSummarizeGaps: failed scrapes and a missing /proc reading leave
// figures out, or are stepped over; the growth is a fit, not the ends.
func TestSummarizeGaps(t *testing.T) {
	tl := synthetic(10)
	tl[0].TTL, tl[10].TTL = nil, nil // first and last scrape failed
	for i := range tl {
		tl[i].ServerCPUSec = nil
	}
	// A flush at the very end, and a dip at t = 5: the least-squares slope
	// over t >= 5 is not the end points' 3 MB/s.
	*tl[10].DataDirBytes += 10 << 20
	*tl[5].DataDirBytes -= 2 << 20
	tl[7].DataDirFileBytes = nil // a failed walk: the files' fit has the rest
	s := summarize(tl)
	if s.PendingDocsEnd == nil || *s.PendingDocsEnd != 450 {
		t.Errorf("pending docs at the end: %v, want t = 9's 450", deref(s.PendingDocsEnd))
	}
	if s.PurgedPerSec == nil || !near(*s.PurgedPerSec, 100) || s.DeferredBatches == nil || !near(*s.DeferredBatches, 16) {
		t.Errorf("purged/s %v, deferred %v: want 100 and 16 (t = 1 to 9)", deref(s.PurgedPerSec), deref(s.DeferredBatches))
	}
	if s.ServerCores != nil {
		t.Errorf("server cores %v without /proc readings", *s.ServerCores)
	}
	// Sizes over t = 5..10, MB: 13 16 17 18 19 30. Slope: sum((t-7.5)(y-ybar)) / sum((t-7.5)^2).
	ts := []float64{5, 6, 7, 8, 9, 10}
	ys := []float64{13, 16, 17, 18, 19, 30}
	var num, den, ybar float64
	for _, y := range ys {
		ybar += y / 6
	}
	for i := range ts {
		num += (ts[i] - 7.5) * (ys[i] - ybar)
		den += (ts[i] - 7.5) * (ts[i] - 7.5)
	}
	if g := s.DataDirGrowthBytesPerSec; g == nil || !near(*g/(1<<20), num/den) || near(*g/(1<<20), 3) {
		t.Errorf("growth %v MB/s, want the fit's %v", deref(g), num/den)
	}

	if g := s.DataDirFileGrowthBytesPerSec; g == nil || !near(*g, 1<<19) {
		t.Errorf("files growth %v, want 0.5 MB/s", deref(g))
	}

	if s := summarize(nil); s != (SustainedSummary{}) {
		t.Errorf("empty timeline: %+v", s)
	}
	one := summarize(synthetic(0))
	if one.PurgedPerSec != nil || one.DataDirGrowthBytesPerSec != nil || one.PendingDocsEnd == nil {
		t.Errorf("one sample: %+v, want levels and no rates", one)
	}
}

func TestTimelineRows(t *testing.T) {
	tl := synthetic(10)
	tl[7].Ops = 4000 // a fast second inside the second row
	rows := timelineRows(tl, 4)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3 (t = 4, 8, 10)", len(rows))
	}
	want := []struct{ t, ops float64 }{{4, 1000}, {8, 1750}, {10, 1000}}
	for i, r := range rows {
		if r.T != want[i].t || !near(r.OpsPerSec, want[i].ops) {
			t.Errorf("row %d: t %v, %v ops/s, want t %v, %v ops/s", i, r.T, r.OpsPerSec, want[i].t, want[i].ops)
		}
		if r.PendingDocs == nil || *r.PendingDocs != 50*r.T || r.OldestAgeSec == nil || *r.OldestAgeSec != r.T {
			t.Errorf("row %d: pending %v, oldest %v: want the last sample's", i, deref(r.PendingDocs), deref(r.OldestAgeSec))
		}
		if r.PurgedPerSec == nil || !near(*r.PurgedPerSec, 100) || r.ServerCores == nil || !near(*r.ServerCores, 0.5) {
			t.Errorf("row %d: purged/s %v, cores %v, want 100 and 0.5", i, deref(r.PurgedPerSec), deref(r.ServerCores))
		}
		if r.DataDirBytes == nil || *r.DataDirBytes != int64(10<<20+int(r.T)<<20) || r.PurgeShare == nil || !near(*r.PurgeShare, 0.1*r.T) {
			t.Errorf("row %d: data dir %v, share %v", i, deref(r.DataDirBytes), deref(r.PurgeShare))
		}
	}
	// A failed scrape at a row's end leaves its levels and purge rate out.
	tl[4].TTL = nil
	if r := timelineRows(tl, 4)[0]; r.PendingDocs != nil || r.PurgedPerSec != nil || r.OpsPerSec != 1000 {
		t.Errorf("row without metrics: %+v", r)
	}
	if rows := timelineRows(tl[:1], 5); len(rows) != 0 {
		t.Errorf("only the start: %d rows", len(rows))
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestSummarizeSteadyOps: the steady-state rate counts only the operations
// after the first sample at or past the middle of the run.
func TestSummarizeSteadyOps(t *testing.T) {
	tl := synthetic(10)
	for i := 6; i <= 10; i++ { // (5, 10]: 400 ops/s instead of 1,000
		tl[i].Ops, tl[i].OpsPerSec = 400, 400
	}
	s := summarize(tl)
	if s.SteadyOpsPerSec == nil || !near(*s.SteadyOpsPerSec, 400) {
		t.Errorf("steady ops/s = %v, want 400", deref(s.SteadyOpsPerSec))
	}
	r := &SustainedResult{Runs: []*SustainedRun{
		{Purge: "off", Measurement: &Measurement{OpsPerSec: 1000}, Summary: SustainedSummary{SteadyOpsPerSec: ptr(800.0)}},
		{Purge: "on", Measurement: &Measurement{OpsPerSec: 900}, Summary: SustainedSummary{SteadyOpsPerSec: ptr(600.0)}},
	}}
	r.compare()
	if !near(r.OpsRatio, 0.9) || !near(r.SteadyOpsRatio, 0.75) {
		t.Errorf("ratios %v and %v, want 0.9 over the run and 0.75 in steady state", r.OpsRatio, r.SteadyOpsRatio)
	}
}

// TestRoundsMedian: with several rounds the comparison pairs each round's
// runs, whatever their order, and takes the median of the rounds' ratios.
func TestRoundsMedian(t *testing.T) {
	run := func(round int, purge string, ops, steady float64) *SustainedRun {
		return &SustainedRun{Round: round, Purge: purge, Measurement: &Measurement{OpsPerSec: ops}, Summary: SustainedSummary{SteadyOpsPerSec: ptr(steady)}}
	}
	r := &SustainedResult{Runs: []*SustainedRun{
		run(1, "off", 1000, 1000), run(1, "on", 900, 800), // 0.9, 0.8
		run(2, "on", 1200, 1100), run(2, "off", 1000, 1000), // 1.2, 1.1
		run(3, "off", 1000, 1000), run(3, "on", 950, 700), // 0.95, 0.7
		run(4, "on", 500, 500), // a round cut short: no pair, no ratio
	}}
	r.compare()
	if len(r.Rounds) != 3 {
		t.Fatalf("rounds %+v, want the three complete pairs", r.Rounds)
	}
	if r.Rounds[1].Round != 2 || !near(r.Rounds[1].OpsRatio, 1.2) || !near(r.Rounds[1].SteadyOpsRatio, 1.1) {
		t.Errorf("round 2 (purge on first) = %+v, want ratios 1.2 and 1.1", r.Rounds[1])
	}
	if !near(r.OpsRatio, 0.95) || !near(r.SteadyOpsRatio, 0.8) {
		t.Errorf("medians %v and %v, want 0.95 and 0.8", r.OpsRatio, r.SteadyOpsRatio)
	}
	if got := median([]float64{3, 1, 2, 4}); !near(got, 2.5) {
		t.Errorf("median of an even count = %v, want 2.5", got)
	}
}
