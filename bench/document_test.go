package bench

import (
	"encoding/json"
	"testing"
)

func TestAppendDocument(t *testing.T) {
	for _, tc := range []struct{ n, partitions, v, ttl, size int }{
		{0, 100, 0, 0, 1024},
		{12345, 100, 7, 0, 1024},
		{12345, 7, 1, 5, 1024},
		{99, 100, 0, 0, 10}, // smaller than the fixed fields: no padding
		{5, 100, 0, 0, 4096},
	} {
		b := appendDocument([]byte("prefix"), tc.n, tc.partitions, tc.v, tc.ttl, tc.size)
		b = b[len("prefix"):]
		var d struct {
			ID  string `json:"id"`
			PK  string `json:"pk"`
			K   int    `json:"k"`
			V   int    `json:"v"`
			TTL *int   `json:"ttl"`
			Pad string `json:"pad"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%+v: %s: %v", tc, b, err)
		}
		if d.ID != docID(tc.n) || d.PK != docPK(tc.n, tc.partitions) || d.K != docK(tc.n) || d.V != tc.v {
			t.Errorf("%+v: got %s", tc, b)
		}
		if (d.TTL != nil) != (tc.ttl > 0) || d.TTL != nil && *d.TTL != tc.ttl {
			t.Errorf("%+v: ttl wrong in %s", tc, b)
		}
		if len(b) != tc.size && d.Pad != "" {
			t.Errorf("%+v: %d bytes, want %d", tc, len(b), tc.size)
		}
	}
}
