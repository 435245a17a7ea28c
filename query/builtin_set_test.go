package query

import (
	"testing"

	"github.com/lethe-db/lethe/jsonv"
)

// TestValueKey checks that valueKey agrees with jsonv.Equal, which the set
// functions rely on.
func TestValueKey(t *testing.T) {
	texts := []string{
		`null`, `true`, `false`, `0`, `-0`, `0.0`, `1`, `1.0`, `1e0`, `10`, `"1"`, `""`, `"a"`, `"a\"b"`,
		`[]`, `[1]`, `[1.0]`, `["1"]`, `[[1]]`, `[1,2]`, `[2,1]`, `{}`, `{"a":1}`, `{"a":1.0}`,
		`{"a":1,"b":2}`, `{"b":2,"a":1}`, `{"a":"1"}`, `{"":null}`, `{"a":[1,{"b":null}]}`,
		`{"a":[1,{"b":null}],"c":0}`, `[{"a":1},{"a":1}]`, `"null"`, `"[]"`, `{"a\"":1}`, `{"a":"\"1"}`,
	}
	vals := make([]jsonv.Value, len(texts))
	for i, s := range texts {
		v, err := jsonv.Parse([]byte(s))
		if err != nil {
			t.Fatalf("parse %s: %v", s, err)
		}
		vals[i] = v
	}
	for i, a := range vals {
		for j, b := range vals {
			if eq, same := jsonv.Equal(a, b), valueKey(a) == valueKey(b); eq != same {
				t.Errorf("%s vs %s: Equal = %v but keys equal = %v (%q, %q)",
					texts[i], texts[j], eq, same, valueKey(a), valueKey(b))
			}
		}
	}
}
