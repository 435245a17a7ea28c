package query

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lethe-db/lethe/jsonv"
)

// FuzzParseCondition feeds arbitrary text to ParseCondition. It must never
// panic; errors must be *Error values positioned inside the input; and a
// condition that parses must print and match a document without panicking
// (or failing, but for the work limit and the functions of the current time). The seeds are every input in testdata/parse and testdata/eval,
// plus the corpus in testdata/fuzz/FuzzParseCondition.
func FuzzParseCondition(f *testing.F) {
	for _, dir := range []string{"parse", "eval"} {
		for _, path := range testFiles(f, dir) {
			for _, c := range readTestFile(f, path) {
				if c.tc == nil {
					continue
				}
				switch c.tc.cmd {
				case "parse", "match":
					f.Add(c.tc.input)
				case "expr", "nodes", "eval":
					f.Add("FROM c WHERE " + c.tc.input)
				}
			}
		}
	}
	doc := mustParseObject(f, `{"id":"1","n":5,"f":-1.5,"s":"hello","e":"","t":true,"nul":null,`+
		`"arr":[1,"two",[3],{"x":4}],"obj":{"a":1,"b":{"c":"deep"}},"tags":["a","b"],"uni":"é😀"}`)
	f.Fuzz(func(t *testing.T, src string) {
		cond, err := ParseCondition(src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
			if !e.Pos.IsValid() || e.Pos.Offset > len(src) {
				t.Fatalf("error position %+v outside the input (%d bytes): %v", e.Pos, len(src), err)
			}
			return
		}
		_ = cond.String()
		if _, err := cond.Match(doc); err != nil {
			// Only a subquery past the work limit, or a function of the
			// current time (Match has no query time), may fail.
			var e *Error
			if !errors.Is(err, ErrWorkLimit) && !errors.As(err, &e) {
				t.Fatalf("Match failed on a parsed condition: %v", err)
			}
		}
	})
}

// statementSeeds returns every statement and expression in testdata: the
// SELECT statements as they are, conditions and expressions turned into
// statements.
func statementSeeds(tb testing.TB) []string {
	var seeds []string
	for _, dir := range []string{"parse", "eval", "select", "plan"} {
		for _, path := range testFiles(tb, dir) {
			for _, c := range readTestFile(tb, path) {
				if c.tc == nil {
					continue
				}
				switch c.tc.cmd {
				case "query", "pages", "hints", "plan":
					seeds = append(seeds, c.tc.input)
				case "parse", "match":
					seeds = append(seeds, "SELECT * "+c.tc.input)
				case "expr", "nodes", "eval":
					seeds = append(seeds, "SELECT VALUE "+c.tc.input+" FROM c")
				}
			}
		}
	}
	return seeds
}

// FuzzParse feeds arbitrary text to Parse. It must never panic; errors must
// be *Error values positioned inside the input; and a statement that parses
// must print, give hints, and survive a round trip through SQL text: its
// SQL rendering parses to the same tree. The seeds are every statement and
// expression in testdata, plus the corpus in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, s := range statementSeeds(f) {
		f.Add(s)
	}
	params := map[string]jsonv.Value{"p": jsonv.Number("1"), "s": "x"}
	f.Fuzz(func(t *testing.T, src string) {
		q, err := Parse(src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
			if !e.Pos.IsValid() || e.Pos.Offset > len(src) {
				t.Fatalf("error position %+v outside the input (%d bytes): %v", e.Pos, len(src), err)
			}
			return
		}
		_ = q.Hints(params)
		_, _ = q.ResumeSeq(Cursor{cursorStream, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
		checkRoundTrip(t, src, q)
		checkPlan(t, src, q, params)
	})
}

// fuzzDocs is the fixed document set FuzzExecute runs statements over.
var fuzzDocs = []string{
	`{"id":"1","n":5,"f":-1.5,"s":"hello","t":true,"nul":null,"tags":["a","b"],"arr":[1,"two",[3],{"x":4}],"obj":{"a":1,"b":{"c":"deep"}},"kids":[{"name":"k","age":3,"pets":["cat"]}]}`,
	`{"id":"2","n":"5","s":"world","t":false,"tags":[],"arr":[2,1],"obj":{"b":2,"a":1},"kids":[]}`,
	`{"id":"3","n":7.0,"tags":["b"],"uni":"é😀","kids":[{"name":"m","age":30,"pets":[]},{"name":"o","pets":["dog","eel"]}]}`,
	`{"id":"4"}`,
	`{"id":"5","n":5.0,"s":"hello","tags":"x","obj":null}`,
	`{"id":"6","n":9007199254740993,"s":"world","obj":{"a":1.0}}`, // an integer its float64 value rounds
}

// FuzzExecute runs every statement that parses over a fixed small document
// set. Execution must never panic, and paging in pages of two rows must give
// the rows of one large page. Errors (a missing parameter, the work limit)
// are fine.
func FuzzExecute(f *testing.F) {
	for _, s := range statementSeeds(f) {
		f.Add(s)
	}
	docs := testDocs(f, fuzzDocs...)
	params := map[string]jsonv.Value{"p": jsonv.Number("1"), "n": jsonv.Number("2"), "s": "hello", "a": []jsonv.Value{jsonv.Number("1"), "a"}}
	f.Fuzz(func(t *testing.T, src string) {
		q, err := Parse(src)
		if err != nil {
			return
		}
		opts := ExecOptions{Params: params, Now: testNow, PageSize: 1000, WorkLimit: 20000}
		unpaged := func() []string {
			page, err := q.Execute(newSliceSource(docs), opts)
			if err != nil {
				return nil
			}
			rows := []string{}
			for _, r := range page.Rows {
				rows = append(rows, string(r))
			}
			return rows
		}
		want := unpaged()
		if want == nil {
			return
		}
		checkHints(t, q, docs, opts)
		checkPathConditions(t, q, docs, opts)
		if again := unpaged(); !equalRows(again, want) {
			return // RAND(): the statement's rows differ from one run to the next
		}
		checkOnlyPath(t, q, docs, want, opts)
		checkReadPaths(t, q, docs, want, opts)
		checkSortedKeys(t, q, docs, want, opts)
		checkBlanks(t, q, opts)
		checkSkips(t, q, docs, want, opts)
		var got []string
		var after Cursor
		for emitted := 0; ; {
			opts.PageSize, opts.After, opts.Emitted = 2, after, emitted
			src := newSliceSource(docs)
			src.seek = true
			src.reset(q, after)
			page, err := q.Execute(src, opts)
			if err != nil {
				t.Fatalf("page after %x: %v", after, err)
			}
			for _, r := range page.Rows {
				got = append(got, string(r))
			}
			if !page.More || len(got) > len(want) {
				break
			}
			after, emitted = page.Last, page.Emitted
		}
		if !equalRows(got, want) {
			t.Fatalf("paged:\n%s\nunpaged:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

// checkHints fails unless each equality, IN and prefix hint of q holds for
// every document that gives a row when it is the only one: hints must be
// necessary conditions (see Hints), or the engine's index would leave out
// documents the query returns.
func checkHints(t *testing.T, q *Query, docs []*jsonv.Object, opts ExecOptions) {
	t.Helper()
	h := q.Hints(opts.Params)
	if h.Aggregate {
		return // an aggregate gives a row without any document
	}
	for i, d := range docs {
		page, err := q.Execute(newSliceSource(docs[i:i+1]), opts)
		if err != nil || len(page.Rows) == 0 {
			continue
		}
		for _, w := range h.Where {
			if !hintHolds(w, d) {
				t.Fatalf("document %d gives rows %q, but fails the hint %+v", i, page.Rows, w)
			}
		}
	}
}

// checkOnlyPath fails unless a query that looks at one path only (OnlyPath)
// returns its rows want over objects that hold only each document's value
// there, yielded in reverse order, as an engine reading an index yields them:
// a number as its float64 value unless the query may return its spelling
// (and then, for SpellingFirst, as the first document holding the value
// spells it and as its value after that),
// an object or array as it is (the engine reads the document for it);
// and, when the query needs one document per value (OnePerValue) and an
// empty document makes no row, only the first document of each value.
func checkOnlyPath(t *testing.T, q *Query, docs []*jsonv.Object, want []string, opts ExecOptions) {
	t.Helper()
	path, spelling, ok := q.OnlyPath(opts.Params)
	if !ok {
		return
	}
	empty, err := q.Execute(newSliceSource([]*jsonv.Object{jsonv.NewObject(0)}), opts)
	firstOnly := q.OnePerValue() && err == nil && len(empty.Rows) == 0
	src := &sliceSource{}
	seen := map[string]bool{}
	for i, d := range docs {
		v, present := d.GetPath(path)
		var key string
		switch x := v.(type) {
		case *jsonv.Object, []jsonv.Value:
			key = fmt.Sprintf("doc %d", i) // an index holds a marker: each is read
		case jsonv.Number:
			f := x.Float64()
			if f == 0 {
				f = 0 // -0
			}
			key = "n" + strconv.FormatFloat(f, 'g', -1, 64)
			// An engine reads the spelling of the first document of a value
			// for SpellingFirst, of every one for SpellingEach.
			if spelling == SpellingIgnored || spelling == SpellingFirst && seen[key] {
				v = jsonv.NumberFromFloat(f)
			}
		default:
			key = fmt.Sprintf("%T %v", x, x)
		}
		if firstOnly && (!present || seen[key]) {
			continue
		}
		seen[key] = true
		o := jsonv.NewObject(1)
		if present {
			o.SetPath(path, v)
		}
		src.docs, src.seqs = append([]*jsonv.Object{o}, src.docs...), append([]uint64{uint64(i + 1)}, src.seqs...)
	}
	opts.Unordered = true
	page, err := q.Execute(src, opts)
	if err != nil {
		t.Fatalf("over the values at %q only: %v", path, err)
	}
	var got []string
	for _, r := range page.Rows {
		got = append(got, string(r))
	}
	if !equalRows(got, want) {
		t.Fatalf("over the values at %q only (first of each: %v):\n%s\nover the documents:\n%s", path, firstOnly, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// checkReadPaths fails unless a query whose reads of its documents are
// property paths (ReadPaths) returns its rows want over objects that hold
// only each document's values at those paths, as an engine that parses only
// them yields (with each document's text as Raw for a SELECT *).
func checkReadPaths(t *testing.T, q *Query, docs []*jsonv.Object, want []string, opts ExecOptions) {
	t.Helper()
	paths, rawRows, ok := q.ReadPaths(opts.Params)
	if !ok {
		return
	}
	reduced := make([]*jsonv.Object, len(docs))
	for i, d := range docs {
		o := jsonv.NewObject(len(paths))
		for _, path := range paths {
			if v, present := d.GetPath(path); present {
				o.SetPath(path, v)
			}
		}
		reduced[i] = o
	}
	src := newSliceSource(reduced)
	if rawRows { // a SELECT * returns each document's stored text
		src.raws = make([][]byte, len(docs))
		for i, d := range docs {
			src.raws[i] = jsonv.Marshal(d)
		}
	}
	page, err := q.Execute(src, opts)
	if err != nil {
		t.Fatalf("over the values at %q only: %v", paths, err)
	}
	var got []string
	for _, r := range page.Rows {
		got = append(got, string(r))
	}
	if !equalRows(got, want) {
		t.Fatalf("over the values at %q only:\n%s\nover the documents:\n%s", paths, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// checkSortedKeys pages through q, two rows a page, over docs sorted by
// its first k ORDER BY keys for each k, each key in its direction and ties
// in seq order, as an index read in order yields them (the engine's path
// and composite indexes), with ExecOptions.SortedKeys k: the rows must be
// want, those of the unsorted run.
func checkSortedKeys(t *testing.T, q *Query, docs []*jsonv.Object, want []string, opts ExecOptions) {
	t.Helper()
	keys := q.Hints(opts.Params).OrderBy
	for k := 1; k <= len(keys); k++ {
		order := make([][]byte, len(docs))
		for i, d := range docs {
			for _, key := range keys[:k] {
				var v jsonv.Value = struct{}{} // undefined
				if present, ok := d.GetPath(key.Path); ok {
					v = present
				}
				order[i] = appendKey(order[i], v, key.Desc)
			}
		}
		idx := make([]int, len(docs))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return bytes.Compare(order[idx[a]], order[idx[b]]) < 0 })
		sorted := func() Source {
			src := &sliceSource{}
			for _, i := range idx {
				src.docs = append(src.docs, docs[i])
				src.seqs = append(src.seqs, uint64(i+1))
			}
			if k == len(keys) { // sorted by every key: the OFFSET's documents may be skipped
				return &skippingSource{sliceSource: src, most: halfway}
			}
			return src
		}
		paged := opts
		paged.PageSize, paged.SortedKeys, paged.Unordered, paged.TiesInSeqOrder = 2, k, true, true
		var got []string
		for {
			page, err := q.Execute(sorted(), paged)
			if err != nil {
				t.Fatalf("sorted by %d keys, page after %x: %v", k, paged.After, err)
			}
			for _, r := range page.Rows {
				got = append(got, string(r))
			}
			if !page.More || len(got) > len(want) {
				break
			}
			paged.After, paged.Emitted = page.Last, page.Emitted
		}
		if !equalRows(got, want) {
			t.Fatalf("sorted by %d keys, paged:\n%s\nunpaged:\n%s", k, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// halfway is how many documents of n a skippingSource passes over in the
// fuzz tests: about half, so that Execute skips the rest itself.
func halfway(n int) int { return (n + 1) / 2 }

// checkSkips fails unless q gives want, its rows over docs, also over a
// source that passes over documents when Execute asks it to (Skipper):
// all it is asked to, or half of them.
func checkSkips(t *testing.T, q *Query, docs []*jsonv.Object, want []string, opts ExecOptions) {
	t.Helper()
	for _, most := range []func(int) int{nil, halfway} {
		src := &skippingSource{sliceSource: newSliceSource(docs), most: most}
		page, err := q.Execute(src, opts)
		if err != nil {
			t.Fatalf("over a Skipper: %v", err)
		}
		var got []string
		for _, r := range page.Rows {
			got = append(got, string(r))
		}
		if !equalRows(got, want) {
			t.Fatalf("over a Skipper that passed over %d documents:\n%s\nover the documents:\n%s", src.skipped, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// checkBlanks fails unless q gives over Blanks the rows (or the error) it
// gives over as many empty documents read one by one.
func checkBlanks(t *testing.T, q *Query, opts ExecOptions) {
	t.Helper()
	const n = 5
	run := func(src Source) (string, error) {
		page, err := q.Execute(src, opts)
		if err != nil {
			return "", err
		}
		var rows []string
		for _, r := range page.Rows {
			rows = append(rows, string(r))
		}
		return strings.Join(rows, "\n"), nil
	}
	blanks := make([]*jsonv.Object, n)
	for i := range blanks {
		blanks[i] = jsonv.NewObject(0)
	}
	want, wantErr := run(newSliceSource(blanks))
	got, err := run(&Blanks{N: n})
	if (err == nil) != (wantErr == nil) || got != want {
		t.Fatalf("over Blanks{%d}:\n%s (%v)\nover %d empty documents:\n%s (%v)", n, got, err, n, want, wantErr)
	}
}

// checkPathConditions fails unless every document that gives a row when it
// is the only one satisfies each of q's path conditions (Query.PathConditions)
// by its value at the path: as its float64 value when the condition does not
// read a number's spelling, and without one when it has none. The engine
// looks up only the documents whose value satisfies one.
func checkPathConditions(t *testing.T, q *Query, docs []*jsonv.Object, opts ExecOptions) {
	t.Helper()
	conds := q.PathConditions(opts.Params)
	if len(conds) == 0 || q.Hints(opts.Params).Aggregate {
		return
	}
	for i, d := range docs {
		page, err := q.Execute(newSliceSource(docs[i:i+1]), opts)
		if err != nil || len(page.Rows) == 0 {
			continue
		}
		for _, c := range conds {
			v, present := d.GetPath(c.Path)
			if n, ok := v.(jsonv.Number); ok && !c.Spelled {
				v = jsonv.NumberFromFloat(n.Float64())
			}
			if !c.Holds(v, present, opts.Now) {
				t.Fatalf("document %d gives rows %q, but fails the condition on %q", i, page.Rows, c.Path)
			}
		}
	}
}

// hintHolds reports whether d satisfies hint w; ranges and IS_DEFINED are
// taken to hold. An element hint holds when one of the values its path
// reaches through the arrays' elements satisfies it.
func hintHolds(w Hint, d *jsonv.Object) bool {
	for _, v := range valuesAt(d, w.Path) {
		switch w.Kind {
		case HintEq, HintIn:
			if slices.ContainsFunc(w.Values, func(x jsonv.Value) bool { return jsonv.Equal(v, x) }) {
				return true
			}
		case HintPrefix:
			if s, ok := v.(string); ok && strings.HasPrefix(s, w.Values[0].(string)) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// valuesAt returns the values at path in v, each element of an array at an
// ElementSegment standing for it.
func valuesAt(v jsonv.Value, path []string) []jsonv.Value {
	if len(path) == 0 {
		return []jsonv.Value{v}
	}
	if path[0] == ElementSegment {
		a, _ := v.([]jsonv.Value)
		var out []jsonv.Value
		for _, el := range a {
			out = append(out, valuesAt(el, path[1:])...)
		}
		return out
	}
	o, ok := v.(*jsonv.Object)
	if !ok {
		return nil
	}
	m, ok := o.Get(path[0])
	if !ok {
		return nil
	}
	return valuesAt(m, path[1:])
}
