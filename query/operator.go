package query

import (
	"math"
	"strings"

	"github.com/lethe-db/lethe/jsonv"
)

// Operator semantics follow the Cosmos DB for NoSQL documentation:
//
//   - Any operator given undefined yields undefined (except ?? and the
//     short-circuits of AND and OR).
//   - Arithmetic and bitwise operators need numbers, || needs strings;
//     anything else yields undefined.
//   - = compares values of the same JSON type, deeply for arrays and
//     objects; across types it yields undefined.
//   - <, <=, >, >= and != compare null, booleans (false < true), numbers (as
//     float64) and strings (by code point) of the same type; across types,
//     and for arrays and objects, they yield undefined.
//   - AND, OR and NOT use three-valued logic; a non-boolean operand counts as
//     undefined.

// unaryOp applies a prefix operator.
func unaryOp(op Token, v jsonv.Value) jsonv.Value {
	if op == NOT {
		return not3(v)
	}
	f, ok := argNumber(v)
	if !ok {
		return undefined
	}
	switch op {
	case SUB:
		return number(-f)
	case ADD:
		return v
	case BITNOT:
		return number(float64(^toInt32(f)))
	}
	return undefined
}

// binaryOp applies an infix operator to evaluated operands.
func binaryOp(op Token, a, b jsonv.Value) jsonv.Value {
	switch op {
	case AND:
		return and3(a, b)
	case OR:
		return or3(a, b)
	case COALESCE:
		if isUndefined(a) {
			return b
		}
		return a
	case EQL:
		return equalOp(a, b)
	case NEQ, LSS, LEQ, GTR, GEQ:
		return compareOp(op, a, b)
	case CONCAT:
		s, ok1 := a.(string)
		t, ok2 := b.(string)
		if !ok1 || !ok2 {
			return undefined
		}
		return s + t
	}
	x, ok1 := argNumber(a)
	y, ok2 := argNumber(b)
	if !ok1 || !ok2 {
		return undefined
	}
	switch op {
	case ADD:
		return number(x + y)
	case SUB:
		return number(x - y)
	case MUL:
		return number(x * y)
	case QUO:
		return number(x / y)
	case REM:
		return number(math.Mod(x, y))
	case BITAND:
		return number(float64(toInt32(x) & toInt32(y)))
	case BITOR:
		return number(float64(toInt32(x) | toInt32(y)))
	case BITXOR:
		return number(float64(toInt32(x) ^ toInt32(y)))
	case SHL:
		return number(float64(toInt32(x) << (uint32(toInt32(y)) & 31)))
	case SHR:
		return number(float64(toInt32(x) >> (uint32(toInt32(y)) & 31)))
	case USHR:
		return number(float64(uint32(toInt32(x)) >> (uint32(toInt32(y)) & 31)))
	}
	return undefined
}

// number returns f as a JSON number, or undefined if it is not finite (a
// division by zero, an overflow), since JSON cannot hold those. -0 becomes 0.
func number(f float64) jsonv.Value {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return undefined
	}
	if f == 0 {
		f = 0
	}
	return jsonv.NumberFromFloat(f)
}

// toInt32 converts f to a 32-bit integer the way JavaScript's bitwise
// operators do (ToInt32): truncate, then wrap modulo 2^32.
func toInt32(f float64) int32 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	m := math.Mod(math.Trunc(f), 1<<32)
	if m < 0 {
		m += 1 << 32
	}
	return int32(uint32(m))
}

// kind orders the JSON types; values of different kinds never compare.
type kind int

const (
	kindUndefined kind = iota
	kindNull
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func kindOf(v jsonv.Value) kind {
	switch v.(type) {
	case nil:
		return kindNull
	case bool:
		return kindBool
	case jsonv.Number:
		return kindNumber
	case string:
		return kindString
	case []jsonv.Value:
		return kindArray
	case *jsonv.Object:
		return kindObject
	}
	return kindUndefined
}

// equalOp is =: true or false for two values of one type, else undefined.
func equalOp(a, b jsonv.Value) jsonv.Value {
	k := kindOf(a)
	if k == kindUndefined || k != kindOf(b) {
		return undefined
	}
	return jsonv.Equal(a, b)
}

// compareOp is one of != < <= > >=.
func compareOp(op Token, a, b jsonv.Value) jsonv.Value {
	c, ok := order(a, b)
	if !ok {
		return undefined
	}
	switch op {
	case NEQ:
		return c != 0
	case LSS:
		return c < 0
	case LEQ:
		return c <= 0
	case GTR:
		return c > 0
	case GEQ:
		return c >= 0
	}
	return undefined
}

// order compares two scalar values of the same type; ok is false for
// undefined, mixed types, arrays and objects.
func order(a, b jsonv.Value) (c int, ok bool) {
	k := kindOf(a)
	if k != kindOf(b) {
		return 0, false
	}
	switch k {
	case kindNull:
		return 0, true
	case kindBool:
		x, y := a.(bool), b.(bool)
		switch {
		case x == y:
			return 0, true
		case y:
			return -1, true
		}
		return 1, true
	case kindNumber:
		x, y := a.(jsonv.Number).Float64(), b.(jsonv.Number).Float64()
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	case kindString:
		// UTF-8 byte order is code point order.
		return strings.Compare(a.(string), b.(string)), true
	}
	return 0, false
}

// and3, or3 and not3 are three-valued logic over true, false and undefined;
// any non-boolean counts as undefined.
func and3(a, b jsonv.Value) jsonv.Value {
	if a == false || b == false {
		return false
	}
	if a == true && b == true {
		return true
	}
	return undefined
}

func or3(a, b jsonv.Value) jsonv.Value {
	if a == true || b == true {
		return true
	}
	if a == false && b == false {
		return false
	}
	return undefined
}

func not3(a jsonv.Value) jsonv.Value {
	if b, ok := a.(bool); ok {
		return !b
	}
	return undefined
}
