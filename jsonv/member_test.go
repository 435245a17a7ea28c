package jsonv

import (
	"strings"
	"testing"
)

// storedPath is StoredMember's oracle: the value at path of the object a
// whole ParseStoredObject gives.
func storedPath(b []byte, path []string) (Value, bool, error) {
	o, err := ParseStoredObject(b)
	if err != nil {
		return nil, false, err
	}
	var cur Value = o
	for _, name := range path {
		obj, ok := cur.(*Object)
		if !ok {
			return nil, false, nil
		}
		if cur, ok = obj.Get(name); !ok {
			return nil, false, nil
		}
	}
	return cur, true, nil
}

// TestStoredMember: the value at a path, parsed alone, is the whole parse's,
// over members before and after it that hold strings with escaped quotes and
// backslashes, nested objects and arrays, numbers and literals; a missing
// member or a path through a non-object is absent; a repeated name gives its
// last value.
func TestStoredMember(t *testing.T) {
	pad := strings.Repeat("x", 900)
	docs := []string{
		`{"id":"d1","pk":"p1","pad":"` + pad + `","_rid":"abc","_ts":1700000000}`,
		` { "a" : "q\"uo\\\\te\\" , "b":[1,{"c":"]}"},[]], "o":{"p":{"q":-1.5e3}},"t":true,"n":null , "_ts":17 } `,
		`{"a":{"b":1},"a":{"b":2}}`,
		`{"\u005fts":5,"x\"y":{"z":"w"}}`,
		`{}`,
		`{"e":{},"f":[],"g":""}`,
	}
	paths := [][]string{{"_ts"}, {"id"}, {"pad"}, {"b"}, {"o", "p", "q"}, {"o", "p"}, {"o", "x"}, {"t"}, {"n"}, {"a", "b"}, {"a"}, {"x\"y", "z"}, {"e"}, {"f"}, {"g"}, {"missing"}, {"t", "deeper"}, {"b", "c"}}
	for _, d := range docs {
		for _, p := range paths {
			want, wantOK, wantErr := storedPath([]byte(d), p)
			got, ok, err := StoredMember([]byte(d), p)
			if (err != nil) != (wantErr != nil) || ok != wantOK || !Equal(got, want) {
				t.Errorf("%s at %q: %v %v %v, a whole parse gives %v %v %v", d, p, got, ok, err, want, wantOK, wantErr)
			}
		}
	}
	for _, bad := range []string{``, `[]`, `{"a"`, `{"a":"b`, `{"a":1`, `{"a" 1}`, `{"a":[1,2}`} {
		if _, _, err := StoredMember([]byte(bad), []string{"z"}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzStoredMember: whenever a whole ParseStoredObject reads b, StoredMember
// finds exactly its value at the path, and never panics on anything else.
func FuzzStoredMember(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"_ts":2}`, `{"a":{"b":[1,"]"]},"c":"\\\""}`, `{"a":1,"a":2}`, `{"\u0061":{"b":null}}`,
		`{"a":"x\\\\","b":{"a":3}}`, `{"a":[{"a":1}],"b":tru}`, `{"a":-0.0e-1,"b":{}}`,
	} {
		f.Add([]byte(s), "a", "b")
	}
	f.Fuzz(func(t *testing.T, b []byte, first, second string) {
		for _, path := range [][]string{{first}, {first, second}} {
			got, ok, err := StoredMember(b, path)
			want, wantOK, wantErr := storedPath(b, path)
			if wantErr != nil {
				continue // StoredMember checks only what it reads
			}
			if err != nil || ok != wantOK || !Equal(got, want) {
				t.Fatalf("%q at %q: %v %v %v, a whole parse gives %v %v", b, path, got, ok, err, want, wantOK)
			}
		}
	})
}
