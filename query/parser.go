package query

import "unicode/utf8"

// Limits that keep hostile input from exhausting the stack.
const (
	// MaxNesting is the deepest syntactic nesting the parser accepts:
	// parentheses, brackets, braces, call arguments, prefix operators and
	// ternary branches together (go/parser's maxNestLev, CVE-2022-1962).
	MaxNesting = 128

	// MaxExprDepth is the deepest expression tree the parser returns. Chains
	// of binary operators and property accesses are parsed by loops, not
	// recursion, so they are limited separately: a 1000-term OR is accepted,
	// a million-term one is not. The evaluator and printer recurse once per
	// level and rely on this bound.
	MaxExprDepth = 1024
)

// parser is a recursive-descent parser modelled on go/parser. It stops at the
// first error: error records it and panics with bailout, which the exported
// entry points recover. It keeps one token of lookahead in pos, tok and lit.
type parser struct {
	src     string
	scanner Scanner

	pos Pos    // current token's offset
	tok Token  // current token
	lit string // current token's source text

	err     *Error
	nestLev int
}

// bailout is the panic value that unwinds the parser after an error.
type bailout struct{}

func (p *parser) init(src string) {
	p.src = src
	p.scanner.Init(src, func(pos Pos, msg string) { p.error(pos, msg) })
	p.next()
}

func (p *parser) next() {
	p.pos, p.tok, p.lit = p.scanner.Scan()
}

// run calls f and turns a bailout into the recorded error. Every exported
// parse function goes through it; any other panic is a bug and keeps going.
func (p *parser) run(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				panic(r)
			}
			err = p.err
		}
	}()
	f()
	return nil
}

func (p *parser) error(pos Pos, msg string) {
	if p.err == nil {
		p.err = &Error{Pos: PositionFor(p.src, pos), Msg: msg}
	}
	panic(bailout{})
}

// errorExpected reports that what was expected at the current token.
func (p *parser) errorExpected(what string) {
	p.error(p.pos, "expected "+what+", found "+p.found())
}

// found describes the current token the way go/parser does: literals as
// written, everything else quoted.
func (p *parser) found() string {
	switch {
	case p.tok == EOF:
		return "'EOF'"
	case p.tok.IsLiteral():
		return p.lit
	default:
		return "'" + p.lit + "'"
	}
}

// expect consumes a tok token and returns its position.
func (p *parser) expect(tok Token) Pos {
	pos := p.pos
	if p.tok != tok {
		p.errorExpected("'" + tok.String() + "'")
	}
	p.next()
	return pos
}

func (p *parser) enter() {
	p.nestLev++
	if p.nestLev > MaxNesting {
		p.error(p.pos, "exceeded max nesting depth")
	}
}

func (p *parser) leave() { p.nestLev-- }

// ----------------------------------------------------------------------------
// Clauses

// parseCondition parses a patch condition: FROM <source> [[AS] alias] [WHERE expr].
func (p *parser) parseCondition() *Condition {
	from := p.parseFromClause()
	var where Expr
	if p.tok == WHERE {
		p.next()
		where = p.parseExpr()
	} else if p.tok != EOF {
		p.errorExpected("WHERE or end of condition")
	}
	if p.tok != EOF {
		p.errorExpected("end of condition")
	}
	if where != nil {
		p.check(where, []*Ident{from.Name()}, false)
	}
	return &Condition{From: from, Where: where, src: p.src}
}

// parseFromClause parses FROM <source> [[AS] alias].
func (p *parser) parseFromClause() *FromClause {
	from := &FromClause{From: p.expect(FROM)}
	from.Source = p.parseIdent()
	switch p.tok {
	case AS:
		p.next()
		from.Alias = p.parseIdent()
	case IDENT:
		from.Alias = p.parseIdent()
	}
	return from
}

func (p *parser) parseIdent() *Ident {
	if p.tok != IDENT {
		p.errorExpected("identifier")
	}
	id := &Ident{NamePos: p.pos, Name: p.lit}
	p.next()
	return id
}

// check validates a parsed expression as a whole: its depth, that every
// identifier is one of the aliases in scope, that parameters appear only
// where allowed, and that it holds no aggregate. Subqueries are resolved
// with the aliases in scope visible to them (resolve.go).
func (p *parser) check(x Expr, scope []*Ident, paramsOK bool) {
	r := resolver{p: p, paramsOK: paramsOK}
	names := make([]string, len(scope))
	for i, a := range scope {
		names[i] = a.Name
	}
	r.expr(x, names, "outside a select list")
}

// ----------------------------------------------------------------------------
// Expressions, loosest binding first:
//
//	Expr        = Conditional { "??" Conditional } .
//	Conditional = Or [ "?" Expr ":" Conditional ] .
//	Or          = And { OR And } .
//	And         = Predicate { AND Predicate } .
//	Predicate   = Binary [ [NOT] ( IN "(" ExprList ")"
//	                             | BETWEEN Binary AND Binary
//	                             | LIKE Binary [ ESCAPE string ] ) ] .
//	Binary      = Unary { binary_op Unary } .   (precedences: Token.Precedence)
//	Unary       = ( "-" | "+" | "~" | NOT ) Unary | Postfix .
//	Postfix     = Primary { "." Name | "[" Expr "]" } .
//	Primary     = ident | ident "(" [ ExprList ] ")" | @param | number | string
//	            | true | false | null | undefined
//	            | "[" [ ExprList ] "]" | "{" [ Field { "," Field } ] "}" | "(" Expr ")"
//	            | "(" Select ")" | EXISTS "(" Select ")" | ARRAY "(" Select ")" .
//
// As in the Cosmos DB grammar, ?: binds tighter than ??, so a ?? b ? c : d is
// a ?? (b ? c : d); NOT is a prefix operator that binds tighter than any
// binary operator, so NOT a = b is (NOT a) = b. Write NOT (a = b).

func (p *parser) parseExpr() Expr {
	p.enter()
	defer p.leave()
	x := p.parseConditional()
	for p.tok == COALESCE {
		pos := p.pos
		p.next()
		y := p.parseConditional()
		x = &BinaryExpr{X: x, OpPos: pos, Op: COALESCE, Y: y}
	}
	return x
}

func (p *parser) parseConditional() Expr {
	x := p.parseOr()
	if p.tok != QUEST {
		return x
	}
	c := &CondExpr{Cond: x, Quest: p.pos}
	p.next()
	c.Then = p.parseExpr()
	c.Colon = p.expect(COLON)
	p.enter()
	c.Else = p.parseConditional()
	p.leave()
	return c
}

func (p *parser) parseOr() Expr {
	x := p.parseAnd()
	for p.tok == OR {
		pos := p.pos
		p.next()
		y := p.parseAnd()
		x = &BinaryExpr{X: x, OpPos: pos, Op: OR, Y: y}
	}
	return x
}

func (p *parser) parseAnd() Expr {
	x := p.parsePredicate()
	for p.tok == AND {
		pos := p.pos
		p.next()
		y := p.parsePredicate()
		x = &BinaryExpr{X: x, OpPos: pos, Op: AND, Y: y}
	}
	return x
}

// parsePredicate parses a binary expression optionally followed by
// [NOT] IN, [NOT] BETWEEN or [NOT] LIKE. These do not chain: a IN (1) IN (2)
// needs parentheses.
func (p *parser) parsePredicate() Expr {
	x := p.parseBinary(precLowest + 1)
	opPos, not := p.pos, false
	if p.tok == NOT {
		not = true
		p.next()
		if p.tok != IN && p.tok != BETWEEN && p.tok != LIKE {
			p.errorExpected("IN, BETWEEN or LIKE after NOT")
		}
	}
	switch p.tok {
	case IN:
		p.next()
		in := &InExpr{X: x, Not: not, OpPos: opPos, Lparen: p.expect(LPAREN)}
		in.List = p.parseExprList()
		in.Rparen = p.expect(RPAREN)
		return in
	case BETWEEN:
		p.next()
		b := &BetweenExpr{X: x, Not: not, OpPos: opPos}
		b.Lo = p.parseBinary(precLowest + 1)
		p.expect(AND)
		b.Hi = p.parseBinary(precLowest + 1)
		return b
	case LIKE:
		p.next()
		l := &LikeExpr{X: x, Not: not, OpPos: opPos}
		l.Pattern = p.parseBinary(precLowest + 1)
		if p.tok == ESCAPE {
			p.next()
			l.Escape = p.parseEscape()
		}
		return l
	}
	return x
}

// parseEscape parses the string literal after ESCAPE: exactly one character.
func (p *parser) parseEscape() *Literal {
	if p.tok != STRING {
		p.errorExpected("string literal after ESCAPE")
	}
	lit := p.parseString()
	if s := lit.Value.(string); utf8.RuneCountInString(s) != 1 {
		p.error(lit.ValuePos, "ESCAPE takes a single character, found "+lit.Raw)
	}
	return lit
}

// parseBinary parses a chain of binary operators of precedence prec1 or
// higher, left-associative (go/parser's parseBinaryExpr).
func (p *parser) parseBinary(prec1 int) Expr {
	x := p.parseUnary()
	for {
		op := p.tok
		oprec := op.Precedence()
		if oprec < prec1 {
			return x
		}
		pos := p.pos
		p.next()
		y := p.parseBinary(oprec + 1)
		x = &BinaryExpr{X: x, OpPos: pos, Op: op, Y: y}
	}
}

func (p *parser) parseUnary() Expr {
	switch p.tok {
	case SUB, ADD, BITNOT, NOT:
		pos, op := p.pos, p.tok
		p.next()
		p.enter()
		x := p.parseUnary()
		p.leave()
		return &UnaryExpr{OpPos: pos, Op: op, X: x}
	}
	return p.parsePostfix()
}

func (p *parser) parsePostfix() Expr {
	x := p.parsePrimary()
	for {
		switch p.tok {
		case PERIOD:
			p.next()
			x = &SelectorExpr{X: x, Sel: p.parsePropertyName()}
		case LBRACK:
			ix := &IndexExpr{X: x, Lbrack: p.pos}
			p.next()
			ix.Index = p.parseExpr()
			ix.Rbrack = p.expect(RBRACK)
			x = ix
		default:
			return x
		}
	}
}

// parsePropertyName parses the name after a dot. Keywords are accepted too
// (c.value, c.order): after a dot they cannot mean anything else.
func (p *parser) parsePropertyName() *Ident {
	if p.tok != IDENT && !p.tok.IsKeyword() {
		p.errorExpected("property name")
	}
	id := &Ident{NamePos: p.pos, Name: p.lit}
	p.next()
	return id
}

func (p *parser) parsePrimary() Expr {
	switch p.tok {
	case IDENT:
		id := &Ident{NamePos: p.pos, Name: p.lit}
		p.next()
		if p.tok == LPAREN {
			return p.parseCall(id)
		}
		return id
	case NUMBER:
		return p.parseNumber()
	case STRING:
		return p.parseString()
	case TRUE, FALSE, NULL, UNDEFINED:
		lit := &Literal{ValuePos: p.pos, Kind: p.tok, Raw: p.lit}
		switch p.tok {
		case TRUE:
			lit.Value = true
		case FALSE:
			lit.Value = false
		}
		p.next()
		return lit
	case PARAM:
		x := &Param{At: p.pos, Name: p.lit[1:]}
		p.next()
		return x
	case LBRACK:
		a := &ArrayLit{Lbrack: p.pos}
		p.next()
		if p.tok != RBRACK {
			a.Elems = p.parseExprList()
		}
		a.Rbrack = p.expect(RBRACK)
		return a
	case LBRACE:
		return p.parseObject()
	case LPAREN:
		lparen := p.pos
		p.next()
		if p.tok == SELECT {
			return p.parseSubquery(SELECT, lparen, lparen)
		}
		x := &ParenExpr{Lparen: lparen}
		x.X = p.parseExpr()
		x.Rparen = p.expect(RPAREN)
		return x
	case EXISTS, ARRAY:
		kind, kwPos := p.tok, p.pos
		p.next()
		lparen := p.expect(LPAREN)
		if p.tok != SELECT {
			p.errorExpected("SELECT after " + kind.String() + "(")
		}
		return p.parseSubquery(kind, kwPos, lparen)
	}
	p.errorExpected("expression")
	return nil // not reached
}

// parseCall parses the argument list of a call to the function named id and
// checks the name and the argument count.
func (p *parser) parseCall(id *Ident) Expr {
	if name, ok := aggregateNames[asciiUpper(id.Name)]; ok {
		return p.parseAggregate(id, name)
	}
	fn := lookupFunction(id.Name)
	if fn == nil {
		p.error(id.NamePos, "unknown function "+id.Name)
	}
	call := &CallExpr{Fun: id, Lparen: p.expect(LPAREN), fn: fn}
	if p.tok != RPAREN {
		call.Args = p.parseExprList()
	}
	call.Rparen = p.expect(RPAREN)
	if msg := fn.checkArgs(len(call.Args)); msg != "" {
		p.error(id.NamePos, msg)
	}
	return call
}

// parseExprList parses one or more comma-separated expressions.
func (p *parser) parseExprList() []Expr {
	list := []Expr{p.parseExpr()}
	for p.tok == COMMA {
		p.next()
		list = append(list, p.parseExpr())
	}
	return list
}

// parseObject parses {key: value, ...}; a key is a string literal or a name.
func (p *parser) parseObject() Expr {
	o := &ObjectLit{Lbrace: p.pos}
	p.next()
	for p.tok != RBRACE {
		if len(o.Fields) > 0 {
			if p.tok != COMMA {
				p.errorExpected("',' or '}'")
			}
			p.next()
		}
		f := &Field{KeyPos: p.pos}
		switch {
		case p.tok == STRING:
			f.Key = p.parseString().Value.(string)
		case p.tok == IDENT || p.tok.IsKeyword():
			f.Key = p.lit
			p.next()
		default:
			p.errorExpected("property name")
		}
		p.expect(COLON)
		f.Value = p.parseExpr()
		o.Fields = append(o.Fields, f)
	}
	o.Rbrace = p.pos
	p.next()
	return o
}

func (p *parser) parseNumber() *Literal {
	v, msg := decodeNumber(p.lit)
	if msg != "" {
		p.error(p.pos, msg)
	}
	lit := &Literal{ValuePos: p.pos, Kind: NUMBER, Raw: p.lit, Value: v}
	p.next()
	return lit
}

func (p *parser) parseString() *Literal {
	s, ok := unquote(p.lit)
	if !ok { // the scanner has already rejected any malformed literal
		p.error(p.pos, "invalid string literal")
	}
	lit := &Literal{ValuePos: p.pos, Kind: STRING, Raw: p.lit, Value: s}
	p.next()
	return lit
}

// ----------------------------------------------------------------------------
// Entry points

// parseExprSource parses src as a single expression in which the given aliases
// are in scope and parameters are allowed. The parser tests use it; the
// query engine will reach expressions through statements instead.
func parseExprSource(src string, aliases ...string) (Expr, error) {
	var p parser
	var x Expr
	err := p.run(func() {
		p.init(src)
		x = p.parseExpr()
		if p.tok != EOF {
			p.errorExpected("end of expression")
		}
		scope := make([]*Ident, len(aliases))
		for i, a := range aliases {
			scope[i] = &Ident{NamePos: NoPos, Name: a}
		}
		p.check(x, scope, true)
	})
	if err != nil {
		return nil, err
	}
	return x, nil
}
