package jsonv

import "bytes"

// StoredMember returns the value at path (member names from the top) in b, a
// JSON object Lethe stored itself (see ParseStoredObject), and whether it is
// present, parsing only that value: the members before and after it on the
// way are skipped, not decoded. A query that needs one property of each
// document it orders (ORDER BY c._ts over SELECT *) reads it so for a
// fraction of a whole parse. A name present twice gives its last value, as
// ParseStoredObject keeps. An error means b is not the JSON it should be.
func StoredMember(b []byte, path []string) (Value, bool, error) {
	p := parser{b: b, stored: true}
	p.skip()
	for depth, name := range path {
		if p.i >= len(p.b) || p.b[p.i] != '{' {
			if depth == 0 {
				return nil, false, p.fail("expected a JSON object")
			}
			return nil, false, nil // a path through a value that is not an object
		}
		at, err := p.lastMember(name)
		if err != nil || at < 0 {
			return nil, false, err
		}
		p.i = at
	}
	v, err := p.value(len(path))
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// lastMember reads the object at p.i and returns the offset of the value of
// its last member called name, or -1 when it has none.
func (p *parser) lastMember(name string) (int, error) {
	p.i++ // {
	found := -1
	p.skip()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		return found, nil
	}
	for {
		p.skip()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return -1, p.fail("expected a member name")
		}
		var match bool
		if end, plain := p.plainString(); plain {
			match = string(p.b[p.i+1:end]) == name
			p.i = end + 1
		} else {
			k, err := p.str()
			if err != nil {
				return -1, err
			}
			match = k == name
		}
		p.skip()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return -1, p.fail("expected ':' after a member name")
		}
		p.i++
		p.skip()
		if match {
			found = p.i
		}
		if err := p.skipValue(); err != nil {
			return -1, err
		}
		p.skip()
		if p.i >= len(p.b) {
			return -1, p.fail("unexpected end of input in an object")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return found, nil
		default:
			return -1, p.fail("expected ',' or '}' in an object")
		}
	}
}

// plainString returns the offset of the closing quote of the string at p.i
// when it has no escapes; plain is false otherwise, or when it does not end.
func (p *parser) plainString() (end int, plain bool) {
	j := bytes.IndexByte(p.b[p.i+1:], '"')
	if j < 0 {
		return 0, false
	}
	end = p.i + 1 + j
	return end, bytes.IndexByte(p.b[p.i+1:end], '\\') < 0
}

// skipValue moves past the value at p.i without decoding it: strings to
// their closing quote, objects and arrays to their matching close, numbers
// and literals to the next delimiter. It checks no more than it must to find
// the end; the value's text is the store's own.
func (p *parser) skipValue() error {
	if p.i >= len(p.b) {
		return p.fail("unexpected end of input")
	}
	switch p.b[p.i] {
	case '"':
		return p.skipString()
	case '{', '[':
		depth := 0
		for p.i < len(p.b) {
			switch p.b[p.i] {
			case '"':
				if err := p.skipString(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					p.i++
					return nil
				}
			}
			p.i++
		}
		return p.fail("unexpected end of input in an object or array")
	default:
		start := p.i
		for p.i < len(p.b) {
			switch p.b[p.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if p.i == start {
					return p.fail("unexpected character %q", p.b[p.i])
				}
				return nil
			}
			p.i++
		}
		return nil
	}
}

// skipString moves past the string at p.i, whose opening quote it is at.
func (p *parser) skipString() error {
	i := p.i + 1
	for {
		j := bytes.IndexByte(p.b[i:], '"')
		if j < 0 {
			return p.fail("unterminated string")
		}
		i += j
		backslashes := 0
		for k := i - 1; k > p.i && p.b[k] == '\\'; k-- {
			backslashes++
		}
		i++
		if backslashes%2 == 0 {
			p.i = i
			return nil
		}
	}
}
