package query

import (
	"fmt"

	"github.com/lethe-db/lethe/jsonv"
)

// A function is a built-in scalar function. Each builtin_*.go file registers
// its group of functions from an init func; adding a function is one
// register call there plus its test cases in testdata/eval.
//
// Arguments arrive evaluated, and any of them may be undefined. Like Cosmos
// DB, a function given values of the wrong type returns undefined rather than
// failing, so call has no error result.
type function struct {
	name    string // canonical spelling, as the Cosmos DB docs write it
	minArgs int
	maxArgs int // -1: any number from minArgs up
	call    func(args []jsonv.Value) jsonv.Value
	callNow nowFunc // if set, called instead of call with Env.Now (builtin_now.go)
}

// builtins maps the ASCII upper-case name to each function. It is filled by
// init funcs and read-only afterwards.
var builtins = map[string]*function{}

func register(fs ...*function) {
	for _, f := range fs {
		key := asciiUpper(f.name)
		if _, dup := builtins[key]; dup {
			panic("query: function " + f.name + " registered twice") // programmer error
		}
		builtins[key] = f
	}
}

// lookupFunction returns the built-in function called name (case-insensitive),
// or nil.
func lookupFunction(name string) *function {
	return builtins[asciiUpper(name)]
}

// checkArgs returns a message if n arguments do not suit f, or "".
func (f *function) checkArgs(n int) string {
	switch {
	case n >= f.minArgs && (f.maxArgs < 0 || n <= f.maxArgs):
		return ""
	case f.maxArgs < 0:
		return fmt.Sprintf("function %s takes at least %d arguments, found %d", f.name, f.minArgs, n)
	case f.minArgs == f.maxArgs:
		return fmt.Sprintf("function %s takes %d %s, found %d", f.name, f.minArgs, plural(f.minArgs, "argument"), n)
	case f.maxArgs == f.minArgs+1:
		return fmt.Sprintf("function %s takes %d or %d arguments, found %d", f.name, f.minArgs, f.maxArgs, n)
	default:
		return fmt.Sprintf("function %s takes %d to %d arguments, found %d", f.name, f.minArgs, f.maxArgs, n)
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Argument helpers shared by the builtin_*.go files.

func argString(v jsonv.Value) (string, bool) {
	s, ok := v.(string)
	return s, ok
}

func argNumber(v jsonv.Value) (float64, bool) {
	n, ok := v.(jsonv.Number)
	if !ok {
		return 0, false
	}
	return n.Float64(), true
}

// optBool reads the optional boolean argument i: (false, true) if absent,
// (b, true) if a boolean, and ok false for any other value, including
// undefined, which makes the calling function return undefined.
func optBool(args []jsonv.Value, i int) (b, ok bool) {
	if i >= len(args) {
		return false, true
	}
	b, ok = args[i].(bool)
	return b, ok
}
