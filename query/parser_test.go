package query

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestParse runs testdata/parse/*.txt. Commands:
//
//	parse  the input is a patch condition; prints Condition.String or the error
//	query  the input is a SELECT statement; prints Query.String or the error
//	expr   the input is an expression with alias c in scope; prints ExprString
//	nodes  like expr, but lists every node with the source text it spans
func TestParse(t *testing.T) {
	for _, path := range testFiles(t, "parse") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			runTestFile(t, path, runParseCase)
		})
	}
}

func runParseCase(t *testing.T, tc *testCase) string {
	switch tc.cmd {
	case "parse":
		cond, err := ParseCondition(tc.input)
		if err != nil {
			return errorText(err)
		}
		return cond.String()
	case "query":
		q, err := Parse(tc.input)
		if err != nil {
			return errorText(err)
		}
		return q.String()
	case "expr":
		x, err := parseExprSource(tc.input, "c")
		if err != nil {
			return errorText(err)
		}
		return ExprString(x)
	case "nodes":
		x, err := parseExprSource(tc.input, "c")
		if err != nil {
			return errorText(err)
		}
		return nodeList(tc.input, x)
	}
	t.Fatalf("%s: unknown command %q", tc, tc.cmd)
	return ""
}

// errorText prints a parse error, which must be an *Error.
func errorText(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return fmt.Sprintf("not an *Error: %T %v", err, err)
	}
	return e.Error()
}

// nodeList prints each node in depth-first order with its position and the
// source text from Pos to End.
func nodeList(src string, x Expr) string {
	var b strings.Builder
	var depth int
	var visit func(x Expr)
	visit = func(x Expr) {
		name := strings.TrimPrefix(fmt.Sprintf("%T", x), "*query.")
		fmt.Fprintf(&b, "%s%s %s %s\n", strings.Repeat("  ", depth), name,
			PositionFor(src, x.Pos()), src[x.Pos():x.End()])
		depth++
		eachChild(x, func(c Expr) bool { visit(c); return true })
		depth--
	}
	visit(x)
	return b.String()
}

func TestNestingLimit(t *testing.T) {
	tests := []struct {
		name string
		src  string
		ok   bool
	}{
		{"parens at limit", strings.Repeat("(", MaxNesting-1) + "c.a" + strings.Repeat(")", MaxNesting-1), true},
		{"parens past limit", strings.Repeat("(", MaxNesting) + "c.a" + strings.Repeat(")", MaxNesting), false},
		{"brackets", strings.Repeat("[", 200) + strings.Repeat("]", 200), false},
		{"braces", strings.Repeat("{a:", 200) + "1" + strings.Repeat("}", 200), false},
		{"unary minus", strings.Repeat("-", 200) + "1", false},
		{"NOT", strings.Repeat("NOT ", 200) + "true", false},
		{"calls", strings.Repeat("ABS(", 200) + "1" + strings.Repeat(")", 200), false},
		{"ternary else chain", strings.Repeat("true ? 1 : ", 200) + "2", false},
		{"long OR chain", strings.Repeat("c.a OR ", 1000) + "c.b", true},
		{"too long OR chain", strings.Repeat("c.a OR ", MaxExprDepth) + "c.b", false},
		{"long path", "c" + strings.Repeat(".a", MaxExprDepth+10), false},
		{"huge chain", strings.Repeat("1+", 200000) + "1", false},
		{"huge IN list", "c.a IN (" + strings.Repeat("1,", 100000) + "1)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cond, err := ParseCondition("FROM c WHERE " + tt.src)
			if tt.ok {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if _, err := cond.Match(testDoc(t)); err != nil {
					t.Fatalf("Match: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v; want an *Error", err)
			}
			if !strings.Contains(e.Msg, "exceeded max") {
				t.Errorf("err = %v; want a nesting error", err)
			}
		})
	}
}

func TestParseErrorPositions(t *testing.T) {
	tests := []struct {
		src  string
		want string
	}{
		{"FROM c WHERE c.a = \"tab\tx\"", "1:24: control character U+0009 in string literal"},
		{"FROM c WHERE c.a = 'x\ny'", "1:22: control character U+000A in string literal"},
		{"FROM c WHERE c.a = '\xff'", "1:21: invalid UTF-8 encoding in string literal"},
		{"FROM c WHERE c.\xff", "1:16: invalid UTF-8 encoding"},
		{"FROM c WHERE c.a = \u00a7", "1:20: illegal character U+00A7 '§'"},
		{"FROM c\r\nWHERE\r\n  c.a = )", "3:9: expected expression, found ')'"},
		{"", "1:1: expected 'FROM', found 'EOF'"},
		{"FROM", "1:5: expected identifier, found 'EOF'"},
		{"FROM c WHERE c.a = 'x' AND", "1:27: expected expression, found 'EOF'"},
		{"FROM c WHERE 'abc", "1:14: string literal not terminated"},
		{"FROM c WHERE 'abc\\", "1:14: string literal not terminated"},
	}
	for _, tt := range tests {
		_, err := ParseCondition(tt.src)
		if err == nil {
			t.Errorf("ParseCondition(%q) succeeded; want %s", tt.src, tt.want)
			continue
		}
		if got := errorText(err); got != tt.want {
			t.Errorf("ParseCondition(%q)\n got %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	e := &Error{Pos: Position{Offset: 29, Line: 1, Column: 30}, Msg: "expected expression, found ')'"}
	if got, want := e.Error(), "1:30: expected expression, found ')'"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	if got := (&Error{Msg: "no position"}).Error(); got != "no position" {
		t.Errorf("Error() without position = %q", got)
	}
}

func TestPositionFor(t *testing.T) {
	src := "ab\ncd\n\nef"
	tests := []struct {
		off  Pos
		want string
	}{
		{0, "1:1"}, {1, "1:2"}, {2, "1:3"}, {3, "2:1"}, {6, "3:1"}, {7, "4:1"}, {9, "4:3"}, {100, "4:3"}, {NoPos, "-"},
	}
	for _, tt := range tests {
		if got := PositionFor(src, tt.off).String(); got != tt.want {
			t.Errorf("PositionFor(%d) = %s; want %s", tt.off, got, tt.want)
		}
	}
}
