package query

import (
	"math"
	"strconv"

	"github.com/lethe-db/lethe/jsonv"
)

// Integer functions: 64-bit two's complement arithmetic, as in C++. An
// argument that is not a whole number in the signed 64-bit range (see
// argInt64) gives undefined. Overflow wraps around: IntAdd(9223372036854775807,
// 1) is -9223372036854775808. Results are exact, even beyond 2^53, where a
// float64 could not hold them.
func init() {
	register(
		int2("IntAdd", func(x, y int64) (int64, bool) { return x + y, true }),
		int2("IntSub", func(x, y int64) (int64, bool) { return x - y, true }),
		int2("IntMul", func(x, y int64) (int64, bool) { return x * y, true }),
		// IntDiv truncates toward zero; division by zero gives undefined.
		// MinInt64 / -1 wraps to MinInt64.
		int2("IntDiv", func(x, y int64) (int64, bool) {
			if y == 0 {
				return 0, false
			}
			return x / y, true
		}),
		// IntMod has the sign of the dividend: IntMod(-12, 5) is -2.
		int2("IntMod", func(x, y int64) (int64, bool) {
			if y == 0 {
				return 0, false
			}
			return x % y, true
		}),
		int2("IntBitAnd", func(x, y int64) (int64, bool) { return x & y, true }),
		int2("IntBitOr", func(x, y int64) (int64, bool) { return x | y, true }),
		int2("IntBitXor", func(x, y int64) (int64, bool) { return x ^ y, true }),
		// Shift counts are taken modulo 64, as the x86-64 shift instructions
		// do (C++ leaves counts outside [0, 63] undefined). The right shift
		// is arithmetic: it keeps the sign.
		int2("IntBitLeftShift", func(x, y int64) (int64, bool) { return x << (uint64(y) & 63), true }),
		int2("IntBitRightShift", func(x, y int64) (int64, bool) { return x >> (uint64(y) & 63), true }),
		&function{name: "IntBitNot", minArgs: 1, maxArgs: 1, call: func(args []jsonv.Value) jsonv.Value {
			x, ok := argInt64(args[0])
			if !ok {
				return undefined
			}
			return intNumber(^x)
		}},
	)
}

func int2(name string, f func(x, y int64) (int64, bool)) *function {
	return &function{name: name, minArgs: 2, maxArgs: 2, call: func(args []jsonv.Value) jsonv.Value {
		x, ok1 := argInt64(args[0])
		y, ok2 := argInt64(args[1])
		if !ok1 || !ok2 {
			return undefined
		}
		z, ok := f(x, y)
		if !ok {
			return undefined
		}
		return intNumber(z)
	}}
}

// argInt64 reads a whole number in the signed 64-bit range. Integer text is
// read exactly (9007199254740993 stays odd); other forms (5.0, 1e3) count if
// their float64 value is whole and in range.
func argInt64(v jsonv.Value) (int64, bool) {
	n, ok := v.(jsonv.Number)
	if !ok {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, true
	}
	f := n.Float64()
	if f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// intNumber returns i as an exact JSON number.
func intNumber(i int64) jsonv.Value {
	return jsonv.Number(strconv.FormatInt(i, 10))
}
