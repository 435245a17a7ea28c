package query

import (
	"slices"
	"strings"

	"github.com/lethe-db/lethe/jsonv"
)

// Spelling says how the text of a number at a path (5.0, 5e0,
// 9007199254740993) may reach a query's result, beyond its value, which is
// all that an index that holds a float64 gives.
type Spelling uint8

const (
	// SpellingIgnored: only the number's value counts (comparisons,
	// arithmetic, SUM, AVG, COUNT, the IS_ type checks).
	SpellingIgnored Spelling = iota
	// SpellingFirst: the number may be returned as it is spelled, but only
	// as the first document holding an equal value spells it: a GROUP BY
	// key, a DISTINCT row, MIN or MAX, a projected value. Of a run of equal
	// values, the first document's spelling is the one the result keeps.
	SpellingFirst
	// SpellingEach: every document's spelling may count, because a function
	// reads it (IntAdd and its kin read an integer's text exactly).
	SpellingEach
)

// OnlyPath returns the one document path that a query reading every document
// it selects looks at: an aggregate, GROUP BY or DISTINCT over whole documents
// (no JOIN, FROM ... IN or subquery) whose every reference to its FROM alias
// is that property path (c.status, c["status"], c[@name]). Executed over
// objects that hold only each document's value at the path (or nothing, where
// a document lacks it), such a query returns what it returns over the
// documents themselves, in any order the source yields them (see
// ExecOptions.Unordered): an engine may then read the values from an index
// instead of the documents. spelling says how much of a number's text the
// objects must keep.
func (q *Query) OnlyPath(params map[string]jsonv.Value) (path []string, spelling Spelling, ok bool) {
	s := q.stmt
	switch s.plan {
	case planAggregate, planGroup, planDistinct, planOrderDistinct:
	default:
		return nil, 0, false
	}
	a, ok := s.documentAnalyzer(params)
	if !ok || len(s.Joins) > 0 || s.Star {
		return nil, 0, false
	}
	w := pathWalk{a: a}
	w.statement(s)
	if w.failed || len(w.paths) != 1 {
		return nil, 0, false
	}
	return w.paths[0], w.spelling, true
}

// pathWalk finds the document paths an expression tree reads, each once, and
// how a number's spelling there may reach its value (see OnlyPath). It fails
// at a reference to the whole document, or a subquery.
type pathWalk struct {
	a        hintAnalyzer
	paths    [][]string
	spelling Spelling
	failed   bool
}

// statement walks every clause of s that reads its documents: the select
// list and GROUP BY keys, whose values reach the rows, and WHERE, ORDER BY
// and the arrays its JOINs iterate, which only decide which rows and in
// what order.
func (w *pathWalk) statement(s *selectStmt) {
	for _, it := range s.Items {
		w.visit(it.X, SpellingFirst)
	}
	for _, j := range s.Joins {
		w.visit(j.X, SpellingIgnored)
	}
	w.visit(s.Where, SpellingIgnored)
	for _, k := range s.GroupBy {
		w.visit(k, SpellingFirst)
	}
	for _, o := range s.OrderBy {
		w.visit(o.X, SpellingIgnored)
	}
}

// visit walks x, whose parent lets a number's spelling reach the result as
// spelling says.
func (w *pathWalk) visit(x Expr, spelling Spelling) {
	if x == nil || w.failed {
		return
	}
	if p, ok := w.a.path(x); ok {
		if !slices.ContainsFunc(w.paths, func(q []string) bool { return slices.Equal(q, p) }) {
			w.paths = append(w.paths, p)
		}
		w.spelling = max(w.spelling, spelling)
		return
	}
	switch y := x.(type) {
	case *Ident:
		// The whole document (a JOIN's alias reads what its array holds).
		w.failed = w.failed || y.Name == w.a.root
	case *SubqueryExpr:
		w.failed = true // a query of its own
	case *BinaryExpr:
		// Every operator but ?? makes a new value: a comparison's or
		// logic's boolean, arithmetic's number, a concatenation's string.
		if y.Op != COALESCE {
			spelling = SpellingIgnored
		}
		w.visit(y.X, spelling)
		w.visit(y.Y, spelling)
	case *UnaryExpr:
		if y.Op != ADD { // +x is x
			spelling = SpellingIgnored
		}
		w.visit(y.X, spelling)
	case *InExpr, *BetweenExpr, *LikeExpr:
		eachChild(x, func(c Expr) bool { w.visit(c, SpellingIgnored); return true })
	case *CondExpr:
		w.visit(y.Cond, SpellingIgnored)
		w.visit(y.Then, spelling)
		w.visit(y.Else, spelling)
	case *AggregateExpr:
		if y.Name != "MIN" && y.Name != "MAX" { // which keep the first of equal values
			spelling = SpellingIgnored
		}
		w.visit(y.Arg, spelling)
	case *CallExpr:
		// A function may return its argument, or turn its text into a
		// value (IntAdd reads an integer's text exactly): only the type
		// checks see nothing but its type.
		spelling = SpellingEach
		if strings.HasPrefix(strings.ToUpper(y.Fun.Name), "IS_") {
			spelling = SpellingIgnored
		}
		eachChild(x, func(c Expr) bool { w.visit(c, spelling); return true })
	default:
		eachChild(x, func(c Expr) bool { w.visit(c, spelling); return true })
	}
}

// OnePerValue reports whether, of the documents that share a value at the
// path OnlyPath returns, the query's result depends on the first (in seq
// order) alone: DISTINCT, or GROUP BY without aggregates, keep of equal rows
// the first document's, and a document adds nothing to them that an earlier
// one with the same value did not. An engine may then yield, of each value,
// the first live document only.
func (q *Query) OnePerValue() bool {
	s := q.stmt
	return s.plan == planDistinct || s.plan == planOrderDistinct || s.plan == planGroup && len(s.aggs) == 0
}

// ReadPaths returns the document paths a query over whole documents reads,
// when it reads nothing else of them: every reference to its FROM alias is a
// property path (c.a.b, c["a"]), in any clause and in the arrays its JOINs
// iterate, and it has no subquery. Executed over objects that hold only each
// document's values at those paths, it returns what it returns over the
// documents themselves, so an engine may parse only those values. A path
// that another returned path leads to is left out: the value of the shorter
// holds it. A SELECT * (without JOIN, DISTINCT or aggregates) reads the whole
// document only to return it, as the source's Raw text (see Source): rawRows
// reports that case, in which the paths are what its other clauses read, and
// the source must have every document's Raw.
func (q *Query) ReadPaths(params map[string]jsonv.Value) (paths [][]string, rawRows bool, ok bool) {
	s := q.stmt
	a, ok := s.documentAnalyzer(params)
	if !ok || s.Star && (len(s.Joins) > 0 || s.plan != planStream && s.plan != planOrder) {
		return nil, false, false // a DISTINCT * compares whole documents
	}
	w := pathWalk{a: a}
	w.statement(s)
	if w.failed {
		return nil, false, false
	}
	slices.SortFunc(w.paths, slices.Compare)
	for _, p := range w.paths {
		if n := len(paths); n > 0 && len(paths[n-1]) <= len(p) && slices.Equal(paths[n-1], p[:len(paths[n-1])]) {
			continue // one the last kept leads to
		}
		paths = append(paths, p)
	}
	return paths, s.Star, true
}

// documentAnalyzer returns the hint analyzer of a statement over whole
// documents (FROM c, FROM root r: not a path in them, not IN); false for
// other statements.
func (s *selectStmt) documentAnalyzer(params map[string]jsonv.Value) (hintAnalyzer, bool) {
	if s.From == nil || s.From.In {
		return hintAnalyzer{}, false
	}
	if _, whole := s.From.X.(*Ident); !whole {
		return hintAnalyzer{}, false
	}
	return hintAnalyzer{params: params, root: s.From.Alias.Name}, true
}
