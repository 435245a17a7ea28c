package kvtest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/lethe-db/lethe/kv"
)

// BenchValue is the 100-byte value the backends' benchmarks store, so that
// their figures compare.
var BenchValue = make([]byte, 100)

// BenchKey is the i-th key of the backends' benchmarks.
func BenchKey(i int) []byte { return fmt.Appendf(nil, "key/%08d", i) }

// Fill stores keys BenchKey(0) to BenchKey(n-1) with BenchValue in one Update.
func Fill(tb testing.TB, s kv.Store, n int) {
	tb.Helper()
	err := s.Update(context.Background(), func(tx kv.Tx) error {
		for i := range n {
			if err := tx.Put(BenchKey(i), BenchValue); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// BenchScan measures, on s holding keys BenchKey(0) to BenchKey(n-1) (see
// Fill), a View that iterates over span consecutive keys from a different
// start each time.
func BenchScan(b *testing.B, s kv.Store, n, span int) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		start := (i * 37) % (n - span)
		err := s.View(ctx, func(r kv.Reader) error {
			it := r.Scan(BenchKey(start), nil, false)
			defer it.Close()
			got := 0
			for got < span && it.Next() {
				got++
			}
			if got != span {
				return fmt.Errorf("scanned %d keys, want %d", got, span)
			}
			return it.Err()
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchPuts measures transactions that each put one new key with BenchValue,
// one after another, run by update: a store's Update or UpdateNoSync.
func BenchPuts(b *testing.B, update func(context.Context, func(kv.Tx) error) error) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := update(ctx, func(tx kv.Tx) error { return tx.Put(BenchKey(i), BenchValue) }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchParallelPuts measures Updates that each put one new key with
// BenchValue, from parallelism × GOMAXPROCS goroutines at once: what the
// store's commits share (group commit) shows here.
func BenchParallelPuts(b *testing.B, s kv.Store, parallelism int) {
	b.Helper()
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(parallelism)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := BenchKey(int(next.Add(1)))
			if err := s.Update(ctx, func(tx kv.Tx) error { return tx.Put(key, BenchValue) }); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
