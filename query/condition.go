package query

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lethe-db/lethe/jsonv"
)

// A Condition is a parsed patch precondition, the "condition" of a Cosmos DB
// patch request: a filter such as
//
//	FROM c WHERE c.status = 'active' AND c.count > 5
//
// The patch applies only if the condition matches the current document;
// otherwise the request fails with 412 Precondition Failed. A Condition is
// immutable and safe for concurrent use.
//
//	cond, err := query.ParseCondition(header)
//	if err != nil {
//		return lethe.Errorf(lethe.CodeBadRequest, "patch condition: %s", err)
//	}
//	ok, err := cond.Match(doc)
type Condition struct {
	From  *FromClause
	Where Expr // nil when there is no WHERE clause: every document matches

	src string // the source text, for positions in evaluation errors
}

// ParseCondition parses a patch condition, "FROM <alias> WHERE <expr>".
// Keywords are case-insensitive; the alias is any identifier (usually c or
// root) and may follow a source name, as in FROM root r. The WHERE clause is
// optional. Errors are *Error values with the line and column of the problem.
func ParseCondition(src string) (*Condition, error) {
	var p parser
	var cond *Condition
	err := p.run(func() {
		p.init(src)
		cond = p.parseCondition()
	})
	if err != nil {
		return nil, err
	}
	return cond, nil
}

// MatchWorkLimit caps the subquery bindings one Match may make (see
// ExecOptions.WorkLimit), so that a condition's cross products cannot run
// away; past it Match fails with ErrWorkLimit.
const MatchWorkLimit = 1_000_000

// Match reports whether the condition holds for doc: whether the WHERE
// expression, with the alias bound to doc, evaluates to boolean true. False,
// undefined (a missing property, a comparison across types) and non-boolean
// results do not match. An error means the condition could not be evaluated
// at all, which Cosmos semantics make rare: a subquery exceeding
// MatchWorkLimit is one case.
func (c *Condition) Match(doc *jsonv.Object) (bool, error) {
	return c.MatchAt(doc, time.Time{})
}

// MatchAt is Match with the request's instant, which GetCurrentDateTime and the
// other current-time functions read; a patch condition such as
// "FROM c WHERE c.expiresAt > GetCurrentDateTime()" needs it. With a zero now
// those functions report an error.
func (c *Condition) MatchAt(doc *jsonv.Object, now time.Time) (bool, error) {
	if doc == nil {
		return false, errors.New("match condition: nil document")
	}
	if c.Where == nil {
		return true, nil
	}
	env := Env{Vars: map[string]jsonv.Value{c.From.Name().Name: doc}, Source: c.src, Now: now}
	ev := evaluator{env: &env, ownsVars: true, work: &workCounter{left: MatchWorkLimit}}
	v, err := ev.eval(c.Where)
	if err != nil {
		return false, fmt.Errorf("match condition: %w", err)
	}
	b, ok := v.(bool)
	return ok && b, nil
}

// String returns the condition as an S-expression (see ExprString), e.g.
// (condition (from c) (where (= c.a 1))).
func (c *Condition) String() string {
	var b strings.Builder
	b.WriteString("(condition (from " + c.From.Source.Name)
	if c.From.Alias != nil {
		b.WriteString(" " + c.From.Alias.Name)
	}
	b.WriteString(")")
	if c.Where != nil {
		b.WriteString(" (where ")
		writeExpr(&b, c.Where)
		b.WriteString(")")
	}
	b.WriteString(")")
	return b.String()
}
