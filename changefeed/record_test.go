package changefeed

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func TestRecordRoundTripAndWire(t *testing.T) {
	records := []Record{
		{Op: OpCreate, LSN: 7, Second: 100, ID: "a", PartitionKey: []byte(`{"pk":"p"}`), Current: []byte(`{"id":"a","pk":"p"}`)},
		{Op: OpReplace, LSN: 9, PreviousLSN: 7, Second: 101, ID: "a", PartitionKey: []byte(`{"pk":"p"}`), Current: []byte(`{"id":"a","pk":"p","v":2}`)},
		{Op: OpDelete, LSN: 12, PreviousLSN: 9, Second: 130, TTLExpired: true, ID: "a\"b", PartitionKey: []byte(`{"pk":"p"}`), Previous: []byte(`{"id":"a","pk":"p","v":2}`)},
		{Op: OpDelete, LSN: 13, Second: 131, ID: ""},
		{Op: OpReplace, LSN: 15, PreviousLSN: 13, Second: 140, CurrentIsLive: true},
	}
	for _, r := range records {
		back, err := DecodeRecord(r.Append([]byte("prefix"))[len("prefix"):])
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if !reflect.DeepEqual(back, r) {
			t.Errorf("round trip: %+v, want %+v", back, r)
		}
		var item struct {
			Current  map[string]any
			Previous map[string]any
			Metadata struct {
				CRTS, LSN         int64
				OperationType     string
				PreviousImageLSN  *int64
				TimeToLiveExpired *bool
				ID                *string
				PartitionKey      map[string]any
			}
		}
		wire := r.AppendWire(nil)
		if err := json.Unmarshal(wire, &item); err != nil {
			t.Fatalf("%s: %v", wire, err)
		}
		m := item.Metadata
		if m.CRTS != r.Second || m.LSN != int64(r.LSN) || m.OperationType != r.Op.String() {
			t.Errorf("%s: metadata %+v", wire, m)
		}
		if (m.PreviousImageLSN != nil) != (r.PreviousLSN != 0) || item.Current == nil {
			t.Errorf("%s: previousImageLSN or current", wire)
		}
		isDelete := r.Op == OpDelete
		if (m.ID != nil) != isDelete || (m.TimeToLiveExpired != nil) != isDelete || isDelete && (*m.ID != r.ID || *m.TimeToLiveExpired != r.TTLExpired) {
			t.Errorf("%s: id and timeToLiveExpired belong to deletes", wire)
		}
		if (item.Previous != nil) != (r.Previous != nil) {
			t.Errorf("%s: previous", wire)
		}
		var w WireRecord // what a Go client decodes
		if err := json.Unmarshal(wire, &w); err != nil || w.Metadata.LSN != r.LSN || w.Metadata.CRTS != r.Second || isDelete && w.DocID() != r.ID {
			t.Errorf("%s as a WireRecord: %+v, %v", wire, w, err)
		}
	}
	// A live version's body is the document's, never the log's; a delete
	// has none.
	liveWithBody := Record{Op: OpCreate, LSN: 7, Second: 100, CurrentIsLive: true, Current: []byte(`{}`)}
	liveDelete := Record{Op: OpDelete, LSN: 7, Second: 100, CurrentIsLive: true}
	unknownFlag := records[0].Append(nil)
	unknownFlag[2] |= 4
	for _, bad := range [][]byte{nil, {1}, bytes.Repeat([]byte{1}, 27), append(records[0].Append(nil), 0),
		liveWithBody.Append(nil), liveDelete.Append(nil), unknownFlag} {
		if _, err := DecodeRecord(bad); err == nil {
			t.Errorf("DecodeRecord(%x) accepted", bad)
		}
	}
}

// FuzzDecodeRecord: no stored bytes, however damaged, panic the decoder; a
// record it accepts encodes back to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	r := Record{Op: OpDelete, LSN: 12, PreviousLSN: 9, Second: 130, TTLExpired: true, ID: "a", PartitionKey: []byte(`{"pk":"p"}`), Previous: []byte(`{}`)}
	f.Add(r.Append(nil))
	live := Record{Op: OpCreate, LSN: 7, Second: 100, CurrentIsLive: true, ID: "b"}
	f.Add(live.Append(nil))
	f.Add([]byte{1, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)
		if err != nil {
			return
		}
		if again := r.Append(nil); !bytes.Equal(again, b) {
			t.Fatalf("%x decoded to %+v, which encodes to %x", b, r, again)
		}
		_ = r.AppendWire(nil)
	})
}
