package query

import (
	"time"

	"github.com/lethe-db/lethe/jsonv"
)

// A PathCondition is a top-level WHERE conjunct that reads one document path
// only (see Query.PathConditions). It keeps the state of its evaluations, so
// it is not safe for concurrent use.
type PathCondition struct {
	// Path is the document path the condition reads.
	Path []string
	// Spelled reports whether the text of a number at the path may decide
	// the condition (IntMod(c.n, 2) = 1 reads an integer's text exactly),
	// not only its value.
	Spelled bool

	x   Expr
	env Env
	ev  evaluator
	doc *jsonv.Object
	at  *jsonv.Object // the object that holds the value, within doc
}

// PathConditions returns the top-level WHERE conjuncts of a query over whole
// documents (no JOIN or FROM ... IN) that read one document path only and
// give no hint (see Hints), which an index serves better: CONTAINS(c.name,
// @q), ENDSWITH(c.email, '.org'), LOWER(c.city) = 'paris', RegexMatch(c.code,
// '^A[0-9]+$'). A document whose value at the path fails one gives no row, so
// an engine may look up only the documents whose value, read from an index,
// satisfies it (Holds), and those without the path if it holds without one.
func (q *Query) PathConditions(params map[string]jsonv.Value) []*PathCondition {
	s := q.stmt
	a, ok := s.documentAnalyzer(params)
	if !ok || s.Where == nil || len(s.Joins) > 0 {
		return nil
	}
	var out []*PathCondition
	eachConjunct(s.Where, func(x Expr) {
		if _, hinted := a.hint(x); hinted {
			return
		}
		w := pathWalk{a: a}
		w.visit(x, SpellingIgnored)
		if w.failed || len(w.paths) != 1 {
			return
		}
		path := w.paths[0]
		c := &PathCondition{Path: path, Spelled: w.spelling == SpellingEach, x: x}
		c.env = Env{Vars: map[string]jsonv.Value{}, Params: params, Source: q.src}
		c.ev = evaluator{env: &c.env}
		c.doc = jsonv.NewObject(1)
		c.at = c.doc
		for _, name := range path[:len(path)-1] {
			next := jsonv.NewObject(1)
			c.at.Set(name, next)
			c.at = next
		}
		c.env.Vars[a.root] = c.doc
		out = append(out, c)
	})
	return out
}

// Holds reports whether the condition may be true, at the instant now, of a
// document whose value at the path is v (present is false for a document
// without one): it is false only when the condition evaluates to anything
// but true, which leaves the document out of every row. A failure to
// evaluate counts as true: the query itself then meets it.
func (c *PathCondition) Holds(v jsonv.Value, present bool, now time.Time) bool {
	name := c.Path[len(c.Path)-1]
	if present {
		c.at.Set(name, v)
	} else {
		c.at.Delete(name)
	}
	c.env.Now = now
	got, err := c.ev.eval(c.x)
	return err != nil || got == true
}
