package query

import (
	"slices"
	"strings"

	"github.com/lethe-db/lethe/jsonv"
)

// OnlyPath returns the one document path that a query reading every document
// it selects looks at: an aggregate, GROUP BY or DISTINCT over whole documents
// (no JOIN, FROM ... IN or subquery) whose every reference to its FROM alias
// is that property path (c.status, c["status"], c[@name]). Executed over
// objects that hold only each document's value at the path (or nothing, where
// a document lacks it), such a query returns what it returns over the
// documents themselves, in any order the source yields them (see
// ExecOptions.Unordered): an engine may then read the values from an index
// instead of the documents.
//
// spelled reports whether the text of a number at the path may reach a
// result: a number's value is all that comparisons, arithmetic, SUM, AVG,
// COUNT and the IS_ type checks see, but a select list, a GROUP BY key, MIN,
// MAX or another function may return the number as the document spells it
// (5.0, 5e0), which an index that holds only its value cannot give.
func (q *Query) OnlyPath(params map[string]jsonv.Value) (path []string, spelled bool, ok bool) {
	s := q.stmt
	switch s.plan {
	case planAggregate, planGroup, planDistinct, planOrderDistinct:
	default:
		return nil, false, false
	}
	if s.From == nil || s.From.In || len(s.Joins) > 0 || s.Star {
		return nil, false, false
	}
	if _, whole := s.From.X.(*Ident); !whole {
		return nil, false, false
	}
	w := pathWalk{a: hintAnalyzer{params: params, root: s.From.Alias.Name}}
	for _, it := range s.Items {
		w.visit(it.X, false)
	}
	w.visit(s.Where, true)
	for _, k := range s.GroupBy {
		w.visit(k, false)
	}
	for _, o := range s.OrderBy {
		w.visit(o.X, true)
	}
	if w.failed || w.path == nil {
		return nil, false, false
	}
	return w.path, w.spelled, true
}

// pathWalk finds the one document path an expression tree reads, and
// whether a number's spelling there may reach its value (see OnlyPath).
type pathWalk struct {
	a       hintAnalyzer
	path    []string
	spelled bool
	failed  bool
}

// visit walks x; valueOnly says that only the value of what x yields
// matters to its parent, not a number's spelling.
func (w *pathWalk) visit(x Expr, valueOnly bool) {
	if x == nil || w.failed {
		return
	}
	if p, ok := w.a.path(x); ok {
		if w.path != nil && !slices.Equal(w.path, p) {
			w.failed = true
		}
		w.path = p
		w.spelled = w.spelled || !valueOnly
		return
	}
	switch y := x.(type) {
	case *Ident, *SubqueryExpr:
		// The whole document, or a query of its own.
		w.failed = true
	case *BinaryExpr:
		// Every operator but ?? makes a new value: a comparison's or
		// logic's boolean, arithmetic's number, a concatenation's string.
		w.visit(y.X, valueOnly || y.Op != COALESCE)
		w.visit(y.Y, valueOnly || y.Op != COALESCE)
	case *UnaryExpr:
		w.visit(y.X, valueOnly || y.Op != ADD) // +x is x
	case *InExpr, *BetweenExpr, *LikeExpr:
		eachChild(x, func(c Expr) bool { w.visit(c, true); return true })
	case *CondExpr:
		w.visit(y.Cond, true)
		w.visit(y.Then, valueOnly)
		w.visit(y.Else, valueOnly)
	case *AggregateExpr:
		w.visit(y.Arg, valueOnly || y.Name != "MIN" && y.Name != "MAX")
	case *CallExpr:
		// A function may return its argument, or turn its text into a
		// value (ToString): only the type checks see nothing but its type.
		typeCheck := strings.HasPrefix(strings.ToUpper(y.Fun.Name), "IS_")
		eachChild(x, func(c Expr) bool { w.visit(c, typeCheck); return true })
	default:
		eachChild(x, func(c Expr) bool { w.visit(c, valueOnly); return true })
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
// iterate, and it has no subquery and no SELECT *. Executed over objects that
// hold only each document's values at those paths, it returns what it
// returns over the documents themselves, so an engine may parse only those
// values. A path that another returned path leads to is left out: the value
// of the shorter holds it.
func (q *Query) ReadPaths(params map[string]jsonv.Value) ([][]string, bool) {
	s := q.stmt
	if s.From == nil || s.From.In || s.Star {
		return nil, false
	}
	if _, whole := s.From.X.(*Ident); !whole {
		return nil, false
	}
	a := hintAnalyzer{params: params, root: s.From.Alias.Name}
	var paths [][]string
	failed := false
	var visit func(x Expr)
	visit = func(x Expr) {
		if x == nil || failed {
			return
		}
		if p, ok := a.path(x); ok {
			paths = append(paths, p)
			return
		}
		switch y := x.(type) {
		case *Ident:
			failed = failed || y.Name == a.root // the whole document
		case *SubqueryExpr:
			failed = true
		default:
			eachChild(x, func(c Expr) bool { visit(c); return !failed })
		}
	}
	for _, it := range s.Items {
		visit(it.X)
	}
	for _, j := range s.Joins {
		visit(j.X)
	}
	visit(s.Where)
	for _, k := range s.GroupBy {
		visit(k)
	}
	for _, o := range s.OrderBy {
		visit(o.X)
	}
	if failed {
		return nil, false
	}
	slices.SortFunc(paths, slices.Compare)
	out := paths[:0]
	for _, p := range paths {
		if n := len(out); n > 0 && len(out[n-1]) <= len(p) && slices.Equal(out[n-1], p[:len(out[n-1])]) {
			continue // the same path, or one the last kept leads to
		}
		out = append(out, p)
	}
	return out, true
}
