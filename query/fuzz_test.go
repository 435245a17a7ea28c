package query

import (
	"errors"
	"testing"
)

// FuzzParseCondition feeds arbitrary text to ParseCondition. It must never
// panic; errors must be *Error values positioned inside the input; and a
// condition that parses must print and match a document without panicking or
// failing. The seeds are every input in testdata/parse and testdata/eval,
// plus the corpus in testdata/fuzz/FuzzParseCondition.
func FuzzParseCondition(f *testing.F) {
	for _, dir := range []string{"parse", "eval"} {
		for _, path := range testFiles(f, dir) {
			for _, c := range readTestFile(f, path) {
				if c.tc == nil {
					continue
				}
				switch c.tc.cmd {
				case "parse", "match":
					f.Add(c.tc.input)
				case "expr", "nodes", "eval":
					f.Add("FROM c WHERE " + c.tc.input)
				}
			}
		}
	}
	doc := mustParseObject(f, `{"id":"1","n":5,"f":-1.5,"s":"hello","e":"","t":true,"nul":null,`+
		`"arr":[1,"two",[3],{"x":4}],"obj":{"a":1,"b":{"c":"deep"}},"tags":["a","b"],"uni":"é😀"}`)
	f.Fuzz(func(t *testing.T, src string) {
		cond, err := ParseCondition(src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
			if !e.Pos.IsValid() || e.Pos.Offset > len(src) {
				t.Fatalf("error position %+v outside the input (%d bytes): %v", e.Pos, len(src), err)
			}
			return
		}
		_ = cond.String()
		if _, err := cond.Match(doc); err != nil {
			t.Fatalf("Match failed on a parsed condition: %v", err)
		}
	})
}
