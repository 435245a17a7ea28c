// Package kvtest is the contract suite for [kv.Store] backends. Every backend's
// tests call [Run], so that all of them provably implement the same semantics:
// ordering, error sentinels, read-your-writes, atomicity, snapshot isolation,
// serializability and lifecycle behaviour, as documented in package kv.
package kvtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lethe-db/lethe/kv"
)

// Run runs the contract suite as subtests of t. newStore is called once per
// subtest and must return a new, empty, open store; Run closes it at the end
// of the subtest (newStore may also register its own cleanup that closes it:
// Close must be safe to call twice). The suite is sized to finish in a couple
// of seconds on a small machine, with durable stores included.
func Run(t *testing.T, newStore func(t *testing.T) kv.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s kv.Store)
	}{
		{"GetMissing", testGetMissing},
		{"PutGetOverwrite", testPutGetOverwrite},
		{"EmptyValue", testEmptyValue},
		{"Delete", testDelete},
		{"DeleteRange", testDeleteRange},
		{"ScanBounds", testScanBounds},
		{"ScanEmptyStore", testScanEmptyStore},
		{"ScanManyKeys", testScanManyKeys},
		{"IteratorProtocol", testIteratorProtocol},
		{"PrefixEnd", testPrefixEnd},
		{"LargeValue", testLargeValue},
		{"ReadYourWrites", testReadYourWrites},
		{"WriteRuns", testWriteRuns},
		{"PutCopiesArguments", testPutCopiesArguments},
		{"GetResultOwned", testGetResultOwned},
		{"ErrorRollsBack", testErrorRollsBack},
		{"ErrorReturnedUnchanged", testErrorReturnedUnchanged},
		{"PanicRollsBack", testPanicRollsBack},
		{"ViewSnapshotIsolation", testViewSnapshotIsolation},
		{"ViewSeesReturnedUpdates", testViewSeesReturnedUpdates},
		{"UncommittedInvisible", testUncommittedInvisible},
		{"SerializableCounter", testSerializableCounter},
		{"ConsistentTransfers", testConsistentTransfers},
		{"CancelledContext", testCancelledContext},
		{"Closed", testClosed},
		{"UpdateNoSync", testUpdateNoSync},
		{"Insert", testInsert},
		{"Create", testCreate},
		{"GetBatch", testGetBatch},
		{"Prefetch", testPrefetch},
		{"ViewKeys", testViewKeys},
		{"Count", testCount},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			defer func() {
				if err := s.Close(); err != nil && !errors.Is(err, kv.ErrClosed) {
					t.Errorf("Close: %v", err)
				}
			}()
			tc.fn(t, s)
		})
	}
}

// waitTimeout bounds every wait on another goroutine, so that a backend that
// deadlocks fails the suite instead of hanging it.
const waitTimeout = 10 * time.Second

// pair is a key-value pair as strings, which print and compare conveniently
// even when they hold arbitrary bytes.
type pair struct{ k, v string }

func (p pair) String() string { return fmt.Sprintf("%q=%q", p.k, p.v) }

func update(t *testing.T, s kv.Store, fn func(kv.Tx) error) {
	t.Helper()
	if err := s.Update(t.Context(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func view(t *testing.T, s kv.Store, fn func(kv.Reader) error) {
	t.Helper()
	if err := s.View(t.Context(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// putAll stores the pairs in one Update.
func putAll(t *testing.T, s kv.Store, pairs ...pair) {
	t.Helper()
	update(t, s, func(tx kv.Tx) error {
		for _, p := range pairs {
			if err := tx.Put([]byte(p.k), []byte(p.v)); err != nil {
				return err
			}
		}
		return nil
	})
}

// collect drains and closes it.
func collect(it kv.Iterator) ([]pair, error) {
	var out []pair
	for it.Next() {
		out = append(out, pair{string(it.Key()), string(it.Value())})
	}
	if err := it.Close(); err != nil {
		return out, err
	}
	return out, nil
}

func scan(r kv.Reader, start, end []byte, reverse bool) ([]pair, error) {
	return collect(r.Scan(start, end, reverse))
}

// dump returns the whole store in key order.
func dump(t *testing.T, s kv.Store) []pair {
	t.Helper()
	var out []pair
	view(t, s, func(r kv.Reader) error {
		var err error
		out, err = scan(r, nil, nil, false)
		return err
	})
	return out
}

func checkPairs(t *testing.T, what string, got, want []pair) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// checkGet checks that r holds want at key, or no value when want is nil.
func checkGet(t *testing.T, r kv.Reader, key string, want *string) {
	t.Helper()
	v, err := r.Get([]byte(key))
	switch {
	case want == nil && !errors.Is(err, kv.ErrNotFound):
		t.Errorf("Get(%q) = %q, %v; want kv.ErrNotFound", key, v, err)
	case want != nil && err != nil:
		t.Errorf("Get(%q): %v; want %q", key, err, *want)
	case want != nil && string(v) != *want:
		t.Errorf("Get(%q) = %q; want %q", key, v, *want)
	}
}

func ptr(s string) *string { return &s }

// wait waits for ch to be closed or to deliver, failing the test on timeout.
func wait[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func testGetMissing(t *testing.T, s kv.Store) {
	view(t, s, func(r kv.Reader) error {
		checkGet(t, r, "missing", nil)
		return nil
	})
	putAll(t, s, pair{"present", "x"})
	update(t, s, func(tx kv.Tx) error {
		checkGet(t, tx, "missing", nil)
		checkGet(t, tx, "presen", nil)      // a prefix of a stored key
		checkGet(t, tx, "present\x00", nil) // a key extending a stored key
		return nil
	})
}

func testPutGetOverwrite(t *testing.T, s kv.Store) {
	putAll(t, s, pair{"a", "1"}, pair{"b", "2"})
	view(t, s, func(r kv.Reader) error {
		checkGet(t, r, "a", ptr("1"))
		checkGet(t, r, "b", ptr("2"))
		return nil
	})
	putAll(t, s, pair{"a", "one"})
	update(t, s, func(tx kv.Tx) error {
		checkGet(t, tx, "a", ptr("one"))
		if err := tx.Put([]byte("b"), []byte("first")); err != nil {
			return err
		}
		return tx.Put([]byte("b"), []byte("second")) // last write in a tx wins
	})
	checkPairs(t, "after overwrites", dump(t, s), []pair{{"a", "one"}, {"b", "second"}})
	// An Update that only reads commits nothing and succeeds.
	update(t, s, func(tx kv.Tx) error {
		_, err := tx.Get([]byte("a"))
		return err
	})
	checkPairs(t, "after read-only Update", dump(t, s), []pair{{"a", "one"}, {"b", "second"}})
}

func testEmptyValue(t *testing.T, s kv.Store) {
	update(t, s, func(tx kv.Tx) error {
		if err := tx.Put([]byte("empty"), []byte{}); err != nil {
			return err
		}
		if err := tx.Put([]byte("nil"), nil); err != nil {
			return err
		}
		checkGet(t, tx, "empty", ptr(""))
		checkGet(t, tx, "nil", ptr(""))
		return nil
	})
	view(t, s, func(r kv.Reader) error {
		// An empty value is a present key, not a missing one.
		checkGet(t, r, "empty", ptr(""))
		checkGet(t, r, "nil", ptr(""))
		got, err := scan(r, nil, nil, false)
		checkPairs(t, "scan", got, []pair{{"empty", ""}, {"nil", ""}})
		return err
	})
}

func testDelete(t *testing.T, s kv.Store) {
	putAll(t, s, pair{"a", "1"}, pair{"b", "2"}, pair{"c", "3"})
	update(t, s, func(tx kv.Tx) error {
		if err := tx.Delete([]byte("b")); err != nil {
			return err
		}
		// Deleting an absent key is not an error.
		if err := tx.Delete([]byte("absent")); err != nil {
			return fmt.Errorf("Delete(absent): %w", err)
		}
		return nil
	})
	view(t, s, func(r kv.Reader) error {
		checkGet(t, r, "b", nil)
		return nil
	})
	checkPairs(t, "after delete", dump(t, s), []pair{{"a", "1"}, {"c", "3"}})

	// Delete then re-put in one transaction, and put then delete.
	update(t, s, func(tx kv.Tx) error {
		if err := tx.Delete([]byte("a")); err != nil {
			return err
		}
		if err := tx.Put([]byte("a"), []byte("again")); err != nil {
			return err
		}
		if err := tx.Put([]byte("d"), []byte("4")); err != nil {
			return err
		}
		return tx.Delete([]byte("d"))
	})
	checkPairs(t, "after delete+put", dump(t, s), []pair{{"a", "again"}, {"c", "3"}})

	// DeleteSized deletes as Delete does, whether its size hint is right,
	// wrong or absurd, and the transaction sees its own deletion.
	update(t, s, func(tx kv.Tx) error {
		for _, d := range []struct {
			key  string
			size int
		}{{"a", len("again")}, {"c", 1 << 20}, {"absent", -1}} {
			if err := tx.DeleteSized([]byte(d.key), d.size); err != nil {
				return fmt.Errorf("DeleteSized(%s, %d): %w", d.key, d.size, err)
			}
		}
		checkGet(t, tx, "a", nil)
		return tx.Put([]byte("e"), []byte("5"))
	})
	checkPairs(t, "after delete sized", dump(t, s), []pair{{"e", "5"}})
}

func testDeleteRange(t *testing.T, s kv.Store) {
	all := []pair{
		{"a", "1"}, {"b", "2"}, {"b\x00", "3"}, {"b\xff", "4"}, {"c", "5"}, {"d", "6"}, {"e", "7"},
	}
	steps := []struct {
		name       string
		start, end []byte
		want       []pair
	}{
		{"empty range start==end", []byte("b"), []byte("b"), all},
		{"empty range start>end", []byte("d"), []byte("b"), all},
		{"range with no keys", []byte("c\x00"), []byte("c\xff"), all},
		// [b, c): start inclusive, end exclusive.
		{"[b,c)", []byte("b"), []byte("c"), []pair{{"a", "1"}, {"c", "5"}, {"d", "6"}, {"e", "7"}}},
		// Bounds need not be stored keys.
		{"[bb,d)", []byte("bb"), []byte("d"), []pair{{"a", "1"}, {"d", "6"}, {"e", "7"}}},
		// A nil end means no upper bound, as in Scan.
		{"[e,nil)", []byte("e"), nil, []pair{{"a", "1"}, {"d", "6"}}},
		{"[nil,b)", nil, []byte("b"), []pair{{"d", "6"}}},
		{"[nil,nil)", nil, nil, nil},
	}
	putAll(t, s, all...)
	for _, st := range steps {
		update(t, s, func(tx kv.Tx) error { return tx.DeleteRange(st.start, st.end) })
		checkPairs(t, "after DeleteRange "+st.name, dump(t, s), st.want)
	}
}

// scanKeys are stored by testScanBounds: binary keys around 0x00 and 0xff and
// keys that are prefixes of one another, listed in bytewise order.
var scanKeys = []string{
	"\x00", "\x00\x00", "\x01", "a", "a\x00", "a\x01", "ab", "a\xff", "a\xff\xff", "b", "\xff", "\xff\x00", "\xff\xff",
}

func scanPairs(keys ...string) []pair {
	out := make([]pair, len(keys))
	for i, k := range keys {
		out[i] = pair{k, "v" + k}
	}
	return out
}

func testScanBounds(t *testing.T, s kv.Store) {
	if !slices.IsSorted(scanKeys) { // Go compares strings bytewise
		t.Fatal("scanKeys not sorted")
	}
	// Store in a scrambled order.
	shuffled := slices.Clone(scanKeys)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) {
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	})
	putAll(t, s, scanPairs(shuffled...)...)

	b := func(s string) []byte { return []byte(s) }
	cases := []struct {
		name       string
		start, end []byte
		want       []string
	}{
		{"all", nil, nil, scanKeys},
		{"empty start is nil", b(""), nil, scanKeys},
		{"[a,b)", b("a"), b("b"), []string{"a", "a\x00", "a\x01", "ab", "a\xff", "a\xff\xff"}},
		{"[a\\x00,ab)", b("a\x00"), b("ab"), []string{"a\x00", "a\x01"}},
		{"bounds between keys", b("a\x00\x00"), b("a\xff\x00"), []string{"a\x01", "ab", "a\xff"}},
		{"[ab,nil)", b("ab"), nil, []string{"ab", "a\xff", "a\xff\xff", "b", "\xff", "\xff\x00", "\xff\xff"}},
		{"[nil,\\x01)", nil, b("\x01"), []string{"\x00", "\x00\x00"}},
		{"[nil,\\x00)", nil, b("\x00"), nil},
		{"[\\xff,nil)", b("\xff"), nil, []string{"\xff", "\xff\x00", "\xff\xff"}},
		{"[\\xff\\xff,nil)", b("\xff\xff"), nil, []string{"\xff\xff"}},
		{"past the last key", b("\xff\xff\x00"), nil, nil},
		{"start==end", b("b"), b("b"), nil},
		{"start>end", b("b"), b("a"), nil},
		{"no keys in range", b("a\xff\xff\x00"), b("b"), nil},
		{"prefix a", b("a"), kv.PrefixEnd(b("a")), []string{"a", "a\x00", "a\x01", "ab", "a\xff", "a\xff\xff"}},
		{"prefix a\\xff", b("a\xff"), kv.PrefixEnd(b("a\xff")), []string{"a\xff", "a\xff\xff"}},
		{"prefix \\xff", b("\xff"), kv.PrefixEnd(b("\xff")), []string{"\xff", "\xff\x00", "\xff\xff"}},
		{"prefix \\x00", b("\x00"), kv.PrefixEnd(b("\x00")), []string{"\x00", "\x00\x00"}},
	}
	check := func(t *testing.T, kind string, r kv.Reader) {
		for _, c := range cases {
			want := scanPairs(c.want...)
			got, err := scan(r, c.start, c.end, false)
			if err != nil {
				t.Errorf("%s %s forward: %v", kind, c.name, err)
			}
			checkPairs(t, kind+" "+c.name+" forward", got, want)

			got, err = scan(r, c.start, c.end, true)
			if err != nil {
				t.Errorf("%s %s reverse: %v", kind, c.name, err)
			}
			slices.Reverse(want)
			checkPairs(t, kind+" "+c.name+" reverse", got, want)
		}
	}
	view(t, s, func(r kv.Reader) error { check(t, "View", r); return nil })
	update(t, s, func(tx kv.Tx) error { check(t, "Update", tx); return nil })
}

func testScanEmptyStore(t *testing.T, s kv.Store) {
	view(t, s, func(r kv.Reader) error {
		for _, reverse := range []bool{false, true} {
			got, err := scan(r, nil, nil, reverse)
			if err != nil || len(got) != 0 {
				t.Errorf("scan(reverse=%v) of empty store = %v, %v", reverse, got, err)
			}
		}
		return nil
	})
}

func testScanManyKeys(t *testing.T, s kv.Store) {
	const n, perTx = 1000, 250
	var want []pair
	for i := 0; i < n; i++ {
		want = append(want, pair{fmt.Sprintf("k%05d", i), fmt.Sprintf("value-%d", i)})
	}
	for i := 0; i < n; i += perTx { // several commits
		putAll(t, s, want[i:i+perTx]...)
	}
	checkPairs(t, "forward", dump(t, s), want)
	view(t, s, func(r kv.Reader) error {
		got, err := scan(r, nil, nil, true)
		rev := slices.Clone(want)
		slices.Reverse(rev)
		checkPairs(t, "reverse", got, rev)
		if err != nil {
			return err
		}
		got, err = scan(r, []byte("k00100"), []byte("k00200"), false)
		checkPairs(t, "[k00100,k00200)", got, want[100:200])
		return err
	})
}

func testIteratorProtocol(t *testing.T, s kv.Store) {
	putAll(t, s, scanPairs("a", "b", "c")...)
	view(t, s, func(r kv.Reader) error {
		// Next keeps returning false after the end.
		it := r.Scan(nil, nil, false)
		n := 0
		for it.Next() {
			n++
		}
		if n != 3 {
			t.Errorf("iterated %d keys, want 3", n)
		}
		if it.Next() {
			t.Error("Next after the end returned true")
		}
		if err := it.Err(); err != nil {
			t.Errorf("Err: %v", err)
		}
		if err := it.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}

		// Closing a partly consumed iterator is fine.
		it = r.Scan(nil, nil, true)
		if !it.Next() || string(it.Key()) != "c" || string(it.Value()) != "vc" {
			t.Errorf("first reverse entry = %q=%q, want c=vc", it.Key(), it.Value())
		}
		if err := it.Close(); err != nil {
			t.Errorf("Close after partial iteration: %v", err)
		}

		// Two iterators interleaved over the same transaction.
		fwd, rev := r.Scan(nil, nil, false), r.Scan(nil, nil, true)
		var got []string
		for fwd.Next() && rev.Next() {
			got = append(got, string(fwd.Key())+string(rev.Key()))
		}
		if err := errors.Join(fwd.Close(), rev.Close()); err != nil {
			t.Errorf("Close interleaved: %v", err)
		}
		if want := []string{"ac", "bb", "ca"}; !slices.Equal(got, want) {
			t.Errorf("interleaved iteration = %q, want %q", got, want)
		}
		return nil
	})
}

func testPrefixEnd(t *testing.T, s kv.Store) {
	cases := []struct{ prefix, want []byte }{
		{[]byte("abc"), []byte("abd")},
		{[]byte("a\xff"), []byte("b")},
		{[]byte("a\xff\xff"), []byte("b")},
		{[]byte("\x00"), []byte("\x01")},
		{[]byte("\xfe\xff"), []byte("\xff")},
		{[]byte("\xff"), nil},
		{[]byte("\xff\xff"), nil},
		{[]byte{}, nil},
		{nil, nil},
	}
	for _, c := range cases {
		in := slices.Clone(c.prefix)
		got := kv.PrefixEnd(in)
		if !bytes.Equal(got, c.want) || (c.want == nil) != (got == nil) {
			t.Errorf("PrefixEnd(%q) = %q, want %q", c.prefix, got, c.want)
		}
		if !bytes.Equal(in, c.prefix) {
			t.Errorf("PrefixEnd(%q) modified its argument to %q", c.prefix, in)
		}
	}
}

func testLargeValue(t *testing.T, s kv.Store) {
	big := make([]byte, 256<<10)
	for i := range big {
		big[i] = byte(i * 7)
	}
	update(t, s, func(tx kv.Tx) error { return tx.Put([]byte("big"), big) })
	view(t, s, func(r kv.Reader) error {
		v, err := r.Get([]byte("big"))
		if err != nil {
			return err
		}
		if !bytes.Equal(v, big) {
			t.Errorf("large value corrupted (len %d, want %d)", len(v), len(big))
		}
		return nil
	})
}

func testReadYourWrites(t *testing.T, s kv.Store) {
	putAll(t, s, pair{"a", "1"}, pair{"b", "2"}, pair{"c", "3"}, pair{"d", "4"})
	update(t, s, func(tx kv.Tx) error {
		steps := []struct {
			name string
			op   func() error
			want []pair
		}{
			{"put", func() error {
				return errors.Join(tx.Put([]byte("b"), []byte("B")), tx.Put([]byte("e"), []byte("5")))
			}, []pair{{"a", "1"}, {"b", "B"}, {"c", "3"}, {"d", "4"}, {"e", "5"}}},
			{"delete", func() error { return tx.Delete([]byte("a")) },
				[]pair{{"b", "B"}, {"c", "3"}, {"d", "4"}, {"e", "5"}}},
			{"delete range", func() error { return tx.DeleteRange([]byte("c"), []byte("e")) },
				[]pair{{"b", "B"}, {"e", "5"}}},
			{"put after delete range", func() error { return tx.Put([]byte("c"), []byte("C")) },
				[]pair{{"b", "B"}, {"c", "C"}, {"e", "5"}}},
			{"delete own write", func() error { return tx.Delete([]byte("e")) },
				[]pair{{"b", "B"}, {"c", "C"}}},
		}
		for _, st := range steps {
			if err := st.op(); err != nil {
				return fmt.Errorf("%s: %w", st.name, err)
			}
			got, err := scan(tx, nil, nil, false)
			if err != nil {
				return err
			}
			checkPairs(t, "scan after "+st.name, got, st.want)
			got, err = scan(tx, nil, nil, true)
			if err != nil {
				return err
			}
			rev := slices.Clone(st.want)
			slices.Reverse(rev)
			checkPairs(t, "reverse scan after "+st.name, got, rev)
			for _, k := range []string{"a", "b", "c", "d", "e"} {
				var want *string
				for _, p := range st.want {
					if p.k == k {
						want = ptr(p.v)
					}
				}
				checkGet(t, tx, k, want)
			}
		}
		return nil
	})
	checkPairs(t, "after commit", dump(t, s), []pair{{"b", "B"}, {"c", "C"}})
}

// testWriteRuns: long runs of Puts and of Deletes, over a few keys so that
// a run writes one key several times, with the kind switching at random and
// the transaction reading now and then, end as a map of the same writes
// does, inside the transaction and after its commit. (A backend may send a
// run as one statement: pgkv does.)
func testWriteRuns(t *testing.T, s kv.Store) {
	rng := rand.New(rand.NewPCG(7, 21))
	// "\x00" rather than "": Pebble's invariant checks (on under -race)
	// take an sstable whose first key is empty for one out of order, and
	// no store of the engine writes an empty key.
	keys := []string{"\x00", "a", "b", "c", "d", "e", "f", "g"}
	model := map[string]string{}
	want := func() []pair {
		var out []pair
		for k, v := range model {
			out = append(out, pair{k, v})
		}
		slices.SortFunc(out, func(a, b pair) int { return strings.Compare(a.k, b.k) })
		return out
	}
	for round := range 20 {
		update(t, s, func(tx kv.Tx) error {
			for range 10 + rng.IntN(60) {
				k := keys[rng.IntN(len(keys))]
				del := rng.IntN(3) == 0
				for range 1 + rng.IntN(12) {
					if del {
						if err := tx.Delete([]byte(k)); err != nil {
							return err
						}
						delete(model, k)
					} else {
						v := strconv.Itoa(rng.IntN(1000))
						if rng.IntN(8) == 0 {
							v = ""
						}
						if err := tx.Put([]byte(k), []byte(v)); err != nil {
							return err
						}
						model[k] = v
					}
					k = keys[rng.IntN(len(keys))]
				}
				if rng.IntN(6) == 0 {
					k := keys[rng.IntN(len(keys))]
					var w *string
					if v, ok := model[k]; ok {
						w = ptr(v)
					}
					checkGet(t, tx, k, w)
				}
			}
			return nil
		})
		checkPairs(t, fmt.Sprintf("after round %d", round), dump(t, s), want())
	}
}

func testPutCopiesArguments(t *testing.T, s kv.Store) {
	key, val := []byte("key"), []byte("value")
	update(t, s, func(tx kv.Tx) error {
		if err := tx.Put(key, val); err != nil {
			return err
		}
		copy(key, "XXX")
		copy(val, "XXXXX")
		checkGet(t, tx, "key", ptr("value"))
		checkGet(t, tx, "XXX", nil)
		return nil
	})
	copy(key, "key")
	copy(val, "value")
	checkPairs(t, "after commit", dump(t, s), []pair{{"key", "value"}})

	// Bounds passed to Scan may be reused once Scan has returned.
	view(t, s, func(r kv.Reader) error {
		start, end := []byte("k"), []byte("l")
		it := r.Scan(start, end, false)
		start[0], end[0] = 'z', 'a'
		got, err := collect(it)
		checkPairs(t, "scan with reused bounds", got, []pair{{"key", "value"}})
		return err
	})
}

// testGetResultOwned checks that a value returned by Get belongs to the caller:
// it survives its transaction, later writes and compactions of the same key,
// and changing it changes nothing stored.
func testGetResultOwned(t *testing.T, s kv.Store) {
	putAll(t, s, pair{"a", "first"})
	var got []byte
	view(t, s, func(r kv.Reader) error {
		v, err := r.Get([]byte("a"))
		got = v
		return err
	})
	var inTx []byte
	update(t, s, func(tx kv.Tx) error {
		if err := tx.Put([]byte("a"), []byte("other")); err != nil {
			return err
		}
		v, err := tx.Get([]byte("a"))
		inTx = v
		return err
	})
	update(t, s, func(tx kv.Tx) error { return tx.Put([]byte("a"), []byte("third")) })
	if string(got) != "first" {
		t.Errorf("value read in a finished view = %q, want %q", got, "first")
	}
	if string(inTx) != "other" {
		t.Errorf("value read in a finished update = %q, want %q", inTx, "other")
	}
	copy(got, "XXXXX")
	checkPairs(t, "after changing a returned value", dump(t, s), []pair{{"a", "third"}})
}

func testErrorRollsBack(t *testing.T, s kv.Store) {
	putAll(t, s, pair{"a", "1"}, pair{"b", "2"})
	before := dump(t, s)
	errAbort := errors.New("kvtest: abort")
	err := s.Update(t.Context(), func(tx kv.Tx) error {
		if err := errors.Join(
			tx.Put([]byte("a"), []byte("changed")),
			tx.Put([]byte("new"), []byte("x")),
			tx.Delete([]byte("b")),
			tx.DeleteRange(nil, []byte("a\x00")),
		); err != nil {
			return err
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("Update = %v, want %v", err, errAbort)
	}
	checkPairs(t, "after failed Update", dump(t, s), before)
	// The store is still writable.
	putAll(t, s, pair{"c", "3"})
	checkPairs(t, "after next Update", dump(t, s), append(before, pair{"c", "3"}))
}

// domainError stands for the typed errors engine code returns from
// transactions and inspects with errors.As.
type domainError struct{ code int }

func (e *domainError) Error() string { return fmt.Sprintf("kvtest: domain error %d", e.code) }

func testErrorReturnedUnchanged(t *testing.T, s kv.Store) {
	sentinel := errors.New("kvtest: sentinel")
	if err := s.Update(t.Context(), func(kv.Tx) error { return sentinel }); err != sentinel {
		t.Errorf("Update returned %v (%T), want the sentinel itself", err, err)
	}
	de := &domainError{code: 409}
	err := s.Update(t.Context(), func(tx kv.Tx) error {
		if err := tx.Put([]byte("k"), []byte("v")); err != nil {
			return err
		}
		return de
	})
	var got *domainError
	if !errors.As(err, &got) || got != de {
		t.Errorf("Update returned %v, want the domain error", err)
	}
	if err := s.View(t.Context(), func(kv.Reader) error { return sentinel }); !errors.Is(err, sentinel) {
		t.Errorf("View returned %v, want the sentinel", err)
	}
	// ErrNotFound from a Get inside the transaction passes through too.
	err = s.Update(t.Context(), func(tx kv.Tx) error {
		_, err := tx.Get([]byte("missing"))
		return err
	})
	if !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("Update returned %v, want kv.ErrNotFound", err)
	}
}

// catchPanic calls fn and returns the value it panicked with, or nil.
func catchPanic(fn func()) (v any) {
	defer func() { v = recover() }()
	fn()
	return nil
}

func testPanicRollsBack(t *testing.T, s kv.Store) {
	putAll(t, s, pair{"a", "1"}, pair{"b", "2"})
	before := dump(t, s)
	type boom struct{ msg string }
	v := catchPanic(func() {
		_ = s.Update(t.Context(), func(tx kv.Tx) error {
			_ = tx.Put([]byte("a"), []byte("changed"))
			_ = tx.Put([]byte("new"), []byte("x"))
			_ = tx.Delete([]byte("b"))
			panic(boom{"in update"})
		})
	})
	if v != (boom{"in update"}) {
		t.Fatalf("Update panic value = %#v, want boom{in update}", v)
	}
	v = catchPanic(func() {
		_ = s.View(t.Context(), func(kv.Reader) error { panic(boom{"in view"}) })
	})
	if v != (boom{"in view"}) {
		t.Fatalf("View panic value = %#v, want boom{in view}", v)
	}

	// The panicking Update left no trace, and the store is still usable: in
	// particular its write lock, if any, was released.
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Update(context.Background(), func(tx kv.Tx) error {
			return tx.Put([]byte("c"), []byte("3"))
		}); err != nil {
			t.Errorf("Update after panic: %v", err)
		}
	}()
	wait(t, done, "an Update after a panicking Update")
	checkPairs(t, "after panic", dump(t, s), append(before, pair{"c", "3"}))
}

func testViewSnapshotIsolation(t *testing.T, s kv.Store) {
	putAll(t, s, pair{"k1", "old"}, pair{"k2", "old"})
	started, committed, viewDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(viewDone)
		var once sync.Once
		err := s.View(context.Background(), func(r kv.Reader) error {
			checkGet(t, r, "k1", ptr("old"))
			once.Do(func() { close(started) })
			select {
			case <-committed:
			case <-time.After(waitTimeout):
				return errors.New("timed out waiting for the concurrent Update")
			}
			// The Update committed after this View began: none of it shows.
			checkGet(t, r, "k1", ptr("old"))
			checkGet(t, r, "k2", ptr("old"))
			checkGet(t, r, "k3", nil)
			got, err := scan(r, nil, nil, false)
			checkPairs(t, "scan in old View", got, []pair{{"k1", "old"}, {"k2", "old"}})
			return err
		})
		if err != nil {
			t.Errorf("View: %v", err)
		}
	}()
	wait(t, started, "the View to start")
	putAll(t, s, pair{"k1", "new"}, pair{"k2", "new"}, pair{"k3", "new"})
	close(committed)
	wait(t, viewDone, "the View to finish")
	checkPairs(t, "new View", dump(t, s), []pair{{"k1", "new"}, {"k2", "new"}, {"k3", "new"}})
}

func testUncommittedInvisible(t *testing.T, s kv.Store) {
	putAll(t, s, pair{"k1", "old"})
	written, release, updateDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(updateDone)
		var once sync.Once
		err := s.Update(context.Background(), func(tx kv.Tx) error {
			if err := errors.Join(tx.Put([]byte("k1"), []byte("new")), tx.Put([]byte("k2"), []byte("new"))); err != nil {
				return err
			}
			once.Do(func() { close(written) })
			select {
			case <-release:
				return nil
			case <-time.After(waitTimeout):
				return errors.New("timed out waiting for release")
			}
		})
		if err != nil {
			t.Errorf("Update: %v", err)
		}
	}()
	wait(t, written, "the Update to write")
	// The Update is in progress, not committed: a View sees none of it.
	checkPairs(t, "during Update", dump(t, s), []pair{{"k1", "old"}})
	close(release)
	wait(t, updateDone, "the Update to finish")
	checkPairs(t, "after Update", dump(t, s), []pair{{"k1", "new"}, {"k2", "new"}})
}

func testSerializableCounter(t *testing.T, s kv.Store) {
	const workers, perWorker = 8, 25
	key := []byte("counter")
	var (
		mu   sync.Mutex
		seen []int // the value each committed increment produced
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for range perWorker {
				var n int
				err := s.Update(context.Background(), func(tx kv.Tx) error {
					n = 0
					v, err := tx.Get(key)
					switch {
					case errors.Is(err, kv.ErrNotFound):
					case err != nil:
						return err
					default:
						if _, err := fmt.Sscan(string(v), &n); err != nil {
							return err
						}
					}
					n++
					return tx.Put(key, []byte(fmt.Sprint(n)))
				})
				if err != nil {
					t.Errorf("increment: %v", err)
					return
				}
				mu.Lock()
				seen = append(seen, n)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	view(t, s, func(r kv.Reader) error {
		checkGet(t, r, "counter", ptr(fmt.Sprint(workers*perWorker)))
		return nil
	})
	// Serializability: the committed increments produced each of 1..N once.
	slices.Sort(seen)
	for i, n := range seen {
		if n != i+1 {
			t.Fatalf("committed increments produced %v, want 1..%d each once", seen, workers*perWorker)
		}
	}
}

func testConsistentTransfers(t *testing.T, s kv.Store) {
	const accounts, initial, movers, perMover, auditors = 4, 100, 4, 25, 2
	var init []pair
	for i := range accounts {
		init = append(init, pair{fmt.Sprintf("acct/%d", i), fmt.Sprint(initial)})
	}
	putAll(t, s, init...)

	balance := func(r kv.Reader, key []byte) (int, error) {
		v, err := r.Get(key)
		if err != nil {
			return 0, err
		}
		var n int
		_, err = fmt.Sscan(string(v), &n)
		return n, err
	}
	// audit checks, in one snapshot, that money is neither created nor lost.
	audit := func(r kv.Reader) error {
		it := r.Scan([]byte("acct/"), kv.PrefixEnd([]byte("acct/")), false)
		defer it.Close()
		total, count := 0, 0
		for it.Next() {
			var n int
			if _, err := fmt.Sscan(string(it.Value()), &n); err != nil {
				return err
			}
			if n < 0 {
				return fmt.Errorf("%s has negative balance %d", it.Key(), n)
			}
			total += n
			count++
		}
		if err := it.Err(); err != nil {
			return err
		}
		if total != accounts*initial || count != accounts {
			return fmt.Errorf("audit saw %d accounts totalling %d, want %d totalling %d",
				count, total, accounts, accounts*initial)
		}
		return nil
	}

	var movesWG, auditWG sync.WaitGroup
	stop := make(chan struct{})
	for a := range auditors {
		auditWG.Go(func() {
			for {
				if err := s.View(context.Background(), func(r kv.Reader) error { return audit(r) }); err != nil {
					t.Errorf("auditor %d: %v", a, err)
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		})
	}
	for m := range movers {
		movesWG.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(m), 42))
			for range perMover {
				from := []byte(fmt.Sprintf("acct/%d", rng.IntN(accounts)))
				to := []byte(fmt.Sprintf("acct/%d", rng.IntN(accounts)))
				amount := 1 + rng.IntN(initial/2)
				err := s.Update(context.Background(), func(tx kv.Tx) error {
					fb, err := balance(tx, from)
					if err != nil {
						return err
					}
					if fb < amount || bytes.Equal(from, to) {
						return nil
					}
					tb, err := balance(tx, to)
					if err != nil {
						return err
					}
					return errors.Join(
						tx.Put(from, []byte(fmt.Sprint(fb-amount))),
						tx.Put(to, []byte(fmt.Sprint(tb+amount))),
					)
				})
				if err != nil {
					t.Errorf("transfer: %v", err)
					return
				}
			}
		})
	}
	movesWG.Wait()
	close(stop)
	auditWG.Wait()
	if err := s.View(t.Context(), func(r kv.Reader) error { return audit(r) }); err != nil {
		t.Errorf("final audit: %v", err)
	}
}

func testCancelledContext(t *testing.T, s kv.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	called := false
	err := s.Update(ctx, func(tx kv.Tx) error {
		called = true
		return tx.Put([]byte("k"), []byte("v"))
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Update with cancelled context = %v, want context.Canceled", err)
	}
	err = s.View(ctx, func(kv.Reader) error { called = true; return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("View with cancelled context = %v, want context.Canceled", err)
	}
	if called {
		t.Error("a function ran despite the cancelled context")
	}
	if got := dump(t, s); len(got) != 0 {
		t.Errorf("store holds %v after cancelled Update", got)
	}
}

func testClosed(t *testing.T, s kv.Store) {
	putAll(t, s, pair{"k", "v"})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	called := false
	if err := s.View(t.Context(), func(kv.Reader) error { called = true; return nil }); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("View after Close = %v, want kv.ErrClosed", err)
	}
	if err := s.Update(t.Context(), func(kv.Tx) error { called = true; return nil }); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("Update after Close = %v, want kv.ErrClosed", err)
	}
	if called {
		t.Error("a function ran on a closed store")
	}
	if err := s.Close(); err != nil && !errors.Is(err, kv.ErrClosed) {
		t.Errorf("second Close = %v, want nil or kv.ErrClosed", err)
	}
}

// testUpdateNoSync: UpdateNoSync commits atomically and visibly, rolls back on
// error, and is serialised with Update.
func testUpdateNoSync(t *testing.T, s kv.Store) {
	ctx := context.Background()
	if err := s.UpdateNoSync(ctx, func(tx kv.Tx) error {
		if err := tx.Put([]byte("a"), []byte("1")); err != nil {
			return err
		}
		return tx.Put([]byte("b"), []byte("2"))
	}); err != nil {
		t.Fatal(err)
	}
	errStop := errors.New("stop")
	if err := s.UpdateNoSync(ctx, func(tx kv.Tx) error {
		if err := tx.Delete([]byte("a")); err != nil {
			return err
		}
		return errStop
	}); !errors.Is(err, errStop) {
		t.Fatalf("UpdateNoSync error = %v; want the function's", err)
	}
	err := s.View(ctx, func(r kv.Reader) error {
		for k, want := range map[string]string{"a": "1", "b": "2"} {
			v, err := r.Get([]byte(k))
			if err != nil || string(v) != want {
				t.Errorf("after UpdateNoSync, %s = %q, %v; want %q", k, v, err, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Interleaved with Update, read-modify-write stays serialised.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				update := s.Update
				if i%2 == 0 {
					update = s.UpdateNoSync
				}
				if err := update(ctx, func(tx kv.Tx) error {
					v, err := tx.Get([]byte("n"))
					n := 0
					if err == nil {
						n, _ = strconv.Atoi(string(v))
					} else if !errors.Is(err, kv.ErrNotFound) {
						return err
					}
					return tx.Put([]byte("n"), []byte(strconv.Itoa(n+1)))
				}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	_ = s.View(ctx, func(r kv.Reader) error {
		v, err := r.Get([]byte("n"))
		if err != nil || string(v) != "200" {
			t.Errorf("counter = %q, %v; want 200", v, err)
		}
		return nil
	})
}

// testInsert checks kv.Inserter, for stores whose transactions offer it: an
// absent key is stored, a present one left unchanged, both seen by the
// transaction's later reads and after its commit, and a rolled-back insert
// leaves nothing.
func testInsert(t *testing.T, s kv.Store) {
	ctx := context.Background()
	supported := true
	err := s.Update(ctx, func(tx kv.Tx) error {
		ins, ok := tx.(kv.Inserter)
		if !ok {
			supported = false
			return nil
		}
		if err := tx.Put([]byte("present"), []byte("old")); err != nil {
			return err
		}
		for _, c := range []struct {
			key, value string
			want       bool
			stored     string
		}{{"present", "new", false, "old"}, {"absent", "v", true, "v"}, {"absent", "again", false, "v"}} {
			got, err := ins.Insert([]byte(c.key), []byte(c.value))
			if err != nil {
				return err
			}
			if got != c.want {
				t.Errorf("Insert(%q) = %v, want %v", c.key, got, c.want)
			}
			if v, err := tx.Get([]byte(c.key)); err != nil || string(v) != c.stored {
				t.Errorf("Get(%q) after Insert = %q, %v; want %q", c.key, v, err, c.stored)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !supported {
		t.Skip("the store's transactions do not implement kv.Inserter")
	}
	errRollback := errors.New("roll back")
	err = s.Update(ctx, func(tx kv.Tx) error {
		if _, err := tx.(kv.Inserter).Insert([]byte("rolled back"), []byte("x")); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("Update = %v, want the function's error", err)
	}
	err = s.View(ctx, func(r kv.Reader) error {
		for k, want := range map[string]string{"present": "old", "absent": "v"} {
			if v, err := r.Get([]byte(k)); err != nil || string(v) != want {
				t.Errorf("Get(%q) after commit = %q, %v; want %q", k, v, err, want)
			}
		}
		if _, err := r.Get([]byte("rolled back")); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("Get of a rolled-back insert: %v, want ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testCreate checks kv.Creator, where the store has it: a created key is
// stored and read back in its transaction; a transaction that creates a
// present key fails with kv.ErrExists, whether the failure shows at commit
// or at a later read, and writes nothing.
func testCreate(t *testing.T, s kv.Store) {
	ctx := context.Background()
	supported := true
	update(t, s, func(tx kv.Tx) error {
		c, ok := tx.(kv.Creator)
		if !ok {
			supported = false
			return nil
		}
		if err := c.Create([]byte("new"), []byte("n")); err != nil {
			return err
		}
		checkGet(t, tx, "new", ptr("n"))
		return tx.Put([]byte("present"), []byte("old"))
	})
	if !supported {
		t.Skip("the store's transactions do not implement kv.Creator")
	}
	for _, readAfter := range []bool{false, true} {
		err := s.Update(ctx, func(tx kv.Tx) error {
			if err := tx.Put([]byte("other"), []byte("o")); err != nil {
				return err
			}
			if err := tx.(kv.Creator).Create([]byte("present"), []byte("x")); err != nil {
				return err
			}
			if readAfter {
				_, err := tx.Get([]byte("new"))
				return err
			}
			return nil
		})
		if !errors.Is(err, kv.ErrExists) {
			t.Errorf("readAfter=%v: Update creating a present key = %v, want kv.ErrExists", readAfter, err)
		}
	}
	checkPairs(t, "after the failed creates", dump(t, s), []pair{{"new", "n"}, {"present", "old"}})
}

// testViewSeesReturnedUpdates checks, while other goroutines run Views
// without pause (so that a store which shares or caches snapshots between
// Views is doing so), that a View begun after an Update returned sees it,
// and that each reader's successive Views never go back in time.
func testViewSeesReturnedUpdates(t *testing.T, s kv.Store) {
	const updates = 100
	key := []byte("n")
	read := func(r kv.Reader) (int, error) {
		v, err := r.Get(key)
		if errors.Is(err, kv.ErrNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(string(v))
	}
	stop := make(chan struct{})
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			last := 0
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				var n int
				err := s.View(context.Background(), func(r kv.Reader) (err error) {
					n, err = read(r)
					return err
				})
				if err == nil && n < last {
					err = fmt.Errorf("a View read %d after an earlier one read %d", n, last)
				}
				if err != nil {
					errs <- err
					return
				}
				last = n
			}
		}()
	}
	for i := 1; i <= updates; i++ {
		update(t, s, func(tx kv.Tx) error { return tx.Put(key, []byte(strconv.Itoa(i))) })
		view(t, s, func(r kv.Reader) error {
			n, err := read(r)
			if err == nil && n != i {
				err = fmt.Errorf("a View begun after update %d returned read %d", i, n)
			}
			return err
		})
		if t.Failed() {
			break
		}
	}
	close(stop)
	for range 2 {
		select {
		case err := <-errs:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(waitTimeout):
			t.Fatal("a reader did not stop")
		}
	}
}

// hiddenReader hides a reader's GetBatch and Count, so that kv.GetBatch
// falls back to one Get per key and kv.Count to a scan.
type hiddenReader struct{ kv.Reader }

// testGetBatch checks kv.GetBatch, through the store's own BatchGetter if it
// has one and through the fallback: values in the order asked, nil for an
// absent key, an empty value told apart from an absent one, a key asked
// twice answered twice, values owned by the caller, and a transaction's own
// writes seen.
func testGetBatch(t *testing.T, s kv.Store) {
	putAll(t, s, pair{"a", "1"}, pair{"b", ""}, pair{"c", "3"})
	keys := [][]byte{[]byte("c"), []byte("missing"), []byte("a"), []byte("b"), []byte("a")}
	want := []string{"3", "<absent>", "1", "", "1"}
	show := func(vals [][]byte) []string {
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = string(v)
			if v == nil {
				out[i] = "<absent>"
			}
		}
		return out
	}
	for _, native := range []bool{true, false} {
		view(t, s, func(r kv.Reader) error {
			if !native {
				r = hiddenReader{r}
			}
			vals, err := kv.GetBatch(r, keys)
			if err != nil {
				return err
			}
			if got := show(vals); !slices.Equal(got, want) {
				t.Errorf("native=%v: GetBatch = %q, want %q", native, got, want)
			}
			if len(vals) == len(want) && vals[0] != nil {
				vals[0][0] = 'x' // the caller's to change
				again, err := kv.GetBatch(r, keys[:1])
				if err != nil {
					return err
				}
				if string(again[0]) != "3" {
					t.Errorf("native=%v: after changing a returned value, GetBatch reads %q, want \"3\"", native, again[0])
				}
			}
			none, err := kv.GetBatch(r, nil)
			if err != nil || len(none) != 0 {
				t.Errorf("native=%v: GetBatch of no keys = %q, %v; want nothing", native, none, err)
			}
			return nil
		})
	}
	update(t, s, func(tx kv.Tx) error {
		if err := tx.Delete([]byte("a")); err != nil {
			return err
		}
		if err := tx.Put([]byte("d"), []byte("4")); err != nil {
			return err
		}
		vals, err := kv.GetBatch(tx, [][]byte{[]byte("a"), []byte("d"), []byte("c")})
		if err != nil {
			return err
		}
		if got, want := show(vals), []string{"<absent>", "4", "3"}; !slices.Equal(got, want) {
			t.Errorf("GetBatch in a transaction that deleted a and put d = %q, want %q", got, want)
		}
		return nil
	})
}

// testPrefetch checks that Gets after kv.Prefetcher's Prefetch return what they would
// have without it: the snapshot's values in a View, also after another
// transaction changed them, and in an Update the transaction's own writes
// made after the keys were read ahead.
func testPrefetch(t *testing.T, s kv.Store) {
	ctx := context.Background()
	putAll(t, s, pair{"a", "1"}, pair{"b", ""}, pair{"c", "3"}, pair{"c2", "4"})
	keys := func(ks ...string) [][]byte {
		out := make([][]byte, len(ks))
		for i, k := range ks {
			out[i] = []byte(k)
		}
		return out
	}
	changed := make(chan error, 1)
	view(t, s, func(r kv.Reader) error {
		if err := prefetch(r, keys("a", "b", "missing", "a")); err != nil {
			return err
		}
		go func() {
			changed <- s.Update(ctx, func(tx kv.Tx) error { return tx.Put([]byte("a"), []byte("changed")) })
		}()
		if err := <-changed; err != nil {
			return err
		}
		checkGet(t, r, "a", ptr("1"))
		checkGet(t, r, "b", ptr(""))
		checkGet(t, r, "missing", nil)
		if v, err := r.Get([]byte("a")); err == nil && len(v) > 0 {
			v[0] = 'x' // the caller's to change
		}
		checkGet(t, r, "a", ptr("1"))
		return nil
	})
	update(t, s, func(tx kv.Tx) error {
		if err := prefetch(tx, keys("a", "b", "c", "c2", "new", "claimed", "made")); err != nil {
			return err
		}
		checkGet(t, tx, "a", ptr("changed"))
		if err := tx.Put([]byte("a"), []byte("mine")); err != nil {
			return err
		}
		if err := tx.Delete([]byte("b")); err != nil {
			return err
		}
		if err := tx.Put([]byte("new"), []byte("n")); err != nil {
			return err
		}
		if err := tx.DeleteRange([]byte("c"), []byte("c1")); err != nil {
			return err
		}
		if ins, ok := tx.(kv.Inserter); ok {
			if _, err := ins.Insert([]byte("claimed"), []byte("i")); err != nil {
				return err
			}
		} else if err := tx.Put([]byte("claimed"), []byte("i")); err != nil {
			return err
		}
		if c, ok := tx.(kv.Creator); ok {
			if err := c.Create([]byte("made"), []byte("m")); err != nil {
				return err
			}
		} else if err := tx.Put([]byte("made"), []byte("m")); err != nil {
			return err
		}
		for k, want := range map[string]*string{"a": ptr("mine"), "b": nil, "new": ptr("n"), "c": nil, "c2": ptr("4"), "claimed": ptr("i"), "made": ptr("m")} {
			checkGet(t, tx, k, want)
		}
		return nil
	})
	checkPairs(t, "after the update", dump(t, s), []pair{{"a", "mine"}, {"c2", "4"}, {"claimed", "i"}, {"made", "m"}, {"new", "n"}})
}

// prefetch reads keys ahead in r when r is a kv.Prefetcher, and does
// nothing otherwise: the Gets after it must read the same either way.
func prefetch(r kv.Reader, keys [][]byte) error {
	if p, ok := r.(kv.Prefetcher); ok {
		return p.Prefetch(keys)
	}
	return nil
}

// testViewKeys checks kv.KeyViewer, where the store has it: present,
// empty and absent values, a key asked for twice, the values the caller's,
// and what Updates returned before it are seen.
func testViewKeys(t *testing.T, s kv.Store) {
	kvr, ok := s.(kv.KeyViewer)
	if !ok {
		t.Skip("the store does not implement kv.KeyViewer")
	}
	putAll(t, s, pair{"a", "1"}, pair{"b", ""}, pair{"c", "3"})
	ctx := context.Background()
	keys := [][]byte{[]byte("c"), []byte("missing"), []byte("a"), []byte("b"), []byte("a")}
	vals, err := kvr.ViewKeys(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(vals))
	for i, v := range vals {
		got[i] = string(v)
		if v == nil {
			got[i] = "<absent>"
		}
	}
	if want := []string{"3", "<absent>", "1", "", "1"}; !slices.Equal(got, want) {
		t.Fatalf("ViewKeys = %q, want %q", got, want)
	}
	vals[0][0] = 'x' // the caller's to change
	update(t, s, func(tx kv.Tx) error { return tx.Put([]byte("missing"), []byte("now")) })
	again, err := kvr.ViewKeys(ctx, keys[:2])
	if err != nil || len(again) != 2 || string(again[0]) != "3" || string(again[1]) != "now" {
		t.Fatalf("ViewKeys after an update = %q, %v; want [\"3\" \"now\"]", again, err)
	}
}

// testCount checks kv.Count, natively (kv.Counter) and by scanning: bounds,
// limits, empty and inverted ranges, and a transaction's own writes.
func testCount(t *testing.T, s kv.Store) {
	putAll(t, s, pair{"a", "1"}, pair{"b", ""}, pair{"b\x00", "2"}, pair{"c", "3"}, pair{"d", "4"})
	type tc struct {
		start, end string
		endNil     bool
		limit      int64
		want       int64
	}
	cases := []tc{
		{"", "", true, -1, 5},
		{"a", "", true, -1, 5},
		{"b", "c", false, -1, 2},
		{"b", "d", false, 1, 2}, // stops at limit+1
		{"b", "d", false, 0, 1},
		{"b", "d", false, 5, 3},
		{"c", "c", false, -1, 0},
		{"d", "a", false, -1, 0},
		{"e", "", true, -1, 0},
		{"", "b", false, -1, 1},
	}
	for _, native := range []bool{true, false} {
		view(t, s, func(r kv.Reader) error {
			if !native {
				r = hiddenReader{r}
			}
			for _, c := range cases {
				end := []byte(c.end)
				if c.endNil {
					end = nil
				}
				n, err := kv.Count(r, []byte(c.start), end, c.limit)
				if err != nil {
					return err
				}
				if n != c.want {
					t.Errorf("native=%v: Count(%q, %q, limit %d) = %d, want %d", native, c.start, end, c.limit, n, c.want)
				}
			}
			return nil
		})
	}
	update(t, s, func(tx kv.Tx) error {
		if err := tx.Delete([]byte("b")); err != nil {
			return err
		}
		if err := tx.Put([]byte("bb"), []byte("5")); err != nil {
			return err
		}
		if err := tx.Put([]byte("c1"), []byte("6")); err != nil {
			return err
		}
		n, err := kv.Count(tx, []byte("b"), []byte("d"), -1)
		if err != nil {
			return err
		}
		if n != 4 { // b\x00, bb, c, c1
			t.Errorf("Count in a transaction that deleted b and put bb and c1 = %d, want 4", n)
		}
		return nil
	})
}
