package changefeed

import (
	"slices"
	"testing"
)

// items returns one item per key, with suffix "p"+<the key's second> for
// even seconds and "q..." for odd ones.
func items(keys ...Key) []*Item {
	var out []*Item
	for _, k := range keys {
		pk := "p"
		if k.Second%2 != 0 {
			pk = "q"
		}
		out = append(out, &Item{Key: k.Append(nil), Suffix: []byte(pk)})
	}
	return out
}

func write(second int64, seq uint64) Key {
	return Key{Second: second, Writer: EmbeddedWriter, Seq: seq}
}

// mergeAll merges fresh streams over the given item lists (each started)
// and returns the keys emitted, in order, and where the merge stopped.
func mergeAll(t *testing.T, lists [][]*Item, after Key, match func([]byte) bool, limit, maxBytes int) ([]Key, Merged) {
	t.Helper()
	var streams []Stream
	for _, l := range lists {
		st := NewSliceStream(slices.Clone(l))
		if err := st.Next(); err != nil {
			t.Fatal(err)
		}
		// A stream starts past the position.
		for st.Cur() != nil && string(st.Cur().Key) <= string(after.Append(nil)) {
			if err := st.Next(); err != nil {
				t.Fatal(err)
			}
		}
		streams = append(streams, st)
	}
	var got []Key
	m, err := Merge(streams, after.Append(nil), match, limit, maxBytes, func(it *Item) int {
		k, err := DecodeKey(it.Key)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, k)
		return 10
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, m
}

func TestMergeOrdersDedupesAndPages(t *testing.T) {
	log := items(write(10, 1), write(11, 3), write(12, 5))
	epochA := items(ExpiryOf(11, 7), ExpiryOf(12, 8))
	epochB := items(ExpiryOf(12, 8), ExpiryOf(13, 9)) // the same expiry at 12 from a second epoch
	all := func([]byte) bool { return true }
	want := []Key{write(10, 1), ExpiryOf(11, 7), write(11, 3), ExpiryOf(12, 8), write(12, 5), ExpiryOf(13, 9)}

	got, m := mergeAll(t, [][]*Item{log, epochA, epochB}, SecondStart(0), all, 100, 1<<20)
	if !slices.EqualFunc(got, want, func(a, b Key) bool { return a.Compare(b) == 0 }) {
		t.Fatalf("merged %v, want %v", got, want)
	}
	if m.Full || string(m.Last) != string(want[len(want)-1].Append(nil)) {
		t.Fatalf("stopped at %x (full %v)", m.Last, m.Full)
	}

	// Pages of two, each resuming after the last: the same sequence.
	var paged []Key
	after := SecondStart(0)
	for range 10 {
		got, m := mergeAll(t, [][]*Item{log, epochA, epochB}, after, all, 2, 1<<20)
		paged = append(paged, got...)
		if !m.Full {
			break
		}
		if len(got) != 2 {
			t.Fatalf("a full page of %d", len(got))
		}
		if after, _ = DecodeKey(m.Last); after.Compare(got[1]) != 0 {
			t.Fatalf("a full page stops at its last item, %v, not %v", got[1], after)
		}
	}
	if !slices.EqualFunc(paged, want, func(a, b Key) bool { return a.Compare(b) == 0 }) {
		t.Fatalf("paged %v, want %v", paged, want)
	}

	// The byte cap: the item that crosses it is the last one.
	if got, m := mergeAll(t, [][]*Item{log, epochA, epochB}, SecondStart(0), all, 100, 25); len(got) != 3 || !m.Full {
		t.Fatalf("with 25 bytes of 10-byte items: %d items, full %v", len(got), m.Full)
	}
}

func TestMergeFiltersButStepsOver(t *testing.T) {
	onlyP := func(s []byte) bool { return string(s) == "p" }
	got, m := mergeAll(t, [][]*Item{items(write(10, 1), write(11, 2), write(13, 3))}, SecondStart(0), onlyP, 100, 1<<20)
	if len(got) != 1 || got[0].Compare(write(10, 1)) != 0 {
		t.Fatalf("filtered to %v", got)
	}
	if string(m.Last) != string(write(13, 3).Append(nil)) {
		t.Fatalf("the merge stops after the items it filtered out too; stopped at %x", m.Last)
	}
	// A full page that ends on filtered items stops before the next match,
	// not after it.
	got, m = mergeAll(t, [][]*Item{items(write(10, 1), write(11, 2), write(12, 3))}, SecondStart(0), onlyP, 1, 1<<20)
	if len(got) != 1 || !m.Full || string(m.Last) != string(write(11, 2).Append(nil)) {
		t.Fatalf("got %v, full %v, last %x", got, m.Full, m.Last)
	}
	// Nothing after the position: Last is the position.
	after := write(20, 0)
	if got, m := mergeAll(t, [][]*Item{items(write(10, 1))}, after, onlyP, 100, 1<<20); len(got) != 0 || string(m.Last) != string(after.Append(nil)) {
		t.Fatalf("got %v, last %x", got, m.Last)
	}
}
