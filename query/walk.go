package query

// Inspect traverses the expression tree rooted at x in depth-first order,
// like go/ast.Inspect: it calls f(x), and if f returns true, inspects each
// child expression. Property names (SelectorExpr.Sel) and function names
// (CallExpr.Fun) are not visited, so every *Ident that f sees is an alias
// reference.
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
