package query

import (
	"slices"
	"strconv"
	"strings"

	"github.com/lethe-db/lethe/jsonv"
)

// Set functions treat arrays as sets: elements that are deeply equal (see
// the array functions) count once, and results keep the order in which
// elements first appear. Both arguments must be arrays.
func init() {
	register(
		set2("SetUnion", setUnion),
		set2("SetIntersect", setIntersect),
		set2("SetDifference", setDifference),
		&function{name: "SetEqual", minArgs: 2, maxArgs: 2, call: func(args []jsonv.Value) jsonv.Value {
			a, ok1 := args[0].([]jsonv.Value)
			b, ok2 := args[1].([]jsonv.Value)
			if !ok1 || !ok2 {
				return undefined
			}
			x, y := newValueSet(a), newValueSet(b)
			if len(x) != len(y) {
				return false
			}
			for k := range x {
				if _, ok := y[k]; !ok {
					return false
				}
			}
			return true
		}},
	)
}

func set2(name string, f func(a, b []jsonv.Value) []jsonv.Value) *function {
	return &function{name: name, minArgs: 2, maxArgs: 2, call: func(args []jsonv.Value) jsonv.Value {
		a, ok1 := args[0].([]jsonv.Value)
		b, ok2 := args[1].([]jsonv.Value)
		if !ok1 || !ok2 {
			return undefined
		}
		return f(a, b)
	}}
}

// setUnion is SetUnion(a, b): the elements of a, then those of b not in a.
func setUnion(a, b []jsonv.Value) []jsonv.Value {
	seen := valueSet{}
	out := []jsonv.Value{}
	for _, v := range slices.Concat(a, b) {
		if seen.add(v) {
			out = append(out, v)
		}
	}
	return out
}

// setIntersect is SetIntersect(a, b): the elements of b that are also in a,
// in b's order, as Cosmos DB returns them: SetIntersect([1, "A"], ["A", 1])
// is ["A", 1].
func setIntersect(a, b []jsonv.Value) []jsonv.Value {
	inA := newValueSet(a)
	seen := valueSet{}
	out := []jsonv.Value{}
	for _, v := range b {
		if inA.has(v) && seen.add(v) {
			out = append(out, v)
		}
	}
	return out
}

// setDifference is SetDifference(a, b): the elements of a not in b.
func setDifference(a, b []jsonv.Value) []jsonv.Value {
	inB := newValueSet(b)
	seen := valueSet{}
	out := []jsonv.Value{}
	for _, v := range a {
		if !inB.has(v) && seen.add(v) {
			out = append(out, v)
		}
	}
	return out
}

// A valueSet holds values by their canonical key, so set operations take
// time linear in the size of their arrays.
type valueSet map[string]struct{}

func newValueSet(a []jsonv.Value) valueSet {
	s := make(valueSet, len(a))
	for _, v := range a {
		s.add(v)
	}
	return s
}

// add adds v and reports whether it was new.
func (s valueSet) add(v jsonv.Value) bool {
	k := valueKey(v)
	if _, ok := s[k]; ok {
		return false
	}
	s[k] = struct{}{}
	return true
}

func (s valueSet) has(v jsonv.Value) bool {
	_, ok := s[valueKey(v)]
	return ok
}

// valueKey returns a string that is equal for two values exactly when
// jsonv.Equal holds: numbers are keyed by their float64 value and object
// members by sorted name.
func valueKey(v jsonv.Value) string {
	var b strings.Builder
	appendValueKey(&b, v)
	return b.String()
}

func appendValueKey(b *strings.Builder, v jsonv.Value) {
	switch v := v.(type) {
	case nil:
		b.WriteByte('n')
	case bool:
		if v {
			b.WriteByte('t')
		} else {
			b.WriteByte('f')
		}
	case jsonv.Number:
		f := v.Float64()
		if f == 0 {
			f = 0 // -0 equals 0
		}
		b.WriteByte('d')
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		b.WriteByte(';')
	case string:
		b.WriteByte('s')
		b.WriteString(strconv.Quote(v))
	case []jsonv.Value:
		b.WriteByte('[')
		for _, el := range v {
			appendValueKey(b, el)
		}
		b.WriteByte(']')
	case *jsonv.Object:
		idx := make([]int, v.Len())
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(i, j int) int { return strings.Compare(v.Key(i), v.Key(j)) })
		b.WriteByte('{')
		for _, i := range idx {
			b.WriteString(strconv.Quote(v.Key(i)))
			appendValueKey(b, v.Val(i))
		}
		b.WriteByte('}')
	default:
		b.WriteByte('u')
	}
}
