package query

import (
	"math"
	"math/rand/v2"

	"github.com/lethe-db/lethe/jsonv"
)

// Mathematical functions. They compute in float64, as Cosmos DB does; a
// non-number argument gives undefined, and so does a result that is not a
// finite number (ACOS(2), LOG(0), SQRT(-1), EXP(1000)), since JSON cannot hold
// NaN or an infinity. Negative zero is returned as 0.
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
		math1("SQRT", math.Sqrt),
		math1("SQUARE", func(f float64) float64 { return f * f }),
		math1("EXP", math.Exp),
		math1("LOG10", math.Log10),
		math1("SIN", math.Sin),
		math1("COS", math.Cos),
		math1("TAN", math.Tan),
		math1("COT", func(f float64) float64 { return 1 / math.Tan(f) }),
		math1("ASIN", math.Asin),
		math1("ACOS", math.Acos),
		math1("ATAN", math.Atan),
		math1("DEGREES", func(f float64) float64 { return f * (180 / math.Pi) }),
		math1("RADIANS", func(f float64) float64 { return f * (math.Pi / 180) }),
		// ATN2(y, x) is the angle of the point (x, y): ATN2(1, 0) is PI()/2.
		math2("ATN2", math.Atan2),
		math2("POWER", math.Pow),
		&function{name: "LOG", minArgs: 1, maxArgs: 2, call: logarithm},
		&function{name: "NumberBin", minArgs: 1, maxArgs: 2, call: numberBin},
		&function{name: "PI", minArgs: 0, maxArgs: 0, call: func([]jsonv.Value) jsonv.Value { return number(math.Pi) }},
		// RAND returns a number in [0, 1), different on every call.
		&function{name: "RAND", minArgs: 0, maxArgs: 0, call: func([]jsonv.Value) jsonv.Value { return number(rand.Float64()) }},
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

func math2(name string, f func(x, y float64) float64) *function {
	return &function{name: name, minArgs: 2, maxArgs: 2, call: func(args []jsonv.Value) jsonv.Value {
		x, ok1 := argNumber(args[0])
		y, ok2 := argNumber(args[1])
		if !ok1 || !ok2 {
			return undefined
		}
		return number(f(x, y))
	}}
}

// logarithm is LOG(x [, base]): the natural logarithm, or the logarithm to
// base. Bases 10 and 2 use the exact library functions, so LOG(1000, 10) is
// 3 and not 2.9999999999999996.
func logarithm(args []jsonv.Value) jsonv.Value {
	x, ok := argNumber(args[0])
	if !ok {
		return undefined
	}
	if len(args) == 1 {
		return number(math.Log(x))
	}
	base, ok := argNumber(args[1])
	if !ok {
		return undefined
	}
	switch base {
	case 10:
		return number(math.Log10(x))
	case 2:
		return number(math.Log2(x))
	}
	return number(math.Log(x) / math.Log(base))
}

// numberBin is NumberBin(x [, size]): x rounded down to a multiple of size
// (default 1). NumberBin(37.752, 0.1) is 37.7; a negative size rounds the
// other way, NumberBin(37.752, -100) is 100. A size of 0 gives undefined.
func numberBin(args []jsonv.Value) jsonv.Value {
	x, ok := argNumber(args[0])
	if !ok {
		return undefined
	}
	size := 1.0
	if len(args) > 1 {
		if size, ok = argNumber(args[1]); !ok || size == 0 {
			return undefined
		}
	}
	return number(math.Floor(x/size) * size)
}
