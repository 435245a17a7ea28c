package pebblekv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/s2"

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

// checkAbsent checks, in one View, that s holds none of keys.
func checkAbsent(t *testing.T, s kv.Store, when string, keys ...string) {
	t.Helper()
	if err := s.View(context.Background(), func(r kv.Reader) error {
		for _, k := range keys {
			if got := getString(t, r, k); got != "<absent>" {
				return fmt.Errorf("%s %s: %q, want it absent", k, when, got)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A View that began before an Update keeps reading its snapshot's value,
// even after a later View has put the Update's value in the cache; Views
// after the Update read the new value, from the cache.
func TestLookupCacheRespectsSnapshots(t *testing.T) {
	s := openMemCached(t, 1<<20)
	ctx := context.Background()
	put(t, s, "k", "v1") // kept by the commit
	checkValue(t, s, "k", "v1")
	checkValue(t, s, "k", "v1")
	if st := s.LookupCache(); st.Hits != 2 || st.Misses != 0 {
		t.Fatalf("after writing a key and reading it twice: %+v, want two hits", st)
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
	checkAbsent(t, s, "after the delete", "k")
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
	checkAbsent(t, s, "after the range deletion", "a", "b")
}

// A commit keeps the last value it wrote to each key, nothing for a key its
// last write deleted, and nothing at all when it deletes a range; a value
// read from the store is kept as before.
func TestLookupCacheKeepsWrites(t *testing.T) {
	s := openMemCached(t, 1<<20)
	ctx := context.Background()
	put(t, s, "gone", "0")
	err := s.Update(ctx, func(tx kv.Tx) error {
		for _, w := range [][2]string{{"twice", "1"}, {"twice", "2"}, {"gone", "1"}, {"once", "1"}} {
			if err := tx.Put([]byte(w[0]), []byte(w[1])); err != nil {
				return err
			}
		}
		return tx.Delete([]byte("gone"))
	})
	if err != nil {
		t.Fatal(err)
	}
	checkValue(t, s, "twice", "2")
	checkValue(t, s, "once", "1")
	checkAbsent(t, s, "deleted after it was set", "gone")
	if st := s.LookupCache(); st.Hits != 2 || st.Misses != 1 {
		t.Errorf("after one batch: %+v, want hits for the two keys it set and a miss for the one it deleted", st)
	}

	err = s.Update(ctx, func(tx kv.Tx) error {
		if err := tx.Put([]byte("r1"), []byte("1")); err != nil {
			return err
		}
		if err := tx.DeleteRange([]byte("r"), []byte("s")); err != nil {
			return err
		}
		return tx.Put([]byte("r2"), []byte("2"))
	})
	if err != nil {
		t.Fatal(err)
	}
	before := s.LookupCache()
	checkAbsent(t, s, "set, then deleted by a range in the same batch", "r1")
	checkValue(t, s, "r2", "2") // read from the store: the batch kept nothing
	checkValue(t, s, "r2", "2")
	if st := s.LookupCache(); st.Hits-before.Hits != 1 || st.Misses-before.Misses != 2 {
		t.Errorf("after a batch with a range deletion: %+v since %+v, want two misses, then a hit", st, before)
	}
}

// Readers never see a value older than one an Update that returned before
// they began wrote, nor two values of one key in one View, while writers
// change the keys as fast as they can: the cache's marks are checked
// against real commits (run it under -race too: scripts/test does not).
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

// The cache keeps only the keys it is told to, within its rings: every key
// the map holds points at its own record, holding the value last added, and
// the records added last are kept.
func TestLookupCacheRings(t *testing.T) {
	c := newLookupCache(lookupStripes*1024, func(k []byte) bool { return k[0] == 'D' })
	defer c.free()
	value := func(i int) []byte { return []byte(strings.Repeat(strconv.Itoa(i%10), 20+i%150)) }
	const n = 10000
	for i := range n {
		c.add([]byte("D"+strconv.Itoa(i)), value(i), 0)
	}
	c.add([]byte("X1"), value(1), 0)
	c.add(make([]byte, 2000), nil, 0) // larger than a ring: not kept
	total := 0
	for i := range c.stripes {
		s := &c.stripes[i]
		if len(s.ring) > c.ringSize || int(s.head) > len(s.ring) || s.oldStart < s.oldEnd && s.oldStart < s.head || s.oldEnd > uint32(len(s.ring)) {
			t.Fatalf("stripe %d: ring of %d, head %d, previous lap [%d, %d)", i, len(s.ring), s.head, s.oldStart, s.oldEnd)
		}
		for h, off := range s.entries {
			rk, _, _ := s.record(off)
			rv, ok := s.value(off, rk)
			j, err := strconv.Atoi(strings.TrimPrefix(string(rk), "D"))
			if c.hash(rk) != h || !ok || err != nil || string(rv) != string(value(j)) {
				t.Fatalf("stripe %d: hash %x points at the record of %q = %q", i, h, rk, rv)
			}
		}
		total += len(s.entries)
	}
	if total == 0 || total >= n {
		t.Errorf("%d entries kept of %d in rings of %d bytes", total, n, c.ringSize)
	}
	if _, ok := c.get([]byte("X1"), 0); ok {
		t.Error("a key the cache was not told to keep was answered")
	}
	for i := n - 20; i < n; i++ {
		if v, ok := c.get([]byte("D"+strconv.Itoa(i)), 0); !ok || string(v) != string(value(i)) {
			t.Errorf("D%d, among the last added: %q, %v", i, v, ok)
		}
	}
	// Dropping a key, and adding it again, leaves its old record unused.
	key := []byte("D" + strconv.Itoa(n-1))
	h := c.hash(key)
	s := &c.stripes[stripeOf(h)]
	s.mu.Lock()
	s.drop(h)
	s.mu.Unlock()
	if _, ok := c.get(key, 0); ok {
		t.Error("a dropped key was answered")
	}
	c.add(key, []byte("again"), 0)
	if v, ok := c.get(key, 0); !ok || string(v) != "again" {
		t.Errorf("after adding it again: %q, %v", v, ok)
	}
}

// Values that compress are kept compressed, so that the same rings hold
// more of them; values that do not are kept as they are; either way a
// lookup returns the value as it was added.
func TestLookupCacheCompresses(t *testing.T) {
	random := func(i int) []byte {
		r := rand.New(rand.NewPCG(uint64(i), 1))
		b := make([]byte, 1024)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		return b
	}
	document := func(i int) []byte {
		return fmt.Appendf(nil, `{"id":"d%d","pk":"p%d","name":"user %d","tags":["a","b"],"pad":"%s"}`, i, i%100, i, strings.Repeat("lorem ipsum ", 80))
	}
	const n = 2000
	kept := func(value func(int) []byte) (entries, compressed int) {
		c := newLookupCache(lookupStripes*4096, nil)
		defer c.free()
		for i := range n {
			c.add([]byte("D"+strconv.Itoa(i)), value(i), 0)
		}
		for i := range c.stripes {
			s := &c.stripes[i]
			for _, off := range s.entries {
				if _, _, z := s.record(off); z {
					compressed++
				}
			}
			entries += len(s.entries)
		}
		for i := n - 10; i < n; i++ {
			if v, ok := c.get([]byte("D"+strconv.Itoa(i)), 0); !ok || !bytes.Equal(v, value(i)) {
				t.Fatalf("D%d, among the last added: %.40q, %v", i, v, ok)
			}
		}
		return entries, compressed
	}
	rawEntries, rawCompressed := kept(random)
	docEntries, docCompressed := kept(document)
	if rawCompressed != 0 || docCompressed != docEntries {
		t.Errorf("compressed records: %d of %d random values, %d of %d documents", rawCompressed, rawEntries, docCompressed, docEntries)
	}
	if docEntries < 4*rawEntries {
		t.Errorf("the same rings kept %d documents and %d random values of the same size", docEntries, rawEntries)
	}

	// A record is answered only for its own key: two keys of one hash miss.
	c := newLookupCache(lookupStripes*4096, nil)
	defer c.free()
	c.add([]byte("a"), document(1), 0)
	h := c.hash([]byte("a"))
	s := &c.stripes[stripeOf(h)]
	s.mu.Lock()
	off := s.entries[h]
	_, okOther := s.value(off, []byte("b"))
	v, okOwn := s.value(off, []byte("a"))
	s.mu.Unlock()
	if okOther || !okOwn || !bytes.Equal(v, document(1)) {
		t.Errorf("the record of a: answered for b %v; for a %v, %.40q", okOther, okOwn, v)
	}
}

// BenchmarkLookupCache measures the cache alone with 1 KB values: a hit
// (which decompresses what was stored compressed) and an add (which
// compresses), for a JSON document that compresses and for random bytes,
// which are stored as they are.
//
//	go test ./kv/pebblekv -run '^$' -bench LookupCache -benchmem
func BenchmarkLookupCache(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 1024)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	words := []string{"alpha", "beta", "gamma", "delta", "status", "active", "region", "west", "user", "event"}
	doc := []byte(`{"id":"d1","pk":"p1","pad":"`)
	for len(doc) < 1022 {
		doc = append(doc, words[r.IntN(len(words))]...)
		doc = append(doc, ' ')
	}
	doc = append(doc[:1022], `"}`...)
	const keys = 1000
	for _, v := range []struct {
		name  string
		value []byte
	}{{"document", doc}, {"random", random}} {
		c := newLookupCache(32<<20, nil)
		b.Cleanup(c.free)
		key := func(i int) []byte { return []byte("D" + strconv.Itoa(i%keys)) }
		for i := range keys {
			c.add(key(i), v.value, 0)
		}
		kept := len(v.value)
		if enc := s2.Encode(nil, v.value); len(enc) <= len(v.value)-len(v.value)/8 {
			kept = len(enc)
		}
		b.Run("hit/"+v.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, ok := c.get(key(i), 0); !ok {
					b.Fatal("miss")
				}
			}
			b.ReportMetric(float64(kept), "kept-B")
		})
		b.Run("add/"+v.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				k := key(i)
				h := c.hash(k)
				s := &c.stripes[stripeOf(h)]
				s.mu.Lock()
				s.drop(h)
				s.mu.Unlock()
				c.add(k, v.value, 0)
			}
		})
	}
}
