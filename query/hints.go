package query

import (
	"maps"
	"slices"
	"strings"

	"github.com/lethe-db/lethe/jsonv"
)

// Hints describe a query to the engine's index planner. They come from the
// syntax alone (no I/O), and every hint is a necessary condition: a document
// that fails one produces no row, so the engine may feed Execute only the
// documents an index finds for any subset of them. Ignoring hints is always
// correct.
type Hints struct {
	// Where lists the top-level AND conjuncts of WHERE that constrain a
	// scalar property path of the document (not a JOIN or IN variable, no
	// array index) in a way an index can serve.
	Where []Hint
	// Conjuncts counts the top-level AND conjuncts of WHERE, hinted or not:
	// when it equals len(Where), every one of them is a hint.
	Conjuncts int
	// OrderBy lists the ORDER BY keys when every key is such a path; nil
	// otherwise.
	OrderBy []OrderHint
	// Streaming reports that rows come out in source order (no ORDER BY,
	// GROUP BY, aggregate or DISTINCT): Execute stops reading once the page
	// is full, and ResumeSeq gives the seq a later page restarts at.
	Streaming bool
	// Aggregate reports GROUP BY or aggregate functions: every page reads
	// the whole source.
	Aggregate bool
}

// HintKind says how a Hint constrains its path.
type HintKind int

const (
	// HintEq: the value equals Values[0] (path = v, or a bare path, which
	// must be true).
	HintEq HintKind = iota + 1
	// HintIn: the value equals one of Values (path IN (...)); Values may be
	// empty, when no document can match.
	HintIn
	// HintRange: the value lies between Lo and Hi (<, <=, >, >=, BETWEEN).
	// Comparisons hold only between values of one type, so only values of
	// the bounds' type can match; when both bounds are set and their types
	// differ, nothing matches.
	HintRange
	// HintPrefix: the value is a string starting with Values[0]
	// (STARTSWITH(path, 'p') without ignoring case).
	HintPrefix
	// HintDefined: the path is defined (IS_DEFINED(path)).
	HintDefined
)

// String returns the kind's name, e.g. "eq".
func (k HintKind) String() string {
	switch k {
	case HintEq:
		return "eq"
	case HintIn:
		return "in"
	case HintRange:
		return "range"
	case HintPrefix:
		return "prefix"
	case HintDefined:
		return "defined"
	}
	return "unknown"
}

// Hint is one necessary condition on a document path. Values, Lo and Hi are
// null, booleans, numbers or strings, with parameters already resolved.
type Hint struct {
	Path   []string // property names from the document root
	Kind   HintKind
	Values []jsonv.Value // HintEq (one), HintIn (any number), HintPrefix (one string)

	// HintRange bounds: Lo when HasLo, Hi when HasHi; each bound is
	// included if its Incl is set.
	Lo, Hi         jsonv.Value
	LoIncl, HiIncl bool
	HasLo, HasHi   bool
	// Element says Path goes through the elements of an array (its
	// ElementSegment segments): the hint holds for one of the values
	// there. ARRAY_CONTAINS(c.tags, 'a') and "JOIN t IN c.tags WHERE t =
	// 'a'" both give the hint of kind HintEq on tags/[].
	Element bool
}

// OrderHint is one ORDER BY key that is a document path.
type OrderHint struct {
	Path []string
	Desc bool
}

// Hints analyses the query for the index planner, resolving parameters from
// params. A conjunct whose constant is a missing parameter, or not a scalar,
// gives no hint.
func (q *Query) Hints(params map[string]jsonv.Value) Hints {
	s := q.stmt
	h := Hints{
		Streaming: s.plan == planStream && s.From != nil,
		Aggregate: s.plan == planGroup || s.plan == planAggregate,
	}
	a := hintAnalyzer{params: params}
	if s.From == nil || s.From.In || !a.rootPrefix(s.From.X) {
		return h
	}
	a.root = s.From.Alias.Name
	if s.Where != nil {
		// WHERE may constrain the elements a JOIN binds: "JOIN t IN
		// c.tags WHERE t = 'x'" holds for a document only if an element
		// of its tags is 'x'.
		w := a
		for _, j := range s.Joins {
			if array, ok := w.path(j.X); ok && j.In && j.Alias != nil {
				w = w.withElements(j.Alias.Name, array)
			}
		}
		h.Conjuncts = w.conjuncts(s.Where, &h.Where)
	}
	for _, o := range s.OrderBy {
		path, ok := a.path(o.X)
		if !ok {
			h.OrderBy = nil
			break
		}
		h.OrderBy = append(h.OrderBy, OrderHint{Path: path, Desc: o.Desc})
	}
	return h
}

type hintAnalyzer struct {
	params map[string]jsonv.Value
	root   string   // the FROM alias
	prefix []string // the document path the alias stands for
	// elems maps the aliases that JOIN ... IN binds to the elements of an
	// array to the document path of those elements (ending with
	// ElementSegment).
	elems map[string][]string
}

// ElementSegment is the path segment that stands for any element of the
// array at the path before it, in the path of a hint with Element set.
const ElementSegment = "[]"

// rootPrefix records the document path of a top-level FROM path (c, or
// c.children); false if it has an array index.
func (a *hintAnalyzer) rootPrefix(x Expr) bool {
	for {
		switch y := x.(type) {
		case *Ident:
			// Reverse: the names were collected from the end.
			for i, j := 0, len(a.prefix)-1; i < j; i, j = i+1, j-1 {
				a.prefix[i], a.prefix[j] = a.prefix[j], a.prefix[i]
			}
			return true
		case *SelectorExpr:
			a.prefix = append(a.prefix, y.Sel.Name)
			x = y.X
		case *IndexExpr:
			s, ok := y.Index.(*Literal).Value.(string)
			if !ok {
				return false
			}
			a.prefix = append(a.prefix, s)
			x = y.X
		default:
			return false
		}
	}
}

// path returns the document path of x if it is the root alias followed by
// property names (c.a.b, c["a"], c[@name] with a string parameter).
func (a *hintAnalyzer) path(x Expr) ([]string, bool) {
	var rev []string
	for {
		switch y := x.(type) {
		case *ParenExpr:
			x = y.X
			continue
		case *Ident:
			base := a.prefix
			if y.Name != a.root {
				if base = a.elems[y.Name]; base == nil {
					return nil, false
				}
			}
			path := append([]string(nil), base...)
			for i := len(rev) - 1; i >= 0; i-- {
				path = append(path, rev[i])
			}
			return path, len(path) > 0
		case *SelectorExpr:
			rev = append(rev, y.Sel.Name)
			x = y.X
			continue
		case *IndexExpr:
			v, ok := a.constant(y.Index)
			s, isString := v.(string)
			if !ok || !isString || s == ElementSegment {
				return nil, false // a member named "[]" is not the elements
			}
			rev = append(rev, s)
			x = y.X
			continue
		}
		return nil, false
	}
}

// constant returns the value of a literal or parameter, or of a unary minus
// applied to one.
func (a *hintAnalyzer) constant(x Expr) (jsonv.Value, bool) {
	switch y := x.(type) {
	case *ParenExpr:
		return a.constant(y.X)
	case *Literal:
		return y.Value, y.Kind != UNDEFINED
	case *Param:
		v, ok := a.params[y.Name]
		return v, ok
	case *UnaryExpr:
		if y.Op != SUB {
			return nil, false
		}
		v, ok := a.constant(y.X)
		if !ok {
			return nil, false
		}
		v = unaryOp(SUB, v)
		return v, !isUndefined(v)
	}
	return nil, false
}

// scalar returns a constant that is null, a boolean, a number or a string.
func (a *hintAnalyzer) scalar(x Expr) (jsonv.Value, bool) {
	v, ok := a.constant(x)
	if !ok {
		return nil, false
	}
	switch kindOf(v) {
	case kindNull, kindBool, kindNumber, kindString:
		return v, true
	}
	return nil, false
}

// conjuncts appends the hints of x's AND conjuncts, and returns how many
// conjuncts it has.
func (a *hintAnalyzer) conjuncts(x Expr, out *[]Hint) int {
	n := 0
	eachConjunct(x, func(c Expr) {
		n++
		if h, ok := a.hint(c); ok {
			*out = append(*out, h)
		}
	})
	return n
}

// eachConjunct calls f with each of x's top-level AND conjuncts, in order,
// through parentheses.
func eachConjunct(x Expr, f func(Expr)) {
	switch y := x.(type) {
	case *ParenExpr:
		eachConjunct(y.X, f)
		return
	case *BinaryExpr:
		if y.Op == AND {
			eachConjunct(y.X, f)
			eachConjunct(y.Y, f)
			return
		}
	}
	f(x)
}

// withElements returns a copy of a in which alias stands for the elements
// of the array at the document path array (see elems).
func (a hintAnalyzer) withElements(alias string, array []string) hintAnalyzer {
	a.elems = maps.Clone(a.elems)
	if a.elems == nil {
		a.elems = map[string][]string{}
	}
	a.elems[alias] = append(slices.Clip(array), ElementSegment)
	return a
}

// flipped maps a comparison to the one with its operands swapped.
var flipped = map[Token]Token{EQL: EQL, LSS: GTR, LEQ: GEQ, GTR: LSS, GEQ: LEQ}

func (a *hintAnalyzer) hint(x Expr) (Hint, bool) {
	h, ok := a.hintOf(x)
	if ok && slices.Contains(h.Path, ElementSegment) {
		h.Element = true
	}
	return h, ok
}

// hintOf is hint but for Element, which follows from the path.
func (a *hintAnalyzer) hintOf(x Expr) (Hint, bool) {
	if path, ok := a.path(x); ok { // a bare path must be true
		return Hint{Path: path, Kind: HintEq, Values: []jsonv.Value{true}}, true
	}
	switch y := x.(type) {
	case *ParenExpr:
		return a.hint(y.X)
	case *BinaryExpr:
		if y.Op == OR {
			return a.anyOf(y)
		}
		op, ok := flipped[y.Op]
		if !ok {
			return Hint{}, false
		}
		path, ok := a.path(y.X)
		v, vok := a.scalar(y.Y)
		if !ok || !vok {
			if path, ok = a.path(y.Y); !ok {
				return Hint{}, false
			}
			if v, vok = a.scalar(y.X); !vok {
				return Hint{}, false
			}
		} else {
			op = y.Op
		}
		h := Hint{Path: path, Kind: HintRange}
		switch op {
		case EQL:
			h.Kind, h.Values = HintEq, []jsonv.Value{v}
		case LSS, LEQ:
			h.Hi, h.HasHi, h.HiIncl = v, true, op == LEQ
		case GTR, GEQ:
			h.Lo, h.HasLo, h.LoIncl = v, true, op == GEQ
		}
		return h, true
	case *InExpr:
		path, ok := a.path(y.X)
		if !ok || y.Not {
			return Hint{}, false
		}
		vals := []jsonv.Value{}
		for _, item := range y.List {
			v, ok := a.constant(item)
			if !ok {
				return Hint{}, false
			}
			switch kindOf(v) {
			case kindNull, kindBool, kindNumber, kindString:
				vals = append(vals, v)
			default: // an array or object: no index can serve it
				return Hint{}, false
			}
		}
		return Hint{Path: path, Kind: HintIn, Values: vals}, true
	case *BetweenExpr:
		path, ok := a.path(y.X)
		lo, lok := a.scalar(y.Lo)
		hi, hok := a.scalar(y.Hi)
		if !ok || y.Not || !lok || !hok {
			return Hint{}, false
		}
		return Hint{Path: path, Kind: HintRange, Lo: lo, Hi: hi, HasLo: true, HasHi: true, LoIncl: true, HiIncl: true}, true
	case *LikeExpr:
		return a.likeHint(y)
	case *SubqueryExpr:
		return a.existsHint(y)
	case *CallExpr:
		name := strings.ToUpper(y.Fun.Name)
		if len(y.Args) == 0 {
			return Hint{}, false
		}
		path, ok := a.path(y.Args[0])
		if !ok {
			return Hint{}, false
		}
		switch {
		case name == "IS_DEFINED" && len(y.Args) == 1:
			return Hint{Path: path, Kind: HintDefined}, true
		case name == "ARRAY_CONTAINS" && len(y.Args) >= 2 || name == "ARRAY_CONTAINS_ALL":
			// An element equals the value: a scalar compares alike
			// whether partial matches are asked for or not. Of ALL, any
			// one value is a necessary condition.
			v, ok := a.scalar(y.Args[1])
			if !ok {
				return Hint{}, false
			}
			return Hint{Path: append(path, ElementSegment), Kind: HintEq, Values: []jsonv.Value{v}}, true
		case name == "ARRAY_CONTAINS_ANY":
			vals := make([]jsonv.Value, 0, len(y.Args)-1)
			for _, arg := range y.Args[1:] {
				v, ok := a.scalar(arg)
				if !ok {
					return Hint{}, false
				}
				vals = append(vals, v)
			}
			return Hint{Path: append(path, ElementSegment), Kind: HintIn, Values: vals}, true
		case name == "STARTSWITH" && (len(y.Args) == 2 || len(y.Args) == 3):
			p, ok := a.constant(y.Args[1])
			if s, isString := p.(string); ok && isString {
				if len(y.Args) == 3 {
					if ic, ok := a.constant(y.Args[2]); !ok || ic != false {
						return Hint{}, false
					}
				}
				return Hint{Path: path, Kind: HintPrefix, Values: []jsonv.Value{s}}, true
			}
		}
	}
	return Hint{}, false
}

// MinMaxPath reports whether every aggregate of the query is MIN, or every
// one MAX, of one document path (returned, with whether they are MAX), in a
// query over whole documents with no GROUP BY, JOIN or ORDER BY. Over
// documents that come in that path's order, ascending for MIN and
// descending for MAX, with equal values in ascending seq, the first row
// that passes WHERE decides them all (ExecOptions.FirstRowDecides): MIN and
// MAX skip documents without the path, and keep, of equal values, the
// first row's.
func (q *Query) MinMaxPath() (path []string, max bool, ok bool) {
	s := q.stmt
	a, ok := s.documentAnalyzer(nil)
	if !ok || s.plan != planAggregate || len(s.aggs) == 0 || len(s.Joins) > 0 || len(s.OrderBy) > 0 {
		return nil, false, false
	}
	name := s.aggs[0].Name
	for _, agg := range s.aggs {
		p, isPath := a.path(agg.Arg)
		if agg.Name != name || name != "MIN" && name != "MAX" || !isPath || path != nil && !slices.Equal(p, path) {
			return nil, false, false
		}
		path = p
	}
	return path, name == "MAX", true
}

// existsHint is the hint of EXISTS(SELECT ... FROM t IN c.tags WHERE ...)
// (Cosmos DB's advice for filtering by an array's elements): EXISTS holds
// only if an element gives a row, which only one that satisfies the
// subquery's WHERE does, so a hint of that WHERE on the element (an equality
// or IN first, as the narrower) is one on the document.
func (a *hintAnalyzer) existsHint(x *SubqueryExpr) (Hint, bool) {
	s := x.stmt
	// An aggregate without GROUP BY gives its row whatever WHERE keeps, and
	// an alias named as the document's hides it.
	if x.Kind != EXISTS || s.From == nil || !s.From.In || s.From.Alias == nil || s.Where == nil ||
		s.plan == planAggregate || s.From.Alias.Name == a.root {
		return Hint{}, false
	}
	array, ok := a.path(s.From.X)
	if !ok {
		return Hint{}, false
	}
	inner := a.withElements(s.From.Alias.Name, array)
	var hints []Hint
	inner.conjuncts(s.Where, &hints)
	for _, h := range hints {
		if h.Kind.oneOf() {
			return h, true
		}
	}
	if len(hints) > 0 {
		return hints[0], true
	}
	return Hint{}, false
}

// anyOf is the hint of an OR whose every side is an equality or IN on one
// path: an IN of all their values, which the index serves as it serves IN
// ("c.user = 'a' OR c.user = 'b'"). An OR of anything else gives none.
func (a *hintAnalyzer) anyOf(x *BinaryExpr) (Hint, bool) {
	l, lok := a.hint(x.X)
	r, rok := a.hint(x.Y)
	if !lok || !rok || !slices.Equal(l.Path, r.Path) || l.Element != r.Element || !l.Kind.oneOf() || !r.Kind.oneOf() {
		return Hint{}, false
	}
	return Hint{Path: l.Path, Kind: HintIn, Values: append(slices.Clip(l.Values), r.Values...), Element: l.Element}, true
}

// oneOf reports whether a hint of kind k holds its path to a list of values.
func (k HintKind) oneOf() bool { return k == HintEq || k == HintIn }

// likeHint is the hint of X LIKE pattern: the pattern's literal characters
// before its first wildcard are a prefix every match starts with ("c.name
// LIKE 'ab%'" is STARTSWITH(c.name, 'ab')), and a pattern without wildcards
// is an equality. None for NOT LIKE, a pattern that starts with a wildcard,
// or one that is not a constant string.
func (a *hintAnalyzer) likeHint(x *LikeExpr) (Hint, bool) {
	path, ok := a.path(x.X)
	if !ok || x.Not {
		return Hint{}, false
	}
	v, ok := a.constant(x.Pattern)
	pattern, isString := v.(string)
	if !ok || !isString {
		return Hint{}, false
	}
	var prefix strings.Builder
	literal := true // no wildcard at all
	for _, it := range compileLike(pattern, x.escape()) {
		if it.kind != likeChar {
			literal = false
			break
		}
		prefix.WriteRune(it.char)
	}
	switch {
	case literal:
		return Hint{Path: path, Kind: HintEq, Values: []jsonv.Value{prefix.String()}}, true
	case prefix.Len() == 0:
		return Hint{}, false
	}
	return Hint{Path: path, Kind: HintPrefix, Values: []jsonv.Value{prefix.String()}}, true
}

// NeedsQueryPlan reports whether the rows this query gives over several
// partitions must be combined by more than concatenation: it has ORDER BY,
// GROUP BY, an aggregate, DISTINCT, TOP or OFFSET LIMIT. Cosmos DB's gateway
// refuses such a query across partitions and hands the client a query plan
// to run it itself, one partition key range at a time. A query without FROM
// reads no documents, gives the same rows whatever the partitions, and needs
// no plan.
func (q *Query) NeedsQueryPlan() bool {
	return q.ReadsDocuments() && (q.stmt.plan != planStream || q.stmt.Top != nil || q.stmt.Limit != nil)
}

// ReadsDocuments reports whether the query has a FROM clause. One without
// (SELECT VALUE 1) gives the same rows wherever it runs, so a client must
// run it in one partition key range only, not once per range.
func (q *Query) ReadsDocuments() bool { return q.stmt.From != nil }

// PinnedPath returns the single value a top-level conjunct of WHERE requires
// at the document path (path = v, or path IN (v)), with parameters resolved
// from params; ok is false if no conjunct pins the path to one value.
func (h Hints) PinnedPath(path []string) (v jsonv.Value, ok bool) {
	for _, w := range h.Where {
		if w.Element || !slices.Equal(w.Path, path) {
			continue
		}
		if (w.Kind == HintEq || w.Kind == HintIn) && len(w.Values) == 1 {
			return w.Values[0], true
		}
	}
	return nil, false
}
