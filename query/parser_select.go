package query

import (
	"fmt"
	"math"
)

// Statements:
//
//	Select     = SELECT [DISTINCT] [TOP Count] Projection
//	             [FROM From { JOIN Join }] [WHERE Expr]
//	             [GROUP BY ExprList] [ORDER BY Sort { "," Sort }]
//	             [OFFSET Count LIMIT Count] .
//	Projection = "*" | VALUE Expr | Item { "," Item } .
//	Item       = Expr [ [AS] ident ] .
//	From       = ident IN Path | Path [ [AS] ident ] .
//	Join       = From | "(" Select ")" [ [AS] ident ] .
//	Path       = ident { "." Name | "[" ( string | number ) "]" } .
//	Sort       = Expr [ ASC | DESC ] .
//	Count      = number | @param .
//
// The clauses must come in this order, as in Cosmos DB. A statement ends at
// the end of the input or, for a subquery, at its closing parenthesis.

// parseSelect parses a SELECT statement.
func (p *parser) parseSelect() *selectStmt {
	p.enter()
	defer p.leave()
	s := &selectStmt{Select: p.expect(SELECT), StarPos: NoPos, GroupPos: NoPos, OrderPos: NoPos}
	if p.tok == DISTINCT {
		s.Distinct = true
		p.next()
	}
	if p.tok == TOP {
		p.next()
		s.Top = p.parseCount("TOP")
	}
	p.parseProjection(s)
	if p.tok == FROM {
		p.next()
		s.From = p.parseFromSource(false)
		for p.tok == JOIN {
			p.next()
			s.Joins = append(s.Joins, p.parseFromSource(true))
		}
	}
	if p.tok == WHERE {
		p.next()
		s.Where = p.parseExpr()
	}
	if p.tok == GROUP {
		s.GroupPos = p.pos
		p.next()
		p.expect(BY)
		s.GroupBy = p.parseExprList()
	}
	if p.tok == ORDER {
		s.OrderPos = p.pos
		p.next()
		p.expect(BY)
		for {
			item := &orderItem{X: p.parseExpr()}
			switch p.tok {
			case ASC:
				p.next()
			case DESC:
				item.Desc = true
				p.next()
			}
			s.OrderBy = append(s.OrderBy, item)
			if p.tok != COMMA {
				break
			}
			p.next()
		}
	}
	switch p.tok {
	case OFFSET:
		p.next()
		s.Offset = p.parseCount("OFFSET")
		if p.tok != LIMIT {
			p.errorExpected("LIMIT after OFFSET")
		}
		p.next()
		s.Limit = p.parseCount("LIMIT")
	case LIMIT:
		p.error(p.pos, "LIMIT needs OFFSET: write OFFSET 0 LIMIT n")
	}
	s.EndPos = p.pos
	return s
}

// parseProjection parses what follows SELECT [DISTINCT] [TOP n].
func (p *parser) parseProjection(s *selectStmt) {
	switch p.tok {
	case MUL:
		s.Star, s.StarPos = true, p.pos
		p.next()
		return
	case VALUE:
		p.next()
		s.Value = true
		s.Items = []*selectItem{{X: p.parseExpr()}}
		if p.tok == AS {
			p.error(p.pos, "SELECT VALUE cannot have an alias")
		}
		return
	}
	for {
		item := &selectItem{X: p.parseExpr()}
		item.Alias = p.parseAlias()
		s.Items = append(s.Items, item)
		if p.tok != COMMA {
			return
		}
		p.next()
	}
}

// parseAlias parses an optional [AS] ident.
func (p *parser) parseAlias() *Ident {
	switch p.tok {
	case AS:
		p.next()
		return p.parseIdent()
	case IDENT:
		return p.parseIdent()
	}
	return nil
}

// parseCount parses the number or parameter after TOP, OFFSET or LIMIT. A
// number must be a non-negative integer; a parameter is checked when the
// query runs.
func (p *parser) parseCount(clause string) Expr {
	switch p.tok {
	case NUMBER:
		lit := p.parseNumber()
		if _, ok := countValue(lit.Value); !ok {
			p.error(lit.ValuePos, clause+" takes a non-negative integer, found "+lit.Raw)
		}
		return lit
	case PARAM:
		x := &Param{At: p.pos, Name: p.lit[1:]}
		p.next()
		return x
	}
	p.errorExpected("number or parameter after " + clause)
	return nil // not reached
}

// countValue converts a TOP, OFFSET or LIMIT value to an int: it must be a
// whole number from 0 to 2^53. Larger values are capped at math.MaxInt32,
// more rows than any page can hold.
func countValue(v any) (int, bool) {
	f, ok := argNumber(v)
	if !ok || f != math.Trunc(f) || f < 0 || f > 1<<53 {
		return 0, false
	}
	return int(min(f, math.MaxInt32)), true
}

// parseFromSource parses the source of a FROM clause or, if join, of a JOIN.
func (p *parser) parseFromSource(join bool) *fromSource {
	f := &fromSource{Pos: p.pos}
	if p.tok == LPAREN {
		lparen := p.pos
		p.next()
		if !join || p.tok != SELECT {
			p.error(lparen, "expected alias, container name or path, found '('; a subquery is allowed in JOIN only")
		}
		f.X = p.parseSubquery(SELECT, lparen, lparen)
		if f.Alias = p.parseAlias(); f.Alias != nil {
			f.Explicit = true
		}
		return f
	}
	id := p.parseIdent()
	if p.tok == IN {
		p.next()
		f.In, f.Alias, f.Explicit = true, id, true
		f.X = p.parsePath(p.parseIdent())
		return f
	}
	f.X = p.parsePath(id)
	if f.Alias = p.parseAlias(); f.Alias != nil {
		f.Explicit = true
		return f
	}
	// Infer the alias from the path: its last property name.
	switch x := f.X.(type) {
	case *Ident:
		f.Alias = x
	case *SelectorExpr:
		f.Alias = x.Sel
	case *IndexExpr:
		if s, ok := x.Index.(*Literal).Value.(string); ok {
			f.Alias = &Ident{NamePos: x.Index.Pos(), Name: s}
		} else {
			p.error(x.Lbrack, "a path that ends in an array index needs an alias ([AS] name)")
		}
	}
	return f
}

// parsePath parses the rest of a FROM path whose first identifier is id:
// property names and literal indexes only.
func (p *parser) parsePath(id *Ident) Expr {
	var x Expr = id
	for {
		switch p.tok {
		case PERIOD:
			p.next()
			x = &SelectorExpr{X: x, Sel: p.parsePropertyName()}
		case LBRACK:
			ix := &IndexExpr{X: x, Lbrack: p.pos}
			p.next()
			switch p.tok {
			case STRING:
				ix.Index = p.parseString()
			case NUMBER:
				ix.Index = p.parseNumber()
			default:
				p.errorExpected("property name or array index")
			}
			ix.Rbrack = p.expect(RBRACK)
			x = ix
		default:
			return x
		}
	}
}

// parseSubquery parses "SELECT ... )" of a subquery whose keyword (EXISTS or
// ARRAY, or the parenthesis of a scalar subquery) is at kwPos.
func (p *parser) parseSubquery(kind Token, kwPos, lparen Pos) *SubqueryExpr {
	x := &SubqueryExpr{Kind: kind, KwPos: kwPos, Lparen: lparen}
	x.stmt = p.parseSelect()
	x.Rparen = p.expect(RPAREN)
	return x
}

// parseAggregate parses the argument list of an aggregate call: exactly one
// argument.
func (p *parser) parseAggregate(id *Ident, name string) Expr {
	x := &AggregateExpr{Fun: id, Name: name, Lparen: p.expect(LPAREN)}
	var args []Expr
	if p.tok != RPAREN {
		args = p.parseExprList()
	}
	x.Rparen = p.expect(RPAREN)
	if len(args) != 1 {
		p.error(id.NamePos, fmt.Sprintf("function %s takes 1 argument, found %d", name, len(args)))
	}
	x.Arg = args[0]
	return x
}

// Parse parses a SELECT statement. Errors are *Error values with the position
// of the first problem; anything the package does not support is an error,
// never silently ignored.
func Parse(src string) (*Query, error) {
	var p parser
	var s *selectStmt
	var params []*Param
	err := p.run(func() {
		p.init(src)
		s = p.parseSelect()
		if p.tok != EOF {
			p.errorExpected("end of query")
		}
		r := resolver{p: &p, paramsOK: true}
		r.stmt(s, nil, true)
		params = r.params
	})
	if err != nil {
		return nil, err
	}
	return &Query{src: src, stmt: s, params: params}, nil
}
