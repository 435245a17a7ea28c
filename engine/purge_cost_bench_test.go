package engine

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv/pebblekv"
)

// BenchmarkPurgeCost compares what physically deleting an expired document
// costs with what creating it cost, per document, on a durable store: CPU
// time of the whole process (commits, and the flushes and compactions each
// phase caused, waited for with Store.Settle; the fg figures stop before that
// wait) and bytes written (WAL, and
// sstables by flushes and compactions). The documents are the sustained TTL
// workload's: 1 KB, default indexing, an own ttl, created one by one by 16
// writers. The sst-MB figures are the size of the store's sstables after each
// phase settled: after the purge, what compactions have not yet reclaimed.
//
//	LETHE_BENCH_DOCS=100000 go test ./engine -run '^$' -bench PurgeCost -benchtime 1x
func BenchmarkPurgeCost(b *testing.B) {
	n := benchEnv("LETHE_BENCH_DOCS", 50_000)
	for range b.N {
		clock := newFakeClock()
		store, err := pebblekv.Open(pebblekv.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		e, err := Open(ctx, Options{Store: store, Now: clock.Now, DisableBackground: true})
		if err != nil {
			b.Fatal(err)
		}
		benchContainer(b, e, `"defaultTtl":-1`)
		pad := strings.Repeat("x", 900)
		create := measureCost(b, store, func() {
			const writers = 16
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < n; i += writers {
						p := fmt.Sprintf("p%d", i%100)
						body := []byte(fmt.Sprintf(`{"id":"d%d","pk":"%s","name":"user %d","n":%d,"tags":["a","b"],"ttl":10,"pad":"%s"}`, i, p, i, i, pad))
						if _, err := e.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: lethe.PartitionKey{p}}, body); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
		clock.Advance(time.Minute)
		var purged int
		purge := measureCost(b, store, func() {
			if purged, err = e.Purge(ctx); err != nil {
				b.Fatal(err)
			}
		})
		if purged != n {
			b.Fatalf("purged %d of %d", purged, n)
		}
		perDoc := func(v float64) float64 { return v / float64(n) }
		b.ReportMetric(perDoc(create.cpu.Seconds()*1e6), "create-cpu-us/doc")
		b.ReportMetric(perDoc(float64(create.wal)), "create-wal-B/doc")
		b.ReportMetric(perDoc(float64(create.tables)), "create-sst-B/doc")
		b.ReportMetric(perDoc(purge.cpu.Seconds()*1e6), "purge-cpu-us/doc")
		b.ReportMetric(perDoc(purge.fg.Seconds()*1e6), "purge-fg-cpu-us/doc")
		b.ReportMetric(perDoc(create.fg.Seconds()*1e6), "create-fg-cpu-us/doc")
		b.ReportMetric(perDoc(float64(purge.wal)), "purge-wal-B/doc")
		b.ReportMetric(perDoc(float64(purge.tables)), "purge-sst-B/doc")
		b.ReportMetric(float64(create.tableBytes)/(1<<20), "sst-MB-created")
		b.ReportMetric(float64(purge.tableBytes)/(1<<20), "sst-MB-purged")
		b.ReportMetric(float64(n)/purge.wall.Seconds(), "purged-docs/s")
		e.Close()
		store.Close()
	}
}

// phaseCost is what one phase of BenchmarkPurgeCost cost.
type phaseCost struct {
	cpu, wall   time.Duration
	fg          time.Duration // CPU until fn returned, before the background work it left
	wal, tables uint64        // bytes written
	tableBytes  uint64        // the store's sstables once settled
}

// measureCost runs fn, waits for the background work it caused, and returns
// its cost.
func measureCost(b *testing.B, store *pebblekv.Store, fn func()) phaseCost {
	b.Helper()
	runtime.GC()
	s0, cpu0 := store.IOStats(), processCPU()
	start := time.Now()
	fn()
	wall, fg := time.Since(start), processCPU()-cpu0
	if err := store.Settle(ctx); err != nil {
		b.Fatal(err)
	}
	s1, cpu1 := store.IOStats(), processCPU()
	return phaseCost{
		cpu: cpu1 - cpu0, fg: fg, wall: wall,
		wal:        s1.WALBytes - s0.WALBytes,
		tables:     s1.FlushedBytes + s1.CompactedBytes - s0.FlushedBytes - s0.CompactedBytes,
		tableBytes: s1.LiveTableBytes,
	}
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
