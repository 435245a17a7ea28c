package engine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv/pebblekv"
)

// Engine benchmarks. Sizes come from the environment so the defaults stay small
// enough for a shared machine:
//
//	LETHE_BENCH_DOCS=1000000 go test ./engine -run x -bench 'Purge|Open' -benchtime 1x
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
	store, err := pebblekv.Open(pebblekv.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	e, err := Open(ctx, Options{Store: store, Now: clock.Now, DisableBackground: true})
	if err != nil {
		b.Fatal(err)
	}
	return e, store
}

// BenchmarkPurge measures physical deletion of expired documents on a durable
// on-disk store: half expire by the container default, half by their own ttl.
// The docs/s metric is the purge throughput.
func BenchmarkPurge(b *testing.B) {
	n := benchEnv("LETHE_BENCH_DOCS", 100_000)
	size := benchEnv("LETHE_BENCH_DOC_BYTES", 1024)
	var total time.Duration
	for range b.N {
		b.StopTimer()
		clock := newFakeClock()
		e, store := openBenchEngine(b, b.TempDir(), clock)
		if _, err := e.CreateDatabase(ctx, []byte(`{"id":"db"}`)); err != nil {
			b.Fatal(err)
		}
		if _, err := e.CreateContainer(ctx, "db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":60}`)); err != nil {
			b.Fatal(err)
		}
		loadDocs(b, e, "d", n/2, size, "")
		loadDocs(b, e, "own", n/2, size, `,"ttl":30`)
		clock.Advance(time.Hour)
		b.StartTimer()
		start := time.Now()
		purged, err := e.Purge(ctx)
		total += time.Since(start)
		b.StopTimer()
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
}

// BenchmarkOpenWithDocs measures a restart: opening the store and the engine
// over n documents and serving the first read.
func BenchmarkOpenWithDocs(b *testing.B) {
	n := benchEnv("LETHE_BENCH_DOCS", 100_000)
	size := benchEnv("LETHE_BENCH_DOC_BYTES", 1024)
	dir := b.TempDir()
	clock := newFakeClock()
	e, store := openBenchEngine(b, dir, clock)
	if _, err := e.CreateDatabase(ctx, []byte(`{"id":"db"}`)); err != nil {
		b.Fatal(err)
	}
	if _, err := e.CreateContainer(ctx, "db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":-1}`)); err != nil {
		b.Fatal(err)
	}
	loadDocs(b, e, "d", n, size, "")
	e.Close()
	if err := store.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		e, store := openBenchEngine(b, dir, clock)
		if _, err := e.ReadDocument(ctx, DocRef{DB: "db", Coll: "c", ID: "d0", PK: lethe.PartitionKey{"p0"}}, Conditions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		e.Close()
		store.Close()
		b.StartTimer()
	}
}
