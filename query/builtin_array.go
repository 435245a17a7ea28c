package query

import "github.com/lethe-db/lethe/jsonv"

// Array functions. A first argument that is not an array gives undefined.
func init() {
	register(
		&function{name: "ARRAY_LENGTH", minArgs: 1, maxArgs: 1, call: arrayLength},
		&function{name: "ARRAY_CONTAINS", minArgs: 2, maxArgs: 3, call: arrayContains},
	)
}

func arrayLength(args []jsonv.Value) jsonv.Value {
	a, ok := args[0].([]jsonv.Value)
	if !ok {
		return undefined
	}
	return number(float64(len(a)))
}

// arrayContains is ARRAY_CONTAINS(arr, value [, partial]). With partial true
// and an object value, an element matches if it is an object holding every
// member of value (with deeply equal values); otherwise elements must equal
// value deeply. Searching for undefined finds nothing.
func arrayContains(args []jsonv.Value) jsonv.Value {
	a, ok := args[0].([]jsonv.Value)
	if !ok {
		return undefined
	}
	partial, ok := optBool(args, 2)
	if !ok {
		return undefined
	}
	want := args[1]
	if isUndefined(want) {
		return false
	}
	wantObj, isObj := want.(*jsonv.Object)
	for _, el := range a {
		if partial && isObj {
			if o, ok := el.(*jsonv.Object); ok && containsMembers(o, wantObj) {
				return true
			}
			continue
		}
		if jsonv.Equal(el, want) {
			return true
		}
	}
	return false
}

// containsMembers reports whether o has every member of sub with an equal value.
func containsMembers(o, sub *jsonv.Object) bool {
	for i := 0; i < sub.Len(); i++ {
		v, ok := o.Get(sub.Key(i))
		if !ok || !jsonv.Equal(v, sub.Val(i)) {
			return false
		}
	}
	return true
}
