package engine

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lethe-db/lethe/changefeed"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/ttl"
)

// TestEncodeWithJSON: a record encoded while its JSON is marshalled is the
// record encode gives for the same JSON, its JSON is the encoding's tail,
// and it decodes back; in both record formats, for a small document and
// for one larger than the scratch buffers that are kept.
func TestEncodeWithJSON(t *testing.T) {
	small := `{"id":"d1","pk":"p","n":1.5,"tags":["a",null,true],"s":"é\u2028"}`
	huge := `{"id":"d2","pad":"` + strings.Repeat("x", maxScratchJSON+10) + `"}`
	for _, body := range []string{small, huge, small} { // small again: after the huge one
		o, err := jsonv.ParseObject([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		for _, feed := range []changefeed.Key{{Second: 1_700_000_000, Writer: 3, Seq: 9}, {Writer: changefeed.ExpiryWriter}} {
			rec := &docRecord{ts: 1_700_000_000, seq: 42, own: ttl.Own{Kind: ttl.OwnSeconds, Seconds: 60}, lsn: 77, feed: feed}
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
			back, err := decodeDoc(got)
			if err != nil {
				t.Fatal(err)
			}
			if back.ts != rec.ts || back.seq != rec.seq || back.own != rec.own || back.lsn != rec.lsn || back.hasFeed() != rec.hasFeed() || !bytes.Equal(back.json, rec.json) {
				t.Fatalf("decoded %+v, want %+v", back, rec)
			}
		}
	}
}
