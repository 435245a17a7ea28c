package pebblekv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/kv/kvtest"
)

// A blocked Bloom filter never forgets a key, and at its capacity it errs
// on about one absent key in a hundred; built for twice its keys, on far
// fewer.
func TestBlockedBloomFalsePositives(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 100_000
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = rng.Uint64()
	}
	for _, tc := range []struct {
		sizedFor int64
		maxRate  float64
	}{{n, 0.015}, {2 * n, 0.002}} {
		b := newBlockedBloom(tc.sizedFor)
		for _, h := range keys {
			b.add(h)
		}
		for _, h := range keys {
			if !b.mayContain(h) {
				t.Fatalf("sized for %d: a key added is reported absent", tc.sizedFor)
			}
		}
		fp := 0
		for range n {
			if b.mayContain(rng.Uint64()) {
				fp++
			}
		}
		if rate := float64(fp) / n; rate > tc.maxRate {
			t.Errorf("sized for %d keys, holding %d: false positives %.4f, want at most %.4f", tc.sizedFor, n, rate, tc.maxRate)
		}
	}
}

// openFiltered opens a store whose filter covers keys of prefix, in memory
// or in dir, and waits until it has a filter.
func openFiltered(t testing.TB, dir string, prefix []byte) *Store {
	t.Helper()
	opts := Options{InMemory: dir == "", Dir: dir, FilterPrefix: prefix}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if dir != "" {
		waitFilterBuilds(t, s, 1)
	}
	return s
}

// waitFilterBuilds waits until the store's key filter has been built n times.
func waitFilterBuilds(t testing.TB, s *Store, n int64) {
	t.Helper()
	for s.KeyFilter().Builds < n {
		time.Sleep(time.Millisecond)
	}
}

// The contract holds with a filter over every key, so that every lookup in
// an Update that finds nothing may be the filter's answer.
func TestContractWithKeyFilter(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		kvtest.Run(t, func(t *testing.T) kv.Store { return openFiltered(t, "", []byte{}) })
	})
	t.Run("disk", func(t *testing.T) {
		kvtest.Run(t, func(t *testing.T) kv.Store { return openFiltered(t, t.TempDir(), []byte{}) })
	})
}

// create is what a create does with its document's key: it looks the key up
// inside the Update, expects nothing, and writes it.
func create(t testing.TB, s kv.Store, key string) {
	t.Helper()
	err := s.Update(context.Background(), func(tx kv.Tx) error {
		if v, err := tx.Get([]byte(key)); !errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("%s is not free: %q, %v", key, v, err)
		}
		return tx.Put([]byte(key), []byte("v"+key))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkHeld checks that an Update finds each of keys with its value, and
// none of gone.
func checkHeld(t testing.TB, s kv.Store, keys, gone []string) {
	t.Helper()
	err := s.Update(context.Background(), func(tx kv.Tx) error {
		for _, k := range keys {
			if v, err := tx.Get([]byte(k)); err != nil || string(v) != "v"+k {
				return fmt.Errorf("%s: %q, %v; want %q", k, v, err, "v"+k)
			}
		}
		for _, k := range gone {
			if v, err := tx.Get([]byte(k)); !errors.Is(err, kv.ErrNotFound) {
				return fmt.Errorf("%s, deleted: %q, %v", k, v, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func docKeys(from, to int) []string {
	keys := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		keys = append(keys, fmt.Sprintf("D%08d", i))
	}
	return keys
}

// Creates find their keys free through the filter; the filter grows with
// them, and never hides a key the store holds. Keys outside its prefix go
// to Pebble.
func TestKeyFilterAnswersCreates(t *testing.T) {
	s := openFiltered(t, "", []byte("D"))
	keys := docKeys(0, 3*minFilterKeys) // beyond the first layer and the second
	for _, k := range keys {
		create(t, s, k)
	}
	create(t, s, "Eoutside")
	st := s.KeyFilter()
	if st.Absent < int64(len(keys))*97/100 {
		t.Errorf("the filter answered %d of %d creates' lookups, want nearly all: %+v", st.Absent, len(keys), st)
	}
	if st.Keys < int64(len(keys))*97/100 || st.Keys > int64(len(keys)) {
		t.Errorf("the filter holds %d keys after %d creates: %+v", st.Keys, len(keys), st)
	}
	if one := newBlockedBloom(minFilterKeys).size(); st.Bytes <= 2*one {
		t.Errorf("the filter holds %d keys in %d bytes: it did not grow past two layers of %d", st.Keys, st.Bytes, one)
	}
	checkHeld(t, s, append(keys, "Eoutside"), []string{"D", "Dnever", "E"})
	// A key set again is not added again.
	before := s.KeyFilter().Keys
	put(t, s, keys[0], "v"+keys[0])
	if after := s.KeyFilter().Keys; after != before {
		t.Errorf("setting a held key again took the filter from %d to %d keys", before, after)
	}
}

// A transaction's own writes are found before the filter is asked: in a
// plain batch, and in one indexed because it grew large.
func TestKeyFilterOwnWrites(t *testing.T) {
	s := openFiltered(t, "", []byte("D"))
	err := s.Update(context.Background(), func(tx kv.Tx) error {
		if err := tx.Put([]byte("Da"), []byte("1")); err != nil {
			return err
		}
		if v, err := tx.Get([]byte("Da")); err != nil || string(v) != "1" {
			return fmt.Errorf("own write: %q, %v", v, err)
		}
		if err := tx.Delete([]byte("Da")); err != nil {
			return err
		}
		if _, err := tx.Get([]byte("Da")); !errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("own deletion: %v", err)
		}
		for i := range 2 * maxLinearOps {
			if err := tx.Put(fmt.Appendf(nil, "Db%05d", i), []byte("2")); err != nil {
				return err
			}
		}
		for i := range 2 * maxLinearOps {
			if v, err := tx.Get(fmt.Appendf(nil, "Db%05d", i)); err != nil || string(v) != "2" {
				return fmt.Errorf("own write %d of a large batch: %q, %v", i, v, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// inBatches runs fn on each of keys in Updates of up to 1,000 keys.
func inBatches(t testing.TB, s kv.Store, keys []string, fn func(tx kv.Tx, key []byte) error) {
	t.Helper()
	for i := 0; i < len(keys); i += 1000 {
		batch := keys[i:min(i+1000, len(keys))]
		update(t, s, func(tx kv.Tx) error {
			for _, k := range batch {
				if err := fn(tx, []byte(k)); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// setValue is an inBatches function that sets each key to "v" and the key.
func setValue(tx kv.Tx, key []byte) error { return tx.Put(key, append([]byte("v"), key...)) }

// storeKeys returns the directory of a closed store on disk that holds
// keys, each with the value setValue gives it.
func storeKeys(t testing.TB, keys ...string) string {
	t.Helper()
	dir := t.TempDir()
	s := openDir(t, dir)
	inBatches(t, s, keys, setValue)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A store on disk builds its filter from the keys it holds when it opens.
func TestKeyFilterBuildsOnOpen(t *testing.T) {
	keys := docKeys(0, 5000)
	s := openFiltered(t, storeKeys(t, append(keys, "Eother")...), []byte("D"))
	if st := s.KeyFilter(); st.Keys != int64(len(keys)) {
		t.Errorf("built from %d keys of the prefix, want %d: %+v", st.Keys, len(keys), st)
	}
	checkHeld(t, s, keys, nil)
	for _, k := range docKeys(5000, 6000) {
		create(t, s, k)
	}
	if st := s.KeyFilter(); st.Absent < 950 {
		t.Errorf("the built filter answered %d of 1,000 creates, want nearly all: %+v", st.Absent, st)
	}
}

// With Options.FilterKeys the filter is built from what it lists, here an
// index of the keys under another prefix, not from a scan of its own.
func TestKeyFilterBuildsFromFilterKeys(t *testing.T) {
	keys := docKeys(0, 3000)
	index := make([]string, len(keys))
	for i, k := range keys {
		index[i] = "X" + k[1:]
	}
	dir := storeKeys(t, append(keys, index[:2000]...)...) // the index lacks the last thousand
	s, err := Open(Options{Dir: dir, FilterPrefix: []byte("D"), FilterKeys: func(r kv.Reader, add func([]byte) bool) error {
		it := r.Scan([]byte("X"), []byte("Y"), false)
		defer it.Close()
		for it.Next() {
			if !add(append([]byte("D"), it.Key()[1:]...)) {
				return nil
			}
		}
		return it.Err()
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	waitFilterBuilds(t, s, 1)
	if st := s.KeyFilter(); st.Keys != 2000 {
		t.Fatalf("the filter holds %d keys, want the 2,000 FilterKeys listed: %+v", st.Keys, st)
	}
	checkHeld(t, s, keys[:2000], nil)
}

// Once more than half the keys it holds are deleted, the filter is built
// again from the keys that remain, and holds no more than they.
func TestKeyFilterRebuildsAfterDeletions(t *testing.T) {
	s := openFiltered(t, "", []byte("D"))
	keys := docKeys(0, minFilterKeys+minFilterKeys/2)
	inBatches(t, s, keys, setValue)
	kept, gone := keys[:len(keys)/3], keys[len(keys)/3:]
	inBatches(t, s, gone, func(tx kv.Tx, key []byte) error { return tx.DeleteSized(key, 10) })
	waitFilterBuilds(t, s, 1)
	// The build may have scanned before the last deletions: those it counts
	// as deleted since.
	if st := s.KeyFilter(); st.Keys-st.Deleted != int64(len(kept)) || st.Keys >= int64(len(keys)) {
		t.Errorf("after the rebuild the filter holds %d keys, %d of them deleted; want the %d kept: %+v", st.Keys, st.Deleted, len(kept), st)
	}
	checkHeld(t, s, kept, gone[:100])
}

// A range deletion over the prefix removes an unknown number of keys (a
// dropped container): the filter is built again from what remains; one
// beside the prefix changes nothing.
func TestKeyFilterRebuildsAfterRangeDeletion(t *testing.T) {
	s := openFiltered(t, "", []byte("D"))
	keys := docKeys(0, minFilterKeys+minFilterKeys/2)
	inBatches(t, s, keys, setValue)
	update(t, s, func(tx kv.Tx) error { return tx.DeleteRange([]byte("E"), []byte("F")) })
	update(t, s, func(tx kv.Tx) error { return tx.DeleteRange([]byte("C"), []byte("D")) })
	s.writeSem <- struct{}{} // what commits see, under the writer lock
	stale := s.filter.stale()
	<-s.writeSem
	if stale {
		t.Fatalf("range deletions beside the prefix call for a rebuild: %+v", s.KeyFilter())
	}
	kept := keys[:1000]
	update(t, s, func(tx kv.Tx) error { return tx.DeleteRange([]byte(keys[1000]), []byte("E")) })
	waitFilterBuilds(t, s, 1)
	if st := s.KeyFilter(); st.Keys != int64(len(kept)) {
		t.Errorf("after the rebuild the filter holds %d keys, want the %d kept: %+v", st.Keys, len(kept), st)
	}
	checkHeld(t, s, kept, keys[1000:1100])
}

// Keys committed while a build scans its snapshot are in the filter it
// builds, and so are the keys of the snapshot deleted meanwhile (a filter may
// hold a key the store does not, never the other way round).
func TestKeyFilterWritesDuringBuild(t *testing.T) {
	old := docKeys(0, 3000)
	dir := storeKeys(t, old...)
	var s2 *Store
	opened := make(chan struct{})
	during := docKeys(3000, 3500)
	afterFilterSnapshot = func() {
		<-opened
		for _, k := range during {
			create(t, s2, k)
		}
		update(t, s2, func(tx kv.Tx) error { return tx.Delete([]byte(old[0])) })
	}
	t.Cleanup(func() { afterFilterSnapshot = nil })
	var err error
	s2, err = Open(Options{Dir: dir, FilterPrefix: []byte("D")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	close(opened)
	waitFilterBuilds(t, s2, 1)
	// A key committed during the scan is added unless the filter already
	// says it may hold it: a false positive, about one in a million here.
	if st := s2.KeyFilter(); st.Keys < int64(len(old)+len(during)*9/10) || st.Keys > int64(len(old)+len(during)) {
		t.Errorf("the filter holds %d keys, want the %d scanned and the %d committed during the scan: %+v", st.Keys, len(old), len(during), st)
	}
	checkHeld(t, s2, append(old[1:], during...), old[:1])
}

// Closing a store while its filter is being built ends the build.
func TestKeyFilterCloseDuringBuild(t *testing.T) {
	dir := storeKeys(t, docKeys(0, 20_000)...) // several times the keys between checks for closing
	var s2 *Store
	opened := make(chan struct{})
	closed := make(chan error, 1)
	afterFilterSnapshot = func() {
		<-opened
		go func() { closed <- s2.Close() }()
		for !s2.closing.Load() {
			time.Sleep(time.Millisecond)
		}
	}
	t.Cleanup(func() { afterFilterSnapshot = nil })
	var err error
	s2, err = Open(Options{Dir: dir, FilterPrefix: []byte("D")})
	if err != nil {
		t.Fatal(err)
	}
	close(opened)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if st := s2.KeyFilter(); st.Builds != 0 {
		t.Errorf("a build cut short by Close completed: %+v", st)
	}
}

// update runs fn in an Update of s and fails the test on an error.
func update(t testing.TB, s kv.Store, fn func(kv.Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkCreateLookup is a create's work in the store: an Update that
// looks up a key it finds absent and writes it, in an in-memory store
// holding 200,000 keys of 1 KB values, with and without the key filter.
//
//	go test ./kv/pebblekv -run '^$' -bench CreateLookup -benchmem
func BenchmarkCreateLookup(b *testing.B) {
	for _, filtered := range []bool{false, true} {
		name := "none"
		if filtered {
			name = "filter"
		}
		b.Run(name, func(b *testing.B) {
			opts := Options{InMemory: true}
			if filtered {
				opts.FilterPrefix = []byte("D")
			}
			s, err := Open(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			value := make([]byte, 1024)
			inBatches(b, s, docKeys(0, 200_000), func(tx kv.Tx, key []byte) error { return tx.Put(key, value) })
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				key := fmt.Appendf(nil, "Dnew%09d", i)
				update(b, s, func(tx kv.Tx) error {
					if _, err := tx.Get(key); !errors.Is(err, kv.ErrNotFound) {
						return fmt.Errorf("%s: %v", key, err)
					}
					return tx.Put(key, value)
				})
			}
		})
	}
}
