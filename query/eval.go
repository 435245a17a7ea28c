package query

import (
	"math"
	"time"

	"github.com/lethe-db/lethe/jsonv"
)

// Env binds the names an expression can reference.
type Env struct {
	// Vars binds each FROM alias to its current value, usually the document.
	Vars map[string]jsonv.Value
	// Params binds query parameters by name, without the '@'.
	Params map[string]jsonv.Value
	// Source is the query text the expression was parsed from. If set,
	// evaluation errors carry its line and column; otherwise only a message.
	Source string
	// Now is the query's one instant, read by GetCurrentDateTime,
	// GetCurrentTimestamp and GetCurrentTicks. Every row of a query sees the
	// same Now. The zero value means the functions report an error.
	Now time.Time
}

// undefinedType is the type of undefined, the evaluator's stand-in for Cosmos
// DB's undefined value (a missing property, the result of a type mismatch).
// It never escapes the package: Eval reports it as defined == false, and
// array and object constructors drop it.
type undefinedType struct{}

var undefined jsonv.Value = undefinedType{}

func isUndefined(v jsonv.Value) bool {
	_, ok := v.(undefinedType)
	return ok
}

// Eval evaluates x in env with Cosmos DB semantics. defined is false when the
// result is undefined, in which case v is nil. Type mismatches produce
// undefined, not errors; err reports only a name with no binding (an alias or
// parameter missing from env) and is then an *Error.
func Eval(x Expr, env *Env) (v jsonv.Value, defined bool, err error) {
	if env == nil {
		env = &Env{}
	}
	v, err = (&evaluator{env: env}).eval(x)
	if err != nil || isUndefined(v) {
		return nil, false, err
	}
	return v, true, nil
}

type evaluator struct {
	env *Env

	// ownsVars is set when env.Vars belongs to this evaluation, so subqueries
	// may bind their aliases in it (and restore them). Eval leaves the
	// caller's map alone: the first subquery copies it.
	ownsVars bool
	// aggs and keys are the current group's aggregate results and GROUP BY
	// key values while a grouped select list is projected.
	aggs []jsonv.Value
	keys []jsonv.Value
	// work counts FROM rows against ExecOptions.WorkLimit; nil: no limit.
	work *workCounter
}

func (e *evaluator) errorf(pos Pos, msg string) error {
	p := Position{Offset: int(pos)}
	if e.env.Source != "" {
		p = PositionFor(e.env.Source, pos)
	}
	return &Error{Pos: p, Msg: msg}
}

// eval returns the value of x, which may be undefined.
func (e *evaluator) eval(x Expr) (jsonv.Value, error) {
	switch x := x.(type) {
	case *Ident:
		v, ok := e.env.Vars[x.Name]
		if !ok {
			return nil, e.errorf(x.NamePos, "undeclared identifier "+x.Name)
		}
		return v, nil
	case *Literal:
		if x.Kind == UNDEFINED {
			return undefined, nil
		}
		return x.Value, nil
	case *Param:
		v, ok := e.env.Params[x.Name]
		if !ok {
			return nil, e.errorf(x.At, "parameter @"+x.Name+" has no value")
		}
		return v, nil
	case *ParenExpr:
		return e.eval(x.X)
	case *ArrayLit:
		a := make([]jsonv.Value, 0, len(x.Elems))
		for _, el := range x.Elems {
			v, err := e.eval(el)
			if err != nil {
				return nil, err
			}
			if !isUndefined(v) {
				a = append(a, v)
			}
		}
		return a, nil
	case *ObjectLit:
		o := jsonv.NewObject(len(x.Fields))
		for _, f := range x.Fields {
			v, err := e.eval(f.Value)
			if err != nil {
				return nil, err
			}
			if !isUndefined(v) {
				o.Set(f.Key, v)
			}
		}
		return o, nil
	case *SelectorExpr:
		base, err := e.eval(x.X)
		if err != nil {
			return nil, err
		}
		return member(base, x.Sel.Name), nil
	case *IndexExpr:
		return e.evalIndex(x)
	case *CallExpr:
		return e.evalCall(x)
	case *UnaryExpr:
		v, err := e.eval(x.X)
		if err != nil {
			return nil, err
		}
		return unaryOp(x.Op, v), nil
	case *BinaryExpr:
		return e.evalBinary(x)
	case *InExpr:
		return e.evalIn(x)
	case *BetweenExpr:
		return e.evalBetween(x)
	case *LikeExpr:
		return e.evalLike(x)
	case *SubqueryExpr:
		return e.evalSubquery(x)
	case *AggregateExpr:
		if x.slot >= len(e.aggs) {
			return nil, e.errorf(x.Pos(), "aggregate function "+x.Name+" is not allowed here")
		}
		return e.aggs[x.slot], nil
	case *groupKeyExpr:
		if x.slot >= len(e.keys) {
			return e.eval(x.X)
		}
		return e.keys[x.slot], nil
	case *CondExpr:
		c, err := e.eval(x.Cond)
		if err != nil {
			return nil, err
		}
		if c == true {
			return e.eval(x.Then)
		}
		return e.eval(x.Else)
	case nil:
		return nil, e.errorf(NoPos, "evaluate a nil expression")
	}
	return nil, e.errorf(x.Pos(), "cannot evaluate this expression")
}

// member returns property name of v, or undefined if v is not an object or
// has no such property.
func member(v jsonv.Value, name string) jsonv.Value {
	o, ok := v.(*jsonv.Object)
	if !ok || o == nil {
		return undefined
	}
	if m, ok := o.Get(name); ok {
		return m
	}
	return undefined
}

// evalIndex reads X[Index]: a property when the index is a string, an array
// element when it is a whole number within bounds, otherwise undefined.
func (e *evaluator) evalIndex(x *IndexExpr) (jsonv.Value, error) {
	base, err := e.eval(x.X)
	if err != nil {
		return nil, err
	}
	idx, err := e.eval(x.Index)
	if err != nil {
		return nil, err
	}
	switch i := idx.(type) {
	case string:
		return member(base, i), nil
	case jsonv.Number:
		a, ok := base.([]jsonv.Value)
		f := i.Float64()
		if !ok || f != math.Trunc(f) || f < 0 || f >= float64(len(a)) {
			return undefined, nil
		}
		return a[int(f)], nil
	}
	return undefined, nil
}

func (e *evaluator) evalCall(x *CallExpr) (jsonv.Value, error) {
	fn := x.fn
	if fn == nil {
		if fn = lookupFunction(x.Fun.Name); fn == nil {
			return nil, e.errorf(x.Fun.NamePos, "unknown function "+x.Fun.Name)
		}
		if msg := fn.checkArgs(len(x.Args)); msg != "" {
			return nil, e.errorf(x.Fun.NamePos, msg)
		}
	}
	args := make([]jsonv.Value, len(x.Args))
	for i, a := range x.Args {
		v, err := e.eval(a)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	return e.callFunction(x, fn, args)
}

func (e *evaluator) evalBinary(x *BinaryExpr) (jsonv.Value, error) {
	a, err := e.eval(x.X)
	if err != nil {
		return nil, err
	}
	// The logical operators and ?? skip the right side when the left decides.
	switch x.Op {
	case AND:
		if a == false {
			return false, nil
		}
	case OR:
		if a == true {
			return true, nil
		}
	case COALESCE:
		if !isUndefined(a) {
			return a, nil
		}
	}
	b, err := e.eval(x.Y)
	if err != nil {
		return nil, err
	}
	return binaryOp(x.Op, a, b), nil
}

// evalIn computes X IN (a, b, ...) as X = a OR X = b OR ...: true if any
// item equals X, false if every item is comparable with X and none equals
// it, otherwise undefined.
func (e *evaluator) evalIn(x *InExpr) (jsonv.Value, error) {
	v, err := e.eval(x.X)
	if err != nil {
		return nil, err
	}
	result := jsonv.Value(false)
	for _, item := range x.List {
		w, err := e.eval(item)
		if err != nil {
			return nil, err
		}
		result = or3(result, equalOp(v, w))
		if result == true {
			break
		}
	}
	if x.Not {
		return not3(result), nil
	}
	return result, nil
}

// evalBetween computes X BETWEEN Lo AND Hi as X >= Lo AND X <= Hi.
func (e *evaluator) evalBetween(x *BetweenExpr) (jsonv.Value, error) {
	var vals [3]jsonv.Value
	for i, sub := range []Expr{x.X, x.Lo, x.Hi} {
		v, err := e.eval(sub)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	result := and3(compareOp(GEQ, vals[0], vals[1]), compareOp(LEQ, vals[0], vals[2]))
	if x.Not {
		return not3(result), nil
	}
	return result, nil
}

// evalLike matches a string against a LIKE pattern; anything but two strings
// gives undefined.
func (e *evaluator) evalLike(x *LikeExpr) (jsonv.Value, error) {
	v, err := e.eval(x.X)
	if err != nil {
		return nil, err
	}
	pat, err := e.eval(x.Pattern)
	if err != nil {
		return nil, err
	}
	s, ok1 := v.(string)
	p, ok2 := pat.(string)
	if !ok1 || !ok2 {
		return undefined, nil
	}
	m := matchLike(s, p, x.escape())
	return m != x.Not, nil
}
