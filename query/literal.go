package query

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/lethe-db/lethe/jsonv"
)

// decodeNumber converts a NUMBER token's text to a JSON number. Text that is
// already valid JSON (12, 1.50, 2e3) is kept exactly; other forms (.5, 1.,
// 007, 0x1F) are rewritten in their shortest JSON form. It returns a message
// if the value does not fit a float64.
func decodeNumber(lit string) (jsonv.Number, string) {
	if len(lit) > 2 && lit[0] == '0' && (lit[1] == 'x' || lit[1] == 'X') {
		u, err := strconv.ParseUint(lit[2:], 16, 64)
		if err != nil {
			return "", "number out of range"
		}
		return jsonv.NumberFromFloat(float64(u)), ""
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil { // overflow; an underflow quietly rounds to zero
		return "", "number out of range"
	}
	if isJSONNumber(lit) {
		return jsonv.Number(lit), ""
	}
	return jsonv.NumberFromFloat(f), ""
}

// isJSONNumber reports whether s (unsigned) is a number in RFC 8259 syntax.
func isJSONNumber(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && isDigit(s[i]) {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// unquote decodes a STRING token's text, quotes included. It reports false
// for text the scanner would have rejected. A \u escape of a lone UTF-16
// surrogate decodes to U+FFFD, as in jsonv.
func unquote(lit string) (string, bool) {
	if len(lit) < 2 || lit[0] != lit[len(lit)-1] || (lit[0] != '\'' && lit[0] != '"') {
		return "", false
	}
	body := lit[1 : len(lit)-1]
	i := 0
	for i < len(body) && body[i] != '\\' {
		i++
	}
	if i == len(body) {
		return body, true // no escapes
	}
	buf := []byte(body[:i])
	for i < len(body) {
		c := body[i]
		if c != '\\' {
			buf = append(buf, c)
			i++
			continue
		}
		if i+1 >= len(body) {
			return "", false
		}
		e := body[i+1]
		i += 2
		switch e {
		case '\'', '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(body, i)
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if i+1 < len(body) && body[i] == '\\' && body[i+1] == 'u' {
					if lo, ok := hex4(body, i+2); ok {
						if r2 = utf16.DecodeRune(r, lo); r2 != utf8.RuneError {
							i += 6
						}
					}
				}
				r = r2
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", false
		}
	}
	return string(buf), true
}

// hex4 decodes the four hex digits at s[i:].
func hex4(s string, i int) (rune, bool) {
	if len(s)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
