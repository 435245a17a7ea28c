package query

import "github.com/lethe-db/lethe/jsonv"

// Conditional functions.
func init() {
	// IIF(cond, a, b) is a when cond is boolean true and b otherwise, also
	// when cond is undefined or of another type. Both a and b are evaluated,
	// as for every function; built-in functions have no side effects, so only
	// the cost differs from a short-circuit.
	register(&function{name: "IIF", minArgs: 3, maxArgs: 3, call: func(args []jsonv.Value) jsonv.Value {
		if args[0] == true {
			return args[1]
		}
		return args[2]
	}})
}
