package engine

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/lethe-db/lethe/changefeed"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/ttl"
)

// TestEncodeWithJSON: a record encoded while its JSON is marshalled is the
// record encode gives for the same JSON, its JSON is the encoding's tail,
// and it decodes back; in every record format (without a feed key, with one,
// with one and the log referring to it, and saying what the log's record
// of a create or a replace holds), for a small document and for one
// larger than the scratch buffers that are kept.
func TestEncodeWithJSON(t *testing.T) {
	small := `{"id":"d1","pk":"p","n":1.5,"tags":["a",null,true],"s":"é\u2028"}`
	huge := `{"id":"d2","pad":"` + strings.Repeat("x", maxScratchJSON+10) + `"}`
	for _, body := range []string{small, huge, small} { // small again: after the huge one
		o, err := jsonv.ParseObject([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		withFeed := changefeed.Key{Second: 1_700_000_000, Writer: 3, Seq: 9}
		for _, c := range []struct {
			feed    changefeed.Key
			refers  bool
			op      changefeed.Op
			prev    uint64
			version byte
		}{
			{withFeed, false, 0, 0, 2},
			{withFeed, true, 0, 0, 3},
			{withFeed, true, changefeed.OpCreate, 0, 4},
			{withFeed, true, changefeed.OpReplace, 1 << 60, 5},
			{changefeed.Key{Writer: changefeed.ExpiryWriter}, false, 0, 0, 1},
		} {
			rec := &docRecord{ts: 1_700_000_000, seq: 42, own: ttl.Own{Kind: ttl.OwnSeconds, Seconds: 60}, lsn: 77, feed: c.feed, logRefers: c.refers, logOp: c.op, logPrev: c.prev}
			got := rec.encodeWithJSON(o)
			if want := jsonv.Marshal(o); !bytes.Equal(rec.json, want) {
				t.Fatalf("json = %.80s, want %.80s", rec.json, want)
			}
			if want := rec.encode(); !bytes.Equal(got, want) {
				t.Fatalf("encoded %d bytes, want %d, or they differ", len(got), len(want))
			}
			if &got[len(got)-1] != &rec.json[len(rec.json)-1] || cap(got) != len(got) {
				t.Fatalf("the JSON does not share the encoding's one exact allocation (cap %d, len %d)", cap(got), len(got))
			}
			if got[0] != c.version {
				t.Fatalf("format %d, want %d", got[0], c.version)
			}
			back, err := decodeDoc(got)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := decodeDoc(got[:rec.headerLen()-1]); err == nil {
				t.Fatalf("format %d: a header a byte short decodes", c.version)
			}
			if back.ts != rec.ts || back.seq != rec.seq || back.own != rec.own || back.lsn != rec.lsn || back.hasFeed() != rec.hasFeed() || back.feed.Compare(rec.feed) != 0 || back.logRefers != rec.logRefers ||
				back.logOp != rec.logOp || back.logPrev != rec.logPrev || !bytes.Equal(back.json, rec.json) {
				t.Fatalf("decoded %+v, want %+v", back, rec)
			}
		}
	}
}

// TestIndexEntriesFromPooledWalkers: walkers come from a pool, so a
// document's entries must not depend on what the walker indexed before:
// the same document gives the same entries after a larger one and after a
// pathological one, each entry ends in the sequence number, and each is its
// own capped slice, so appending to one cannot overwrite the next.
func TestIndexEntriesFromPooledWalkers(t *testing.T) {
	l := &layout{rid: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}, index: policyFromPaths("consistent", []string{"/*"}, nil)}
	parse := func(s string) *jsonv.Object {
		o, err := jsonv.ParseObject([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	small := parse(`{"id":"a","pk":"p","n":1,"tags":["x","y"]}`)
	large := parse(`{"id":"b","deep":{"a":{"b":{"c":[1,2,3,{"d":"` + strings.Repeat("z", 200) + `"}]}}},"many":[` + strings.Repeat(`"v",`, 300) + `"v"]}`)
	huge := parse(`{"id":"c","list":[` + strings.Repeat(`"`+strings.Repeat("w", 120)+`",`, 700) + `"w"]}`)
	first := indexEntries(l, 7, small)
	if len(first) == 0 {
		t.Fatal("no entries")
	}
	for _, other := range []*jsonv.Object{large, huge} {
		if n := len(indexEntries(l, 9, other)); n <= len(first) {
			t.Fatalf("%d entries for a larger document, %d for the small one", n, len(first))
		}
		again := indexEntries(l, 7, small)
		if len(again) != len(first) {
			t.Fatalf("%d entries, then %d", len(first), len(again))
		}
		for i := range first {
			if !bytes.Equal(first[i], again[i]) {
				t.Fatalf("entry %d: %q, then %q", i, first[i], again[i])
			}
		}
	}
	for i, k := range first {
		if decodeSeq(k) != 7 || cap(k) != len(k) {
			t.Fatalf("entry %d %q: seq %d, len %d, cap %d", i, k, decodeSeq(k), len(k), cap(k))
		}
	}
}

// TestEtagFor: etags keep the format they had when fmt built them, for the
// smallest, the largest and mixed log sequence numbers.
func TestEtagFor(t *testing.T) {
	for _, lsn := range []uint64{0, 1, 0xabc, 1<<48 - 1, 1 << 48, 0x0123456789abcdef, 1<<64 - 1, 1795814935393547} {
		want := fmt.Sprintf(`"%08x-0000-0000-%04x-%012x"`, uint32(lsn>>48), uint16(lsn>>32), lsn&0xffffffffffff)
		if got := etagFor(lsn); got != want {
			t.Errorf("etagFor(%#x) = %s, want %s", lsn, got, want)
		}
	}
}
