package query

import (
	"maps"
	"math"

	"github.com/lethe-db/lethe/jsonv"
)

// evalSubquery evaluates a subquery expression in the current row's
// environment. EXISTS and scalar subqueries stop at their first row.
func (e *evaluator) evalSubquery(x *SubqueryExpr) (jsonv.Value, error) {
	want := -1
	if x.Kind != ARRAY {
		want = 1
	}
	rows, err := e.subqueryRows(x.stmt, want)
	if err != nil {
		return nil, err
	}
	switch x.Kind {
	case EXISTS:
		return len(rows) > 0, nil
	case ARRAY:
		return rows, nil
	}
	if len(rows) == 0 {
		return undefined, nil
	}
	return rows[0], nil
}

// subqueryRows runs s in the current environment and returns at most want
// of its rows (want < 0: all of them, never nil). The subquery binds its
// aliases in the shared variables and restores them before returning, so an
// alias may shadow an outer one.
func (e *evaluator) subqueryRows(s *selectStmt, want int) ([]jsonv.Value, error) {
	if !e.ownsVars { // Eval's caller owns env: copy it once
		env := *e.env
		env.Vars = maps.Clone(e.env.Vars)
		if env.Vars == nil {
			env.Vars = map[string]jsonv.Value{}
		}
		e.env, e.ownsVars = &env, true
	}
	type saved struct {
		v  jsonv.Value
		ok bool
	}
	vars := e.env.Vars
	old := make([]saved, len(s.aliases))
	for i, a := range s.aliases {
		old[i].v, old[i].ok = vars[a]
	}
	defer func() {
		for i, a := range s.aliases {
			if old[i].ok {
				vars[a] = old[i].v
			} else {
				delete(vars, a)
			}
		}
	}()

	ex := &executor{s: s, ev: evaluator{env: e.env, ownsVars: true, work: e.work}}
	limit, offset, err := ex.bounds()
	if err != nil {
		return nil, err
	}
	if limit >= 0 && (want < 0 || limit < want) {
		want = limit
	}
	if want == 0 {
		return []jsonv.Value{}, nil
	}
	if want < 0 {
		want = math.MaxInt
	}
	rows, _, err := ex.run(&onceInput{}, runOpts{skip: offset, want: want, ordered: true})
	if err != nil {
		return nil, err
	}
	vals := make([]jsonv.Value, len(rows))
	for i, r := range rows {
		vals[i] = r.val
	}
	return vals, nil
}

// bounds evaluates TOP, OFFSET and LIMIT: limit is -1 without TOP or LIMIT.
func (ex *executor) bounds() (limit, offset int, err error) {
	s := ex.s
	limit = -1
	if s.Top != nil {
		if limit, err = ex.count(s.Top, "TOP"); err != nil {
			return 0, 0, err
		}
	}
	if s.Offset != nil {
		if offset, err = ex.count(s.Offset, "OFFSET"); err != nil {
			return 0, 0, err
		}
		if limit, err = ex.count(s.Limit, "LIMIT"); err != nil {
			return 0, 0, err
		}
	}
	return limit, offset, nil
}

func (ex *executor) count(x Expr, clause string) (int, error) {
	v, err := ex.ev.eval(x)
	if err != nil {
		return 0, err
	}
	n, ok := countValue(v)
	if !ok {
		found := "undefined"
		if !isUndefined(v) {
			found = string(jsonv.Marshal(v))
		}
		return 0, ex.ev.errorf(x.Pos(), clause+" takes a non-negative integer, found "+found)
	}
	return n, nil
}
