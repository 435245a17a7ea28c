package query

import (
	"math"

	"github.com/lethe-db/lethe/jsonv"
)

// Mathematical functions. A non-number argument gives undefined.
func init() {
	register(
		math1("ABS", math.Abs),
		math1("CEILING", math.Ceil),
		math1("FLOOR", math.Floor),
		// ROUND rounds halves away from zero: ROUND(-2.5) is -3.
		math1("ROUND", math.Round),
		math1("TRUNC", math.Trunc),
		math1("SIGN", func(f float64) float64 {
			switch {
			case f > 0:
				return 1
			case f < 0:
				return -1
			}
			return 0
		}),
	)
}

func math1(name string, f func(float64) float64) *function {
	return &function{name: name, minArgs: 1, maxArgs: 1, call: func(args []jsonv.Value) jsonv.Value {
		x, ok := argNumber(args[0])
		if !ok {
			return undefined
		}
		return number(f(x))
	}}
}
