package jsonv

import (
	"fmt"
	"strings"
	"testing"
)

// Parse benchmarks: documents as clients send them, the hot path of every
// write.
//
//	go test ./jsonv -run '^$' -bench Parse -benchmem

// benchDocs are the shapes measured: a 1 KB document like the gateway and
// engine benchmarks write, a wide object (many members to check for
// duplicates), and a numeric array (many numbers to check for range).
var benchDocs = func() map[string][]byte {
	wide := make([]string, 64)
	for i := range wide {
		wide[i] = fmt.Sprintf(`"field%02d":%d`, i, i*7)
	}
	nums := make([]string, 200)
	for i := range nums {
		nums[i] = fmt.Sprintf("%d.%d", i*1000003, i)
	}
	return map[string][]byte{
		"doc1KB":  []byte(`{"id":"d1","pk":"p1","name":"user 1","n":42,"tags":["a","b","c"],"nested":{"x":1.5,"y":[1,2,3],"z":{"k":"v"}},"pad":"` + strings.Repeat("x", 900) + `"}`),
		"wide64":  []byte(`{` + strings.Join(wide, ",") + `}`),
		"nums200": []byte(`{"id":"n","v":[` + strings.Join(nums, ",") + `]}`),
	}
}()

func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"doc1KB", "wide64", "nums200"} {
		doc := benchDocs[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for range b.N {
				if _, err := Parse(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMarshal encodes the parsed documents again, as every write does
// to store its body.
func BenchmarkMarshal(b *testing.B) {
	for _, name := range []string{"doc1KB", "wide64", "nums200"} {
		v, err := Parse(benchDocs[name])
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(benchDocs[name])))
			b.ReportAllocs()
			buf := make([]byte, 0, 4096)
			for range b.N {
				buf = Append(buf[:0], v)
			}
		})
	}
}
