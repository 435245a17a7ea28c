package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/kv/pebblekv"
)

// Engine benchmarks. Sizes come from the environment so the defaults stay small
// enough for a shared machine:
//
//	LETHE_BENCH_DOCS=1000000 go test ./engine -run '^$' -bench 'Purge|Open' -benchtime 1x
//
// LETHE_BENCH_DOC_BYTES sets the document size (default 1024).

func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// loadDocs writes n documents of about size bytes into db/c through transactional
// batches of 100 (one partition key per batch), ids prefix0.., with extra JSON members.
func loadDocs(b *testing.B, e *Engine, prefix string, n, size int, extra string) {
	b.Helper()
	pad := strings.Repeat("x", max(0, size-80))
	ops := make([]BatchOp, 0, 100)
	for i := 0; i < n; i += 100 {
		ops = ops[:0]
		p := fmt.Sprintf("p%d", i/100)
		for j := i; j < min(n, i+100); j++ {
			ops = append(ops, BatchOp{Type: "Create", Body: []byte(fmt.Sprintf(`{"id":"%s%d","pk":"%s","pad":"%s"%s}`, prefix, j, p, pad, extra))})
		}
		if _, ok, err := e.ExecuteBatch(ctx, "db", "c", lethe.PartitionKey{p}, ops); err != nil || !ok {
			b.Fatalf("load batch at %d: ok=%v err=%v", i, ok, err)
		}
	}
}

func openBenchEngine(b *testing.B, dir string, clock *fakeClock) (*Engine, *pebblekv.Store) {
	b.Helper()
	store, err := pebblekv.Open(pebblekv.Options{Dir: dir, FilterPrefix: DocumentKeyPrefix(), FilterKeys: DocumentKeys})
	if err != nil {
		b.Fatal(err)
	}
	e, err := Open(ctx, Options{Store: store, Now: clock.Now, DisableBackground: true, StoreBacklogged: store.Backlogged})
	if err != nil {
		b.Fatal(err)
	}
	return e, store
}

// BenchmarkPurge measures physical deletion of expired documents on a durable
// on-disk store: half expire by the container default, half by their own ttl.
// The docs/s metric is the purge throughput; stalls/op and stall-s/op are the
// times the store stopped the purge's writes behind its flushes and
// compactions, and for how long; probe-max-ms is the slowest of the writes a
// probe makes through the store every 50 ms meanwhile, as a user's would.
func BenchmarkPurge(b *testing.B) {
	n := benchEnv("LETHE_BENCH_DOCS", 100_000)
	size := benchEnv("LETHE_BENCH_DOC_BYTES", 1024)
	var total, stalled, slowest time.Duration
	var stalls int64
	for range b.N {
		b.StopTimer()
		clock := newFakeClock()
		e, store := openBenchEngine(b, b.TempDir(), clock)
		benchContainer(b, e, `"defaultTtl":60`)
		loadDocs(b, e, "d", n/2, size, "")
		loadDocs(b, e, "own", n/2, size, `,"ttl":30`)
		clock.Advance(time.Hour)
		before := store.Stalls()
		stopProbe := make(chan struct{})
		probeMax := make(chan time.Duration)
		go probeWrites(store, stopProbe, probeMax)
		b.StartTimer()
		start := time.Now()
		purged, err := e.Purge(ctx)
		total += time.Since(start)
		b.StopTimer()
		close(stopProbe)
		slowest = max(slowest, <-probeMax)
		after := store.Stalls()
		stalls += after.MemTables + after.Level0 - before.MemTables - before.Level0
		stalled += after.Time - before.Time
		if err != nil {
			b.Fatal(err)
		}
		if purged == 0 {
			b.Fatal("nothing purged")
		}
		b.ReportMetric(float64(purged), "purged/op")
		e.Close()
		store.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "docs/s")
	b.ReportMetric(float64(stalls)/float64(b.N), "stalls/op")
	b.ReportMetric(stalled.Seconds()/float64(b.N), "stall-s/op")
	b.ReportMetric(float64(slowest.Microseconds())/1000, "probe-max-ms")
}

// probeWrites writes a key through store every 50 ms until stop closes, then
// sends the slowest write's time on slowest.
func probeWrites(store kv.Store, stop <-chan struct{}, slowest chan<- time.Duration) {
	var most time.Duration
	for i := 0; ; i++ {
		select {
		case <-stop:
			slowest <- most
			return
		case <-time.After(50 * time.Millisecond):
		}
		began := time.Now()
		_ = store.Update(ctx, func(tx kv.Tx) error { return tx.Put(fmt.Appendf(nil, "probe/%d", i), []byte("x")) })
		most = max(most, time.Since(began))
	}
}

// BenchmarkOpenWithDocs measures a restart: opening the store and the engine
// over n documents and serving the first read, in a container with time to
// live and the change feed's log on, as users run it. Before each restart
// the store takes the writes of a busy server: enough for Pebble's
// memtables, which start small after an open, to grow to their full size
// and to fill the last one about three quarters. after-close opens after a
// clean shutdown (the close-ms metric is what closing cost); after-crash
// opens a copy of the directory taken while the store was still open and
// idle, as a crash leaves it, so the open replays the last memtable's
// writes from the write-ahead log and flushes them before it returns. The
// filter-ms metric is how long after the open began the filter of document
// keys was built, in the background, from the order index; slowest-ms is the
// slowest restart of the run (open and first read), which a compaction
// started during the open once made 20 times the usual.
func BenchmarkOpenWithDocs(b *testing.B) {
	n := benchEnv("LETHE_BENCH_DOCS", 100_000)
	size := benchEnv("LETHE_BENCH_DOC_BYTES", 1024)
	// A memtable grows from 256 KiB, doubling: the smaller ones before a
	// full one hold about one full one's worth. With the log, a document is
	// written twice.
	recent := (pebblekv.DefaultMemTableSize * 7 / 4) / (2*size + 512)
	dir, crashed := b.TempDir(), b.TempDir()
	clock := newFakeClock()
	e, store := openBenchEngine(b, dir, clock)
	benchContainer(b, e, `"defaultTtl":3600,"changeFeedPolicy":{"retentionDuration":60}`)
	loadDocs(b, e, "d", n, size, "")
	e.Close()
	if err := store.Close(); err != nil {
		b.Fatal(err)
	}
	batches := 0
	// busy opens the store, writes the recent documents, waits until no
	// flush or compaction runs, and returns it open.
	busy := func(b *testing.B) (*Engine, *pebblekv.Store) {
		e, store := openBenchEngine(b, dir, clock)
		batches++
		loadDocs(b, e, fmt.Sprintf("r%d-", batches), recent, size, "")
		idleCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := store.WaitIdle(idleCtx); err != nil {
			b.Fatal(err)
		}
		return e, store
	}
	// restart opens the store, serves the first read, and returns how long
	// that took and how long after the open began the store's filter of
	// document keys was built from the order index (in the background:
	// creates search the store until then).
	restart := func(b *testing.B, dir string) (served, built time.Duration) {
		start := time.Now()
		e, store := openBenchEngine(b, dir, clock)
		if _, err := e.ReadDocument(ctx, DocRef{DB: "db", Coll: "c", ID: "d0", PK: lethe.PartitionKey{"p0"}}, Conditions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		served = time.Since(start)
		for store.KeyFilter().Builds == 0 {
			time.Sleep(time.Millisecond)
		}
		built = time.Since(start)
		e.Close()
		store.Close()
		return served, built
	}
	b.Run("after-close", func(b *testing.B) {
		var closing, filter, slowest time.Duration
		for range b.N {
			b.StopTimer()
			e, store := busy(b)
			e.Close()
			start := time.Now()
			if err := store.Close(); err != nil {
				b.Fatal(err)
			}
			closing += time.Since(start)
			b.StartTimer()
			served, built := restart(b, dir)
			slowest, filter = max(slowest, served), filter+built
		}
		b.ReportMetric(float64(closing.Milliseconds())/float64(b.N), "close-ms")
		b.ReportMetric(float64(filter.Milliseconds())/float64(b.N), "filter-ms")
		b.ReportMetric(float64(slowest.Milliseconds()), "slowest-ms")
	})
	b.Run("after-crash", func(b *testing.B) {
		var filter, slowest time.Duration
		for i := range b.N {
			b.StopTimer()
			e, store := busy(b)
			// Every write was synced and nothing runs in the background:
			// the files stay as they are while they are copied.
			clone := filepath.Join(crashed, strconv.Itoa(i))
			if err := os.CopyFS(clone, os.DirFS(dir)); err != nil {
				b.Fatal(err)
			}
			e.Close()
			store.Close()
			b.StartTimer()
			served, built := restart(b, clone)
			slowest, filter = max(slowest, served), filter+built
			os.RemoveAll(clone)
		}
		b.ReportMetric(float64(filter.Milliseconds())/float64(b.N), "filter-ms")
		b.ReportMetric(float64(slowest.Milliseconds()), "slowest-ms")
	})
}

// BenchmarkCreateDocument measures one document write with default indexing
// (every path indexed), 1 KB documents, on an in-memory and a durable store,
// with GOMAXPROCS writers and 8 times as many (group commit); and with the
// all-versions change feed's log and time to live on (log+ttl=on: the
// container has a changeFeedPolicy and a defaultTtl of an hour), as users
// run it, to compare what they cost writes.
func BenchmarkCreateDocument(b *testing.B) {
	for _, durable := range []bool{false, true} {
		for _, par := range []int{1, 8} {
			// How users run it: the change feed's log on, time to live on
			// (every document expires an hour after its last write); and
			// with neither.
			for _, on := range []bool{false, true} {
				// RunParallel runs par x GOMAXPROCS writers.
				store, feedAndTTL, extra := benchCase(durable, on)
				name := fmt.Sprintf("%s/writers=%d/log+ttl=%s", store, par*runtime.GOMAXPROCS(0), feedAndTTL)
				b.Run(name, func(b *testing.B) { benchCreates(b, benchEngineWith(b, durable, nil, extra), par) })
			}
		}
	}
}

// BenchmarkCreateSettled creates LETHE_BENCH_DOCS documents (100,000 by
// default) shaped like lethe bench's, from as many writers as its clients,
// with time to live and the change feed's log on, and reports what a create
// cost the process (measureCost): its CPU in all (cpu), of which fg until
// the last create returned; the rest is the flushes and compactions the
// creates left behind, which a timed loop of creates, or a server's profile
// of a timed run, does not see whole. Beside it, the bytes those wrote and
// the tables' size once settled. Run it with -benchtime 1x:
//
//	go test ./engine -run '^$' -bench 'CreateSettled/inmemory' -benchtime 1x
func BenchmarkCreateSettled(b *testing.B) {
	const settledWriters = 8
	n := benchEnv("LETHE_BENCH_DOCS", 100_000)
	for _, durable := range []bool{false, true} {
		kind, _, extra := benchCase(durable, true)
		b.Run(kind, func(b *testing.B) {
			for range b.N {
				store, err := pebblekv.Open(serverStoreOptions(b, durable))
				if err != nil {
					b.Fatal(err)
				}
				e, err := Open(ctx, Options{Store: store, DisableBackground: true, StoreBacklogged: store.Backlogged})
				if err != nil {
					b.Fatal(err)
				}
				benchContainer(b, e, extra)
				bodies, refs := benchDocuments(n)
				create := measureCost(b, store, func() {
					var wg sync.WaitGroup
					for w := range settledWriters {
						wg.Go(func() {
							for i := w; i < n; i += settledWriters {
								if _, err := e.CreateDocument(ctx, refs[i], bodies[i]); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
				})
				perDoc := func(v float64) float64 { return v / float64(n) }
				b.ReportMetric(perDoc(create.cpu.Seconds()*1e6), "cpu-us/create")
				b.ReportMetric(perDoc(create.fg.Seconds()*1e6), "fg-cpu-us/create")
				b.ReportMetric(perDoc(float64(create.tables)), "sst-written-B/create")
				b.ReportMetric(perDoc(float64(create.tableBytes)), "sst-B/create")
				e.Close()
				store.Close()
			}
		})
	}
}

// benchDocuments returns the bodies and references of n documents shaped
// like lethe bench's (package bench, document.go): id d<i>, partition key
// p<i mod 100>, k = i/10, v = 0, padded to 1 KB.
func benchDocuments(n int) ([][]byte, []DocRef) {
	pad := strings.Repeat("x", 960)
	bodies, refs := make([][]byte, n), make([]DocRef, n)
	for i := range n {
		id, pk := "d"+strconv.Itoa(i), "p"+strconv.Itoa(i%100)
		bodies[i] = []byte(`{"id":"` + id + `","pk":"` + pk + `","k":` + strconv.Itoa(i/10) + `,"v":0,"pad":"` + pad + `"}`)
		refs[i] = DocRef{DB: "db", Coll: "c", ID: id, PK: lethe.PartitionKey{pk}}
	}
	return bodies, refs
}

// benchCase names a case of the point-operation benchmarks, its store and
// whether the change feed's log and time to live are on, and returns the
// container members that turn them on (a changeFeedPolicy, and a defaultTtl
// of an hour, which no document reaches while a benchmark runs).
func benchCase(durable, on bool) (store, feedAndTTL, extra string) {
	store, feedAndTTL = "inmemory", "off"
	if durable {
		store = "durable"
	}
	if on {
		feedAndTTL, extra = "on", `"changeFeedPolicy":{"retentionDuration":60},"defaultTtl":3600`
	}
	return store, feedAndTTL, extra
}

// pointOpDocs is how many documents BenchmarkReadDocument and
// BenchmarkWriteExisting address: 100 partitions of 100, loaded by loadDocs.
const pointOpDocs = 10_000

// benchStores runs fn for each store and for the change feed's log and time
// to live off and on, as BenchmarkCreateDocument does, with pointOpDocs 1 KB
// documents loaded; fn gets the engine and the loaded documents' references.
// On durable stores it reports the write-ahead log's bytes per operation.
func benchStores(b *testing.B, fn func(b *testing.B, e *Engine, refs []DocRef)) {
	refs := make([]DocRef, pointOpDocs)
	for i := range refs {
		refs[i] = DocRef{DB: "db", Coll: "c", ID: fmt.Sprintf("d%d", i), PK: lethe.PartitionKey{fmt.Sprintf("p%d", i/100)}}
	}
	for _, durable := range []bool{false, true} {
		for _, on := range []bool{false, true} {
			store, feedAndTTL, extra := benchCase(durable, on)
			b.Run(fmt.Sprintf("%s/log+ttl=%s", store, feedAndTTL), func(b *testing.B) {
				e := benchEngineWith(b, durable, nil, extra)
				loadDocs(b, e, "d", pointOpDocs, 1024, "")
				store := e.store.(*metaGuard).Store.(*pebblekv.Store)
				wal := store.IOStats().WALBytes
				b.ReportAllocs()
				b.ResetTimer()
				fn(b, e, refs)
				if durable {
					// What each operation commits, free of the machine's
					// noise: its batch in the write-ahead log.
					b.ReportMetric(float64(store.IOStats().WALBytes-wal)/float64(b.N), "wal-B/op")
				}
			})
		}
	}
}

// BenchmarkReadDocument reads documents by id and partition key, from
// GOMAXPROCS goroutines: the engine's part of a point read.
func BenchmarkReadDocument(b *testing.B) {
	benchStores(b, func(b *testing.B, e *Engine, refs []DocRef) {
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				ref := refs[int(next.Add(7919))%len(refs)]
				if _, err := e.ReadDocument(ctx, ref, Conditions{}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkWriteExisting replaces and upserts existing documents, from
// GOMAXPROCS goroutines (8 writers each on durable stores, as in
// BenchmarkCreateDocument, so that commits share syncs): the engine's part
// of the replace, upsert and mixed workloads.
func BenchmarkWriteExisting(b *testing.B) {
	pad := strings.Repeat("y", 900)
	for _, op := range []string{"replace", "upsert"} {
		b.Run(op, func(b *testing.B) {
			benchStores(b, func(b *testing.B, e *Engine, refs []DocRef) {
				var next atomic.Int64
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						n := next.Add(7919)
						ref := refs[int(n)%len(refs)]
						body := []byte(fmt.Sprintf(`{"id":%q,"pk":%q,"v":%d,"pad":"%s"}`, ref.ID, ref.PK[0], n, pad))
						var err error
						if op == "replace" {
							_, err = e.ReplaceDocument(ctx, ref, body, Conditions{})
						} else {
							_, err = e.UpsertDocument(ctx, ref, body, Conditions{})
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}

func benchCreates(b *testing.B, e *Engine, par int) {
	pad := strings.Repeat("x", 900)
	var next atomic.Int64
	b.SetParallelism(par)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			p := fmt.Sprintf("p%d", i%100)
			body := []byte(fmt.Sprintf(`{"id":"d%d","pk":"%s","name":"user %d","n":%d,"tags":["a","b"],"pad":"%s"}`, i, p, i, i, pad))
			if _, err := e.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: lethe.PartitionKey{p}}, body); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRSSAfterLoad loads LETHE_BENCH_DOCS 1 KB documents and reports
// the process's resident memory (VmRSS) and its peak (VmHWM), a stand-in for
// the server's memory with that many documents, and what the store's tables
// take (table-MiB: on disk for a durable store, in memory for an InMemory
// one). The stores are opened as lethe serve opens them, but for the
// background work. Each store is loaded without the change feed's log and
// time to live (lethe serve's default) and with them (as applications that
// keep sessions or events run it). It measures twice: as soon as the load
// ends, and settled, once the store has flushed its memtable and its
// compactions have caught up (a load outruns them; what they owe is data
// not yet in the lowest level, whose tables compress best in memory), as a
// server holds the documents once idle. Run one case a process (-bench
// 'RSSAfterLoad/inmemory/log.ttl=on$'): the memory of one is not all
// returned before the next.
func BenchmarkRSSAfterLoad(b *testing.B) {
	n := benchEnv("LETHE_BENCH_DOCS", 100_000)
	for _, c := range []struct{ durable, on bool }{{true, false}, {true, true}, {false, false}, {false, true}} {
		kind, feedAndTTL, extra := benchCase(c.durable, c.on)
		b.Run(kind+"/log+ttl="+feedAndTTL, func(b *testing.B) {
			for range b.N {
				store, err := pebblekv.Open(serverStoreOptions(b, c.durable))
				if err != nil {
					b.Fatal(err)
				}
				e, err := Open(ctx, Options{Store: store, Now: newFakeClock().Now, DisableBackground: true, StoreBacklogged: store.Backlogged})
				if err != nil {
					b.Fatal(err)
				}
				benchContainer(b, e, extra)
				loadDocs(b, e, "d", n, 1024, "")
				b.StopTimer()
				measure := func(prefix string) {
					runtime.GC()
					debug.FreeOSMemory()
					rss, _ := procMemory()
					b.ReportMetric(float64(rss)/(1<<20), prefix+"RSS-MiB")
					b.ReportMetric(float64(store.IOStats().LiveTableBytes)/(1<<20), prefix+"table-MiB")
				}
				measure("")
				if err := store.Settle(ctx); err != nil {
					b.Fatal(err)
				}
				measure("settled-")
				_, hwm := procMemory()
				b.ReportMetric(float64(hwm)/(1<<20), "peak-MiB")
				e.Close()
				store.Close()
				b.StartTimer()
			}
		})
	}
}

// serverStoreOptions returns the options lethe serve opens its store with
// (its lookup cache and key filter at their defaults), in memory or in a
// temporary directory.
func serverStoreOptions(b *testing.B, durable bool) pebblekv.Options {
	opts := pebblekv.Options{InMemory: !durable, LookupCacheSize: pebblekv.DefaultInMemoryLookupCacheSize,
		LookupCacheable: LookupCacheable, FilterPrefix: DocumentKeyPrefix(), FilterKeys: DocumentKeys}
	if durable {
		opts.Dir, opts.LookupCacheSize = b.TempDir(), pebblekv.DefaultLookupCacheSize
	}
	return opts
}

// procMemory reads VmRSS and VmHWM of this process, in bytes.
func procMemory() (rss, hwm int64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v << 10
		case "VmHWM:":
			hwm = v << 10
		}
	}
	return rss, hwm
}

// benchEngine opens an engine with no background work over a fresh store,
// durable (in a temporary directory) or in memory, with container db/c
// (partition key /pk); both close when the benchmark ends.
func benchEngine(b *testing.B, durable bool) *Engine {
	b.Helper()
	return benchEngineWith(b, durable, nil, "")
}

// benchEngineWith is benchEngine with a clock (nil: the wall clock) and
// extra container properties.
func benchEngineWith(b *testing.B, durable bool, now func() time.Time, extra string) *Engine {
	b.Helper()
	opts := pebblekv.Options{InMemory: !durable, FilterPrefix: DocumentKeyPrefix(), FilterKeys: DocumentKeys}
	if durable {
		opts.Dir = b.TempDir()
	}
	store, err := pebblekv.Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	e, err := Open(ctx, Options{Store: store, Now: now, DisableBackground: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	benchContainer(b, e, extra)
	return e
}

// benchContainer creates database "db" and its container "c", partitioned
// by /pk, with extra members (JSON, without braces) in its body.
func benchContainer(b *testing.B, e *Engine, extra string) {
	b.Helper()
	if _, err := e.CreateDatabase(ctx, []byte(`{"id":"db"}`)); err != nil {
		b.Fatal(err)
	}
	body := `{"id":"c","partitionKey":{"paths":["/pk"]}`
	if extra != "" {
		body += "," + extra
	}
	if _, err := e.CreateContainer(ctx, "db", []byte(body+"}")); err != nil {
		b.Fatal(err)
	}
}
