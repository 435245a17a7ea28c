package query

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// An ErrorHandler is called with the position and message of each lexical
// error the Scanner finds.
type ErrorHandler func(pos Pos, msg string)

// Scanner splits query text into tokens, like go/scanner. It checks every
// token completely (escape sequences, number syntax, UTF-8), so the parser can
// decode a literal's text without failing. After an error it reports
// ILLEGAL or the best-effort token and carries on, so a caller that wants
// every error can keep scanning.
//
//	var s query.Scanner
//	s.Init(src, nil)
//	for {
//		pos, tok, lit := s.Scan()
//		if tok == query.EOF {
//			break
//		}
//		fmt.Println(pos, tok, lit)
//	}
type Scanner struct {
	src  string
	errh ErrorHandler
	off  int // reading offset

	// ErrorCount is the number of errors found so far.
	ErrorCount int
}

// Init prepares s to scan src. errh, if not nil, receives every error.
func (s *Scanner) Init(src string, errh ErrorHandler) {
	s.src = src
	s.errh = errh
	s.off = 0
	s.ErrorCount = 0
}

func (s *Scanner) error(off int, msg string) {
	s.ErrorCount++
	if s.errh != nil {
		s.errh(Pos(off), msg)
	}
}

// peek returns the byte at offset off+n, or 0 past the end.
func (s *Scanner) peek(n int) byte {
	if s.off+n < len(s.src) {
		return s.src[s.off+n]
	}
	return 0
}

// Scan returns the next token, its start offset and its source text. lit is
// the exact source spelling of the token (for STRING it includes the quotes);
// it is empty only at EOF.
func (s *Scanner) Scan() (pos Pos, tok Token, lit string) {
	s.skipWhitespace()
	start := s.off
	pos = Pos(start)
	if s.off >= len(s.src) {
		return pos, EOF, ""
	}
	c := s.src[s.off]
	switch {
	case isLetterByte(c):
		tok, lit = s.scanIdentifier(start)
		return pos, tok, lit
	case isDigit(c) || c == '.' && isDigit(s.peek(1)):
		s.scanNumber(start)
		return pos, NUMBER, s.src[start:s.off]
	case c >= utf8.RuneSelf:
		r, size := utf8.DecodeRuneInString(s.src[s.off:])
		if r == utf8.RuneError && size == 1 {
			s.off++
			s.error(start, "invalid UTF-8 encoding")
			return pos, ILLEGAL, s.src[start:s.off]
		}
		if unicode.IsLetter(r) {
			tok, lit = s.scanIdentifier(start)
			return pos, tok, lit
		}
		s.off += size
		s.error(start, fmt.Sprintf("illegal character %#U", r))
		return pos, ILLEGAL, s.src[start:s.off]
	}
	s.off++
	switch c {
	case '\'', '"':
		s.scanString(start, c)
		return pos, STRING, s.src[start:s.off]
	case '@':
		if s.off < len(s.src) && s.startsIdentifier(s.off) {
			s.scanIdentifier(s.off)
			return pos, PARAM, s.src[start:s.off]
		}
		s.error(start, "expected parameter name after '@'")
		return pos, ILLEGAL, "@"
	case '+':
		tok = ADD
	case '-':
		tok = SUB
	case '*':
		tok = MUL
	case '/':
		tok = QUO
	case '%':
		tok = REM
	case '&':
		tok = BITAND
	case '^':
		tok = BITXOR
	case '~':
		tok = BITNOT
	case '=':
		tok = EQL
	case ':':
		tok = COLON
	case '.':
		tok = PERIOD
	case ',':
		tok = COMMA
	case '(':
		tok = LPAREN
	case ')':
		tok = RPAREN
	case '[':
		tok = LBRACK
	case ']':
		tok = RBRACK
	case '{':
		tok = LBRACE
	case '}':
		tok = RBRACE
	case '|':
		tok = s.switch2(BITOR, '|', CONCAT)
	case '?':
		tok = s.switch2(QUEST, '?', COALESCE)
	case '!':
		if s.peek(0) == '=' {
			s.off++
			tok = NEQ
		} else {
			s.error(start, "illegal character U+0021 '!' (use NOT or !=)")
			tok = ILLEGAL
		}
	case '<':
		switch s.peek(0) {
		case '=':
			s.off++
			tok = LEQ
		case '>':
			s.off++
			tok = NEQ
		case '<':
			s.off++
			tok = SHL
		default:
			tok = LSS
		}
	case '>':
		switch {
		case s.peek(0) == '=':
			s.off++
			tok = GEQ
		case s.peek(0) == '>' && s.peek(1) == '>':
			s.off += 2
			tok = USHR
		case s.peek(0) == '>':
			s.off++
			tok = SHR
		default:
			tok = GTR
		}
	default:
		s.error(start, fmt.Sprintf("illegal character %#U", rune(c)))
		tok = ILLEGAL
	}
	return pos, tok, s.src[start:s.off]
}

// switch2 returns tok2 and consumes next if it follows, else tok1.
func (s *Scanner) switch2(tok1 Token, next byte, tok2 Token) Token {
	if s.peek(0) == next {
		s.off++
		return tok2
	}
	return tok1
}

func (s *Scanner) skipWhitespace() {
	for s.off < len(s.src) {
		switch s.src[s.off] {
		case ' ', '\t', '\n', '\r':
			s.off++
		default:
			return
		}
	}
}

func isLetterByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// startsIdentifier reports whether an identifier starts at offset off.
func (s *Scanner) startsIdentifier(off int) bool {
	c := s.src[off]
	if c < utf8.RuneSelf {
		return isLetterByte(c)
	}
	r, _ := utf8.DecodeRuneInString(s.src[off:])
	return unicode.IsLetter(r)
}

// scanIdentifier reads letters, digits and underscores from start (which
// starts an identifier) and classifies the word.
func (s *Scanner) scanIdentifier(start int) (Token, string) {
	s.off = start
	for s.off < len(s.src) {
		c := s.src[s.off]
		if c < utf8.RuneSelf {
			if !isLetterByte(c) && !isDigit(c) {
				break
			}
			s.off++
			continue
		}
		r, size := utf8.DecodeRuneInString(s.src[s.off:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			break // includes RuneError: reported by the next Scan
		}
		s.off += size
	}
	lit := s.src[start:s.off]
	return Lookup(lit), lit
}

// scanNumber reads a decimal number (12, 1.5, .5, 1., 2e-3) or a hexadecimal
// integer (0x1F).
func (s *Scanner) scanNumber(start int) {
	if s.src[s.off] == '0' && (s.peek(1) == 'x' || s.peek(1) == 'X') {
		s.off += 2
		digits := s.off
		for s.off < len(s.src) && isHex(s.src[s.off]) {
			s.off++
		}
		if s.off == digits {
			s.error(start, "hexadecimal literal has no digits")
		}
		return
	}
	s.digits()
	if s.off < len(s.src) && s.src[s.off] == '.' {
		s.off++
		s.digits()
	}
	if c := s.peek(0); c == 'e' || c == 'E' {
		s.off++
		if c := s.peek(0); c == '+' || c == '-' {
			s.off++
		}
		if s.digits() == 0 {
			s.error(start, "exponent has no digits")
		}
	}
}

func (s *Scanner) digits() int {
	n := 0
	for s.off < len(s.src) && isDigit(s.src[s.off]) {
		s.off++
		n++
	}
	return n
}

// scanString reads a string literal whose opening quote q is at start. Both
// quote styles accept the same escapes: \' \" \\ \/ \b \f \n \r \t \uXXXX.
func (s *Scanner) scanString(start int, q byte) {
	for {
		if s.off >= len(s.src) {
			s.error(start, "string literal not terminated")
			return
		}
		c := s.src[s.off]
		switch {
		case c == q:
			s.off++
			return
		case c == '\\':
			s.scanEscape()
		case c < 0x20:
			s.error(s.off, fmt.Sprintf("control character %#U in string literal", rune(c)))
			s.off++
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s.src[s.off:])
			if r == utf8.RuneError && size == 1 {
				s.error(s.off, "invalid UTF-8 encoding in string literal")
			}
			s.off += size
		default:
			s.off++
		}
	}
}

// scanEscape reads the escape sequence whose backslash is at s.off.
func (s *Scanner) scanEscape() {
	start := s.off
	s.off++ // backslash
	if s.off >= len(s.src) {
		return // "not terminated" is reported by the caller
	}
	switch s.src[s.off] {
	case '\'', '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.off++
	case 'u':
		s.off++
		for i := 0; i < 4; i++ {
			if !isHex(s.peek(0)) {
				s.error(start, "escape sequence \\u needs 4 hexadecimal digits")
				return
			}
			s.off++
		}
	default:
		s.error(start, "unknown escape sequence")
		// Leave the character to the string loop, so a quote still ends it.
	}
}
