package query

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lethe-db/lethe/jsonv"
)

// TestPartitionedInfo runs testdata/plan/*.txt. Commands:
//
//	load      the input holds one JSON document per line (see TestSelect)
//	params    the input is a JSON object of parameter values
//	plan      prints the input statement's queryInfo, one member a line with
//	          the rewritten query as text, then "rows:" and the rows the
//	          rewritten query gives over the loaded documents (one partition
//	          key range), with the ORDER BY placeholder replaced by true as
//	          clients do; or the error
//
// The rewritten query must parse and run, or the test fails.
func TestPartitionedInfo(t *testing.T) {
	for _, path := range testFiles(t, "plan") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var docs []*jsonv.Object
			params := map[string]jsonv.Value{}
			runTestFile(t, path, func(t *testing.T, tc *testCase) string {
				switch tc.cmd {
				case "load":
					docs = loadDocs(t, tc.input)
					return ""
				case "params":
					params = loadParams(t, tc.input)
					return ""
				case "plan":
					return runPlanCase(t, tc, docs, params)
				}
				t.Fatalf("%s: unknown command %q", tc, tc.cmd)
				return ""
			})
		})
	}
}

func runPlanCase(t *testing.T, tc *testCase, docs []*jsonv.Object, params map[string]jsonv.Value) string {
	q, err := Parse(tc.input)
	if err != nil {
		return "parse error: " + errorText(err)
	}
	info, err := q.PartitionedInfo(params)
	if err != nil {
		return "error: " + errorText(err)
	}
	var b strings.Builder
	b.WriteString(queryInfoText(t, info))
	text := strings.Replace(info.RewrittenQuery, OrderByFilterPlaceholder, "true", 1)
	rq, err := Parse(text)
	if err != nil {
		t.Errorf("%s: rewritten query %q does not parse: %v", tc, text, err)
		return b.String()
	}
	rows, err := runAll(rq, newSliceSource(docs), params, 1000, false)
	if err != nil {
		t.Errorf("%s: rewritten query %q fails: %v", tc, text, err)
		return b.String()
	}
	b.WriteString("rows:")
	if len(rows) == 0 {
		b.WriteString(" none")
	}
	for _, r := range rows {
		b.WriteString("\n" + r)
	}
	return b.String()
}

// queryInfoText prints a queryInfo one JSON member a line, in the order of
// its fields, with the rewritten query unquoted.
func queryInfoText(t *testing.T, info *QueryInfo) string {
	raw, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	var b strings.Builder
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if key == "rewrittenQuery" {
			b.WriteString("rewrittenQuery: " + info.RewrittenQuery + "\n")
			continue
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, v); err != nil {
			t.Fatal(err)
		}
		b.WriteString(key.(string) + ": " + compact.String() + "\n")
	}
	return b.String()
}

// checkPlan checks that the plan of a statement that has one is a query that
// parses, unless the plan's nesting passes the parser's limits; FuzzParse
// calls it.
func checkPlan(t *testing.T, src string, q *Query, params map[string]jsonv.Value) {
	t.Helper()
	info, err := q.PartitionedInfo(params)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || !e.Pos.IsValid() || e.Pos.Offset > len(src) {
			t.Fatalf("%q: plan error %v is not an *Error positioned in the input", src, err)
		}
		return
	}
	text := strings.Replace(info.RewrittenQuery, OrderByFilterPlaceholder, "true", 1)
	if _, err := Parse(text); err != nil && !strings.Contains(err.Error(), "exceeded max") {
		t.Fatalf("%q: rewritten query %q does not parse: %v", src, text, err)
	}
}
