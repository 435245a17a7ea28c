package jsonv

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects Parse accepts.
const MaxDepth = 200

// SyntaxError describes malformed JSON and where it is.
type SyntaxError struct {
	Offset int    // byte offset of the problem
	Msg    string // what is wrong
}

// Error implements error: "<what is wrong> at offset <n>".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s at offset %d", e.Msg, e.Offset)
}

// DuplicateNameError is an object that names the same member twice. Parse
// refuses it because parsers disagree on which copy counts (the first, the
// last, or both), so the stored document, its index entries and a client's
// decoding of it could disagree.
type DuplicateNameError struct {
	Offset int    // byte offset of the second occurrence's opening quote
	Name   string // the name, unescaped
}

// Error implements error.
func (e *DuplicateNameError) Error() string {
	return fmt.Sprintf("duplicate property name '%s' at offset %d", clip(e.Name), e.Offset)
}

// NumberRangeError is a number too large in magnitude for an IEEE-754 double:
// it would round to infinity, which no JSON number can stand for. Cosmos DB
// keeps numbers as doubles, and clients (the Go SDK's encoding/json) cannot
// decode such a number at all.
type NumberRangeError struct {
	Offset int    // byte offset of the number's first character
	Text   string // the number as written
}

// Error implements error.
func (e *NumberRangeError) Error() string {
	return fmt.Sprintf("the number '%s' at offset %d does not fit a 64-bit floating-point value", clip(e.Text), e.Offset)
}

// clip shortens s for an error message.
func clip(s string) string {
	const limit = 64 // bytes
	if len(s) <= limit {
		return s
	}
	i := limit
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// Parse decodes exactly one JSON value from b (surrounding white space
// allowed). It accepts only RFC 8259 JSON that means one thing, and returns
// the first problem it finds:
//   - malformed text, strings that are not valid UTF-8, or nesting deeper
//     than MaxDepth: *SyntaxError;
//   - an object naming a member twice, at any depth, names compared after
//     unescaping ("a" and "\u0061" are the same name): *DuplicateNameError;
//   - a number whose magnitude rounds to infinity as a double (1e400, a
//     400-digit integer): *NumberRangeError.
//
// Numbers that merely lose precision as doubles (0.1, 2^63) are accepted and
// kept exactly as written. So are numbers too small for a double (1e-400):
// they compute as 0, which is what Cosmos DB makes of them.
func Parse(b []byte) (Value, error) {
	p := parser{b: b}
	return p.parse()
}

// ParseObject decodes b, which must hold a JSON object, as Parse does.
func ParseObject(b []byte) (*Object, error) {
	v, err := Parse(b)
	if err != nil {
		return nil, err
	}
	return asObject(v)
}

// ParseStoredObject decodes a JSON object that Lethe stored itself. It differs
// from ParseObject only where stored JSON may predate Parse's checks: a number
// too large for a double is read (its Float64 is ±Inf) rather than refused, so
// that documents stored by earlier builds stay readable, queryable and
// indexable; and duplicate names, which Lethe never stores, keep the last value.
func ParseStoredObject(b []byte) (*Object, error) {
	p := parser{b: b, stored: true}
	v, err := p.parse()
	if err != nil {
		return nil, err
	}
	return asObject(v)
}

func asObject(v Value) (*Object, error) {
	o, ok := v.(*Object)
	if !ok {
		return nil, &SyntaxError{Offset: 0, Msg: "expected a JSON object, found " + TypeName(v)}
	}
	return o, nil
}

// wideObject is the member count from which object() finds duplicates with a
// map instead of a linear search of the names so far: below it a search is
// cheaper than hashing, above it the search would make parsing quadratic.
const wideObject = 32

type parser struct {
	b      []byte
	i      int
	stored bool // ParseStoredObject: overflowing numbers read, duplicates keep the last
}

func (p *parser) parse() (Value, error) {
	p.skip()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.i != len(p.b) {
		return nil, p.fail("unexpected data after the top-level value")
	}
	return v, nil
}

func (p *parser) fail(format string, args ...any) error {
	return &SyntaxError{Offset: p.i, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) skip() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (Value, error) {
	if p.i >= len(p.b) {
		return nil, p.fail("unexpected end of input")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		if depth >= MaxDepth {
			return nil, p.fail("nesting deeper than %d", MaxDepth)
		}
		return p.object(depth + 1)
	case c == '[':
		if depth >= MaxDepth {
			return nil, p.fail("nesting deeper than %d", MaxDepth)
		}
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case p.literal("true"):
		return true, nil
	case p.literal("false"):
		return false, nil
	case p.literal("null"):
		return nil, nil
	default:
		return nil, p.fail("unexpected character %q", c)
	}
}

func (p *parser) literal(word string) bool {
	if len(p.b)-p.i >= len(word) && string(p.b[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

func (p *parser) object(depth int) (Value, error) {
	p.i++ // {
	o := NewObject(8)
	var seen map[string]int // member name -> index, once the object is wide
	p.skip()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return o, nil
	}
	for {
		p.skip()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.fail("expected a member name")
		}
		at := p.i
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		dup := -1
		if seen != nil {
			if j, ok := seen[k]; ok {
				dup = j
			}
		} else {
			dup = o.index(k)
		}
		if dup >= 0 && !p.stored {
			return nil, &DuplicateNameError{Offset: at, Name: k}
		}
		p.skip()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.fail("expected ':' after a member name")
		}
		p.i++
		p.skip()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		switch {
		case dup >= 0:
			o.vals[dup] = v
		case seen != nil:
			seen[k] = len(o.keys)
			o.keys = append(o.keys, k)
			o.vals = append(o.vals, v)
		default:
			o.keys = append(o.keys, k)
			o.vals = append(o.vals, v)
			if len(o.keys) == wideObject {
				seen = make(map[string]int, 2*wideObject)
				for i, name := range o.keys {
					seen[name] = i
				}
			}
		}
		p.skip()
		if p.i >= len(p.b) {
			return nil, p.fail("unexpected end of input in an object")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return o, nil
		default:
			return nil, p.fail("expected ',' or '}' in an object")
		}
	}
}

func (p *parser) array(depth int) (Value, error) {
	p.i++ // [
	a := []Value{}
	p.skip()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return a, nil
	}
	for {
		p.skip()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.skip()
		if p.i >= len(p.b) {
			return nil, p.fail("unexpected end of input in an array")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return a, nil
		default:
			return nil, p.fail("expected ',' or ']' in an array")
		}
	}
}

func (p *parser) number() (Value, error) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	intDigits := 1
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if intDigits = digits(); intDigits == 0 {
		return nil, p.fail("invalid number")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.fail("invalid number: no digits after '.'")
		}
	}
	exp := false
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		exp = true
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.fail("invalid number: no digits in exponent")
		}
	}
	n := Number(p.b[start:p.i])
	// Without an exponent, at most 308 integer digits stay below 1e308, under
	// the largest double (about 1.8e308): only longer integer parts and
	// exponents need the exact test.
	if (exp || intDigits > 308) && !p.stored {
		if _, err := strconv.ParseFloat(string(n), 64); err != nil {
			// The text is valid JSON, so the only error is ErrRange, and
			// ParseFloat reports it for overflow only (underflow gives 0).
			return nil, &NumberRangeError{Offset: start, Text: string(n)}
		}
	}
	return n, nil
}

func (p *parser) str() (string, error) {
	p.i++ // opening quote
	start := p.i
	// Fast path: no escapes.
	p.i += stringStop(p.b[p.i:])
	if p.i < len(p.b) && p.b[p.i] == '"' {
		s := p.b[start:p.i]
		if !utf8.Valid(s) {
			return "", p.fail("invalid UTF-8 in a string")
		}
		p.i++
		return string(s), nil
	}
	buf := append([]byte(nil), p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			if !utf8.Valid(buf) {
				return "", p.fail("invalid UTF-8 in a string")
			}
			return string(buf), nil
		case c < 0x20:
			return "", p.fail("control character in a string")
		case c == '\\':
			p.i++
			if p.i >= len(p.b) {
				return "", p.fail("unexpected end of input in a string")
			}
			e := p.b[p.i]
			p.i++
			switch e {
			case '"', '\\', '/':
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
				r, ok := p.hex4()
				if !ok {
					return "", p.fail("invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
						save := p.i
						p.i += 2
						lo, ok := p.hex4()
						if ok {
							r2 = utf16.DecodeRune(r, lo)
						}
						if r2 == utf8.RuneError {
							p.i = save
						}
					}
					r = r2
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", p.fail("invalid escape '\\%c'", e)
			}
		default:
			n := stringStop(p.b[p.i:])
			buf = append(buf, p.b[p.i:p.i+n]...)
			p.i += n
		}
	}
	return "", p.fail("unterminated string")
}

func (p *parser) hex4() (rune, bool) {
	if len(p.b)-p.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.b[p.i : p.i+4] {
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
	p.i += 4
	return r, true
}
