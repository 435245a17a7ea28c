package gateway

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lethe-db/lethe"
)

// TestRequestBody: a small body of known length comes back whole in a
// buffer of exactly that size; a larger one, and one of unknown length
// (chunked), whole too; a body
// shorter than its Content-Length is a 400, and one over the limit a 413,
// whether its length is declared or found while reading.
func TestRequestBody(t *testing.T) {
	doc := []byte(`{"id":"d1","pad":"` + strings.Repeat("x", 1000) + `"}`)
	big := []byte(`{"id":"d2","pad":"` + strings.Repeat("y", maxPreallocatedBody) + `"}`)
	cases := []struct {
		name   string
		body   io.Reader
		length int64
		want   []byte
		code   string
	}{
		{"known length", bytes.NewReader(doc), int64(len(doc)), doc, ""},
		{"empty", bytes.NewReader(nil), 0, []byte{}, ""},
		{"known length, larger than preallocated", bytes.NewReader(big), int64(len(big)), big, ""},
		{"unknown length", io.MultiReader(bytes.NewReader(doc)), -1, doc, ""},
		{"shorter than declared", bytes.NewReader(doc[:10]), int64(len(doc)), nil, lethe.CodeBadRequest},
		{"declared over the limit", bytes.NewReader(doc), maxBodyBytes + 1, nil, lethe.CodeEntityTooLarge},
		{"unknown length over the limit", io.MultiReader(bytes.NewReader(make([]byte, maxBodyBytes+1))), -1, nil, lethe.CodeEntityTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/dbs/db/colls/c/docs", nil)
			r.Body, r.ContentLength = io.NopCloser(c.body), c.length
			got, err := (&request{r: r}).body()
			if c.code != "" {
				if !lethe.IsCode(err, c.code) {
					t.Fatalf("err = %v, want code %s", err, c.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, c.want) || got == nil {
				t.Fatalf("body = %.40q (%d bytes), want %.40q (%d bytes)", got, len(got), c.want, len(c.want))
			}
			if c.length >= 0 && c.length <= maxPreallocatedBody && cap(got) != len(got) {
				t.Errorf("a body of known length took a buffer of %d bytes for %d", cap(got), len(got))
			}
		})
	}
}
