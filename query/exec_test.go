package query

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/lethe-db/lethe/jsonv"
)

func mustParse(tb testing.TB, src string) *Query {
	tb.Helper()
	q, err := Parse(src)
	if err != nil {
		tb.Fatalf("Parse(%q): %v", src, err)
	}
	return q
}

func testDocs(tb testing.TB, docs ...string) []*jsonv.Object {
	tb.Helper()
	out := make([]*jsonv.Object, len(docs))
	for i, d := range docs {
		out[i] = mustParseObject(tb, d)
	}
	return out
}

// errSource fails after yielding its documents.
type errSource struct{ sliceSource }

var errBroken = errors.New("broken disk")

func (s *errSource) Next() (*jsonv.Object, uint64, bool, error) {
	doc, seq, ok, err := s.sliceSource.Next()
	if !ok {
		return nil, 0, false, errBroken
	}
	return doc, seq, ok, err
}

type nilSource struct{}

func (nilSource) Next() (*jsonv.Object, uint64, bool, error) { return nil, 1, true, nil }

func TestExecuteErrors(t *testing.T) {
	docs := testDocs(t, `{"id":"1","a":[1,2,3,4,5,6,7,8,9,10]}`)
	q := mustParse(t, "SELECT * FROM c")
	if _, err := q.Execute(newSliceSource(docs), ExecOptions{}); err == nil {
		t.Error("page size 0 accepted")
	}
	if _, err := q.Execute(&errSource{*newSliceSource(docs)}, ExecOptions{PageSize: 10}); !errors.Is(err, errBroken) {
		t.Errorf("source error: %v", err)
	}
	if _, err := q.Execute(nilSource{}, ExecOptions{PageSize: 10}); err == nil {
		t.Error("nil document accepted")
	}

	// Cursors of another query, or damaged ones.
	ordered := mustParse(t, "SELECT * FROM c ORDER BY c.id")
	page, err := ordered.Execute(newSliceSource(docs), ExecOptions{PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, after := range []Cursor{page.Last, {}, {cursorStream, 1, 2}, {0xFF}} {
		if _, err := q.Execute(newSliceSource(docs), ExecOptions{PageSize: 10, After: after}); !errors.Is(err, ErrBadCursor) {
			t.Errorf("After %x: err = %v; want ErrBadCursor", after, err)
		}
	}

	// The work limit bounds cross products: 1 document, 10 a, 100 (a, b)
	// and 1000 (a, b, d) bindings.
	cross := mustParse(t, "SELECT VALUE COUNT(1) FROM c JOIN a IN c.a JOIN b IN c.a JOIN d IN c.a")
	if _, err := cross.Execute(newSliceSource(docs), ExecOptions{PageSize: 1, WorkLimit: 1110}); !errors.Is(err, ErrWorkLimit) {
		t.Errorf("work limit 1110: err = %v", err)
	}
	page, err = cross.Execute(newSliceSource(docs), ExecOptions{PageSize: 1, WorkLimit: 1111})
	if err != nil || string(page.Rows[0]) != "1000" {
		t.Errorf("work limit 1111: %v, %v", page, err)
	}
	// Bindings count even when a later JOIN yields no rows.
	empty := mustParse(t, "SELECT VALUE COUNT(1) FROM c JOIN a IN c.a JOIN b IN c.a JOIN d IN c.none")
	if _, err := empty.Execute(newSliceSource(docs), ExecOptions{PageSize: 1, WorkLimit: 100}); !errors.Is(err, ErrWorkLimit) {
		t.Errorf("work limit over an empty JOIN: err = %v", err)
	}
	sub := mustParse(t, "SELECT VALUE ARRAY(SELECT VALUE 1 FROM x IN c.a JOIN y IN c.a) FROM c")
	if _, err := sub.Execute(newSliceSource(docs), ExecOptions{PageSize: 1, WorkLimit: 50}); !errors.Is(err, ErrWorkLimit) {
		t.Errorf("work limit in a subquery: err = %v", err)
	}

	// Query errors are *Error values with positions.
	_, err = mustParse(t, "SELECT * FROM c\nWHERE c.a = @p").Execute(newSliceSource(docs), ExecOptions{PageSize: 1})
	var e *Error
	if !errors.As(err, &e) || e.Error() != "2:13: parameter @p has no value" {
		t.Errorf("missing parameter: %v", err)
	}
}

// rawSource returns a distinctive text for each document, to show that
// SELECT * uses it.
type rawSource struct{ sliceSource }

func (s *rawSource) Raw() []byte { return []byte(`{"raw": true}`) }

func TestExecuteRaw(t *testing.T) {
	docs := testDocs(t, `{"id":"1"}`, `{"id":"2"}`)
	for _, tt := range []struct {
		query string
		want  string
	}{
		{"SELECT * FROM c", `{"raw": true} {"raw": true}`},
		{"SELECT * FROM root r WHERE r.id = '2'", `{"raw": true}`},
		// Whole documents use the raw text, in any order.
		{"SELECT * FROM c ORDER BY c.id DESC", `{"raw": true} {"raw": true}`},
		{"SELECT * FROM c ORDER BY c.id OFFSET 1 LIMIT 1", `{"raw": true}`},
		{"SELECT VALUE c FROM c", `{"id":"1"} {"id":"2"}`},
		{"SELECT * FROM c.id", `"1" "2"`},
	} {
		page, err := mustParse(t, tt.query).Execute(&rawSource{*newSliceSource(docs)}, ExecOptions{PageSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, r := range page.Rows {
			rows = append(rows, string(r))
		}
		if got := strings.Join(rows, " "); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.query, got, tt.want)
		}
	}
}

func TestResumeSeq(t *testing.T) {
	docs := testDocs(t, `{"t":[1,2]}`, `{"t":[3]}`, `{"t":[4,5]}`)
	q := mustParse(t, "SELECT VALUE t FROM c JOIN t IN c.t")
	if _, ok := q.ResumeSeq(nil); ok {
		t.Error("ResumeSeq(nil) ok")
	}
	page, err := q.Execute(newSliceSource(docs), ExecOptions{PageSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	if seq, ok := q.ResumeSeq(page.Last); !ok || seq != 3 {
		t.Errorf("ResumeSeq = %d, %v; want 3 (the document of row 4)", seq, ok)
	}
	for _, src := range []string{"SELECT * FROM c ORDER BY c.t", "SELECT VALUE COUNT(1) FROM c", "SELECT DISTINCT * FROM c", "SELECT 1"} {
		q := mustParse(t, src)
		if _, ok := q.ResumeSeq(page.Last); ok {
			t.Errorf("%s: ResumeSeq ok", src)
		}
		if h := q.Hints(nil); h.Streaming {
			t.Errorf("%s: Hints.Streaming", src)
		}
	}
}

// TestEvalSubqueryEnv checks that Eval leaves its caller's variables alone
// even when a subquery binds an alias of the same name.
func TestEvalSubqueryEnv(t *testing.T) {
	x, err := parseExprSource("ARRAY(SELECT VALUE c FROM c IN c.tags)", "c")
	if err != nil {
		t.Fatal(err)
	}
	doc := mustParseObject(t, `{"tags":["a","b"]}`)
	env := &Env{Vars: map[string]jsonv.Value{"c": doc}}
	before := maps.Clone(env.Vars)
	v, ok, err := Eval(x, env)
	if err != nil || !ok || string(jsonv.Marshal(v)) != `["a","b"]` {
		t.Fatalf("Eval = %v, %v, %v", v, ok, err)
	}
	if !maps.EqualFunc(env.Vars, before, func(a, b jsonv.Value) bool { return a == b }) {
		t.Errorf("Eval changed env.Vars: %v", env.Vars)
	}
}

// TestQueryConcurrent runs one Query from several goroutines (go test -race).
func TestQueryConcurrent(t *testing.T) {
	docs := testDocs(t, `{"g":"a","t":[1,2]}`, `{"g":"b","t":[3]}`, `{"g":"a","t":[]}`)
	q := mustParse(t, "SELECT c.g, COUNT(1) AS n, SUM((SELECT VALUE SUM(t) FROM t IN c.t)) AS s FROM c GROUP BY c.g")
	want := `{"g":"a","n":2,"s":3} {"g":"b","n":1,"s":3}`
	done := make(chan string)
	for range 4 {
		go func() {
			rows, err := runAll(q, newSliceSource(docs), nil, 1, false)
			if err != nil {
				done <- err.Error()
				return
			}
			done <- strings.Join(rows, " ")
		}()
	}
	for range 4 {
		if got := <-done; got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

// TestStatementNesting checks that subqueries count towards MaxNesting, so
// that no statement can nest deeper than the parser and evaluator allow.
func TestStatementNesting(t *testing.T) {
	nest := func(n int, open, close string) string {
		return "SELECT VALUE " + strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
	}
	for _, tt := range []struct {
		src string
		ok  bool
	}{
		{nest(10, "(SELECT VALUE ", ")"), true},
		{nest(200, "(SELECT VALUE ", ")"), false},
		{nest(200, "ARRAY(SELECT VALUE ", ")"), false},
		{nest(200, "EXISTS(SELECT VALUE ", ")"), false},
		{"SELECT VALUE 1 FROM c JOIN " + strings.Repeat("(SELECT VALUE 1 FROM c JOIN ", 200) + "x IN c.a" + strings.Repeat(")", 200), false},
		{"SELECT " + strings.Repeat("c.a OR ", 2000) + "c.a FROM c", false},
		{"SELECT " + strings.Repeat("c.a OR ", 1000) + "c.a AS x, COUNT(1) FROM c GROUP BY " + strings.Repeat("c.a OR ", 1000) + "c.a", true},
	} {
		_, err := Parse(tt.src)
		if tt.ok {
			if err != nil {
				t.Errorf("%.40s...: %v", tt.src, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Msg, "exceeded max") {
			t.Errorf("%.40s...: err = %v; want a nesting error", tt.src, err)
		}
	}
	q := mustParse(t, nest(40, "ARRAY(SELECT VALUE ", ")"))
	page, err := q.Execute(newSliceSource(nil), ExecOptions{PageSize: 1})
	if err != nil || len(page.Rows) != 1 || !strings.HasPrefix(string(page.Rows[0]), "[[[[") {
		t.Errorf("deep ARRAY: %v, %v", page, err)
	}
}

func TestMatchWorkLimit(t *testing.T) {
	cond, err := ParseCondition("FROM c WHERE EXISTS(SELECT VALUE 1 FROM a IN c.a JOIN b IN c.a JOIN d IN c.a JOIN e IN c.a WHERE a < 0)")
	if err != nil {
		t.Fatal(err)
	}
	small := mustParseObject(t, `{"a":[1,2,3]}`)
	if ok, err := cond.Match(small); ok || err != nil {
		t.Errorf("Match(small) = %v, %v", ok, err)
	}
	big := mustParseObject(t, `{"a":[`+strings.TrimSuffix(strings.Repeat("1,", 40), ",")+`]}`) // 40^4 > MatchWorkLimit
	if _, err := cond.Match(big); !errors.Is(err, ErrWorkLimit) {
		t.Errorf("Match(big): err = %v; want ErrWorkLimit", err)
	}
}

// TestWhereHolds: with ExecOptions.WhereHolds the top-level WHERE is taken
// as true for every document (the engine's index answered it), except where
// WHERE judges rows rather than documents (JOIN, FROM ... IN); subqueries
// still evaluate their own WHERE.
func TestWhereHolds(t *testing.T) {
	docs := []*jsonv.Object{
		mustParseObject(t, `{"id":"a","v":1,"t":[1,2]}`),
		mustParseObject(t, `{"id":"b","v":2,"t":[3]}`),
	}
	for _, tt := range []struct {
		query string
		want  int // rows with WhereHolds
	}{
		{"SELECT * FROM c WHERE c.v = 99", 2},
		{"SELECT c.id FROM c WHERE c.v = 99", 2},
		{"SELECT t FROM c JOIN t IN c.t WHERE t = 1", 1},
		{"SELECT VALUE t FROM t IN c.t WHERE t > 1", 2},
		{"SELECT c.id, ARRAY(SELECT VALUE x FROM x IN c.t WHERE x > 1) AS big FROM c WHERE c.v = 99", 2},
	} {
		page, err := mustParse(t, tt.query).Execute(newSliceSource(docs), ExecOptions{PageSize: 10, WhereHolds: true})
		if err != nil {
			t.Fatalf("%s: %v", tt.query, err)
		}
		if len(page.Rows) != tt.want {
			t.Errorf("%s: %d rows %s, want %d", tt.query, len(page.Rows), page.Rows, tt.want)
		}
	}
	page, err := mustParse(t, "SELECT c.id, ARRAY(SELECT VALUE x FROM x IN c.t WHERE x > 1) AS big FROM c WHERE c.v = 99").Execute(newSliceSource(docs), ExecOptions{PageSize: 10, WhereHolds: true})
	if err != nil || len(page.Rows) != 2 || string(page.Rows[0]) != `{"id":"a","big":[2]}` {
		t.Errorf("a subquery's WHERE: %s, %v", page.Rows, err)
	}
}

func TestReadsOnlyRaw(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT * FROM c":                                true,
		"SELECT * FROM c WHERE c.v = 1":                  true,
		"SELECT TOP 5 * FROM c WHERE c.v = 1":            true,
		"SELECT * FROM c WHERE c.v = 1 OFFSET 1 LIMIT 2": true,
		"SELECT * FROM root r":                           true,
		"SELECT c.id FROM c":                             false,
		"SELECT VALUE c FROM c":                          false,
		"SELECT * FROM c ORDER BY c.v":                   false,
		"SELECT DISTINCT * FROM c":                       false,
		"SELECT * FROM c.children":                       false,
		"SELECT * FROM t IN c.t":                         false,
		"SELECT COUNT(1) FROM c":                         false,
	} {
		if got := mustParse(t, q).ReadsOnlyRaw(); got != want {
			t.Errorf("%s: ReadsOnlyRaw %v, want %v", q, got, want)
		}
	}
}

// TestRowBound: TOP, or OFFSET plus LIMIT, from literals and parameters;
// -1 without them and for bounds that are not counts.
func TestRowBound(t *testing.T) {
	params := map[string]jsonv.Value{"n": jsonv.Number("4"), "bad": "x"}
	for _, c := range []struct {
		src  string
		want int
	}{
		{"SELECT * FROM c", -1},
		{"SELECT TOP 3 * FROM c", 3},
		{"SELECT TOP @n c.id FROM c WHERE c.x = 1", 4},
		{"SELECT * FROM c OFFSET 2 LIMIT 5", 7},
		{"SELECT * FROM c ORDER BY c.x OFFSET @n LIMIT @n", 8},
		{"SELECT TOP 0 * FROM c", 0},
		{"SELECT TOP @bad * FROM c", -1},
		{"SELECT TOP @missing * FROM c", -1},
	} {
		if got := mustParse(t, c.src).RowBound(params); got != c.want {
			t.Errorf("%s: RowBound = %d, want %d", c.src, got, c.want)
		}
	}
}

// TestReadsNoDocument: an aggregate whose select list refers to no document
// reads none, and gives over placeholders what it gives over documents;
// anything that looks into them does not qualify.
func TestReadsNoDocument(t *testing.T) {
	docs := testDocs(t, `{"id":"1","n":1}`, `{"id":"2","n":5}`, `{"id":"3"}`)
	var placeholders []string
	for range docs {
		placeholders = append(placeholders, `{}`)
	}
	for _, c := range []struct {
		query string
		want  bool
	}{
		{"SELECT VALUE COUNT(1) FROM c", true},
		{"SELECT COUNT(1) AS n, SUM(2) AS s, MAX('x') AS m FROM c", true},
		{"SELECT VALUE COUNT(1) FROM root r", true},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.n > 1", true}, // WHERE: the engine decides whether it holds
		{"SELECT VALUE COUNT(c.n) FROM c", false},
		{"SELECT VALUE SUM(c.n) FROM c", false},
		{"SELECT VALUE COUNT(1) FROM c.tags t", false},
		{"SELECT VALUE COUNT(1) FROM t IN c.tags", false},
		{"SELECT VALUE COUNT(1) FROM c JOIN t IN c.tags", false},
		{"SELECT c.n, COUNT(1) AS k FROM c GROUP BY c.n", false},
		{"SELECT VALUE COUNT(1) FROM c WHERE EXISTS(SELECT VALUE 1 FROM x IN c.tags)", true},
		{"SELECT VALUE (SELECT VALUE COUNT(1) FROM x IN c.tags) FROM c", false},
		{"SELECT * FROM c", false},
		{"SELECT VALUE 1 FROM c", false},
	} {
		q := mustParse(t, c.query)
		if got := q.ReadsNoDocument(); got != c.want {
			t.Errorf("%s: reads no document %v, want %v", c.query, got, c.want)
			continue
		}
		if !c.want || q.Filters() {
			continue
		}
		want, err := q.Execute(newSliceSource(docs), ExecOptions{PageSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		got, err := q.Execute(newSliceSource(testDocs(t, placeholders...)), ExecOptions{PageSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rowsText(got.Rows), rowsText(want.Rows)) {
			t.Errorf("%s: over placeholders %s, over the documents %s", c.query, rowsText(got.Rows), rowsText(want.Rows))
		}
	}
}

func rowsText(rows [][]byte) []string {
	var out []string
	for _, r := range rows {
		out = append(out, string(r))
	}
	return out
}

// TestMinMaxPath: queries whose every aggregate is MIN, or every one MAX,
// of one document path, over whole documents without GROUP BY, JOIN or
// ORDER BY, name the path; any other query does not.
func TestMinMaxPath(t *testing.T) {
	for _, c := range []struct {
		text string
		path string
		max  bool
		ok   bool
	}{
		{"SELECT VALUE MAX(c.t) FROM c", "t", true, true},
		{"SELECT VALUE MIN(c.a.b) FROM c WHERE c.x = 1", "a.b", false, true},
		{"SELECT MAX(c.t) AS hi, MAX(c['t']) AS again FROM c", "t", true, true},
		{"SELECT VALUE MIN(r.t) FROM root r", "t", false, true},
		{"SELECT MIN(c.t) AS lo, MAX(c.t) AS hi FROM c", "", false, false},
		{"SELECT VALUE MAX(c.t) FROM c GROUP BY c.k", "", false, false},
		{"SELECT VALUE MAX(c.t + 1) FROM c", "", false, false},
		{"SELECT VALUE MAX(c.t) FROM c JOIN x IN c.xs", "", false, false},
		{"SELECT VALUE MAX(x.t) FROM x IN c.xs", "", false, false},
		{"SELECT VALUE MAX(k.t) FROM c.kids k", "", false, false},
		{"SELECT VALUE COUNT(c.t) FROM c", "", false, false},
		{"SELECT c.t FROM c", "", false, false},
		{"SELECT VALUE MAX(c.t) FROM c WHERE c.a > 1 OR c.b", "t", true, true},
	} {
		q, err := Parse(c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		path, max, ok := q.MinMaxPath()
		if ok != c.ok || ok && (strings.Join(path, ".") != c.path || max != c.max) {
			t.Errorf("%s: MinMaxPath %v %v %v, want %s %v %v", c.text, path, max, ok, c.path, c.max, c.ok)
		}
	}
}

// TestSkipper checks which statements ask a Skipper to pass over the
// documents their OFFSET skips, and that their rows are those of a source
// read whole.
func TestSkipper(t *testing.T) {
	docs := testDocs(t, `{"id":"a","n":1,"tags":[1,2]}`, `{"id":"b","n":2,"x":1,"tags":[3]}`, `{"id":"c","n":3}`, `{"id":"d","n":4,"x":2}`, `{"id":"e","n":5}`, `{"id":"f","n":6}`)
	cases := []struct {
		src   string
		opts  ExecOptions
		skips int // what Execute asks the source to pass over; 0: never asks
	}{
		{"SELECT * FROM c OFFSET 3 LIMIT 2", ExecOptions{}, 3},
		{"SELECT c.id, c.x FROM c OFFSET 4 LIMIT 1", ExecOptions{}, 4},
		{"SELECT * FROM c ORDER BY c.n OFFSET 2 LIMIT 2", ExecOptions{SortedKeys: 1, TiesInSeqOrder: true, Unordered: true}, 2},
		{"SELECT * FROM c WHERE c.n > 0 OFFSET 2 LIMIT 2", ExecOptions{WhereHolds: true}, 2},
		// Not asked: WHERE to judge, an undefined VALUE is no row, rows
		// per element, an order the source does not give, no OFFSET.
		{"SELECT * FROM c WHERE c.n > 0 OFFSET 2 LIMIT 2", ExecOptions{}, 0},
		{"SELECT VALUE c.x FROM c OFFSET 1 LIMIT 2", ExecOptions{}, 0},
		{"SELECT c.id, (SELECT VALUE 1) AS one FROM c OFFSET 1 LIMIT 2", ExecOptions{}, 0},
		{"SELECT c.id FROM c JOIN t IN c.tags OFFSET 1 LIMIT 2", ExecOptions{}, 0},
		{"SELECT * FROM c.x OFFSET 1 LIMIT 2", ExecOptions{}, 0},
		{"SELECT * FROM c OFFSET 3 LIMIT 2", ExecOptions{Unordered: true}, 0},
		{"SELECT * FROM c ORDER BY c.n, c.id OFFSET 2 LIMIT 2", ExecOptions{SortedKeys: 1, TiesInSeqOrder: true, Unordered: true}, 0},
		{"SELECT * FROM c ORDER BY c.n OFFSET 2 LIMIT 2", ExecOptions{SortedKeys: 1, Unordered: true}, 0},
		{"SELECT DISTINCT VALUE c.n FROM c OFFSET 2 LIMIT 2", ExecOptions{}, 0},
		{"SELECT * FROM c", ExecOptions{}, 0},
	}
	for _, tc := range cases {
		q := mustParse(t, tc.src)
		opts := tc.opts
		opts.PageSize = 10
		want, err := q.Execute(newSliceSource(docs), opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		src := &skippingSource{sliceSource: newSliceSource(docs)}
		got, err := q.Execute(src, opts)
		if err != nil {
			t.Fatalf("%s over a Skipper: %v", tc.src, err)
		}
		if src.skipped != tc.skips || src.calls > 1 {
			t.Errorf("%s: the source passed over %d documents in %d calls, want %d", tc.src, src.skipped, src.calls, tc.skips)
		}
		if !slices.EqualFunc(got.Rows, want.Rows, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Errorf("%s over a Skipper: %q, want %q", tc.src, got.Rows, want.Rows)
		}
		if got.Examined != want.Examined {
			t.Errorf("%s: examined %d documents, %d over a source read whole", tc.src, got.Examined, want.Examined)
		}
	}
}
