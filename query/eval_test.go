package query

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lethe-db/lethe/jsonv"
)

// TestEval runs testdata/eval/*.txt, scripts in the style of promqltest.
// Commands:
//
//	doc     the input is a JSON object; later cases bind it to alias c
//	params  the input is a JSON object of parameter values (names without @)
//	eval    evaluates the input expression; prints the result as JSON,
//	        "undefined", or "error: ..."
//	match   parses the input as a patch condition and prints Match's result
func TestEval(t *testing.T) {
	for _, path := range testFiles(t, "eval") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			doc := jsonv.NewObject(0)
			params := map[string]jsonv.Value{}
			runTestFile(t, path, func(t *testing.T, tc *testCase) string {
				switch tc.cmd {
				case "doc":
					doc = mustParseObject(t, tc.input)
					return ""
				case "params":
					o := mustParseObject(t, tc.input)
					params = map[string]jsonv.Value{}
					for i := 0; i < o.Len(); i++ {
						params[o.Key(i)] = o.Val(i)
					}
					return ""
				case "eval":
					return evalText(tc.input, doc, params)
				case "match":
					cond, err := ParseCondition(tc.input)
					if err != nil {
						return "parse error: " + err.Error()
					}
					ok, err := cond.Match(doc)
					if err != nil {
						return "error: " + err.Error()
					}
					return strconv.FormatBool(ok)
				}
				t.Fatalf("%s: unknown command %q", tc, tc.cmd)
				return ""
			})
		})
	}
}

func evalText(src string, doc *jsonv.Object, params map[string]jsonv.Value) string {
	x, err := parseExprSource(src, "c")
	if err != nil {
		return "parse error: " + err.Error()
	}
	v, defined, err := Eval(x, &Env{Vars: map[string]jsonv.Value{"c": doc}, Params: params, Source: src})
	switch {
	case err != nil:
		return "error: " + err.Error()
	case !defined:
		return "undefined"
	}
	return string(jsonv.Marshal(v))
}

func mustParseObject(tb testing.TB, s string) *jsonv.Object {
	tb.Helper()
	o, err := jsonv.ParseObject([]byte(s))
	if err != nil {
		tb.Fatalf("parse test document: %v", err)
	}
	return o
}

// testDoc is a small document with one member of each type.
func testDoc(tb testing.TB) *jsonv.Object {
	return mustParseObject(tb, `{"id":"1","n":5,"s":"hello","t":true,"nul":null,"arr":[1,"two"],"obj":{"a":1}}`)
}

// TestConditionMatch is the engine's view: parse once, match several documents.
func TestConditionMatch(t *testing.T) {
	docs := map[string]string{
		"active":   `{"id":"1","status":"active","count":7,"tags":["x","y"]}`,
		"low":      `{"id":"2","status":"active","count":3,"tags":[]}`,
		"inactive": `{"id":"3","status":"inactive","count":9}`,
		"nocount":  `{"id":"4","status":"active"}`,
		"strcount": `{"id":"5","status":"active","count":"9"}`,
	}
	tests := []struct {
		cond string
		want []string // the documents that match
	}{
		{"FROM c WHERE c.status = 'active' AND c.count > 5", []string{"active"}},
		{"from c where c.status = 'active'", []string{"active", "low", "nocount", "strcount"}},
		{"FROM c WHERE c.count > 5", []string{"active", "inactive"}},
		{"FROM c WHERE NOT (c.count > 5)", []string{"low"}},
		{"FROM c WHERE c.count <= 5 OR NOT IS_DEFINED(c.count)", []string{"low", "nocount"}},
		{"FROM c WHERE IS_STRING(c.count)", []string{"strcount"}},
		{"FROM c WHERE (c.count ?? 0) < 5", []string{"low", "nocount"}},
		{"FROM c WHERE ARRAY_CONTAINS(c.tags, 'x')", []string{"active"}},
		{"FROM c WHERE ARRAY_LENGTH(c.tags) = 0", []string{"low"}},
		{"FROM root r WHERE r.id IN ('1', '3')", []string{"active", "inactive"}},
		{"FROM c WHERE c.status LIKE 'in%'", []string{"inactive"}},
		{"FROM c WHERE c.count BETWEEN 3 AND 7", []string{"active", "low"}},
		{"FROM c WHERE c.count", nil}, // a number is not true
		{"FROM c", []string{"active", "inactive", "low", "nocount", "strcount"}},
	}
	parsed := map[string]*jsonv.Object{}
	for name, s := range docs {
		parsed[name] = mustParseObject(t, s)
	}
	for _, tt := range tests {
		cond, err := ParseCondition(tt.cond)
		if err != nil {
			t.Fatalf("ParseCondition(%q): %v", tt.cond, err)
		}
		want := map[string]bool{}
		for _, name := range tt.want {
			want[name] = true
		}
		for name, doc := range parsed {
			got, err := cond.Match(doc)
			if err != nil {
				t.Fatalf("%q on %s: %v", tt.cond, name, err)
			}
			if got != want[name] {
				t.Errorf("%q on %s = %v; want %v", tt.cond, name, got, want[name])
			}
		}
	}
}

func TestMatchNilDocument(t *testing.T) {
	cond, err := ParseCondition("FROM c WHERE true")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cond.Match(nil); err == nil {
		t.Error("Match(nil) succeeded; want an error")
	}
}

// TestEvalErrors covers the few evaluation errors: names with no binding.
func TestEvalErrors(t *testing.T) {
	x, err := parseExprSource("c.a + @p", "c")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Eval(x, nil); err == nil || err.Error() != "undeclared identifier c" {
		t.Errorf("Eval with no env: err = %v", err)
	}
	env := &Env{Vars: map[string]jsonv.Value{"c": testDoc(t)}, Source: "c.a + @p"}
	if _, _, err := Eval(x, env); err == nil || err.Error() != "1:7: parameter @p has no value" {
		t.Errorf("Eval without params: err = %v", err)
	}
	// A hand-built call to an unknown function fails at evaluation.
	call := &CallExpr{Fun: &Ident{Name: "NOPE"}, Lparen: NoPos, Rparen: NoPos}
	if _, _, err := Eval(call, env); err == nil {
		t.Error("Eval of an unknown function succeeded")
	}
	// A hand-built call to a known function is looked up by name.
	call = &CallExpr{Fun: &Ident{Name: "abs"}, Args: []Expr{&Literal{Kind: NUMBER, Value: jsonv.Number("-2")}}}
	if v, ok, err := Eval(call, env); err != nil || !ok || v != jsonv.Number("2") {
		t.Errorf("Eval(abs(-2)) = %v, %v, %v", v, ok, err)
	}
}
