package query

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lethe-db/lethe/jsonv"
)

// String functions. Positions and lengths count Unicode characters (code
// points), not bytes, and are zero-based. An argument of the wrong type gives
// undefined; so does a non-boolean ignoreCase flag.
func init() {
	register(
		stringMatch("CONTAINS", strings.Contains),
		stringMatch("STARTSWITH", strings.HasPrefix),
		stringMatch("ENDSWITH", strings.HasSuffix),
		stringMatch("StringEquals", func(s, t string) bool { return s == t }),
		string1("LOWER", func(s string) jsonv.Value { return strings.ToLower(s) }),
		string1("UPPER", func(s string) jsonv.Value { return strings.ToUpper(s) }),
		string1("TRIM", func(s string) jsonv.Value { return strings.TrimFunc(s, unicode.IsSpace) }),
		string1("LTRIM", func(s string) jsonv.Value { return strings.TrimLeftFunc(s, unicode.IsSpace) }),
		string1("RTRIM", func(s string) jsonv.Value { return strings.TrimRightFunc(s, unicode.IsSpace) }),
		string1("LENGTH", func(s string) jsonv.Value { return number(float64(utf8.RuneCountInString(s))) }),
		string1("REVERSE", reverse),
		string1("StringToNumber", stringToNumber),
		&function{name: "CONCAT", minArgs: 2, maxArgs: -1, call: concat},
		&function{name: "SUBSTRING", minArgs: 3, maxArgs: 3, call: substring},
		&function{name: "INDEX_OF", minArgs: 2, maxArgs: 3, call: indexOf},
		&function{name: "REPLACE", minArgs: 3, maxArgs: 3, call: replace},
		&function{name: "LEFT", minArgs: 2, maxArgs: 2, call: left},
		&function{name: "RIGHT", minArgs: 2, maxArgs: 2, call: right},
		&function{name: "ToString", minArgs: 1, maxArgs: 1, call: toString},
	)
}

// stringMatch makes a function f(s, t [, ignoreCase]) that applies pred.
// With ignoreCase true both strings are compared in lower case.
func stringMatch(name string, pred func(s, t string) bool) *function {
	return &function{name: name, minArgs: 2, maxArgs: 3, call: func(args []jsonv.Value) jsonv.Value {
		s, ok1 := argString(args[0])
		t, ok2 := argString(args[1])
		ignoreCase, ok3 := optBool(args, 2)
		if !ok1 || !ok2 || !ok3 {
			return undefined
		}
		if ignoreCase {
			s, t = strings.ToLower(s), strings.ToLower(t)
		}
		return pred(s, t)
	}}
}

// string1 makes a function of one string argument.
func string1(name string, f func(string) jsonv.Value) *function {
	return &function{name: name, minArgs: 1, maxArgs: 1, call: func(args []jsonv.Value) jsonv.Value {
		s, ok := argString(args[0])
		if !ok {
			return undefined
		}
		return f(s)
	}}
}

func reverse(s string) jsonv.Value {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// stringToNumber parses a JSON number, ignoring surrounding white space:
// StringToNumber(" 1.50 ") is 1.5. Anything else gives undefined.
func stringToNumber(s string) jsonv.Value {
	v, err := jsonv.Parse([]byte(strings.TrimFunc(s, unicode.IsSpace)))
	if err != nil {
		return undefined
	}
	n, ok := v.(jsonv.Number)
	if !ok {
		return undefined
	}
	return number(n.Float64())
}

func concat(args []jsonv.Value) jsonv.Value {
	var b strings.Builder
	for _, a := range args {
		s, ok := argString(a)
		if !ok {
			return undefined
		}
		b.WriteString(s)
	}
	return b.String()
}

// clampIndex truncates f and limits it to [0, n].
func clampIndex(f float64, n int) int {
	f = math.Trunc(f)
	switch {
	case f <= 0 || math.IsNaN(f):
		return 0
	case f >= float64(n):
		return n
	}
	return int(f)
}

// substring is SUBSTRING(s, start, length), clamped to the string.
func substring(args []jsonv.Value) jsonv.Value {
	s, ok1 := argString(args[0])
	start, ok2 := argNumber(args[1])
	length, ok3 := argNumber(args[2])
	if !ok1 || !ok2 || !ok3 {
		return undefined
	}
	r := []rune(s)
	i := clampIndex(start, len(r))
	j := i + clampIndex(length, len(r)-i)
	return string(r[i:j])
}

// indexOf is INDEX_OF(s, sub [, start]): the character position of the first
// sub at or after start, or -1.
func indexOf(args []jsonv.Value) jsonv.Value {
	s, ok1 := argString(args[0])
	sub, ok2 := argString(args[1])
	if !ok1 || !ok2 {
		return undefined
	}
	from := 0
	if len(args) > 2 {
		f, ok := argNumber(args[2])
		if !ok {
			return undefined
		}
		n := utf8.RuneCountInString(s)
		if math.Trunc(f) > float64(n) {
			return number(-1)
		}
		from = clampIndex(f, n)
	}
	// Byte offset of character from, then search the rest.
	off := 0
	for i := 0; i < from; i++ {
		_, size := utf8.DecodeRuneInString(s[off:])
		off += size
	}
	k := strings.Index(s[off:], sub)
	if k < 0 {
		return number(-1)
	}
	return number(float64(from + utf8.RuneCountInString(s[off:off+k])))
}

// replace is REPLACE(s, old, new): every occurrence of old replaced. An empty
// old leaves s unchanged.
func replace(args []jsonv.Value) jsonv.Value {
	s, ok1 := argString(args[0])
	old, ok2 := argString(args[1])
	repl, ok3 := argString(args[2])
	if !ok1 || !ok2 || !ok3 {
		return undefined
	}
	if old == "" {
		return s
	}
	return strings.ReplaceAll(s, old, repl)
}

// left is LEFT(s, n): the first n characters.
func left(args []jsonv.Value) jsonv.Value {
	s, ok1 := argString(args[0])
	n, ok2 := argNumber(args[1])
	if !ok1 || !ok2 {
		return undefined
	}
	r := []rune(s)
	return string(r[:clampIndex(n, len(r))])
}

// right is RIGHT(s, n): the last n characters.
func right(args []jsonv.Value) jsonv.Value {
	s, ok1 := argString(args[0])
	n, ok2 := argNumber(args[1])
	if !ok1 || !ok2 {
		return undefined
	}
	r := []rune(s)
	return string(r[len(r)-clampIndex(n, len(r)):])
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
