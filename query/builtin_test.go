package query

import (
	"testing"

	"github.com/lethe-db/lethe/jsonv"
)

// TestBuiltinNames lists every built-in function, so one that goes missing
// is noticed, and the spatial functions, which are not implemented and so
// must stay unknown (a parse error) rather than answer wrongly.
func TestBuiltinNames(t *testing.T) {
	names := []string{
		// Type checks.
		"IS_ARRAY", "IS_BOOL", "IS_DATETIME", "IS_DEFINED", "IS_FINITE_NUMBER", "IS_INTEGER", "IS_NULL",
		"IS_NUMBER", "IS_OBJECT", "IS_PRIMITIVE", "IS_STRING",
		// Strings and conversions.
		"CONCAT", "CONTAINS", "CONTAINS_ALL_CI", "CONTAINS_ALL_CS", "CONTAINS_ANY_CI", "CONTAINS_ANY_CS",
		"ENDSWITH", "INDEX_OF", "LASTINDEXOF", "LEFT", "LENGTH", "LOWER", "LTRIM", "RegexMatch", "REPLACE",
		"REPLICATE", "REVERSE", "RIGHT", "RTRIM", "STARTSWITH", "StringEquals", "StringJoin", "StringSplit",
		"StringToArray", "StringToBoolean", "StringToNull", "StringToNumber", "StringToObject", "SUBSTRING",
		"ToString", "TRIM", "UPPER",
		// Mathematics.
		"ABS", "ACOS", "ASIN", "ATAN", "ATN2", "CEILING", "COS", "COT", "DEGREES", "EXP", "FLOOR", "LOG",
		"LOG10", "NumberBin", "PI", "POWER", "RADIANS", "RAND", "ROUND", "SIGN", "SIN", "SQRT", "SQUARE",
		"TAN", "TRUNC", "IntAdd", "IntBitAnd", "IntBitLeftShift", "IntBitNot", "IntBitOr",
		"IntBitRightShift", "IntBitXor", "IntDiv", "IntMod", "IntMul", "IntSub",
		// Arrays and sets.
		"ARRAY_AVG", "ARRAY_CONCAT", "ARRAY_CONTAINS", "ARRAY_CONTAINS_ALL", "ARRAY_CONTAINS_ANY",
		"ARRAY_LENGTH", "ARRAY_MAX", "ARRAY_MEDIAN", "ARRAY_MIN", "ARRAY_SLICE", "ARRAY_SUM", "CHOOSE",
		"ObjectToArray", "SetDifference", "SetEqual", "SetIntersect", "SetUnion",
		// Dates and times.
		"AGO", "DateTimeAdd", "DateTimeBin", "DateTimeDiff", "DateTimeFormat", "DateTimeFromParts",
		"DateTimePart", "DateTimeToTicks", "DateTimeToTimestamp", "DAY", "GetCurrentDateTime",
		"GetCurrentDateTimeStatic", "GetCurrentTicks", "GetCurrentTicksStatic", "GetCurrentTimestamp",
		"GetCurrentTimestampStatic", "MONTH", "NOW", "TicksToDateTime", "TimestampToDateTime", "YEAR",
		// Others.
		"DocumentId", "IIF",
	}
	for _, name := range names {
		if lookupFunction(name) == nil {
			t.Errorf("function %s is not registered", name)
		}
	}
	for _, name := range []string{"ST_AREA", "ST_DISTANCE", "ST_INTERSECTS", "ST_ISVALID", "ST_ISVALIDDETAILED", "ST_WITHIN"} {
		if lookupFunction(name) != nil {
			t.Errorf("spatial function %s is registered", name)
		}
	}
	for _, f := range builtins {
		if f.call == nil {
			t.Errorf("function %s has no call", f.name)
		}
	}
}

// TestRand: RAND returns numbers in [0, 1) that vary.
func TestRand(t *testing.T) {
	rand := lookupFunction("RAND")
	seen := map[jsonv.Value]bool{}
	for range 1000 {
		v := rand.call(nil)
		f, ok := argNumber(v)
		if !ok || f < 0 || f >= 1 {
			t.Fatalf("RAND() = %v", v)
		}
		seen[v] = true
	}
	if len(seen) < 900 {
		t.Errorf("RAND() gave only %d distinct values in 1000 calls", len(seen))
	}
}
