package pebblekv

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/kv/kvtest"
)

func openMemCached(t testing.TB, size int64) *Store {
	t.Helper()
	s, err := Open(Options{InMemory: true, LookupCacheSize: size})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// The contract holds with every lookup going through the cache, on disk and
// in memory; a small cache also evicts throughout.
func TestContractWithLookupCache(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		kvtest.Run(t, func(t *testing.T) kv.Store { return openMemCached(t, 1<<20) })
	})
	t.Run("disk", func(t *testing.T) {
		kvtest.Run(t, func(t *testing.T) kv.Store {
			s, err := Open(Options{Dir: t.TempDir(), LookupCacheSize: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		})
	})
}

func getString(t *testing.T, r kv.Reader, key string) string {
	t.Helper()
	v, err := r.Get([]byte(key))
	if errors.Is(err, kv.ErrNotFound) {
		return "<absent>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

// A View that began before an Update keeps reading its snapshot's value,
// even after a later View has put the Update's value in the cache; Views
// after the Update read the new value, from the cache.
func TestLookupCacheRespectsSnapshots(t *testing.T) {
	s := openMemCached(t, 1<<20)
	ctx := context.Background()
	put(t, s, "k", "v1")
	checkValue(t, s, "k", "v1") // cached
	checkValue(t, s, "k", "v1") // a hit
	if st := s.LookupCache(); st.Hits != 1 {
		t.Fatalf("after reading a key twice: %+v, want one hit", st)
	}

	inOld, oldRead, release := make(chan struct{}), make(chan string, 2), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.View(ctx, func(r kv.Reader) error {
			close(inOld)
			<-release
			oldRead <- getString(t, r, "k")
			<-release
			oldRead <- getString(t, r, "k")
			return nil
		})
	}()
	<-inOld
	put(t, s, "k", "v2")
	release <- struct{}{}
	if got := <-oldRead; got != "v1" {
		t.Fatalf("the older View read %q after the Update, want its snapshot's v1", got)
	}
	checkValue(t, s, "k", "v2") // fills the cache with v2
	checkValue(t, s, "k", "v2")
	release <- struct{}{}
	if got := <-oldRead; got != "v1" {
		t.Fatalf("the older View read %q once v2 was cached, want v1", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	if err := s.Update(ctx, func(tx kv.Tx) error { return tx.Delete([]byte("k")) }); err != nil {
		t.Fatal(err)
	}
	if err := s.View(ctx, func(r kv.Reader) error {
		if got := getString(t, r, "k"); got != "<absent>" {
			return fmt.Errorf("after the delete: %q", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A transaction reads its own writes, not the committed value the cache
// keeps, before and after its batch is indexed; a range deletion drops
// every cached key it covers.
func TestLookupCacheTransactions(t *testing.T) {
	s := openMemCached(t, 1<<20)
	ctx := context.Background()
	put(t, s, "a", "1")
	put(t, s, "b", "1")
	checkValue(t, s, "a", "1")
	checkValue(t, s, "b", "1")
	err := s.Update(ctx, func(tx kv.Tx) error {
		if got := getString(t, tx, "a"); got != "1" {
			return fmt.Errorf("before writing: %q", got)
		}
		if err := tx.Put([]byte("a"), []byte("2")); err != nil {
			return err
		}
		if got := getString(t, tx, "a"); got != "2" {
			return fmt.Errorf("own write, plain batch: %q", got)
		}
		it := tx.Scan(nil, nil, false) // indexes the batch
		if err := it.Close(); err != nil {
			return err
		}
		if err := tx.Put([]byte("b"), []byte("2")); err != nil {
			return err
		}
		if got := getString(t, tx, "b"); got != "2" {
			return fmt.Errorf("own write, indexed batch: %q", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkValue(t, s, "a", "2")
	checkValue(t, s, "b", "2")

	// A failed transaction leaves the cached values as they were.
	boom := errors.New("boom")
	if err := s.Update(ctx, func(tx kv.Tx) error {
		_ = tx.Put([]byte("a"), []byte("3"))
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	checkValue(t, s, "a", "2")

	if err := s.Update(ctx, func(tx kv.Tx) error { return tx.DeleteRange([]byte("a"), []byte("c")) }); err != nil {
		t.Fatal(err)
	}
	if err := s.View(ctx, func(r kv.Reader) error {
		for _, k := range []string{"a", "b"} {
			if got := getString(t, r, k); got != "<absent>" {
				return fmt.Errorf("%s after the range deletion: %q", k, got)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// Readers never see a value older than one an Update that returned before
// they began wrote, nor two values of one key in one View, while writers
// change the keys as fast as they can: the cache's marks are checked
// against real commits, under the race detector in CI.
func TestLookupCacheUnderConcurrentWrites(t *testing.T) {
	s := openMemCached(t, 64<<10)
	ctx := context.Background()
	const keys, writes, readers = 8, 300, 4
	var acked [keys]atomic.Int64 // the newest value of each key whose Update returned
	key := func(i int) []byte { return []byte("key-" + strconv.Itoa(i)) }
	for i := range keys {
		put(t, s, string(key(i)), "0")
	}
	var wg sync.WaitGroup
	errs := make(chan error, readers+keys)
	stop := make(chan struct{})
	for i := range keys {
		wg.Add(1)
		go func() { // one writer per key: each Update adds one to it
			defer wg.Done()
			for range writes {
				var n int64
				err := s.Update(ctx, func(tx kv.Tx) error {
					v, err := tx.Get(key(i))
					if err != nil {
						return err
					}
					n, err = strconv.ParseInt(string(v), 10, 64)
					if err != nil {
						return err
					}
					n++
					return tx.Put(key(i), []byte(strconv.FormatInt(n, 10)))
				})
				if err != nil {
					errs <- err
					return
				}
				if n != acked[i].Load()+1 {
					errs <- fmt.Errorf("key %d: the Update read %d, the last acknowledged was %d", i, n-1, acked[i].Load())
					return
				}
				acked[i].Store(n)
			}
		}()
	}
	var readersWG sync.WaitGroup
	for range readers {
		readersWG.Add(1)
		go func() {
			defer readersWG.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var floor [keys]int64
				for i := range keys {
					floor[i] = acked[i].Load()
				}
				err := s.View(ctx, func(r kv.Reader) error {
					for i := range keys {
						var seen [2]int64
						for j := range seen {
							v, err := r.Get(key(i))
							if err != nil {
								return err
							}
							if seen[j], err = strconv.ParseInt(string(v), 10, 64); err != nil {
								return err
							}
						}
						if seen[0] < floor[i] {
							return fmt.Errorf("key %d: read %d after %d was acknowledged", i, seen[0], floor[i])
						}
						if seen[0] != seen[1] {
							return fmt.Errorf("key %d: one View read %d, then %d", i, seen[0], seen[1])
						}
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readersWG.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := s.LookupCache()
	t.Logf("lookups: %+v", st)
	if st.Hits == 0 || st.Misses == 0 {
		t.Errorf("the cache was not exercised both ways: %+v", st)
	}
	for i := range keys {
		checkValue(t, s, string(key(i)), strconv.Itoa(writes))
	}
}

// The cache keeps only the keys it is told to, and stays within its budget.
func TestLookupCacheBudgetAndKeys(t *testing.T) {
	c := newLookupCache(lookupStripes*1024, func(k []byte) bool { return k[0] == 'D' })
	value := make([]byte, 100)
	for i := range 10000 {
		c.add([]byte("D"+strconv.Itoa(i)), value, 0)
	}
	c.add([]byte("X1"), value, 0)
	total := 0
	for i := range c.stripes {
		st := &c.stripes[i]
		if st.bytes > c.budget {
			t.Errorf("stripe %d holds %d bytes, over its %d", i, st.bytes, c.budget)
		}
		sum := 0
		for k, v := range st.entries {
			sum += len(k) + len(v) + entryOverhead
		}
		if sum != st.bytes {
			t.Errorf("stripe %d counts %d bytes, holds %d", i, st.bytes, sum)
		}
		total += len(st.entries)
	}
	if total == 0 || total >= 10000 {
		t.Errorf("%d entries kept of 10000 in a budget for about %d", total, lookupStripes*1024/(len(value)+entryOverhead))
	}
	if _, ok := c.get([]byte("X1"), 0); ok {
		t.Error("a key the cache was not told to keep was answered")
	}
	if _, ok := c.get([]byte("D9999"), 0); !ok {
		t.Error("the key added last was evicted at once")
	}
}
