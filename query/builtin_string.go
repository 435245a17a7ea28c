package query

import (
	"math"
	"slices"
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
		&function{name: "CONCAT", minArgs: 2, maxArgs: -1, call: concat},
		&function{name: "SUBSTRING", minArgs: 3, maxArgs: 3, call: substring},
		&function{name: "INDEX_OF", minArgs: 2, maxArgs: 3, call: indexOf},
		&function{name: "REPLACE", minArgs: 3, maxArgs: 3, call: replace},
		&function{name: "LEFT", minArgs: 2, maxArgs: 2, call: left},
		&function{name: "RIGHT", minArgs: 2, maxArgs: 2, call: right},
		&function{name: "LASTINDEXOF", minArgs: 2, maxArgs: 3, call: lastIndexOf},
		&function{name: "REPLICATE", minArgs: 2, maxArgs: 2, call: replicate},
		&function{name: "StringJoin", minArgs: 2, maxArgs: 2, call: stringJoin},
		&function{name: "StringSplit", minArgs: 2, maxArgs: 2, call: stringSplit},
		containsList("CONTAINS_ANY_CS", false, or3),
		containsList("CONTAINS_ANY_CI", true, or3),
		containsList("CONTAINS_ALL_CS", false, and3),
		containsList("CONTAINS_ALL_CI", true, and3),
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

// lastIndexOf is LASTINDEXOF(s, sub [, pos]): the character position of the
// last sub that lies wholly within the characters 0 to pos (default: the
// whole string), or -1. As in .NET, LASTINDEXOF("abcdeabc", "abc", 6) is 0:
// the occurrence at 5 would end past position 6.
func lastIndexOf(args []jsonv.Value) jsonv.Value {
	s, ok1 := argString(args[0])
	sub, ok2 := argString(args[1])
	if !ok1 || !ok2 {
		return undefined
	}
	r, want := []rune(s), []rune(sub)
	end := len(r) // the match must end at or before end
	if len(args) > 2 {
		pos, ok := argNumber(args[2])
		if !ok {
			return undefined
		}
		if pos = math.Trunc(pos); pos < 0 {
			return number(-1)
		}
		if pos+1 < float64(end) {
			end = int(pos) + 1
		}
	}
	for i := end - len(want); i >= 0; i-- {
		if slices.Equal(r[i:i+len(want)], want) {
			return number(float64(i))
		}
	}
	return number(-1)
}

// maxReplicate is the most characters REPLICATE may produce, as in Cosmos DB.
const maxReplicate = 10000

// replicate is REPLICATE(s, n): s repeated n times, n truncated to a whole
// number. A negative n, or a result longer than 10,000 characters, gives
// undefined.
func replicate(args []jsonv.Value) jsonv.Value {
	s, ok1 := argString(args[0])
	n, ok2 := argNumber(args[1])
	if !ok1 || !ok2 || n < 0 {
		return undefined
	}
	n = math.Trunc(n)
	if l := utf8.RuneCountInString(s); l > 0 && n*float64(l) > maxReplicate {
		return undefined
	}
	if s == "" {
		return ""
	}
	return strings.Repeat(s, int(n))
}

// stringJoin is StringJoin(array, sep): the array's strings joined by sep.
// An element that is not a string gives undefined.
func stringJoin(args []jsonv.Value) jsonv.Value {
	a, ok1 := args[0].([]jsonv.Value)
	sep, ok2 := argString(args[1])
	if !ok1 || !ok2 {
		return undefined
	}
	var b strings.Builder
	for i, el := range a {
		s, ok := argString(el)
		if !ok {
			return undefined
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(s)
	}
	return b.String()
}

// stringSplit is StringSplit(s, sep): the parts of s between occurrences of
// sep. An empty sep does not split: StringSplit("ab", "") is ["ab"].
func stringSplit(args []jsonv.Value) jsonv.Value {
	s, ok1 := argString(args[0])
	sep, ok2 := argString(args[1])
	if !ok1 || !ok2 {
		return undefined
	}
	if sep == "" {
		return []jsonv.Value{s}
	}
	parts := strings.Split(s, sep)
	a := make([]jsonv.Value, len(parts))
	for i, p := range parts {
		a[i] = p
	}
	return a
}

// containsList makes CONTAINS_ANY_* and CONTAINS_ALL_*: f(s, t1, ..., tn)
// is CONTAINS(s, t1, ignoreCase) combined over the ti with three-valued OR
// (any) or AND (all), so a non-string ti counts as undefined:
// CONTAINS_ANY_CS("ab", "a", 1) is true, CONTAINS_ANY_CS("ab", "x", 1) is
// undefined.
func containsList(name string, ignoreCase bool, combine func(a, b jsonv.Value) jsonv.Value) *function {
	return &function{name: name, minArgs: 2, maxArgs: -1, call: func(args []jsonv.Value) jsonv.Value {
		s, ok := argString(args[0])
		if !ok {
			return undefined
		}
		if ignoreCase {
			s = strings.ToLower(s)
		}
		var result jsonv.Value
		for i, a := range args[1:] {
			var found jsonv.Value = undefined
			if t, ok := argString(a); ok {
				if ignoreCase {
					t = strings.ToLower(t)
				}
				found = strings.Contains(s, t)
			}
			if i == 0 {
				result = found
			} else {
				result = combine(result, found)
			}
		}
		return result
	}}
}
