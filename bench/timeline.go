package bench

// Sample is one reading of a ttl-sustained run, taken when the measured
// phase starts, once a second while it runs, and once more as it ends.
// Rates are over the time since the previous sample; levels and totals are
// at the moment of the sample. A figure that could not be read (a failed
// scrape, no data directory to measure, a server that is not local) is
// absent.
type Sample struct {
	// T is the time since the measured phase started, seconds.
	T float64 `json:"t"`
	// Ops is the successful operations since the previous sample, and
	// OpsPerSec their rate.
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	// TTL is the server's purge figures, from its /metrics.
	TTL *TTLMetrics `json:"ttl,omitempty"`
	// DataDirBytes is the server's data directory's disk usage, bytes (as
	// du counts it: allocated blocks, so Pebble's preallocated write-ahead
	// logs count in full), and DataDirFileBytes the sum of its files' sizes
	// (as du --apparent-size counts it: what they hold).
	DataDirBytes     *int64 `json:"data_dir_bytes,omitempty"`
	DataDirFileBytes *int64 `json:"data_dir_file_bytes,omitempty"`
	// ServerCPUSec is the CPU time the server process has used so far,
	// seconds, and ServerCores the cores it used since the previous sample;
	// ServerRSSBytes its resident memory (all from /proc).
	ServerCPUSec   *float64 `json:"server_cpu_sec,omitempty"`
	ServerCores    *float64 `json:"server_cores,omitempty"`
	ServerRSSBytes *int64   `json:"server_rss_bytes,omitempty"`
}

// SustainedSummary is what a ttl-sustained run's timeline comes to. The
// steady state is the second half of the run (by time): the backlog only
// starts to build TTL seconds in. Figures the timeline lacks are absent.
type SustainedSummary struct {
	// SteadyOpsPerSec is the foreground rate over the second half of the
	// run, from the first sample at or past its middle to the last: the
	// purge has work all along only once the first documents expire.
	SteadyOpsPerSec *float64 `json:"steady_ops_per_sec,omitempty"`
	// PendingDocsEnd and PendingBytesEnd are the expired documents not yet
	// deleted, at the last sample that has them.
	PendingDocsEnd  *float64 `json:"pending_docs_end,omitempty"`
	PendingBytesEnd *float64 `json:"pending_bytes_end,omitempty"`
	// OldestAgeSteadyMaxSec is the largest oldest-pending age, seconds, over
	// the second half of the run.
	OldestAgeSteadyMaxSec *float64 `json:"oldest_pending_age_steady_max_sec,omitempty"`
	// DataDirBytesEnd is the data directory's disk usage at the end, and
	// DataDirGrowthBytesPerSec its growth over the second half of the run:
	// the least-squares slope, so that a single flush or compaction at
	// either end does not decide it. The File figures are the same for the
	// sum of its files' sizes (Sample).
	DataDirBytesEnd              *int64   `json:"data_dir_bytes_end,omitempty"`
	DataDirGrowthBytesPerSec     *float64 `json:"data_dir_growth_bytes_per_sec,omitempty"`
	DataDirFileBytesEnd          *int64   `json:"data_dir_file_bytes_end,omitempty"`
	DataDirFileGrowthBytesPerSec *float64 `json:"data_dir_file_growth_bytes_per_sec,omitempty"`
	// PurgedPerSec is the documents purged per second, and DeferredBatches
	// the purge batches deferred, over the whole run.
	PurgedPerSec    *float64 `json:"purged_per_sec,omitempty"`
	DeferredBatches *float64 `json:"purge_deferred,omitempty"`
	// ServerCores is the mean number of cores the server used over the run.
	ServerCores *float64 `json:"server_cores,omitempty"`
	// PurgeBusyCores is the purge's busy time per second over the run (a
	// share of one core), and PurgeShareEnd the share the purge was allowed
	// at the end; both only from servers that export them.
	PurgeBusyCores *float64 `json:"purge_busy_cores,omitempty"`
	PurgeShareEnd  *float64 `json:"purge_share_end,omitempty"`
	// WriteStallSec is how long the store stopped writes over the run.
	WriteStallSec *float64 `json:"write_stall_sec,omitempty"`
}

// summarize computes the summary of a timeline (samples in time order).
func summarize(samples []Sample) SustainedSummary {
	var s SustainedSummary
	if len(samples) == 0 {
		return s
	}
	half := samples[len(samples)-1].T / 2
	firstTTL, lastTTL := -1, -1
	firstCPU, lastCPU := -1, -1
	var steady []Sample
	for i, x := range samples {
		if x.TTL != nil {
			if firstTTL < 0 {
				firstTTL = i
			}
			lastTTL = i
			if x.T >= half && (s.OldestAgeSteadyMaxSec == nil || x.TTL.OldestPendingAgeSec > *s.OldestAgeSteadyMaxSec) {
				s.OldestAgeSteadyMaxSec = ptr(x.TTL.OldestPendingAgeSec)
			}
		}
		if x.ServerCPUSec != nil {
			if firstCPU < 0 {
				firstCPU = i
			}
			lastCPU = i
		}
		if x.DataDirBytes != nil {
			s.DataDirBytesEnd = ptr(*x.DataDirBytes)
		}
		if x.DataDirFileBytes != nil {
			s.DataDirFileBytesEnd = ptr(*x.DataDirFileBytes)
		}
		if x.T >= half {
			steady = append(steady, x)
		}
	}
	if lastTTL >= 0 {
		a, b := samples[firstTTL].TTL, samples[lastTTL].TTL
		s.PendingDocsEnd, s.PendingBytesEnd = ptr(b.PendingDocs), ptr(b.PendingBytes)
		s.PurgeShareEnd = b.PurgeShare
		s.DeferredBatches = ptr(b.DeferredTotal - a.DeferredTotal)
		if dt := samples[lastTTL].T - samples[firstTTL].T; dt > 0 {
			s.PurgedPerSec = ptr((b.PurgedTotal - a.PurgedTotal) / dt)
			if a.PurgeBusySecTotal != nil && b.PurgeBusySecTotal != nil {
				s.PurgeBusyCores = ptr((*b.PurgeBusySecTotal - *a.PurgeBusySecTotal) / dt)
			}
		}
		if a.WriteStallSecTotal != nil && b.WriteStallSecTotal != nil {
			s.WriteStallSec = ptr(*b.WriteStallSecTotal - *a.WriteStallSecTotal)
		}
	}
	if len(steady) >= 2 {
		var ops int64
		for _, x := range steady[1:] {
			ops += x.Ops
		}
		if dt := steady[len(steady)-1].T - steady[0].T; dt > 0 {
			s.SteadyOpsPerSec = ptr(float64(ops) / dt)
		}
	}
	if lastCPU >= 0 {
		if dt := samples[lastCPU].T - samples[firstCPU].T; dt > 0 {
			s.ServerCores = ptr((*samples[lastCPU].ServerCPUSec - *samples[firstCPU].ServerCPUSec) / dt)
		}
	}
	if slope, ok := growth(steady, func(x Sample) *int64 { return x.DataDirBytes }); ok {
		s.DataDirGrowthBytesPerSec = &slope
	}
	if slope, ok := growth(steady, func(x Sample) *int64 { return x.DataDirFileBytes }); ok {
		s.DataDirFileGrowthBytesPerSec = &slope
	}
	return s
}

// growth is the least-squares slope over time of the figure of the samples
// that have it, per second; ok is false with fewer than two distinct times.
func growth(samples []Sample, figure func(Sample) *int64) (slope float64, ok bool) {
	var ts, ys []float64
	for _, x := range samples {
		if y := figure(x); y != nil {
			ts, ys = append(ts, x.T), append(ys, float64(*y))
		}
	}
	n := float64(len(ts))
	if n < 2 {
		return 0, false
	}
	var st, sy float64
	for i := range ts {
		st += ts[i]
		sy += ys[i]
	}
	mt, my := st/n, sy/n
	var num, den float64
	for i := range ts {
		dt := ts[i] - mt
		num += dt * (ys[i] - my)
		den += dt * dt
	}
	if den == 0 {
		return 0, false
	}
	return num / den, true
}

// timelineRow is one row of the text report's timeline: every figure over
// the interval that ends at T, or at T for levels.
type timelineRow struct {
	T                float64
	OpsPerSec        float64
	PendingDocs      *float64
	OldestAgeSec     *float64
	DataDirBytes     *int64
	DataDirFileBytes *int64
	ServerCores      *float64
	PurgeShare       *float64
	PurgedPerSec     *float64
}

// timelineRows groups the samples after the first (the start) into rows of
// every samples each (the last row may have fewer): rates are over the row's
// time, from the sample before it to its last; levels are its last
// sample's.
func timelineRows(samples []Sample, every int) []timelineRow {
	every = max(every, 1)
	var rows []timelineRow
	for i := 1; i < len(samples); i += every {
		end := min(i+every, len(samples)) - 1
		a, b := samples[i-1], samples[end]
		dt := b.T - a.T
		row := timelineRow{T: b.T, DataDirBytes: b.DataDirBytes, DataDirFileBytes: b.DataDirFileBytes}
		var ops int64
		for _, x := range samples[i : end+1] {
			ops += x.Ops
		}
		if dt > 0 {
			row.OpsPerSec = float64(ops) / dt
			if a.ServerCPUSec != nil && b.ServerCPUSec != nil {
				row.ServerCores = ptr((*b.ServerCPUSec - *a.ServerCPUSec) / dt)
			}
			if a.TTL != nil && b.TTL != nil {
				row.PurgedPerSec = ptr((b.TTL.PurgedTotal - a.TTL.PurgedTotal) / dt)
			}
		}
		if b.TTL != nil {
			row.PendingDocs, row.OldestAgeSec, row.PurgeShare = ptr(b.TTL.PendingDocs), ptr(b.TTL.OldestPendingAgeSec), b.TTL.PurgeShare
		}
		rows = append(rows, row)
	}
	return rows
}

func ptr[T any](v T) *T { return &v }
