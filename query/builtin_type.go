package query

import (
	"math"

	"github.com/lethe-db/lethe/jsonv"
)

// Type-checking functions. Each takes one argument of any type, undefined
// included, and always returns a boolean.
func init() {
	register(
		typeCheck("IS_DEFINED", func(v jsonv.Value) bool { return !isUndefined(v) }),
		typeCheck("IS_NULL", func(v jsonv.Value) bool { return kindOf(v) == kindNull }),
		typeCheck("IS_BOOL", func(v jsonv.Value) bool { return kindOf(v) == kindBool }),
		typeCheck("IS_NUMBER", func(v jsonv.Value) bool { return kindOf(v) == kindNumber }),
		typeCheck("IS_STRING", func(v jsonv.Value) bool { return kindOf(v) == kindString }),
		typeCheck("IS_ARRAY", func(v jsonv.Value) bool { return kindOf(v) == kindArray }),
		typeCheck("IS_OBJECT", func(v jsonv.Value) bool { return kindOf(v) == kindObject }),
		typeCheck("IS_PRIMITIVE", func(v jsonv.Value) bool {
			k := kindOf(v)
			return k == kindNull || k == kindBool || k == kindNumber || k == kindString
		}),
		// Every JSON number is finite; the function exists for Cosmos DB
		// compatibility, where values computed in a query may not be.
		typeCheck("IS_FINITE_NUMBER", func(v jsonv.Value) bool {
			f, ok := argNumber(v)
			return ok && !math.IsInf(f, 0) && !math.IsNaN(f)
		}),
		// IS_INTEGER is true for whole numbers in the signed 64-bit range,
		// the numbers the Int functions accept.
		typeCheck("IS_INTEGER", func(v jsonv.Value) bool {
			_, ok := argInt64(v)
			return ok
		}),
		// IS_DATETIME is true for strings the date and time functions accept.
		typeCheck("IS_DATETIME", func(v jsonv.Value) bool {
			_, ok := argDateTime(v)
			return ok
		}),
	)
}

func typeCheck(name string, pred func(jsonv.Value) bool) *function {
	return &function{name: name, minArgs: 1, maxArgs: 1, call: func(args []jsonv.Value) jsonv.Value {
		return pred(args[0])
	}}
}
