package pebblekv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/kv/kvtest"
)

// countingFS counts file syncs, so that benchmarks can report how many
// fsyncs each durable Update costs: fewer than one under concurrency is group
// commit at work.
type countingFS struct {
	vfs.FS
	syncs *atomic.Int64
}

func (fs countingFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return countingFile{File: f, syncs: fs.syncs}, nil
}

func (fs countingFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.Create(name, c))
}

func (fs countingFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.ReuseForWrite(oldname, newname, c))
}

func (fs countingFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenReadWrite(name, c, opts...))
}

type countingFile struct {
	vfs.File
	syncs *atomic.Int64
}

func (f countingFile) Sync() error     { f.syncs.Add(1); return f.File.Sync() }
func (f countingFile) SyncData() error { f.syncs.Add(1); return f.File.SyncData() }
func (f countingFile) SyncTo(n int64) (bool, error) {
	f.syncs.Add(1)
	return f.File.SyncTo(n)
}

// openBench opens a durable on-disk store whose syncs are counted.
func openBench(b *testing.B) (*Store, *atomic.Int64) {
	b.Helper()
	var syncs atomic.Int64
	s, err := open(Options{Dir: b.TempDir()}, countingFS{FS: vfs.Default, syncs: &syncs})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	})
	return s, &syncs
}

// BenchmarkGet measures a View with one point read of a 100-byte value.
func BenchmarkGet(b *testing.B) {
	const n = 1000
	s, _ := openBench(b)
	kvtest.Fill(b, s, n)
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = kvtest.BenchKey(i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		err := s.View(ctx, func(r kv.Reader) error {
			_, err := r.Get(keys[i%n])
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParallelGet is BenchmarkGet from 8 goroutines per core at once,
// each Get in a View of its own, as a server's point reads are.
func BenchmarkParallelGet(b *testing.B) {
	const n = 1000
	s, _ := openBench(b)
	kvtest.Fill(b, s, n)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(8)
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := kvtest.BenchKey(int(next.Add(1) % n))
			if err := s.View(ctx, func(r kv.Reader) error {
				_, err := r.Get(key)
				return err
			}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPut measures durable single-key Updates, one writer at a time and
// from many goroutines at once. fsyncs/op below 1 in the parallel case shows
// concurrent commits sharing WAL syncs.
func BenchmarkPut(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		s, syncs := openBench(b)
		start := syncs.Load()
		kvtest.BenchPuts(b, s.Update)
		b.ReportMetric(float64(syncs.Load()-start)/float64(b.N), "fsyncs/op")
	})
	b.Run("parallel", func(b *testing.B) {
		s, syncs := openBench(b)
		start := syncs.Load()
		kvtest.BenchParallelPuts(b, s, 8) // 8 × GOMAXPROCS writers
		b.ReportMetric(float64(syncs.Load()-start)/float64(b.N), "fsyncs/op")
	})
}

// BenchmarkPutInMemory measures single-key Updates on an InMemory store: the
// transaction machinery without any I/O.
func BenchmarkPutInMemory(b *testing.B) {
	s, err := Open(Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	kvtest.BenchPuts(b, s.Update)
}

// BenchmarkScan100 measures a View that iterates over 100 consecutive keys.
func BenchmarkScan100(b *testing.B) {
	const n, span = 2000, 100
	s, _ := openBench(b)
	kvtest.Fill(b, s, n)
	kvtest.BenchScan(b, s, n, span)
}

// benchDocument returns a JSON document of about 1 KB whose content
// compresses as users' documents do, not as a run of one byte does: words
// drawn from a small vocabulary, numbers, timestamps and random identifiers.
func benchDocument(rng *rand.Rand, i int) []byte {
	words := [...]string{"alpha", "order", "shipped", "customer", "pending", "invoice", "north", "south",
		"delivered", "cart", "session", "device", "mobile", "desktop", "login", "payment", "refund", "review",
		"warehouse", "express", "standard", "gift", "coupon", "basket", "return", "account", "premium", "trial"}
	b := fmt.Appendf(nil, `{"id":"doc-%d","pk":"tenant-%d","type":"event","created":"2026-%02d-%02dT%02d:%02d:%02dZ"`,
		i, i%100, 1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60))
	for f := 0; len(b) < 960; f++ {
		switch f % 4 {
		case 0:
			b = fmt.Appendf(b, `,"f%d":"%s %s %s"`, f, words[rng.IntN(len(words))], words[rng.IntN(len(words))], words[rng.IntN(len(words))])
		case 1:
			b = fmt.Appendf(b, `,"f%d":%d`, f, rng.IntN(1_000_000))
		case 2:
			b = fmt.Appendf(b, `,"f%d":%.4f`, f, rng.Float64()*1000)
		default:
			b = fmt.Appendf(b, `,"f%d":"%016x%016x"`, f, rng.Uint64(), rng.Uint64())
		}
	}
	return append(b, '}')
}

// putSettledDocuments writes benchDocument(rng, j) at kvtest.BenchKey(j) for
// j below n, rng seeded with seed, and compacts everything into the lowest
// level, where settled data lies.
func putSettledDocuments(tb testing.TB, s *Store, n int, seed uint64) {
	tb.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := 0; i < n; i += 1000 {
		if err := s.Update(ctx, func(tx kv.Tx) error {
			for j := i; j < min(n, i+1000); j++ {
				if err := tx.Put(kvtest.BenchKey(j), benchDocument(rng, j)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.db.Compact(ctx, []byte{0}, []byte{0xff}, false); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkInMemoryColdGet measures a point read of a 1 KB document that
// neither the block cache nor the lookup cache holds, in an InMemory store
// of 100,000 documents settled into its lowest level: the cost of reading
// and decompressing the block it lies in. table-B/doc reports what the
// store's tables take per document, the memory an InMemory store holds.
func BenchmarkInMemoryColdGet(b *testing.B) {
	const n = 100_000
	s, err := Open(Options{InMemory: true, CacheSize: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	putSettledDocuments(b, s, n, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	tables := s.IOStats().LiveTableBytes
	b.ReportAllocs()
	for b.Loop() {
		key := kvtest.BenchKey(rng.IntN(n))
		if err := s.View(ctx, func(r kv.Reader) error {
			_, err := r.Get(key)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tables)/n, "table-B/doc")
}
