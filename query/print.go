package query

import (
	"strings"

	"github.com/lethe-db/lethe/jsonv"
)

// ExprString formats x as an S-expression that shows the tree's shape:
// operators are prefix and fully parenthesised, paths stay readable.
//
//	c.a = 'x' AND c.n > 5   →   (and (= c.a "x") (> c.n 5))
//
// Literals print as JSON (numbers in their decoded form, 0x1F as 31),
// function names in their canonical spelling, and parentheses from the
// source are dropped. The parser tests compare against this form.
func ExprString(x Expr) string {
	var b strings.Builder
	writeExpr(&b, x)
	return b.String()
}

func writeExpr(b *strings.Builder, x Expr) {
	switch x := x.(type) {
	case nil:
		b.WriteString("<nil>")
	case *Ident:
		b.WriteString(x.Name)
	case *Literal:
		switch x.Kind {
		case UNDEFINED:
			b.WriteString("undefined")
		default:
			b.Write(jsonv.Marshal(x.Value))
		}
	case *Param:
		b.WriteString("@" + x.Name)
	case *ArrayLit:
		writeList(b, "array", x.Elems...)
	case *ObjectLit:
		b.WriteString("(object")
		for _, f := range x.Fields {
			b.WriteString(" (")
			b.Write(jsonv.AppendString(nil, f.Key))
			b.WriteByte(' ')
			writeExpr(b, f.Value)
			b.WriteByte(')')
		}
		b.WriteByte(')')
	case *ParenExpr:
		writeExpr(b, x.X)
	case *SelectorExpr:
		writeExpr(b, x.X)
		b.WriteString("." + x.Sel.Name)
	case *IndexExpr:
		writeExpr(b, x.X)
		b.WriteByte('[')
		writeExpr(b, x.Index)
		b.WriteByte(']')
	case *CallExpr:
		name := x.Fun.Name
		if x.fn != nil {
			name = x.fn.name
		}
		writeList(b, name, x.Args...)
	case *UnaryExpr:
		writeList(b, opName(x.Op), x.X)
	case *BinaryExpr:
		writeList(b, opName(x.Op), x.X, x.Y)
	case *InExpr:
		writeList(b, negated(x.Not, "in"), append([]Expr{x.X}, x.List...)...)
	case *BetweenExpr:
		writeList(b, negated(x.Not, "between"), x.X, x.Lo, x.Hi)
	case *LikeExpr:
		args := []Expr{x.X, x.Pattern}
		if x.Escape != nil {
			args = append(args, x.Escape)
		}
		writeList(b, negated(x.Not, "like"), args...)
	case *CondExpr:
		writeList(b, "?", x.Cond, x.Then, x.Else)
	case *AggregateExpr:
		writeList(b, x.Name, x.Arg)
	case *groupKeyExpr:
		writeExpr(b, x.X)
	case *SubqueryExpr:
		switch x.Kind {
		case EXISTS:
			b.WriteString("(exists ")
		case ARRAY:
			b.WriteString("(array ")
		}
		writeStmt(b, x.stmt)
		if x.Kind != SELECT {
			b.WriteByte(')')
		}
	default:
		b.WriteString("<unknown>")
	}
}

func writeList(b *strings.Builder, head string, args ...Expr) {
	b.WriteString("(" + head)
	for _, a := range args {
		b.WriteByte(' ')
		writeExpr(b, a)
	}
	b.WriteByte(')')
}

func negated(not bool, op string) string {
	if not {
		return "not-" + op
	}
	return op
}

// opName is the S-expression name of an operator: keywords in lower case,
// symbols as spelled.
func opName(op Token) string {
	switch op {
	case AND:
		return "and"
	case OR:
		return "or"
	case NOT:
		return "not"
	}
	return op.String()
}

// writeStmt prints a statement as an S-expression:
//
//	(select [distinct] [(top n)] projection [(from source)] [(join source)...]
//	  [(where e)] [(group-by e...)] [(order-by e (desc e)...)] [(offset m) (limit n)])
//
// where projection is (project *), (value e) or (project e (as e name)...),
// and a source is path [alias], (in alias path) or a subquery [alias]. An
// alias is printed only when written.
func writeStmt(b *strings.Builder, s *selectStmt) {
	b.WriteString("(select")
	if s.Distinct {
		b.WriteString(" distinct")
	}
	if s.Top != nil {
		b.WriteByte(' ')
		writeList(b, "top", s.Top)
	}
	switch {
	case s.Star:
		b.WriteString(" (project *)")
	case s.Value:
		b.WriteByte(' ')
		writeList(b, "value", s.Items[0].X)
	default:
		b.WriteString(" (project")
		for _, it := range s.Items {
			b.WriteByte(' ')
			if it.Alias == nil {
				writeExpr(b, it.X)
				continue
			}
			b.WriteString("(as ")
			writeExpr(b, it.X)
			b.WriteString(" " + it.Alias.Name + ")")
		}
		b.WriteByte(')')
	}
	if s.From != nil {
		writeSource(b, "from", s.From)
	}
	for _, j := range s.Joins {
		writeSource(b, "join", j)
	}
	if s.Where != nil {
		b.WriteByte(' ')
		writeList(b, "where", s.Where)
	}
	if len(s.GroupBy) > 0 {
		b.WriteByte(' ')
		writeList(b, "group-by", s.GroupBy...)
	}
	if len(s.OrderBy) > 0 {
		b.WriteString(" (order-by")
		for _, o := range s.OrderBy {
			b.WriteByte(' ')
			if o.Desc {
				writeList(b, "desc", o.X)
			} else {
				writeExpr(b, o.X)
			}
		}
		b.WriteByte(')')
	}
	if s.Offset != nil {
		b.WriteByte(' ')
		writeList(b, "offset", s.Offset)
		b.WriteByte(' ')
		writeList(b, "limit", s.Limit)
	}
	b.WriteByte(')')
}

func writeSource(b *strings.Builder, clause string, f *fromSource) {
	b.WriteString(" (" + clause + " ")
	if f.In {
		b.WriteString("(in " + f.Alias.Name + " ")
		writeExpr(b, f.X)
		b.WriteString("))")
		return
	}
	writeExpr(b, f.X)
	if f.Explicit {
		b.WriteString(" " + f.Alias.Name)
	}
	b.WriteByte(')')
}
