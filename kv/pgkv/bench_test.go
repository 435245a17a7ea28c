package pgkv

import (
	"context"
	"testing"

	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/kv/kvtest"
	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

// The benchmarks mirror pebblekv's (same keys, 100-byte values, same names),
// so that the two backends can be compared; here every operation includes
// the round trips to a local server.

// openBench opens a store on a fresh schema with room for parallel writers.
func openBench(b *testing.B) *Store {
	b.Helper()
	return openSchema(b, pgtest.Schema(b), Options{MaxConns: 8})
}

// BenchmarkGet measures a View with one point read of a 100-byte value: two
// round trips (BEGIN+SELECT, COMMIT).
func BenchmarkGet(b *testing.B) {
	const n = 1000
	s := openBench(b)
	kvtest.Fill(b, s, n)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		err := s.View(ctx, func(r kv.Reader) error {
			_, err := r.Get(kvtest.BenchKey(i % n))
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut measures single-key Updates: durable ones from one writer and
// from many goroutines at once (PostgreSQL's group commit shares WAL
// flushes), and UpdateNoSync from one writer.
func BenchmarkPut(b *testing.B) {
	b.Run("serial", func(b *testing.B) { kvtest.BenchPuts(b, openBench(b).Update) })
	// 4 × GOMAXPROCS writers, 8 connections
	b.Run("parallel", func(b *testing.B) { kvtest.BenchParallelPuts(b, openBench(b), 4) })
	b.Run("nosync", func(b *testing.B) { kvtest.BenchPuts(b, openBench(b).UpdateNoSync) })
}

// benchScan measures a View that iterates over span consecutive keys of
// 2*span: the first page and as many larger ones as the span needs.
func benchScan(b *testing.B, span int) {
	n := 2 * span
	s := openBench(b)
	kvtest.Fill(b, s, n)
	kvtest.BenchScan(b, s, n, span)
}

// BenchmarkScan100 measures a 100-key scan: one page, two round trips.
func BenchmarkScan100(b *testing.B) { benchScan(b, 100) }

// BenchmarkScan1000 measures a 1,000-key scan: pages of 128, 512 and 2048
// rows, four round trips.
func BenchmarkScan1000(b *testing.B) { benchScan(b, 1000) }

// BenchmarkCount100k counts 100,000 keys in a View, as a proof that every
// document has an index entry does: counted by PostgreSQL (kv.Counter), and
// by scanning them, as before (every key and value sent in pages).
func BenchmarkCount100k(b *testing.B) {
	const n = 100_000
	s := openBench(b)
	kvtest.Fill(b, s, n)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		wrap func(kv.Reader) kv.Reader
	}{
		{"counted", func(r kv.Reader) kv.Reader { return r }},
		{"scanned", func(r kv.Reader) kv.Reader { return scanOnly{r} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				err := s.View(ctx, func(r kv.Reader) error {
					got, err := kv.Count(c.wrap(r), kvtest.BenchKey(0), kvtest.BenchKey(n), -1)
					if err == nil && got != n {
						b.Fatalf("counted %d keys, want %d", got, n)
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// scanOnly hides a reader's Count, so that kv.Count scans.
type scanOnly struct{ kv.Reader }
