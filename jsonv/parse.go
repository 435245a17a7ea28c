package jsonv

import (
	"fmt"
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

// Error implements error.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.Offset, e.Msg)
}

// Parse decodes exactly one JSON value from b (surrounding white space allowed).
// Strings must be valid UTF-8; duplicate object members keep the last value.
func Parse(b []byte) (Value, error) {
	p := parser{b: b}
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

// ParseObject decodes b, which must hold a JSON object.
func ParseObject(b []byte) (*Object, error) {
	v, err := Parse(b)
	if err != nil {
		return nil, err
	}
	o, ok := v.(*Object)
	if !ok {
		return nil, &SyntaxError{Offset: 0, Msg: "expected a JSON object, found " + TypeName(v)}
	}
	return o, nil
}

type parser struct {
	b []byte
	i int
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
		return p.str()
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
		k, err := p.str()
		if err != nil {
			return nil, err
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
		o.Set(k.(string), v)
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
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, p.fail("invalid number")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.fail("invalid number: no digits after '.'")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.fail("invalid number: no digits in exponent")
		}
	}
	return Number(p.b[start:p.i]), nil
}

func (p *parser) str() (Value, error) {
	p.i++ // opening quote
	start := p.i
	// Fast path: no escapes.
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			s := p.b[start:p.i]
			if !utf8.Valid(s) {
				return nil, p.fail("invalid UTF-8 in a string")
			}
			p.i++
			return string(s), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.i++
	}
	buf := append([]byte(nil), p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			if !utf8.Valid(buf) {
				return nil, p.fail("invalid UTF-8 in a string")
			}
			return string(buf), nil
		case c < 0x20:
			return nil, p.fail("control character in a string")
		case c == '\\':
			p.i++
			if p.i >= len(p.b) {
				return nil, p.fail("unexpected end of input in a string")
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
					return nil, p.fail("invalid \\u escape")
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
				return nil, p.fail("invalid escape '\\%c'", e)
			}
		default:
			buf = append(buf, c)
			p.i++
		}
	}
	return nil, p.fail("unterminated string")
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
