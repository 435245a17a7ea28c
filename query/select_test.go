package query

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe/jsonv"
)

// TestSelect runs testdata/select/*.txt, scripts in the style of promqltest.
// Commands:
//
//	load      the input holds one JSON document per line, with seqs 1, 2, ...;
//	          it replaces the documents of the file's later cases
//	params    the input is a JSON object of parameter values (names without @)
//	query     runs the input statement and prints one row per line, "(no
//	          rows)", or the error. Every query also runs with page sizes 1,
//	          2 and 3, over a source that seeks with ResumeSeq, and over the
//	          documents shuffled with ExecOptions.Unordered: each must give
//	          the same rows, or the test fails.
//	pages n   runs the statement in pages of n rows, seeking with ResumeSeq,
//	          and prints each page with the documents it examined
//	hints     prints Hints for the input statement with the current params
func TestSelect(t *testing.T) {
	for _, path := range testFiles(t, "select") {
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
				case "query":
					return runQueryCase(t, tc, docs, params)
				case "pages":
					return runPagesCase(t, tc, docs, params)
				case "hints":
					q, err := Parse(tc.input)
					if err != nil {
						return "parse error: " + errorText(err)
					}
					return hintsText(q.Hints(params))
				}
				t.Fatalf("%s: unknown command %q", tc, tc.cmd)
				return ""
			})
		})
	}
}

// testNow is the instant every test query runs at.
var testNow = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

func runQueryCase(t *testing.T, tc *testCase, docs []*jsonv.Object, params map[string]jsonv.Value) string {
	q, err := Parse(tc.input)
	if err != nil {
		return "parse error: " + errorText(err)
	}
	want, err := runAll(q, newSliceSource(docs), params, 1000, false)
	if err != nil {
		return "error: " + err.Error()
	}
	checkPaging(t, tc.String(), q, docs, params, want)
	if len(want) == 0 {
		return "(no rows)"
	}
	return strings.Join(want, "\n")
}

// checkPaging runs q in small pages, with seeking, with raw documents and
// over a shuffled unordered source, and fails unless each gives want.
func checkPaging(t *testing.T, name string, q *Query, docs []*jsonv.Object, params map[string]jsonv.Value, want []string) {
	t.Helper()
	for _, size := range []int{1, 2, 3} {
		src := newSliceSource(docs)
		src.seek, src.raw = true, size == 2
		got, err := runAll(q, src, params, size, false)
		if err != nil {
			t.Errorf("%s: page size %d: %v", name, size, err)
			continue
		}
		if !equalRows(got, want) {
			t.Errorf("%s: page size %d:\n got %s\nwant %s", name, size, strings.Join(got, " "), strings.Join(want, " "))
		}
	}
	rng := rand.New(rand.NewSource(int64(len(docs))))
	for _, size := range []int{1, 3, 1000} {
		src := newSliceSource(docs)
		rng.Shuffle(len(src.docs), func(i, j int) {
			src.docs[i], src.docs[j] = src.docs[j], src.docs[i]
			src.seqs[i], src.seqs[j] = src.seqs[j], src.seqs[i]
		})
		got, err := runAll(q, src, params, size, true)
		if err != nil {
			t.Errorf("%s: unordered, page size %d: %v", name, size, err)
			continue
		}
		if !equalRows(got, want) {
			t.Errorf("%s: unordered, page size %d:\n got %s\nwant %s", name, size, strings.Join(got, " "), strings.Join(want, " "))
		}
	}
}

func equalRows(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func runPagesCase(t *testing.T, tc *testCase, docs []*jsonv.Object, params map[string]jsonv.Value) string {
	var size int
	if len(tc.args) != 1 || func() error { _, err := fmt.Sscan(tc.args[0], &size); return err }() != nil || size <= 0 {
		t.Fatalf("%s: pages needs a page size", tc)
	}
	q, err := Parse(tc.input)
	if err != nil {
		return "parse error: " + errorText(err)
	}
	var b strings.Builder
	var after Cursor
	emitted := 0
	for i := 1; ; i++ {
		src := newSliceSource(docs)
		src.seek = true
		src.reset(q, after)
		page, err := q.Execute(src, ExecOptions{Params: params, Now: testNow, PageSize: size, After: after, Emitted: emitted})
		if err != nil {
			return b.String() + "error: " + err.Error()
		}
		fmt.Fprintf(&b, "page %d:", i)
		for _, r := range page.Rows {
			b.WriteString(" " + string(r))
		}
		fmt.Fprintf(&b, " (examined %d)\n", page.Examined)
		if !page.More || i > 100 {
			b.WriteString("end")
			return b.String()
		}
		after, emitted = page.Last, page.Emitted
	}
}

// runAll pages through q over src and returns every row. It checks the
// paging contract as it goes: pages are no larger than asked, cursors
// increase, Emitted adds up, and a page that says More has rows.
func runAll(q *Query, src *sliceSource, params map[string]jsonv.Value, size int, unordered bool) ([]string, error) {
	var rows []string
	var after Cursor
	emitted := 0
	for pages := 0; ; pages++ {
		if pages > 10000 {
			return nil, errors.New("too many pages")
		}
		src.reset(q, after)
		page, err := q.Execute(src, ExecOptions{Params: params, Now: testNow, PageSize: size, After: after, Emitted: emitted, Unordered: unordered})
		if err != nil {
			return nil, err
		}
		if len(page.Rows) > size {
			return nil, fmt.Errorf("page of %d rows for page size %d", len(page.Rows), size)
		}
		if page.Emitted != emitted+len(page.Rows) {
			return nil, fmt.Errorf("Emitted = %d after %d + %d rows", page.Emitted, emitted, len(page.Rows))
		}
		for _, r := range page.Rows {
			rows = append(rows, string(r))
		}
		if !page.More {
			return rows, nil
		}
		if len(page.Rows) == 0 {
			return nil, errors.New("an empty page says More")
		}
		if after != nil && bytes.Compare(page.Last, after) <= 0 {
			return nil, fmt.Errorf("cursor %x does not follow %x", page.Last, after)
		}
		after, emitted = page.Last, page.Emitted
	}
}

// sliceSource is a Source over documents in memory. With seek set it starts
// where ResumeSeq says, as the engine does; with raw set it implements Raw.
type sliceSource struct {
	docs []*jsonv.Object
	seqs []uint64
	i    int
	seek bool
	raw  bool
	last []byte
	// raws, when set, are the documents' Raw texts, whatever docs hold.
	raws [][]byte
}

func newSliceSource(docs []*jsonv.Object) *sliceSource {
	s := &sliceSource{docs: append([]*jsonv.Object(nil), docs...)}
	for i := range docs {
		s.seqs = append(s.seqs, uint64(i+1))
	}
	return s
}

func (s *sliceSource) reset(q *Query, after Cursor) {
	s.i = 0
	if seq, ok := q.ResumeSeq(after); ok && s.seek {
		for s.i < len(s.docs) && s.seqs[s.i] < seq {
			s.i++
		}
	}
}

func (s *sliceSource) Next() (*jsonv.Object, uint64, bool, error) {
	if s.i >= len(s.docs) {
		return nil, 0, false, nil
	}
	s.i++
	if s.raw {
		s.last = jsonv.Marshal(s.docs[s.i-1])
	}
	return s.docs[s.i-1], s.seqs[s.i-1], true, nil
}

// skippingSource is a sliceSource that is a Skipper: it passes over at most
// most(n) of the n documents it is asked to (all of them when most is nil),
// and counts the documents it passed over.
type skippingSource struct {
	*sliceSource
	most    func(n int) int
	skipped int
	calls   int
}

func (s *skippingSource) Skip(n, _ int) (int, error) {
	s.calls++
	if s.most != nil {
		n = s.most(n)
	}
	n = min(n, len(s.docs)-s.i)
	s.i += n
	s.skipped += n
	return n, nil
}

// rawSliceSource adds Raw to a sliceSource.
func (s *sliceSource) Raw() []byte {
	if s.raws != nil {
		return s.raws[s.i-1]
	}
	if !s.raw {
		return nil
	}
	return s.last
}

func hintsText(h Hints) string {
	var b strings.Builder
	fmt.Fprintf(&b, "streaming=%v aggregate=%v\n", h.Streaming, h.Aggregate)
	for _, c := range h.Where {
		if c.Element {
			b.WriteString("element ")
		}
		fmt.Fprintf(&b, "%s %s", c.Kind, pathText(c.Path))
		for _, v := range c.Values {
			b.WriteString(" " + string(jsonv.Marshal(v)))
		}
		if c.Kind == HintRange {
			lo, hi := "(-", "+)"
			if c.HasLo {
				lo = "(" + string(jsonv.Marshal(c.Lo))
				if c.LoIncl {
					lo = "[" + lo[1:]
				}
			}
			if c.HasHi {
				hi = string(jsonv.Marshal(c.Hi)) + ")"
				if c.HiIncl {
					hi = hi[:len(hi)-1] + "]"
				}
			}
			b.WriteString(" " + lo + " " + hi)
		}
		b.WriteByte('\n')
	}
	for _, o := range h.OrderBy {
		dir := "asc"
		if o.Desc {
			dir = "desc"
		}
		fmt.Fprintf(&b, "order %s %s\n", pathText(o.Path), dir)
	}
	return b.String()
}

// pathText joins a path with dots, quoting the names that are not plain
// identifiers.
func pathText(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = p
		if Lookup(p) != IDENT || strings.ContainsFunc(p, func(r rune) bool {
			return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) {
			parts[i] = string(jsonv.Marshal(p))
		}
	}
	return strings.Join(parts, ".")
}

// loadDocs parses a load command's input: one JSON document per line.
func loadDocs(t *testing.T, input string) []*jsonv.Object {
	t.Helper()
	var docs []*jsonv.Object
	for _, line := range strings.Split(input, "\n") {
		if strings.TrimSpace(line) != "" {
			docs = append(docs, mustParseObject(t, line))
		}
	}
	return docs
}

// loadParams parses a params command's input: a JSON object of parameter
// values, by name without the '@'.
func loadParams(t *testing.T, input string) map[string]jsonv.Value {
	t.Helper()
	o := mustParseObject(t, input)
	params := make(map[string]jsonv.Value, o.Len())
	for i := 0; i < o.Len(); i++ {
		params[o.Key(i)] = o.Val(i)
	}
	return params
}
