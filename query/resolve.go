package query

import "strconv"

// The resolver runs after parsing, inside the parser's bailout, and reports
// errors the same way. It checks what the grammar cannot: that every
// identifier names an alias in scope, where parameters and aggregates may
// appear, the rules of SELECT * and GROUP BY, and the expression depth. It
// also derives what execution needs: output names, aggregate slots, group
// key references and the statement's plan.

type resolver struct {
	p        *parser
	paramsOK bool     // false in patch conditions
	params   []*Param // every parameter reference met, in resolution order
}

func (r *resolver) error(pos Pos, msg string) { r.p.error(pos, msg) }

// expr checks the expression x of a clause. scope lists the alias names
// visible to it. aggCtx says where x sits, for the message if it holds an
// aggregate ("in WHERE"); "" means aggregates are allowed (a select list).
func (r *resolver) expr(x Expr, scope []string, aggCtx string) {
	if deep := deeperThan(x, MaxExprDepth); deep != nil {
		r.error(deep.Pos(), "exceeded max expression depth")
	}
	r.walk(x, scope, aggCtx)
}

func (r *resolver) walk(x Expr, scope []string, aggCtx string) {
	Inspect(x, func(x Expr) bool {
		switch x := x.(type) {
		case *Ident:
			if !inScope(scope, x.Name) {
				r.error(x.NamePos, "undeclared identifier "+x.Name)
			}
		case *Param:
			r.param(x)
		case *AggregateExpr:
			if aggCtx != "" {
				r.error(x.Fun.NamePos, "aggregate function "+x.Name+" is not allowed "+aggCtx)
			}
			r.walk(x.Arg, scope, "inside another aggregate function")
			return false
		case *SubqueryExpr:
			r.stmt(x.stmt, scope, false)
			return false
		}
		return true
	})
}

func (r *resolver) param(x *Param) {
	if !r.paramsOK {
		r.error(x.At, "a patch condition cannot use parameters, found @"+x.Name)
	}
	r.params = append(r.params, x)
}

func inScope(scope []string, name string) bool {
	for _, a := range scope {
		if a == name {
			return true
		}
	}
	return false
}

// stmt resolves a statement whose enclosing statements bind the aliases in
// outer. At the top level, the first identifier of the FROM path is the
// container name, bound to each document; in a subquery it must be an alias
// in outer.
func (r *resolver) stmt(s *selectStmt, outer []string, top bool) {
	scope := outer[:len(outer):len(outer)]
	var own []string
	bind := func(a *Ident) {
		if a == nil {
			return
		}
		if inScope(own, a.Name) {
			r.error(a.NamePos, "duplicate alias "+a.Name)
		}
		own = append(own, a.Name)
		scope = append(scope, a.Name)
	}
	if s.Top != nil {
		r.count(s.Top)
	}
	if s.From != nil {
		if top {
			if deep := deeperThan(s.From.X, MaxExprDepth); deep != nil {
				r.error(deep.Pos(), "exceeded max expression depth")
			}
			s.container = pathRoot(s.From.X).Name
		} else {
			r.expr(s.From.X, scope, "in FROM")
		}
		bind(s.From.Alias)
	}
	for _, j := range s.Joins {
		if sub, ok := j.X.(*SubqueryExpr); ok {
			r.stmt(sub.stmt, scope, false)
		} else {
			r.expr(j.X, scope, "in JOIN")
		}
		bind(j.Alias)
	}
	s.aliases = own

	if s.Star {
		if s.From == nil {
			r.error(s.StarPos, "'SELECT *' is not valid if FROM clause is omitted")
		}
		if len(s.Joins) > 0 {
			r.error(s.StarPos, "'SELECT *' is only valid with a single input set")
		}
	}
	for _, it := range s.Items {
		r.expr(it.X, scope, "")
	}
	if s.Where != nil {
		r.expr(s.Where, scope, "in WHERE")
	}
	for _, g := range s.GroupBy {
		r.expr(g, scope, "in GROUP BY")
	}
	for _, o := range s.OrderBy {
		r.expr(o.X, scope, "in ORDER BY")
	}
	if s.Offset != nil {
		if s.Top != nil {
			r.error(s.Offset.Pos(), "OFFSET LIMIT cannot be combined with TOP")
		}
		r.count(s.Offset)
		r.count(s.Limit)
	}
	r.group(s)
	r.names(s)
	switch {
	case len(s.GroupBy) > 0:
		s.plan = planGroup
	case len(s.aggs) > 0:
		s.plan = planAggregate
	case s.Distinct && len(s.OrderBy) > 0:
		s.plan = planOrderDistinct
	case s.Distinct:
		s.plan = planDistinct
	case len(s.OrderBy) > 0:
		s.plan = planOrder
	default:
		s.plan = planStream
	}
}

// count records a parameter used as TOP, OFFSET or LIMIT.
func (r *resolver) count(x Expr) {
	if p, ok := x.(*Param); ok {
		r.param(p)
	}
}

// pathRoot returns the identifier a FROM path starts with.
func pathRoot(x Expr) *Ident {
	for {
		switch y := x.(type) {
		case *Ident:
			return y
		case *SelectorExpr:
			x = y.X
		case *IndexExpr:
			x = y.X
		default:
			return nil // not reached: parsePath builds only these
		}
	}
}

// group numbers the select list's aggregates and, for a grouped statement
// (GROUP BY or any aggregate), checks that the select list uses only group
// keys, aggregates and constants, wrapping each group key it uses.
func (r *resolver) group(s *selectStmt) {
	for _, it := range s.Items {
		Inspect(it.X, func(x Expr) bool {
			if a, ok := x.(*AggregateExpr); ok {
				a.slot = len(s.aggs)
				s.aggs = append(s.aggs, a)
				return false
			}
			return true
		})
	}
	if len(s.GroupBy) == 0 && len(s.aggs) == 0 {
		return
	}
	if s.Star {
		r.error(s.StarPos, "'SELECT *' is not valid with GROUP BY")
	}
	if len(s.OrderBy) > 0 {
		r.error(s.OrderPos, "ORDER BY is not supported with GROUP BY or aggregate functions")
	}
	keys := make([]string, len(s.GroupBy))
	for i, g := range s.GroupBy {
		keys[i] = ExprString(g)
	}
	for _, it := range s.Items {
		it.X = r.groupRewrite(it.X, keys)
	}
}

// groupRewrite wraps each maximal subexpression of x that equals a GROUP BY
// key (printed the same way) and rejects alias references outside them and
// outside aggregates.
func (r *resolver) groupRewrite(x Expr, keys []string) Expr {
	if len(keys) > 0 {
		k := ExprString(x)
		for i, key := range keys {
			if key == k {
				return &groupKeyExpr{X: x, slot: i}
			}
		}
	}
	switch y := x.(type) {
	case *AggregateExpr:
		return x
	case *SubqueryExpr:
		r.error(y.Pos(), "a subquery is not supported in the select list of a query with GROUP BY or aggregate functions")
	case *Ident, *SelectorExpr, *IndexExpr:
		if isPath(x) {
			r.error(x.Pos(), ExprString(x)+" must appear in GROUP BY or inside an aggregate function")
		}
	}
	rewriteChildren(x, func(c Expr) Expr { return r.groupRewrite(c, keys) })
	return x
}

// isPath reports whether x is an alias followed by property names and
// literal indexes.
func isPath(x Expr) bool {
	for {
		switch y := x.(type) {
		case *Ident:
			return true
		case *SelectorExpr:
			x = y.X
		case *IndexExpr:
			if _, ok := y.Index.(*Literal); !ok {
				return false
			}
			x = y.X
		case *ParenExpr:
			x = y.X
		default:
			return false
		}
	}
}

// names gives each member of a select list its output name: the alias, else
// the last property name of a path (c.a.b gives b, c["x"] gives x, c gives
// c), else $1, $2, ... counting the unnamed members only, as in Cosmos DB.
func (r *resolver) names(s *selectStmt) {
	if s.Star || s.Value {
		return
	}
	s.names = make([]string, len(s.Items))
	unnamed := 0
	for i, it := range s.Items {
		pos := it.X.Pos()
		name, ok := "", false
		if it.Alias != nil {
			name, ok, pos = it.Alias.Name, true, it.Alias.NamePos
		} else {
			name, ok = inferredName(it.X)
		}
		if !ok {
			unnamed++
			name = "$" + strconv.Itoa(unnamed)
		}
		for _, prev := range s.names[:i] {
			if prev == name {
				r.error(pos, "duplicate name "+strconv.Quote(name)+" in the select list")
			}
		}
		s.names[i] = name
	}
}

func inferredName(x Expr) (string, bool) {
	switch y := x.(type) {
	case *ParenExpr:
		return inferredName(y.X)
	case *groupKeyExpr:
		return inferredName(y.X)
	case *Ident:
		return y.Name, true
	case *SelectorExpr:
		return y.Sel.Name, true
	case *IndexExpr:
		if lit, ok := y.Index.(*Literal); ok {
			if s, ok := lit.Value.(string); ok {
				return s, true
			}
		}
	}
	return "", false
}
