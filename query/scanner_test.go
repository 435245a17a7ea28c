package query

import (
	"fmt"
	"strings"
	"testing"
)

func TestScanTokens(t *testing.T) {
	src := "c.a_1 @p 12 1.5e-3 .5 0x1F 'it\\'s' \"q\" + - * / % || | & ^ ~ << >> >>> = != <> < <= > >= ? ?? : , ( ) [ ] { } " +
		"and Or NOT in BETWEEN like ESCAPE true FALSE null Undefined select FROM where données"
	want := []struct {
		tok Token
		lit string
	}{
		{IDENT, "c"}, {PERIOD, "."}, {IDENT, "a_1"}, {PARAM, "@p"}, {NUMBER, "12"}, {NUMBER, "1.5e-3"},
		{NUMBER, ".5"}, {NUMBER, "0x1F"}, {STRING, `'it\'s'`}, {STRING, `"q"`},
		{ADD, "+"}, {SUB, "-"}, {MUL, "*"}, {QUO, "/"}, {REM, "%"}, {CONCAT, "||"}, {BITOR, "|"},
		{BITAND, "&"}, {BITXOR, "^"}, {BITNOT, "~"}, {SHL, "<<"}, {SHR, ">>"}, {USHR, ">>>"},
		{EQL, "="}, {NEQ, "!="}, {NEQ, "<>"}, {LSS, "<"}, {LEQ, "<="}, {GTR, ">"}, {GEQ, ">="},
		{QUEST, "?"}, {COALESCE, "??"}, {COLON, ":"}, {COMMA, ","}, {LPAREN, "("}, {RPAREN, ")"},
		{LBRACK, "["}, {RBRACK, "]"}, {LBRACE, "{"}, {RBRACE, "}"},
		{AND, "and"}, {OR, "Or"}, {NOT, "NOT"}, {IN, "in"}, {BETWEEN, "BETWEEN"}, {LIKE, "like"},
		{ESCAPE, "ESCAPE"}, {TRUE, "true"}, {FALSE, "FALSE"}, {NULL, "null"}, {UNDEFINED, "Undefined"},
		{SELECT, "select"}, {FROM, "FROM"}, {WHERE, "where"}, {IDENT, "données"},
		{EOF, ""},
	}
	var s Scanner
	s.Init(src, func(pos Pos, msg string) { t.Errorf("%s: %s", PositionFor(src, pos), msg) })
	for i, w := range want {
		pos, tok, lit := s.Scan()
		if tok != w.tok || lit != w.lit {
			t.Fatalf("token %d: got %s %q; want %s %q", i, tok, lit, w.tok, w.lit)
		}
		if tok != EOF && src[pos:int(pos)+len(lit)] != lit {
			t.Errorf("token %d: position %d does not hold %q", i, pos, lit)
		}
	}
}

func TestScannerReportsEveryError(t *testing.T) {
	var msgs []string
	var s Scanner
	src := "# 'a\\q' 1e ! @"
	s.Init(src, func(pos Pos, msg string) {
		msgs = append(msgs, fmt.Sprintf("%s: %s", PositionFor(src, pos), msg))
	})
	for {
		if _, tok, _ := s.Scan(); tok == EOF {
			break
		}
	}
	want := []string{
		"1:1: illegal character U+0023 '#'",
		"1:5: unknown escape sequence",
		"1:9: exponent has no digits",
		"1:12: illegal character U+0021 '!' (use NOT or !=)",
		"1:14: expected parameter name after '@'",
	}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") || s.ErrorCount != len(want) {
		t.Errorf("errors (%d):\n%s\nwant:\n%s", s.ErrorCount, strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		ident string
		want  Token
	}{
		{"and", AND}, {"AND", AND}, {"aNd", AND}, {"between", BETWEEN}, {"UnDeFiNeD", UNDEFINED},
		{"c", IDENT}, {"andx", IDENT}, {"root", IDENT}, {"LEFT", IDENT}, {"RIGHT", IDENT},
		// Only ASCII letters fold: the Turkish dotless ı must not make "ın" the keyword IN.
		{"ın", IDENT}, {"İN", IDENT},
	}
	for _, tt := range tests {
		if got := Lookup(tt.ident); got != tt.want {
			t.Errorf("Lookup(%q) = %s; want %s", tt.ident, got, tt.want)
		}
	}
}

func TestTokenString(t *testing.T) {
	for tok := ILLEGAL; tok < keywordEnd; tok++ {
		if tok == literalBeg || tok == literalEnd || tok == operatorBeg || tok == operatorEnd || tok == keywordBeg {
			continue
		}
		if s := tok.String(); s == "" || strings.HasPrefix(s, "token(") {
			t.Errorf("token %d has no name", int(tok))
		}
	}
	if got := Token(-1).String(); got != "token(-1)" {
		t.Errorf("Token(-1).String() = %q", got)
	}
}
