// Package jsonv is Lethe's JSON value model: documents decoded into values that
// keep object member order and the exact text of numbers, so a document is stored
// and returned as the client wrote it (a patch does not reorder it, a ttl is
// stored exactly as sent). Parsing is strict RFC 8259 with a nesting limit, so no
// input can exhaust the stack.
//
// A Value is one of: nil (JSON null), bool, Number, string, []Value, *Object.
package jsonv

import (
	"fmt"
	"math"
	"strconv"
)

// Value is a decoded JSON value: nil, bool, Number, string, []Value or *Object.
type Value = any

// Number is a JSON number kept as its exact source text.
type Number string

// Float64 returns the number's value as a float64 (what Cosmos DB computes with).
func (n Number) Float64() float64 {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil { // only on overflow (Parse refuses it; ParseStoredObject reads it)
		if len(n) > 0 && n[0] == '-' {
			return math.Inf(-1)
		}
		return math.Inf(1)
	}
	return f
}

// NumberFromFloat returns the shortest JSON text for f. f must be finite.
func NumberFromFloat(f float64) Number {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return Number(strconv.FormatFloat(f, 'f', -1, 64))
	}
	return Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// Object is a JSON object whose members keep their order.
type Object struct {
	keys []string
	vals []Value
}

// NewObject returns an empty object with room for n members.
func NewObject(n int) *Object {
	return &Object{keys: make([]string, 0, n), vals: make([]Value, 0, n)}
}

// Len returns the number of members.
func (o *Object) Len() int { return len(o.keys) }

// Key returns the i-th member's name.
func (o *Object) Key(i int) string { return o.keys[i] }

// Val returns the i-th member's value.
func (o *Object) Val(i int) Value { return o.vals[i] }

func (o *Object) index(k string) int {
	for i, key := range o.keys {
		if key == k {
			return i
		}
	}
	return -1
}

// Get returns the value of member k and whether it exists.
func (o *Object) Get(k string) (Value, bool) {
	if i := o.index(k); i >= 0 {
		return o.vals[i], true
	}
	return nil, false
}

// Set replaces member k's value in place, or appends the member.
func (o *Object) Set(k string, v Value) {
	if i := o.index(k); i >= 0 {
		o.vals[i] = v
		return
	}
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
}

// GetPath returns the value at path (member names, outermost first) and
// whether there is one: every step but the last must be an object.
func (o *Object) GetPath(path []string) (Value, bool) {
	var cur Value = o
	for _, name := range path {
		obj, ok := cur.(*Object)
		if !ok {
			return nil, false
		}
		if cur, ok = obj.Get(name); !ok {
			return nil, false
		}
	}
	return cur, true
}

// SetPath sets the value at path (member names, outermost first) to v,
// making the objects on the way that o lacks, or replacing a member on the
// way that holds anything else.
func (o *Object) SetPath(path []string, v Value) {
	for _, name := range path[:len(path)-1] {
		next, _ := o.Get(name)
		obj, isObject := next.(*Object)
		if !isObject {
			obj = NewObject(1)
			o.Set(name, obj)
		}
		o = obj
	}
	o.Set(path[len(path)-1], v)
}

// Delete removes member k and reports whether it existed.
func (o *Object) Delete(k string) bool {
	i := o.index(k)
	if i < 0 {
		return false
	}
	o.keys = append(o.keys[:i], o.keys[i+1:]...)
	o.vals = append(o.vals[:i], o.vals[i+1:]...)
	return true
}

// Clone returns a deep copy of v.
func Clone(v Value) Value {
	switch t := v.(type) {
	case *Object:
		c := &Object{keys: append([]string(nil), t.keys...), vals: make([]Value, len(t.vals))}
		for i, x := range t.vals {
			c.vals[i] = Clone(x)
		}
		return c
	case []Value:
		c := make([]Value, len(t))
		for i, x := range t {
			c[i] = Clone(x)
		}
		return c
	}
	return v
}

// Equal reports whether a and b are the same JSON value. Numbers compare by value,
// objects by members regardless of order.
func Equal(a, b Value) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case Number:
		y, ok := b.(Number)
		return ok && x.Float64() == y.Float64()
	case []Value:
		y, ok := b.([]Value)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case *Object:
		y, ok := b.(*Object)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for i, k := range x.keys {
			yv, ok := y.Get(k)
			if !ok || !Equal(x.vals[i], yv) {
				return false
			}
		}
		return true
	}
	return false
}

// TypeName returns the JSON type name of v, for error messages.
func TypeName(v Value) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case Number:
		return "number"
	case string:
		return "string"
	case []Value:
		return "array"
	case *Object:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
