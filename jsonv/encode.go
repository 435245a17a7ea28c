package jsonv

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Marshal returns the compact JSON encoding of v.
func Marshal(v Value) []byte { return Append(nil, v) }

// Append appends the compact JSON encoding of v to dst. HTML characters are not
// escaped (unlike encoding/json), matching what Cosmos DB returns.
func Append(dst []byte, v Value) []byte {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, t)
	case Number:
		return append(dst, t...)
	case string:
		return AppendString(dst, t)
	case []Value:
		dst = append(dst, '[')
		for i, x := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = Append(dst, x)
		}
		return append(dst, ']')
	case *Object:
		dst = append(dst, '{')
		for i, k := range t.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			dst = Append(dst, t.vals[i])
		}
		return append(dst, '}')
	}
	panic(fmt.Sprintf("jsonv: cannot encode %T", v)) // programmer error: not a Value
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string literal.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			if len(s)-i >= 16 { // a long run: a word at a time
				i += plainPrefix(s[i:])
			}
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// FromGo converts a value decoded by encoding/json (map[string]any, []any,
// float64, json.Number, string, bool, nil) into a Value. Map members are sorted
// by name, since Go maps have no order.
func FromGo(x any) (Value, error) {
	switch t := x.(type) {
	case nil, bool, string:
		return t, nil
	case Number, *Object:
		return t, nil
	case json.Number:
		return Number(t), nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("jsonv: %v is not a JSON number", t)
		}
		return NumberFromFloat(t), nil
	case int:
		return Number(strconv.Itoa(t)), nil
	case int64:
		return Number(strconv.FormatInt(t, 10)), nil
	case []any:
		a := make([]Value, len(t))
		for i, e := range t {
			v, err := FromGo(e)
			if err != nil {
				return nil, err
			}
			a[i] = v
		}
		return a, nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		o := NewObject(len(keys))
		for _, k := range keys {
			v, err := FromGo(t[k])
			if err != nil {
				return nil, err
			}
			o.Set(k, v)
		}
		return o, nil
	}
	return nil, fmt.Errorf("jsonv: unsupported type %T", x)
}
