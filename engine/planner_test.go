package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
)

// matches is the reference semantics of a filter on one document: what the
// executor would accept.
func matches(f filterSpec, doc *jsonv.Object) bool {
	v := jsonv.Value(doc)
	for _, s := range f.path {
		o, ok := v.(*jsonv.Object)
		if !ok {
			return false
		}
		if v, ok = o.Get(s); !ok {
			return false
		}
	}
	cmp := func(a, b jsonv.Value) (int, bool) {
		switch x := a.(type) {
		case jsonv.Number:
			y, ok := b.(jsonv.Number)
			if !ok {
				return 0, false
			}
			fx, fy := x.Float64(), y.Float64()
			switch {
			case fx < fy:
				return -1, true
			case fx > fy:
				return 1, true
			}
			return 0, true
		case string:
			y, ok := b.(string)
			if !ok {
				return 0, false
			}
			return strings.Compare(x, y), true
		}
		if jsonv.Equal(a, b) {
			return 0, true
		}
		return 0, false
	}
	switch f.kind {
	case filterEq, filterIn:
		for _, w := range f.values {
			if c, ok := cmp(v, w); ok && c == 0 {
				return true
			}
		}
		return false
	case filterPrefix:
		s, ok := v.(string)
		return ok && strings.HasPrefix(s, f.values[0].(string))
	case filterDefined:
		return true
	case filterRange:
		if f.hasLo {
			c, ok := cmp(v, f.lo)
			if !ok || c < 0 || (c == 0 && !f.loIncl) {
				return false
			}
		}
		if f.hasHi {
			c, ok := cmp(v, f.hi)
			if !ok || c > 0 || (c == 0 && !f.hiIncl) {
				return false
			}
		}
		return true
	}
	return false
}

// TestIndexRangesCoverExactly: for random documents and random filters of every
// kind, the index candidates include every matching document (a superset is
// all the planner promises), and for scalars shorter than the indexed prefix
// they are exactly the matches.
func TestIndexRangesCoverExactly(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	rng := rand.New(rand.NewPCG(7, 9))
	long := strings.Repeat("L", 200)
	values := []string{`1`, `2`, `2.5`, `-3`, `0`, `"a"`, `"ab"`, `"abc"`, `"b"`, `""`, `true`, `false`, `null`, `{"x":1}`, `[1,2]`, `"` + long + `1"`, `"` + long + `2"`, `"a\u0000b"`}
	docs := map[uint64]*jsonv.Object{}
	for i := range 300 {
		body := fmt.Sprintf(`{"id":"d%d","pk":"p"`, i)
		if rng.IntN(5) > 0 {
			body += `,"v":` + values[rng.IntN(len(values))]
		}
		body += `,"o":{"w":` + values[rng.IntN(len(values))] + `}}`
		res, err := te.CreateDocument(ctx, ref("c", "", "p"), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		o, _ := jsonv.ParseObject(res.Body)
		rid, _ := decodeRID(res.RID)
		docs[uint64(rid[8])|uint64(rid[9])<<8|uint64(rid[10])<<16] = o
	}
	parse := func(s string) jsonv.Value { v, _ := jsonv.Parse([]byte(s)); return v }
	var filters []filterSpec
	for _, path := range [][]string{{"v"}, {"o", "w"}} {
		for _, a := range values {
			filters = append(filters, filterSpec{path: path, kind: filterEq, values: []jsonv.Value{parse(a)}})
			filters = append(filters, filterSpec{path: path, kind: filterIn, values: []jsonv.Value{parse(a), parse(values[rng.IntN(len(values))])}})
			if s, ok := parse(a).(string); ok {
				filters = append(filters, filterSpec{path: path, kind: filterPrefix, values: []jsonv.Value{s}})
			}
			for _, b := range values {
				for _, incl := range [][2]bool{{true, true}, {false, false}, {true, false}} {
					filters = append(filters,
						filterSpec{path: path, kind: filterRange, lo: parse(a), hi: parse(b), hasLo: true, hasHi: true, loIncl: incl[0], hiIncl: incl[1]},
						filterSpec{path: path, kind: filterRange, lo: parse(a), hasLo: true, loIncl: incl[0]},
						filterSpec{path: path, kind: filterRange, hi: parse(b), hasHi: true, hiIncl: incl[1]})
				}
			}
		}
		filters = append(filters, filterSpec{path: path, kind: filterDefined})
	}
	err := te.store.View(ctx, func(r kv.Reader) error {
		s, err := te.scope(r, "db", "c", te.clock.Now().Unix())
		if err != nil {
			return err
		}
		for _, f := range filters {
			plan, ok := s.planIndex([]filterSpec{f})
			if !ok {
				// Only ranges across types or over non-scalars may refuse the index.
				if f.kind == filterRange || f.kind == filterEq || f.kind == filterIn {
					continue
				}
				t.Errorf("filter %+v not planned", f)
				continue
			}
			src := s.indexSource(r, plan, nil, 0)
			var got []uint64
			for {
				_, seq, ok, err := src.Next()
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				if len(got) > 0 && seq <= got[len(got)-1] {
					t.Errorf("filter %s %v on %v: sequence %d after %d, want increasing", f.kindName(), f.values, f.path, seq, got[len(got)-1])
				}
				got = append(got, seq)
			}
			for seq, doc := range docs {
				if matches(f, doc) && !slices.Contains(got, seq) {
					t.Errorf("filter %s %v on %v misses document %d (%s)", f.kindName(), f.values, f.path, seq, jsonv.Marshal(doc))
				}
			}
			if f.kind != filterDefined {
				for _, seq := range got {
					if !matches(f, docs[seq]) && !hasLongString(docs[seq], f.path) {
						t.Errorf("filter %s %+v yields non-matching document %s", f.kindName(), f, jsonv.Marshal(docs[seq]))
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (f filterSpec) kindName() string {
	return [...]string{"eq", "in", "prefix", "range", "defined"}[f.kind]
}

func hasLongString(doc *jsonv.Object, path []string) bool {
	s, ok := valueAt(doc, path).(string)
	return ok && len(s) > maxIndexedString
}

func TestIndexPolicyPaths(t *testing.T) {
	cases := []struct {
		inc, exc []string
		path     []string
		want     bool
	}{
		{[]string{"/*"}, []string{`/"_etag"/?`}, []string{"a"}, true},
		{[]string{"/*"}, []string{`/"_etag"/?`}, []string{"_etag"}, false},
		{[]string{"/*"}, []string{"/a/*"}, []string{"a", "b"}, false},
		{[]string{"/*"}, []string{"/a/*"}, []string{"b"}, true},
		{[]string{"/a/?"}, []string{"/*"}, []string{"a"}, true},
		{[]string{"/a/?"}, []string{"/*"}, []string{"a", "b"}, false},
		{[]string{"/a/*", "/a/b/?"}, []string{"/*", "/a/b/*"}, []string{"a", "b"}, true}, // /a/b/? is more precise
		{[]string{"/tags/[]/?"}, []string{"/*"}, []string{"tags", "[]"}, true},
		{[]string{"/tags/[]/?"}, []string{"/*"}, []string{"tags"}, false},
		{nil, []string{"/*"}, []string{"x"}, false},
	}
	for _, c := range cases {
		p := policyFromPaths("consistent", c.inc, c.exc)
		if got := p.indexed(c.path); got != c.want {
			t.Errorf("include %v exclude %v: indexed(%v) = %v; want %v", c.inc, c.exc, c.path, got, c.want)
		}
	}
	if policyFromPaths("none", []string{"/*"}, nil).indexed([]string{"a"}) {
		t.Error("mode none indexes")
	}
	for _, bad := range []string{"a", "", "//", "/?", "/a", "/a/", `/"a/?`, "/a*/?", "/a/b"} {
		if _, err := parsePathPattern(bad); err == nil {
			t.Errorf("parsePathPattern(%q) accepted", bad)
		}
	}
}

// TestIndexSourceReadsAPage checks that an equality or IN plan reads about a
// page of index entries for a page of documents, in sequence order without
// duplicates (a document whose array holds both IN values), and resumes from
// a sequence number where a continuation left off.
func TestIndexSourceReadsAPage(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	for i := range 300 {
		body := fmt.Sprintf(`{"id":"d%d","pk":"p","v":%d,"a":["x","y"]}`, i, i%3)
		if _, err := te.CreateDocument(ctx, ref("c", "", "p"), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	parse := func(s string) jsonv.Value { v, _ := jsonv.Parse([]byte(s)); return v }
	cases := []struct {
		name    string
		f       filterSpec
		matches int
	}{
		{"eq", filterSpec{path: []string{"v"}, kind: filterEq, values: []jsonv.Value{parse("1")}}, 100},
		{"in", filterSpec{path: []string{"v"}, kind: filterIn, values: []jsonv.Value{parse("2"), parse("0")}}, 200},
		{"in-both-array-values", filterSpec{path: []string{"a", "[]"}, kind: filterIn, values: []jsonv.Value{parse(`"x"`), parse(`"y"`)}}, 300},
	}
	err := te.store.View(ctx, func(r kv.Reader) error {
		s, err := te.scope(r, "db", "c", te.clock.Now().Unix())
		if err != nil {
			return err
		}
		for _, c := range cases {
			plan, ok := s.planIndex([]filterSpec{c.f})
			if !ok {
				t.Fatalf("%s: not planned", c.name)
			}
			drain := func(src *indexSource, limit int) []uint64 {
				var got []uint64
				for len(got) < limit {
					_, seq, ok, err := src.Next()
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						break
					}
					got = append(got, seq)
				}
				return got
			}
			// Looking documents up one at a time, or a page's at once.
			for _, batches := range []bool{false, true} {
				src := s.indexSource(r, plan, nil, 10)
				if batches {
					src = s.indexSource(answersBatches(r), plan, nil, 10)
				}
				page := drain(src, 10)
				if len(page) != 10 {
					t.Fatalf("%s: first page has %d documents", c.name, len(page))
				}
				// One entry ahead per range, and the duplicates of the page's documents.
				if limit := 2*10 + len(plan.ranges); src.scanned > limit || src.charged > src.scanned {
					t.Errorf("%s, batches %v: read %d index entries for a page of 10 (charged %d), want at most %d",
						c.name, batches, src.scanned, src.charged, limit)
				}
				src.close()
			}
			all := s.indexSource(r, plan, nil, 0)
			every := drain(all, 1000)
			if len(every) != c.matches {
				t.Errorf("%s: %d documents, want %d", c.name, len(every), c.matches)
			}
			if !slices.IsSorted(every) || len(slices.Compact(slices.Clone(every))) != len(every) {
				t.Errorf("%s: not in strictly increasing sequence order: %v", c.name, every)
			}
			resumed := s.indexSource(r, plan, nil, 0)
			resumed.seek(every[57])
			if rest := drain(resumed, 1000); !slices.Equal(rest, every[57:]) {
				t.Errorf("%s: resumed at %d: %v, want %v", c.name, every[57], rest, every[57:])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
