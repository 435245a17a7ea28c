package query

// Inspect traverses the expression tree rooted at x in depth-first order,
// like go/ast.Inspect: it calls f(x), and if f returns true, inspects each
// child expression. Property names (SelectorExpr.Sel) and function names
// (CallExpr.Fun, AggregateExpr.Fun) are not visited, so every *Ident that f
// sees is an alias reference. A SubqueryExpr is a leaf: its statement has a
// scope of its own.
//
// Inspect recurses once per tree level; trees from the parser are at most
// MaxExprDepth deep.
func Inspect(x Expr, f func(Expr) bool) {
	if x == nil || !f(x) {
		return
	}
	eachChild(x, func(c Expr) bool {
		Inspect(c, f)
		return true
	})
}

// eachChild calls f for each direct child expression of x, in source order,
// until f returns false. It does not recurse.
func eachChild(x Expr, f func(Expr) bool) {
	var list []Expr
	switch x := x.(type) {
	case *ArrayLit:
		list = x.Elems
	case *ObjectLit:
		for _, fld := range x.Fields {
			if !f(fld.Value) {
				return
			}
		}
		return
	case *ParenExpr:
		list = []Expr{x.X}
	case *SelectorExpr:
		list = []Expr{x.X}
	case *IndexExpr:
		list = []Expr{x.X, x.Index}
	case *CallExpr:
		list = x.Args
	case *UnaryExpr:
		list = []Expr{x.X}
	case *BinaryExpr:
		list = []Expr{x.X, x.Y}
	case *InExpr:
		if !f(x.X) {
			return
		}
		list = x.List
	case *BetweenExpr:
		list = []Expr{x.X, x.Lo, x.Hi}
	case *LikeExpr:
		list = []Expr{x.X, x.Pattern}
		if x.Escape != nil {
			list = append(list, x.Escape)
		}
	case *CondExpr:
		list = []Expr{x.Cond, x.Then, x.Else}
	case *AggregateExpr:
		list = []Expr{x.Arg}
	case *groupKeyExpr:
		list = []Expr{x.X}
	}
	for _, c := range list {
		if !f(c) {
			return
		}
	}
}

// deeperThan returns a node found more than limit levels below x (x itself is
// level 1), or nil if the tree is no deeper than limit. Its own recursion
// stops at limit, so it is safe on trees of any depth.
func deeperThan(x Expr, limit int) Expr {
	if limit <= 0 {
		return x
	}
	var deep Expr
	eachChild(x, func(c Expr) bool {
		deep = deeperThan(c, limit-1)
		return deep == nil
	})
	return deep
}

// rewriteChildren replaces each direct child expression c of x by f(c), in
// place and in source order. It does not recurse; the resolver uses it to
// rebuild trees it has just parsed.
func rewriteChildren(x Expr, f func(Expr) Expr) {
	switch x := x.(type) {
	case *ArrayLit:
		for i, c := range x.Elems {
			x.Elems[i] = f(c)
		}
	case *ObjectLit:
		for _, fld := range x.Fields {
			fld.Value = f(fld.Value)
		}
	case *ParenExpr:
		x.X = f(x.X)
	case *SelectorExpr:
		x.X = f(x.X)
	case *IndexExpr:
		x.X = f(x.X)
		x.Index = f(x.Index)
	case *CallExpr:
		for i, c := range x.Args {
			x.Args[i] = f(c)
		}
	case *UnaryExpr:
		x.X = f(x.X)
	case *BinaryExpr:
		x.X = f(x.X)
		x.Y = f(x.Y)
	case *InExpr:
		x.X = f(x.X)
		for i, c := range x.List {
			x.List[i] = f(c)
		}
	case *BetweenExpr:
		x.X = f(x.X)
		x.Lo = f(x.Lo)
		x.Hi = f(x.Hi)
	case *LikeExpr:
		x.X = f(x.X)
		x.Pattern = f(x.Pattern)
	case *CondExpr:
		x.Cond = f(x.Cond)
		x.Then = f(x.Then)
		x.Else = f(x.Else)
	case *AggregateExpr:
		x.Arg = f(x.Arg)
	case *groupKeyExpr:
		x.X = f(x.X)
	}
}
