package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the result of a run: what was run, where, and what each workload
// measured. It is written as text (WriteText) and as JSON (WriteJSON).
type Report struct {
	Version     string    `json:"version,omitempty"` // of the lethe binary running the benchmark
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	Interrupted bool      `json:"interrupted"`
	Params      Params    `json:"params"`
	Machine     Machine   `json:"machine"`
	// Server is the server measured; with several gateways, the first,
	// through which the set-up went.
	Server ServerInfo `json:"server"`
	// Gateways are the server's gateways (separate processes or endpoints
	// over one store) the workers were spread over, round-robin: Server
	// alone, or every gateway, Server first.
	Gateways  []ServerInfo `json:"gateways"`
	Ceiling   *ServerInfo  `json:"ceiling,omitempty"`
	Fsync     *FsyncResult `json:"fsync_probe,omitempty"`
	Populate  *Populate    `json:"populate,omitempty"`
	Workloads []*Result    `json:"workloads"`
	// End is the servers' resident memory after the last workload: what
	// the whole run left them holding, where each workload's RSS is the
	// figure at its own end, under load. With a ceiling, a last workload
	// that writes ran on the ceiling after the server, which was idle
	// meanwhile and may have given memory back.
	End *EndMemory `json:"end_memory,omitempty"`
	// Problems lists what went wrong outside the counted operations: a
	// workload that could not be set up, a server that exited early.
	Problems []string `json:"problems,omitempty"`
}

// Params are the run's parameters.
type Params struct {
	Endpoint string `json:"endpoint"` // as given, comma-separated when several; "" when spawned
	Spawn    bool   `json:"spawn"`
	// Gateways is the number of gateways (spawned, or endpoints) the
	// workers were spread over.
	Gateways    int      `json:"gateways"`
	ServeArgs   []string `json:"serve_args,omitempty"` // URL passwords redacted
	Workloads   []string `json:"workloads"`
	Docs        int      `json:"docs"`
	DocSize     int      `json:"doc_size"`
	Concurrency int      `json:"concurrency"`
	DurationSec float64  `json:"duration_sec,omitempty"`
	Ops         int64    `json:"ops,omitempty"`
	Keys        string   `json:"keys"`
	Partitions  int      `json:"partitions"`
	WarmupSec   float64  `json:"warmup_sec"`
	TTLSec      float64  `json:"ttl_sec"`
	// ContainerTTL is the defaultTtl of the containers of the workloads
	// other than ttl and ttl-sustained; absent when time to live was off.
	ContainerTTL *int32 `json:"container_ttl,omitempty"`
	Retries      int    `json:"retries"`
	Ceiling      bool   `json:"ceiling"`
	// Slices is Options.Slices, with Ceiling.
	Slices        int    `json:"slices,omitempty"`
	FsyncProbeDir string `json:"fsync_probe_dir,omitempty"`
	// TimelineIntervalSec is the row interval of ttl-sustained's text
	// timeline, and DataDirSize the endpoint's data directory it measured.
	TimelineIntervalSec float64 `json:"timeline_interval_sec"`
	DataDirSize         string  `json:"data_dir_size,omitempty"`
}

// ServerInfo says what was measured.
type ServerInfo struct {
	Name     string `json:"name"` // "lethe" (spawned), "server" (an endpoint), "ceiling", or "lethe purge off|on" (ttl-sustained's)
	Endpoint string `json:"endpoint"`
	PID      int    `json:"pid,omitempty"`
	Command  string `json:"command,omitempty"` // when spawned
}

// Populate is the loading of the documents the read, replace, upsert, query
// and mixed workloads address. It is not part of any workload's figures.
type Populate struct {
	Docs       int64            `json:"docs"`
	Seconds    float64          `json:"seconds"`
	DocsPerSec float64          `json:"docs_per_sec"`
	Errors     int64            `json:"errors"`
	ByStatus   map[string]int64 `json:"errors_by_status,omitempty"`
}

// Result is one workload's figures against the server, and against the
// ceiling when it ran.
type Result struct {
	Workload string `json:"workload"`
	// Error is why the workload did not run, if it did not.
	Error string `json:"error,omitempty"`
	Measurement
	Ceiling    *Measurement `json:"ceiling,omitempty"`
	Ratio      *Ratio       `json:"ratio,omitempty"`
	FsyncBound *FsyncBound  `json:"fsync_bound,omitempty"`
	// Sustained is the ttl-sustained workload's runs, timelines and
	// comparison; its Measurement is then the last run's.
	Sustained *SustainedResult `json:"sustained,omitempty"`
}

// Measurement is what one workload measured on one server.
type Measurement struct {
	Target   string    `json:"target"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Seconds is the time measured: with Slices, the sum of the slices',
	// shorter than Finished less Started, which spans the other target's.
	Seconds     float64           `json:"seconds"`
	Ops         int64             `json:"ops"` // successful operations
	OpsPerSec   float64           `json:"ops_per_sec"`
	Latency     Latency           `json:"latency_us"`
	RU          float64           `json:"ru_total"`
	RUPerSec    float64           `json:"ru_per_sec"`
	RowsPerOp   float64           `json:"rows_per_op,omitempty"` // queries: rows per page
	Errors      int64             `json:"errors"`
	ByStatus    map[string]int64  `json:"errors_by_status,omitempty"`
	ErrorSample map[string]string `json:"error_samples,omitempty"`
	Server      *ServerStats      `json:"server_stats,omitempty"`
	// Gateways are each gateway's share, when the workers were spread over
	// several.
	Gateways []GatewayStats `json:"gateways,omitempty"`
	// ClientCPUPerOp is the benchmark process's own CPU time per operation
	// (SDK, HTTP and JSON on the client side), microseconds.
	ClientCPUPerOp float64 `json:"client_cpu_us_per_op"`
	// IdleServerCPU is the CPU time the other server of the run (the one
	// not being measured: the ceiling, or Lethe finishing background work
	// such as compactions or the purge) used meanwhile, seconds. It competed
	// for the same cores: a source of noise.
	IdleServerCPU float64 `json:"idle_server_cpu_sec,omitempty"`
	// OtherCPU estimates the CPU time the rest of the machine used
	// meanwhile (other processes, and kernel work not charged to the
	// benchmark's processes), seconds: the machine's busy time from
	// /proc/stat less the client's and the servers' own CPU time, clamped at
	// zero. /proc/stat samples at each clock tick while the processes'
	// times are exact, so the estimate is only good to within about 10% of
	// the total: it shows a competing build or test run, not fine detail.
	OtherCPU float64 `json:"other_cpu_sec"`
	// MachineBusy is the fraction of all the machine's CPU time that was
	// busy meanwhile (from /proc/stat): near 1, the cores were the limit.
	MachineBusy float64 `json:"machine_busy"`
	Interrupted bool    `json:"interrupted,omitempty"`
	// Drained says the workload ran out of work before its duration: the
	// delete workload deleted every document the create workload made.
	// Its rates cover the time it ran.
	Drained bool `json:"drained,omitempty"`
	// Slices is how many turns the measurement took, when it alternated
	// with the ceiling's (Options.Slices); absent when it was one piece.
	Slices int `json:"slices,omitempty"`
}

// Latency percentiles of successful operations, microseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// ServerStats are the server process's memory and CPU, from /proc. With
// several gateways each figure is the sum over their processes (PIDs): RSS
// summed at each sample, HWM the sum of each process's own peak, CPU the
// total; Measurement.Gateways has each one's.
type ServerStats struct {
	PID          int     `json:"pid"`            // the first gateway's, with several
	PIDs         []int   `json:"pids,omitempty"` // every gateway's, with several
	RSSBytes     int64   `json:"rss_bytes"`      // at the end of the workload
	RSSPeakBytes int64   `json:"rss_peak_bytes"` // highest sampled during it
	HWMBytes     int64   `json:"hwm_bytes"`      // the process's peak RSS so far (VmHWM)
	CPUSeconds   float64 `json:"cpu_sec"`
	CPUPerOp     float64 `json:"cpu_us_per_op"`
}

// EndMemory is the resident memory of the server (summed over its gateways)
// and of the ceiling at the end of a run, each nil when its process is not
// known (a server given by endpoint without its PID). The ceiling runs the
// same executable with no storage: its figures are what the binary and the
// Go runtime hold before any data.
type EndMemory struct {
	Server  *Memory `json:"server,omitempty"`
	Ceiling *Memory `json:"ceiling,omitempty"`
}

// Memory is a process's resident memory, whole and by what backs it (see
// ProcSample).
type Memory struct {
	RSSBytes  int64 `json:"rss_bytes"`
	AnonBytes int64 `json:"anon_bytes"`
	FileBytes int64 `json:"file_bytes"`
}

func memoryOf(s ProcSample) *Memory {
	return &Memory{RSSBytes: s.RSS, AnonBytes: s.Anon, FileBytes: s.Files}
}

// String describes m for the report, in MB.
func (m *Memory) String() string {
	return fmt.Sprintf("%.1f MB resident (anonymous %.1f, mapped files %.1f)", mb(m.RSSBytes), mb(m.AnonBytes), mb(m.FileBytes))
}

// GatewayStats are one gateway's share of a measurement whose workers were
// spread over several: the operations of the workers that used it, and its
// process's memory and CPU when it is local (spawned).
type GatewayStats struct {
	Name      string  `json:"name"`
	Endpoint  string  `json:"endpoint"`
	PID       int     `json:"pid,omitempty"`
	Workers   int     `json:"workers"`
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	Errors    int64   `json:"errors"`
	// RSSBytes is at the end of the workload; CPUSeconds over it, and
	// CPUPerOp per operation of this gateway's workers.
	RSSBytes   int64   `json:"rss_bytes,omitempty"`
	CPUSeconds float64 `json:"cpu_sec,omitempty"`
	CPUPerOp   float64 `json:"cpu_us_per_op,omitempty"`
}

// Ratio is the server's figures divided by the ceiling's, measured in the
// same run. An ops/s ratio of 0.9 means 90% of the ceiling's rate; a CPU
// ratio of 1.5 means 50% more server CPU per operation than the ceiling.
type Ratio struct {
	OpsPerSec      float64 `json:"ops_per_sec"`
	ServerCPUPerOp float64 `json:"server_cpu_per_op,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	GoVersion  string `json:"go_version"`
	CPUModel   string `json:"cpu_model,omitempty"`
	Kernel     string `json:"kernel,omitempty"`
	Hostname   string `json:"hostname,omitempty"`
	// LoadStart and LoadEnd are /proc/loadavg's 1, 5 and 15 minute load
	// averages before and after the run: other work on the machine.
	LoadStart string `json:"loadavg_start,omitempty"`
	LoadEnd   string `json:"loadavg_end,omitempty"`
}

// WriteJSON writes the report to path as indented JSON.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteText writes the report as a table for people.
func (r *Report) WriteText(w io.Writer) {
	p := r.Params
	fmt.Fprintf(w, "lethe bench %s, %s\n", r.Version, r.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
	if len(r.Gateways) > 1 {
		fmt.Fprintf(w, "gateways: %d over one store, the workers spread round-robin, the set-up through the first; server figures are their sum\n", len(r.Gateways))
		for _, g := range r.Gateways {
			fmt.Fprint(w, "          ")
			writeServer(w, g)
		}
	} else {
		fmt.Fprint(w, "server:   ")
		writeServer(w, r.Server)
	}
	if r.Ceiling != nil {
		fmt.Fprintf(w, "ceiling:  canned responses, no storage (%s), pid %d\n", r.Ceiling.Command, r.Ceiling.PID)
	}
	m := r.Machine
	fmt.Fprintf(w, "machine:  %d CPUs %s, %s/%s, %s\n", m.NumCPU, m.CPUModel, m.GOOS, m.GOARCH, firstWords(m.Kernel, 3))
	fmt.Fprintf(w, "load:     %s before, %s after (1, 5, 15 min; client and servers share the machine)\n", m.LoadStart, m.LoadEnd)
	length := fmt.Sprintf("%v per workload", time.Duration(p.DurationSec*float64(time.Second)))
	if p.Ops > 0 {
		length = fmt.Sprintf("%d operations per workload", p.Ops)
	}
	clients := fmt.Sprintf("%d clients", p.Concurrency)
	if p.Gateways > 1 {
		clients += fmt.Sprintf(" over %d gateways", p.Gateways)
	}
	ttl := "containers without defaultTtl"
	if p.ContainerTTL != nil {
		ttl = fmt.Sprintf("containers' defaultTtl %d", *p.ContainerTTL)
	}
	fmt.Fprintf(w, "run:      %s, %d-byte documents, %s after %vs warmup, %s keys over %d documents in %d partitions, %s\n",
		clients, p.DocSize, length, p.WarmupSec, p.Keys, p.Docs, p.Partitions, ttl)
	if p.Ceiling && p.Slices > 1 {
		fmt.Fprintf(w, "slices:   workloads that write nothing alternate with the ceiling, %d slices each; writes run in one piece, server first\n", p.Slices)
	}
	if f := r.Fsync; f != nil {
		fmt.Fprintf(w, "fsync:    %s: %d KB write + fdatasync: median %.2f ms, p99 %.2f ms, max %.2f ms (%d writes)\n",
			f.Dir, f.BlockBytes/1024, f.MedianUS/1000, f.P99US/1000, f.MaxUS/1000, f.Writes)
	}
	if pp := r.Populate; pp != nil {
		fmt.Fprintf(w, "populate: %d documents in %.2fs (%.0f docs/s), %d errors (not part of any workload's figures)\n", pp.Docs, pp.Seconds, pp.DocsPerSec, pp.Errors)
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tserver\tops/s\tx ceiling\tp50 ms\tp99 ms\tp99.9 ms\tRU/s\tops\terrors\tRSS MB\tsrv CPU us/op\tCPU x ceiling\tcli CPU us/op\t")
	for _, res := range r.Workloads {
		if res.Error != "" && res.Ops == 0 {
			fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t\t\t\t\t\t\t\t\t\n", res.Workload, "not run")
			continue
		}
		if sr := res.Sustained; sr != nil {
			name := res.Workload
			for _, run := range sr.Runs {
				if run.Measurement != nil {
					row(tw, name, run.Measurement, "", "")
					name = ""
				}
			}
			continue
		}
		ratio, cpuRatio := "", ""
		if res.Ratio != nil {
			ratio = fmt.Sprintf("%.2fx", res.Ratio.OpsPerSec)
			if res.Ratio.ServerCPUPerOp > 0 {
				cpuRatio = fmt.Sprintf("%.2fx", res.Ratio.ServerCPUPerOp)
			}
		}
		row(tw, res.Workload, &res.Measurement, ratio, cpuRatio)
		if res.Ceiling != nil {
			row(tw, "", res.Ceiling, "1", "1")
		}
	}
	tw.Flush()
	if e := r.End; e != nil {
		var parts []string
		if e.Server != nil {
			name := r.Server.Name
			if len(r.Gateways) > 1 {
				name = fmt.Sprintf("the %d gateways together", len(r.Gateways))
			}
			parts = append(parts, name+" "+e.Server.String())
		}
		if e.Ceiling != nil {
			parts = append(parts, "the ceiling "+e.Ceiling.String())
		}
		fmt.Fprintf(w, "\nmemory at the end of the run: %s\n", strings.Join(parts, "; "))
	}
	every := max(int(p.TimelineIntervalSec), 1)
	for _, res := range r.Workloads {
		if res.Sustained != nil {
			res.Sustained.writeText(w, res.Workload, every)
		}
	}

	var notes []string
	for _, res := range r.Workloads {
		if res.Error != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", res.Workload, res.Error))
		}
		for _, m := range res.measurements() {
			if m == nil {
				continue
			}
			if m.Interrupted {
				notes = append(notes, fmt.Sprintf("%s on %s: interrupted after %.1fs", res.Workload, m.Target, m.Seconds))
			}
			if m.Drained {
				notes = append(notes, fmt.Sprintf("%s on %s: ran out of documents after %.1fs (%d operations); its rates cover that time", res.Workload, m.Target, m.Seconds, m.Ops))
			}
			for _, k := range slices.Sorted(maps.Keys(m.ByStatus)) {
				notes = append(notes, fmt.Sprintf("%s on %s: %d errors %s, e.g. %s", res.Workload, m.Target, m.ByStatus[k], k, m.ErrorSample[k]))
			}
			if m.IdleServerCPU >= 0.05*m.Seconds && m.Seconds > 0 {
				notes = append(notes, fmt.Sprintf("%s on %s: the other server used %.2fs of CPU meanwhile (%.0f%% of a core)", res.Workload, m.Target, m.IdleServerCPU, 100*m.IdleServerCPU/m.Seconds))
			}
			if m.OtherCPU >= 0.25*m.Seconds && m.Seconds > 0 {
				note := fmt.Sprintf("%s on %s: the rest of the machine used about %.1fs of CPU meanwhile (%.0f%% of a core): noisy", res.Workload, m.Target, m.OtherCPU, 100*m.OtherCPU/m.Seconds)
				if storeArg(p.ServeArgs) != "" && m.Target != "ceiling" {
					note += ", or the --store's own work if it is local"
				}
				notes = append(notes, note)
			}
			if len(m.Gateways) > 0 {
				notes = append(notes, fmt.Sprintf("%s on %s: %s", res.Workload, m.Target, gatewayShares(m.Gateways)))
			}
			if m.RowsPerOp > 0 && m.RowsPerOp < queryPageSize {
				notes = append(notes, fmt.Sprintf("%s on %s: %.1f rows per page (fewer than %d documents match each query)", res.Workload, m.Target, m.RowsPerOp, queryPageSize))
			}
		}
		if b := res.FsyncBound; b != nil {
			notes = append(notes, fmt.Sprintf("%s on %s: %.0f ops/s is %.2fx the fsync bound (%d clients / %.2f ms = %.0f ops/s)",
				res.Workload, res.Target, res.OpsPerSec, b.Ratio, p.Concurrency, b.SyncMedianUS/1000, b.OpsPerSec))
		}
	}
	for _, res := range r.Workloads {
		if res.Sustained != nil {
			notes = append(notes, res.Sustained.notes(res.Workload)...)
		}
	}
	notes = append(notes, r.Problems...)
	if r.Interrupted {
		notes = append(notes, "the run was interrupted: the figures cover what was measured before")
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
}

// measurements are the result's figures on each server it ran on.
func (res *Result) measurements() []*Measurement {
	if res.Sustained == nil {
		return []*Measurement{&res.Measurement, res.Ceiling}
	}
	var ms []*Measurement
	for _, run := range res.Sustained.Runs {
		ms = append(ms, run.Measurement)
	}
	return ms
}

// writeServer writes a line naming a server.
func writeServer(w io.Writer, s ServerInfo) {
	fmt.Fprintf(w, "%s at %s", s.Name, s.Endpoint)
	if s.Command != "" {
		fmt.Fprintf(w, " (%s)", s.Command)
	}
	if s.PID > 0 {
		fmt.Fprintf(w, ", pid %d", s.PID)
	}
	fmt.Fprintln(w)
}

// gatewayShares describes each gateway's share of a measurement.
func gatewayShares(gs []GatewayStats) string {
	var parts []string
	for _, g := range gs {
		s := fmt.Sprintf("%s %d workers %.0f ops/s %d errors", g.Name, g.Workers, g.OpsPerSec, g.Errors)
		if g.PID > 0 && (g.RSSBytes > 0 || g.CPUSeconds > 0) {
			s += fmt.Sprintf(" RSS %.1f MB CPU %.2fs (%.0f us/op)", mb(g.RSSBytes), g.CPUSeconds, g.CPUPerOp)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func row(w io.Writer, name string, m *Measurement, ratio, cpuRatio string) {
	rss, cpu := "", ""
	if s := m.Server; s != nil {
		rss = fmt.Sprintf("%.1f", mb(s.RSSBytes))
		cpu = fmt.Sprintf("%.0f", s.CPUPerOp)
	}
	target := m.Target
	if m.Interrupted {
		target += "*"
	}
	fmt.Fprintf(w, "%s\t%s\t%.0f\t%s\t%.3f\t%.3f\t%.3f\t%.0f\t%d\t%d\t%s\t%s\t%s\t%.0f\t\n",
		name, target, m.OpsPerSec, ratio, m.Latency.P50/1000, m.Latency.P99/1000, m.Latency.P999/1000,
		m.RUPerSec, m.Ops, m.Errors, rss, cpu, cpuRatio, m.ClientCPUPerOp)
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	return strings.Join(f[:min(n, len(f))], " ")
}
