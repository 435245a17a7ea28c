package query

// The syntax tree of SELECT statements. The statement itself stays
// unexported (a *Query wraps it); the expression nodes it adds, subqueries
// and aggregates, are exported like every other Expr.

// selectStmt is a SELECT statement, at the top level or as a subquery:
//
//	SELECT [DISTINCT] [TOP n] projection [FROM ... {JOIN ...}] [WHERE e]
//	[GROUP BY e, ...] [ORDER BY e [ASC|DESC], ...] [OFFSET m LIMIT n]
//
// The parser fills the syntax fields; the resolver (resolve.go) checks names
// and fills the derived fields below them. The tree is immutable afterwards.
type selectStmt struct {
	Select   Pos
	Distinct bool
	Top      Expr // a NUMBER *Literal or a *Param; nil without TOP

	Star    bool // SELECT *
	StarPos Pos
	Value   bool          // SELECT VALUE: Items has one element, whose value is the row
	Items   []*selectItem // the select list; empty for SELECT *

	From  *fromSource   // nil when the statement has no FROM clause
	Joins []*fromSource // JOIN clauses in order

	Where    Expr // nil without WHERE
	GroupPos Pos  // position of GROUP, or NoPos
	GroupBy  []Expr
	OrderPos Pos // position of ORDER, or NoPos
	OrderBy  []*orderItem
	Offset   Expr // a NUMBER *Literal or a *Param; set together with Limit
	Limit    Expr

	EndPos Pos // just past the statement's last token

	// Derived by the resolver.
	names     []string         // output member names of Items, unless Value
	aliases   []string         // names bound by From and Joins, in binding order
	aggs      []*AggregateExpr // aggregates of the select list, by slot
	plan      plan             // how the statement executes
	container string           // top level only: the container name From starts with
}

// selectItem is one member of a select list: X [AS Alias].
type selectItem struct {
	X     Expr
	Alias *Ident // nil: the name is inferred
}

// fromSource is the FROM clause or one JOIN clause:
//
//	FROM c                  X = c, Alias c (inferred)
//	FROM root r             X = root, Alias r
//	FROM c.children ch      X = c.children, Alias ch; one row per document
//	FROM t IN c.tags        In, X = c.tags, Alias t; one row per element
//	JOIN (SELECT ...) AS s  X is a *SubqueryExpr; one row per result
//
// At the top level the first identifier of the FROM path names the
// container and is bound to each document; everywhere else it must be an
// alias in scope.
type fromSource struct {
	Pos      Pos // first token
	X        Expr
	In       bool   // Alias IN X: iterate the array X
	Alias    *Ident // nil only for an unaliased JOIN subquery
	Explicit bool   // the alias was written, not inferred
}

// oneRowPerDocument reports whether the statement binds at most one row
// per document: FROM names the container or a path in it, with no IN and
// no JOIN.
func (s *selectStmt) oneRowPerDocument() bool {
	return s.From != nil && !s.From.In && len(s.Joins) == 0 && !isSubquery(s.From.X)
}

func isSubquery(x Expr) bool {
	_, ok := x.(*SubqueryExpr)
	return ok
}

// orderItem is one ORDER BY key.
type orderItem struct {
	X    Expr
	Desc bool
}

// plan is how a statement produces its rows, and so what its cursors hold.
type plan uint8

const (
	// planStream has no ORDER BY, GROUP BY, aggregate or DISTINCT: rows in
	// source order, cursor (seq, ordinal).
	planStream plan = iota + 1
	// planOrder sorts by the ORDER BY keys, then (seq, ordinal).
	planOrder
	// planDistinct returns each distinct row once, ordered by its encoding.
	planDistinct
	// planOrderDistinct is DISTINCT with ORDER BY: each distinct row once,
	// at the position of its first occurrence in ORDER BY order.
	planOrderDistinct
	// planGroup groups by the GROUP BY keys, one row per group in key order.
	planGroup
	// planAggregate has aggregates and no GROUP BY: one group of all rows.
	planAggregate
)

// A SubqueryExpr is a SELECT statement used as an expression. Kind says
// which form: SELECT for a scalar subquery, (SELECT ...), whose value is its
// first row (undefined if it has none); EXISTS for EXISTS(SELECT ...), true
// if it has a row; ARRAY for ARRAY(SELECT ...), an array of its rows. It may
// reference the aliases of every enclosing statement (it is correlated).
type SubqueryExpr struct {
	Kind   Token // SELECT, EXISTS or ARRAY
	KwPos  Pos   // position of EXISTS or ARRAY; of the '(' for a scalar subquery
	Lparen Pos
	Rparen Pos

	stmt *selectStmt
}

// An AggregateExpr is a call of an aggregate function: COUNT, SUM, AVG, MIN
// or MAX, with one argument. It may appear only in a select list, not inside
// another aggregate. Its value is computed over a group of rows.
type AggregateExpr struct {
	Fun    *Ident // the name as written
	Name   string // canonical upper-case name
	Lparen Pos
	Arg    Expr
	Rparen Pos

	slot int // index into the enclosing statement's aggregates
}

// groupKeyExpr marks a subexpression of a grouped select list that equals a
// GROUP BY key: it evaluates to the group's key value. The resolver puts it
// in place of the subexpression it wraps.
type groupKeyExpr struct {
	X    Expr
	slot int // index into GROUP BY
}

// Pos returns the position of EXISTS or ARRAY, or of the opening parenthesis.
func (x *SubqueryExpr) Pos() Pos { return x.KwPos }

// End returns the offset just past the closing parenthesis.
func (x *SubqueryExpr) End() Pos { return x.Rparen + 1 }

// Pos returns the offset of the first byte of the function name.
func (x *AggregateExpr) Pos() Pos { return x.Fun.Pos() }

// End returns the offset just past the closing parenthesis.
func (x *AggregateExpr) End() Pos { return x.Rparen + 1 }

func (x *groupKeyExpr) Pos() Pos { return x.X.Pos() }
func (x *groupKeyExpr) End() Pos { return x.X.End() }

func (*SubqueryExpr) exprNode()  {}
func (*AggregateExpr) exprNode() {}
func (*groupKeyExpr) exprNode()  {}

// aggregateNames maps the upper-case name of each aggregate function to itself.
var aggregateNames = map[string]string{
	"COUNT": "COUNT", "SUM": "SUM", "AVG": "AVG", "MIN": "MIN", "MAX": "MAX",
}
