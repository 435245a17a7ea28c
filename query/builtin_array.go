package query

import (
	"math"
	"slices"

	"github.com/lethe-db/lethe/jsonv"
)

// Array functions. A first argument that is not an array gives undefined.
// Elements compare deeply, as = does: numbers by value (1 equals 1.0) and
// objects regardless of member order.
func init() {
	register(
		&function{name: "ARRAY_LENGTH", minArgs: 1, maxArgs: 1, call: arrayLength},
		&function{name: "ARRAY_CONTAINS", minArgs: 2, maxArgs: 3, call: arrayContains},
		&function{name: "ARRAY_CONTAINS_ANY", minArgs: 2, maxArgs: -1, call: arrayContainsList(or3)},
		&function{name: "ARRAY_CONTAINS_ALL", minArgs: 2, maxArgs: -1, call: arrayContainsList(and3)},
		&function{name: "ARRAY_CONCAT", minArgs: 2, maxArgs: -1, call: arrayConcat},
		&function{name: "ARRAY_SLICE", minArgs: 2, maxArgs: 3, call: arraySlice},
		&function{name: "ARRAY_MAX", minArgs: 1, maxArgs: 1, call: arrayExtreme(1)},
		&function{name: "ARRAY_MIN", minArgs: 1, maxArgs: 1, call: arrayExtreme(-1)},
		&function{name: "ARRAY_SUM", minArgs: 1, maxArgs: 1, call: arraySum},
		&function{name: "ARRAY_AVG", minArgs: 1, maxArgs: 1, call: arrayAvg},
		&function{name: "ARRAY_MEDIAN", minArgs: 1, maxArgs: 1, call: arrayMedian},
		&function{name: "CHOOSE", minArgs: 2, maxArgs: -1, call: choose},
		&function{name: "ObjectToArray", minArgs: 1, maxArgs: 3, call: objectToArray},
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

// arrayContainsList makes ARRAY_CONTAINS_ANY and ARRAY_CONTAINS_ALL:
// f(arr, v1, ..., vn) combines "arr holds vi" over the vi with three-valued
// OR (any) or AND (all), where an undefined vi counts as undefined, as the
// Cosmos DB documentation shows: ARRAY_CONTAINS_ANY([1, 2], 1, undefined) is
// true, ARRAY_CONTAINS_ANY([1, 2], 5, undefined) is undefined, and
// ARRAY_CONTAINS_ALL([1, 2], 5, undefined) is false.
func arrayContainsList(combine func(a, b jsonv.Value) jsonv.Value) func([]jsonv.Value) jsonv.Value {
	return func(args []jsonv.Value) jsonv.Value {
		a, ok := args[0].([]jsonv.Value)
		if !ok {
			return undefined
		}
		var result jsonv.Value
		for i, want := range args[1:] {
			var found jsonv.Value = undefined
			if !isUndefined(want) {
				found = slices.ContainsFunc(a, func(el jsonv.Value) bool { return jsonv.Equal(el, want) })
			}
			if i == 0 {
				result = found
			} else {
				result = combine(result, found)
			}
		}
		return result
	}
}

// arrayConcat is ARRAY_CONCAT(a1, a2, ...): every argument must be an array.
func arrayConcat(args []jsonv.Value) jsonv.Value {
	var out []jsonv.Value
	for _, arg := range args {
		a, ok := arg.([]jsonv.Value)
		if !ok {
			return undefined
		}
		out = append(out, a...)
	}
	if out == nil {
		out = []jsonv.Value{}
	}
	return out
}

// arraySlice is ARRAY_SLICE(arr, start [, length]). Numbers are truncated; a
// negative start counts from the end (-1 is the last element); the result is
// clamped to the array, and a negative length gives [].
func arraySlice(args []jsonv.Value) jsonv.Value {
	a, ok1 := args[0].([]jsonv.Value)
	start, ok2 := argNumber(args[1])
	if !ok1 || !ok2 {
		return undefined
	}
	n := float64(len(a))
	start = math.Trunc(start)
	if start < 0 {
		start += n
	}
	i := clampIndex(start, len(a))
	j := len(a)
	if len(args) > 2 {
		length, ok := argNumber(args[2])
		if !ok {
			return undefined
		}
		j = i + clampIndex(length, len(a)-i)
	}
	return slices.Clone(a[i:j:j])
}

// arrayExtreme makes ARRAY_MAX (sign 1) and ARRAY_MIN (sign -1). Elements may
// be strings, numbers, booleans and null; across types, strings rank above
// numbers, numbers above booleans and booleans above null. An empty array,
// or one holding an array or object, gives undefined.
func arrayExtreme(sign int) func([]jsonv.Value) jsonv.Value {
	return func(args []jsonv.Value) jsonv.Value {
		a, ok := args[0].([]jsonv.Value)
		if !ok || len(a) == 0 {
			return undefined
		}
		best := a[0]
		for _, el := range a {
			k := kindOf(el)
			if k == kindArray || k == kindObject || k == kindUndefined {
				return undefined
			}
			c := int(k) - int(kindOf(best))
			if c == 0 {
				c, _ = order(el, best)
			}
			if c*sign > 0 {
				best = el
			}
		}
		return best
	}
}

// arrayNumbers returns the array's elements as float64s, or ok false if the
// argument is not an array of numbers.
func arrayNumbers(v jsonv.Value) (fs []float64, ok bool) {
	a, ok := v.([]jsonv.Value)
	if !ok {
		return nil, false
	}
	fs = make([]float64, len(a))
	for i, el := range a {
		if fs[i], ok = argNumber(el); !ok {
			return nil, false
		}
	}
	return fs, true
}

// arraySum is ARRAY_SUM(arr): the sum of an array of numbers; 0 for [].
func arraySum(args []jsonv.Value) jsonv.Value {
	fs, ok := arrayNumbers(args[0])
	if !ok {
		return undefined
	}
	sum := 0.0
	for _, f := range fs {
		sum += f
	}
	return number(sum)
}

// arrayAvg is ARRAY_AVG(arr): the mean of an array of numbers; undefined for [].
func arrayAvg(args []jsonv.Value) jsonv.Value {
	fs, ok := arrayNumbers(args[0])
	if !ok || len(fs) == 0 {
		return undefined
	}
	sum := 0.0
	for _, f := range fs {
		sum += f
	}
	return number(sum / float64(len(fs)))
}

// arrayMedian is ARRAY_MEDIAN(arr): the middle number, or the mean of the two
// middle numbers for an even count; undefined for [].
func arrayMedian(args []jsonv.Value) jsonv.Value {
	fs, ok := arrayNumbers(args[0])
	if !ok || len(fs) == 0 {
		return undefined
	}
	slices.Sort(fs)
	m := len(fs) / 2
	if len(fs)%2 == 1 {
		return number(fs[m])
	}
	return number((fs[m-1] + fs[m]) / 2)
}

// choose is CHOOSE(i, v1, ..., vn): vi, counting from 1. An index that is not
// a whole number from 1 to n gives undefined.
func choose(args []jsonv.Value) jsonv.Value {
	i, ok := argNumber(args[0])
	if !ok || i != math.Trunc(i) || i < 1 || i > float64(len(args)-1) {
		return undefined
	}
	return args[int(i)]
}

// objectToArray is ObjectToArray(obj [, kName [, vName]]): one object
// {kName: name, vName: value} per member of obj, in member order. The names
// default to "k" and "v".
func objectToArray(args []jsonv.Value) jsonv.Value {
	o, ok := args[0].(*jsonv.Object)
	if !ok {
		return undefined
	}
	kName, vName := "k", "v"
	if len(args) > 1 {
		if kName, ok = argString(args[1]); !ok {
			return undefined
		}
	}
	if len(args) > 2 {
		if vName, ok = argString(args[2]); !ok {
			return undefined
		}
	}
	out := make([]jsonv.Value, o.Len())
	for i := range out {
		pair := jsonv.NewObject(2)
		pair.Set(kName, o.Key(i))
		pair.Set(vName, o.Val(i))
		out[i] = pair
	}
	return out
}
