package query

import (
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/lethe-db/lethe/jsonv"
)

// Conversion functions. StringToArray, StringToBoolean, StringToNull,
// StringToNumber and StringToObject parse their argument as strict JSON
// (double-quoted strings, lower-case true, false and null), ignoring white
// space around it, and give undefined unless it is valid JSON of the
// function's type. StringToBoolean(" true ") is true; StringToNull("NULL"),
// StringToArray("['a']") and StringToBoolean(true) are undefined.
func init() {
	register(
		stringTo("StringToArray", kindArray),
		stringTo("StringToBoolean", kindBool),
		stringTo("StringToNull", kindNull),
		stringTo("StringToObject", kindObject),
		string1("StringToNumber", stringToNumber),
		&function{name: "ToString", minArgs: 1, maxArgs: 1, call: toString},
	)
}

func stringTo(name string, k kind) *function {
	return string1(name, func(s string) jsonv.Value {
		v, ok := parseJSONString(s)
		if !ok || kindOf(v) != k {
			return undefined
		}
		return v
	})
}

// parseJSONString parses s, less surrounding white space, as one JSON value.
func parseJSONString(s string) (jsonv.Value, bool) {
	v, err := jsonv.Parse([]byte(strings.TrimFunc(s, unicode.IsSpace)))
	return v, err == nil
}

// stringToNumber parses a JSON number: StringToNumber(" 1.50 ") is 1.5.
// Anything else gives undefined, and so does a number too large for a
// float64 ("1e400").
func stringToNumber(s string) jsonv.Value {
	v, ok := parseJSONString(s)
	if !ok {
		return undefined
	}
	n, ok := v.(jsonv.Number)
	if !ok {
		return undefined
	}
	return number(n.Float64())
}

// toString is ToString(v): a string unchanged, a number as JavaScript prints
// it, true, false and null as words, arrays and objects as compact JSON.
func toString(args []jsonv.Value) jsonv.Value {
	switch v := args[0].(type) {
	case string:
		return v
	case jsonv.Number:
		return formatNumber(v.Float64())
	case bool, nil, []jsonv.Value, *jsonv.Object:
		return string(jsonv.Marshal(v))
	}
	return undefined
}

// formatNumber prints f as JavaScript's Number.prototype.toString does:
// plain digits from 1e-6 up to 1e21, exponent form outside that range.
func formatNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // 1e-07, 1.5e+21
	i := strings.LastIndexAny(s, "+-")
	j := i + 1
	for j < len(s)-1 && s[j] == '0' {
		j++
	}
	return s[:i+1] + s[j:]
}
