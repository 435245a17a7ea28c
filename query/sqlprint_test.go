package query

import (
	"strings"
	"testing"

	"github.com/lethe-db/lethe/jsonv"
)

// sqlString prints a statement back as SQL, parenthesising every compound
// expression, so that parsing the text gives the same tree. FuzzParse uses it
// to check the parser and printers against each other.
func sqlString(s *selectStmt) string {
	var b strings.Builder
	writeSQLStmt(&b, s)
	return b.String()
}

func writeSQLStmt(b *strings.Builder, s *selectStmt) {
	b.WriteString("SELECT ")
	if s.Distinct {
		b.WriteString("DISTINCT ")
	}
	if s.Top != nil {
		b.WriteString("TOP ")
		writeSQL(b, s.Top)
		b.WriteByte(' ')
	}
	switch {
	case s.Star:
		b.WriteString("*")
	case s.Value:
		b.WriteString("VALUE ")
		writeSQL(b, s.Items[0].X)
	default:
		for i, it := range s.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeSQL(b, it.X)
			if it.Alias != nil {
				b.WriteString(" AS " + it.Alias.Name)
			}
		}
	}
	if s.From != nil {
		b.WriteString(" FROM ")
		writeSQLSource(b, s.From)
	}
	for _, j := range s.Joins {
		b.WriteString(" JOIN ")
		writeSQLSource(b, j)
	}
	if s.Where != nil {
		b.WriteString(" WHERE ")
		writeSQL(b, s.Where)
	}
	for i, g := range s.GroupBy {
		if i == 0 {
			b.WriteString(" GROUP BY ")
		} else {
			b.WriteString(", ")
		}
		writeSQL(b, g)
	}
	for i, o := range s.OrderBy {
		if i == 0 {
			b.WriteString(" ORDER BY ")
		} else {
			b.WriteString(", ")
		}
		writeSQL(b, o.X)
		if o.Desc {
			b.WriteString(" DESC")
		}
	}
	if s.Offset != nil {
		b.WriteString(" OFFSET ")
		writeSQL(b, s.Offset)
		b.WriteString(" LIMIT ")
		writeSQL(b, s.Limit)
	}
}

func writeSQLSource(b *strings.Builder, f *fromSource) {
	if f.In {
		b.WriteString(f.Alias.Name + " IN ")
	}
	writeSQL(b, f.X)
	if f.Explicit && !f.In {
		b.WriteString(" AS " + f.Alias.Name)
	}
}

func writeSQL(b *strings.Builder, x Expr) {
	switch x := x.(type) {
	case *Ident:
		b.WriteString(x.Name)
	case *Literal:
		b.WriteString(x.Raw)
	case *Param:
		b.WriteString("@" + x.Name)
	case *ArrayLit:
		b.WriteByte('[')
		writeSQLList(b, x.Elems)
		b.WriteByte(']')
	case *ObjectLit:
		b.WriteByte('{')
		for i, f := range x.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.Write(jsonv.AppendString(nil, f.Key))
			b.WriteString(": ")
			writeSQL(b, f.Value)
		}
		b.WriteByte('}')
	case *ParenExpr:
		b.WriteByte('(')
		writeSQL(b, x.X)
		b.WriteByte(')')
	case *SelectorExpr:
		writeSQLPostfixBase(b, x.X)
		b.WriteString("." + x.Sel.Name)
	case *IndexExpr:
		writeSQLPostfixBase(b, x.X)
		b.WriteByte('[')
		writeSQL(b, x.Index)
		b.WriteByte(']')
	case *CallExpr:
		b.WriteString(x.Fun.Name + "(")
		writeSQLList(b, x.Args)
		b.WriteByte(')')
	case *AggregateExpr:
		b.WriteString(x.Fun.Name + "(")
		writeSQL(b, x.Arg)
		b.WriteByte(')')
	case *groupKeyExpr:
		writeSQL(b, x.X)
	case *UnaryExpr:
		b.WriteString("(" + x.Op.String() + " ")
		writeSQL(b, x.X)
		b.WriteByte(')')
	case *BinaryExpr:
		b.WriteByte('(')
		writeSQL(b, x.X)
		b.WriteString(" " + x.Op.String() + " ")
		writeSQL(b, x.Y)
		b.WriteByte(')')
	case *InExpr:
		b.WriteByte('(')
		writeSQL(b, x.X)
		b.WriteString(notSQL(x.Not) + " IN (")
		writeSQLList(b, x.List)
		b.WriteString("))")
	case *BetweenExpr:
		b.WriteByte('(')
		writeSQL(b, x.X)
		b.WriteString(notSQL(x.Not) + " BETWEEN ")
		writeSQL(b, x.Lo)
		b.WriteString(" AND ")
		writeSQL(b, x.Hi)
		b.WriteByte(')')
	case *LikeExpr:
		b.WriteByte('(')
		writeSQL(b, x.X)
		b.WriteString(notSQL(x.Not) + " LIKE ")
		writeSQL(b, x.Pattern)
		if x.Escape != nil {
			b.WriteString(" ESCAPE " + x.Escape.Raw)
		}
		b.WriteByte(')')
	case *CondExpr:
		b.WriteByte('(')
		writeSQL(b, x.Cond)
		b.WriteString(" ? ")
		writeSQL(b, x.Then)
		b.WriteString(" : ")
		writeSQL(b, x.Else)
		b.WriteByte(')')
	case *SubqueryExpr:
		switch x.Kind {
		case EXISTS:
			b.WriteString("EXISTS")
		case ARRAY:
			b.WriteString("ARRAY")
		}
		b.WriteByte('(')
		writeSQLStmt(b, x.stmt)
		b.WriteByte(')')
	default:
		b.WriteString("<unknown>")
	}
}

// writeSQLPostfixBase prints the operand of . or [], parenthesised unless
// it is itself a primary that takes a suffix as is.
func writeSQLPostfixBase(b *strings.Builder, x Expr) {
	switch x.(type) {
	case *Ident, *SelectorExpr, *IndexExpr, *CallExpr, *AggregateExpr, *ParenExpr, *Param, *ArrayLit, *ObjectLit:
		writeSQL(b, x)
	default:
		b.WriteByte('(')
		writeSQL(b, x)
		b.WriteByte(')')
	}
}

func writeSQLList(b *strings.Builder, list []Expr) {
	for i, x := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		writeSQL(b, x)
	}
}

func notSQL(not bool) string {
	if not {
		return " NOT"
	}
	return ""
}

// TestSQLRoundTrip parses every statement in testdata/parse, prints it as
// SQL and parses that again: the trees must print the same.
func TestSQLRoundTrip(t *testing.T) {
	n := 0
	for _, path := range testFiles(t, "parse") {
		for _, c := range readTestFile(t, path) {
			if c.tc == nil || c.tc.cmd != "query" {
				continue
			}
			q, err := Parse(c.tc.input)
			if err != nil {
				continue
			}
			checkRoundTrip(t, c.tc.input, q)
			n++
		}
	}
	if n < 50 {
		t.Errorf("only %d statements round-tripped", n)
	}
}

func checkRoundTrip(t *testing.T, src string, q *Query) {
	t.Helper()
	sql := sqlString(q.stmt)
	q2, err := Parse(sql)
	if err != nil && strings.Contains(err.Error(), "exceeded max") {
		return // the printed parentheses count towards MaxNesting
	}
	if err != nil {
		t.Fatalf("%q printed as %q, which does not parse: %v", src, sql, err)
	}
	if got, want := q2.String(), q.String(); got != want {
		t.Fatalf("%q printed as %q, which parses as\n%s\nnot\n%s", src, sql, got, want)
	}
}
