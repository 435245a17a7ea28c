package query

import "github.com/lethe-db/lethe/jsonv"

// Node is any node of the syntax tree. Pos is the offset of its first byte
// and End the offset just past its last byte, as in go/ast.
type Node interface {
	Pos() Pos
	End() Pos
}

// Expr is a scalar expression: it evaluates to a JSON value or to undefined.
type Expr interface {
	Node
	exprNode()
}

// An Ident is a reference to a FROM alias, such as c in c.name. Property
// names after a dot and function names are also Idents, but they are fields
// of SelectorExpr and CallExpr, never expressions of their own.
type Ident struct {
	NamePos Pos
	Name    string // as written; aliases are case-sensitive
}

// A Literal is a constant: a number, string, true, false, null or undefined.
type Literal struct {
	ValuePos Pos
	Kind     Token       // NUMBER, STRING, TRUE, FALSE, NULL or UNDEFINED
	Raw      string      // the source text, quotes included
	Value    jsonv.Value // the decoded value: a jsonv.Number, string, bool or nil (null and undefined)
}

// A Param is a query parameter reference, @name, bound by Env.Params.
type Param struct {
	At   Pos    // position of the '@'
	Name string // without the '@'
}

// An ArrayLit creates an array: [1, 'a', c.x]. Elements that evaluate to
// undefined are left out of the result.
type ArrayLit struct {
	Lbrack Pos
	Elems  []Expr
	Rbrack Pos
}

// An ObjectLit creates an object: {"a": 1, b: c.x}. Members whose value is
// undefined are left out of the result.
type ObjectLit struct {
	Lbrace Pos
	Fields []*Field
	Rbrace Pos
}

// A Field is one member of an ObjectLit.
type Field struct {
	KeyPos Pos
	Key    string // the decoded member name
	Value  Expr
}

// A ParenExpr is a parenthesised expression. It is kept in the tree so that
// positions cover the parentheses.
type ParenExpr struct {
	Lparen Pos
	X      Expr
	Rparen Pos
}

// A SelectorExpr reads a property by name: X.Sel.
type SelectorExpr struct {
	X   Expr
	Sel *Ident
}

// An IndexExpr reads a property or array element by a computed key:
// X["name"], X[0], X[@i].
type IndexExpr struct {
	X      Expr
	Lbrack Pos
	Index  Expr
	Rbrack Pos
}

// A CallExpr calls a built-in function. The parser checks the name and the
// argument count against the function registry.
type CallExpr struct {
	Fun    *Ident // the name as written; matched case-insensitively
	Lparen Pos
	Args   []Expr
	Rparen Pos

	fn *function // resolved by the parser; looked up by name if nil
}

// A UnaryExpr is a prefix operation: -X, +X, ~X or NOT X.
type UnaryExpr struct {
	OpPos Pos
	Op    Token // SUB, ADD, BITNOT or NOT
	X     Expr
}

// A BinaryExpr is an infix operation: arithmetic, bitwise, comparison,
// concatenation (||), AND, OR or coalesce (??).
type BinaryExpr struct {
	X     Expr
	OpPos Pos
	Op    Token
	Y     Expr
}

// An InExpr tests membership in a list: X [NOT] IN (List...).
type InExpr struct {
	X      Expr
	Not    bool
	OpPos  Pos // position of NOT, or of IN
	Lparen Pos
	List   []Expr
	Rparen Pos
}

// A BetweenExpr tests a range, bounds included: X [NOT] BETWEEN Lo AND Hi.
type BetweenExpr struct {
	X     Expr
	Not   bool
	OpPos Pos // position of NOT, or of BETWEEN
	Lo    Expr
	Hi    Expr
}

// A LikeExpr matches a string against a pattern:
// X [NOT] LIKE Pattern [ESCAPE 'c'].
type LikeExpr struct {
	X       Expr
	Not     bool
	OpPos   Pos // position of NOT, or of LIKE
	Pattern Expr
	Escape  *Literal // a one-character string, or nil
}

// A CondExpr is the ternary operator: Cond ? Then : Else.
type CondExpr struct {
	Cond  Expr
	Quest Pos
	Then  Expr
	Colon Pos
	Else  Expr
}

// Pos returns the offset of the first byte of the Ident.
func (x *Ident) Pos() Pos { return x.NamePos }

// Pos returns the offset of the first byte of the Literal.
func (x *Literal) Pos() Pos { return x.ValuePos }

// Pos returns the offset of the first byte of the Param.
func (x *Param) Pos() Pos { return x.At }

// Pos returns the offset of the first byte of the ArrayLit.
func (x *ArrayLit) Pos() Pos { return x.Lbrack }

// Pos returns the offset of the first byte of the ObjectLit.
func (x *ObjectLit) Pos() Pos { return x.Lbrace }

// Pos returns the offset of the first byte of the Field.
func (x *Field) Pos() Pos { return x.KeyPos }

// Pos returns the offset of the first byte of the ParenExpr.
func (x *ParenExpr) Pos() Pos { return x.Lparen }

// Pos returns the offset of the first byte of the SelectorExpr.
func (x *SelectorExpr) Pos() Pos { return x.X.Pos() }

// Pos returns the offset of the first byte of the IndexExpr.
func (x *IndexExpr) Pos() Pos { return x.X.Pos() }

// Pos returns the offset of the first byte of the CallExpr.
func (x *CallExpr) Pos() Pos { return x.Fun.Pos() }

// Pos returns the offset of the first byte of the UnaryExpr.
func (x *UnaryExpr) Pos() Pos { return x.OpPos }

// Pos returns the offset of the first byte of the BinaryExpr.
func (x *BinaryExpr) Pos() Pos { return x.X.Pos() }

// Pos returns the offset of the first byte of the InExpr.
func (x *InExpr) Pos() Pos { return x.X.Pos() }

// Pos returns the offset of the first byte of the BetweenExpr.
func (x *BetweenExpr) Pos() Pos { return x.X.Pos() }

// Pos returns the offset of the first byte of the LikeExpr.
func (x *LikeExpr) Pos() Pos { return x.X.Pos() }

// Pos returns the offset of the first byte of the CondExpr.
func (x *CondExpr) Pos() Pos { return x.Cond.Pos() }

// End returns the offset just past the last byte of the Ident.
func (x *Ident) End() Pos { return x.NamePos + Pos(len(x.Name)) }

// End returns the offset just past the last byte of the Literal.
func (x *Literal) End() Pos { return x.ValuePos + Pos(len(x.Raw)) }

// End returns the offset just past the last byte of the Param.
func (x *Param) End() Pos { return x.At + 1 + Pos(len(x.Name)) }

// End returns the offset just past the last byte of the ArrayLit.
func (x *ArrayLit) End() Pos { return x.Rbrack + 1 }

// End returns the offset just past the last byte of the ObjectLit.
func (x *ObjectLit) End() Pos { return x.Rbrace + 1 }

// End returns the offset just past the last byte of the Field.
func (x *Field) End() Pos { return x.Value.End() }

// End returns the offset just past the last byte of the ParenExpr.
func (x *ParenExpr) End() Pos { return x.Rparen + 1 }

// End returns the offset just past the last byte of the SelectorExpr.
func (x *SelectorExpr) End() Pos { return x.Sel.End() }

// End returns the offset just past the last byte of the IndexExpr.
func (x *IndexExpr) End() Pos { return x.Rbrack + 1 }

// End returns the offset just past the last byte of the CallExpr.
func (x *CallExpr) End() Pos { return x.Rparen + 1 }

// End returns the offset just past the last byte of the UnaryExpr.
func (x *UnaryExpr) End() Pos { return x.X.End() }

// End returns the offset just past the last byte of the BinaryExpr.
func (x *BinaryExpr) End() Pos { return x.Y.End() }

// End returns the offset just past the last byte of the InExpr.
func (x *InExpr) End() Pos { return x.Rparen + 1 }

// End returns the offset just past the last byte of the BetweenExpr.
func (x *BetweenExpr) End() Pos { return x.Hi.End() }

// End returns the offset just past the last byte of the CondExpr.
func (x *CondExpr) End() Pos { return x.Else.End() }

// End returns the end of the pattern, or of the ESCAPE literal if present.
func (x *LikeExpr) End() Pos {
	if x.Escape != nil {
		return x.Escape.End()
	}
	return x.Pattern.End()
}

func (*Ident) exprNode()        {}
func (*Literal) exprNode()      {}
func (*Param) exprNode()        {}
func (*ArrayLit) exprNode()     {}
func (*ObjectLit) exprNode()    {}
func (*ParenExpr) exprNode()    {}
func (*SelectorExpr) exprNode() {}
func (*IndexExpr) exprNode()    {}
func (*CallExpr) exprNode()     {}
func (*UnaryExpr) exprNode()    {}
func (*BinaryExpr) exprNode()   {}
func (*InExpr) exprNode()       {}
func (*BetweenExpr) exprNode()  {}
func (*LikeExpr) exprNode()     {}
func (*CondExpr) exprNode()     {}

// A FromClause is the FROM clause of a patch condition: it names the
// documents the condition ranges over and the alias that refers to each one:
// FROM c, FROM root r, FROM products AS p. Only the alias can be referenced;
// when there is no separate alias the source name is the alias (FROM c).
// SELECT statements have richer sources (paths, IN, JOIN), in stmt.go.
type FromClause struct {
	From   Pos
	Source *Ident
	Alias  *Ident // nil when the source name is the alias
}

// Name returns the alias that the rest of the query uses for the document.
func (f *FromClause) Name() *Ident {
	if f.Alias != nil {
		return f.Alias
	}
	return f.Source
}

// Pos returns the position of the FROM keyword.
func (f *FromClause) Pos() Pos { return f.From }

// End returns the end of the alias.
func (f *FromClause) End() Pos { return f.Name().End() }
