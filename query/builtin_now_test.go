package query

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/lethe-db/lethe/jsonv"
)

// TestEvalNow runs testdata/now/*.txt, which test the functions of the
// current time. The commands are TestEval's doc and eval, plus
//
//	now <time>   sets Env.Now (RFC 3339) for the cases after it; "now" alone
//	             leaves it unset
func TestEvalNow(t *testing.T) {
	for _, path := range testFiles(t, "now") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			doc := jsonv.NewObject(0)
			var now time.Time
			runTestFile(t, path, func(t *testing.T, tc *testCase) string {
				switch tc.cmd {
				case "now":
					now = time.Time{}
					if len(tc.args) > 0 {
						var err error
						if now, err = time.Parse(time.RFC3339Nano, tc.args[0]); err != nil {
							t.Fatalf("%s: %v", tc, err)
						}
					}
					return ""
				case "doc":
					doc = mustParseObject(t, tc.input)
					return ""
				case "eval":
					return evalTextAt(tc.input, doc, now)
				}
				t.Fatalf("%s: unknown command %q", tc, tc.cmd)
				return ""
			})
		})
	}
}

// evalTextAt is evalText with Env.Now set.
func evalTextAt(src string, doc *jsonv.Object, now time.Time) string {
	x, err := parseExprSource(src, "c")
	if err != nil {
		return "parse error: " + err.Error()
	}
	v, defined, err := Eval(x, &Env{Vars: map[string]jsonv.Value{"c": doc}, Source: src, Now: now})
	switch {
	case err != nil:
		return "error: " + err.Error()
	case !defined:
		return "undefined"
	}
	return string(jsonv.Marshal(v))
}
