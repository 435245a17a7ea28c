package query

import "github.com/lethe-db/lethe/jsonv"

// The pipeline runs one statement once: a page of the top-level query, or
// one evaluation of a subquery. It reads documents from an input, expands
// each into rows (FROM, then each JOIN as a nested loop), keeps the rows
// WHERE accepts, and hands them to the statement's plan, which orders,
// deduplicates or groups them and returns the first rows after a position.
//
// Rows are never materialised as a whole unless the plan needs it: streaming
// stops as soon as the page is full, ORDER BY and DISTINCT keep a bounded
// heap of the best skip+want+1 candidates, and only GROUP BY (one entry per
// group) and DISTINCT with ORDER BY (one entry per distinct row) hold state
// proportional to their output.

// input yields the documents a statement runs over, in ascending seq unless
// the caller says otherwise.
type input interface {
	next() (doc jsonv.Value, seq uint64, ok bool, err error)
}

// onceInput yields a single empty document: the one row of a statement
// without FROM, or the environment a subquery's FROM reads from.
type onceInput struct{ done bool }

func (in *onceInput) next() (jsonv.Value, uint64, bool, error) {
	if in.done {
		return nil, 0, false, nil
	}
	in.done = true
	return nil, 0, true, nil
}

// workCounter counts down the bindings one Execute may still make: each
// FROM or JOIN value bound to an alias, and each row of a statement without
// FROM, in subqueries too.
type workCounter struct{ left int64 }

// executor holds the state of one run of a statement.
type executor struct {
	s   *selectStmt
	ev  evaluator // env.Vars belongs to the run
	top bool      // the top-level statement: FROM binds the container name
	// whereHolds skips the top-level WHERE: the source yields only
	// documents that satisfy it (ExecOptions.WhereHolds).
	whereHolds bool

	// raw, if set, returns the JSON text of the current document; SELECT *
	// over whole documents returns it instead of re-encoding the document.
	raw func() []byte

	seq    uint64 // the current document's seq
	ord    uint64 // the next row ordinal within the current document
	rowOrd uint64 // the current row's ordinal
	buf    []byte // scratch for positions
	vals   []jsonv.Value
	// repeat, when above 0, is how many rows the current one stands for
	// (blankRun); aggregates take it in that many times.
	repeat int64
}

// runOpts select the rows a run returns: after skipping the first skip rows
// positioned after after (nil: from the start), the next want rows. want is
// at least 1. ordered says the input comes in ascending seq, so a streaming
// run may stop early.
type runOpts struct {
	after      []byte
	skip       int
	want       int
	ordered    bool
	sortedKeys int  // the input comes in the order of this many ORDER BY keys (ExecOptions.SortedKeys)
	tiesBySeq  bool // and ties in ascending seq (ExecOptions.TiesInSeqOrder)
	// firstDecides: the first row decides every aggregate
	// (ExecOptions.FirstRowDecides).
	firstDecides bool
}

// outRow is a result row with its position.
type outRow struct {
	val      jsonv.Value
	raw      []byte // the document's own JSON text, for SELECT *; nil: encode val
	seq, ord uint64 // streaming position
	pos      []byte // the position for the other plans
}

// posRow is a candidate row of a sorting plan. If deferred, val is not yet
// computed: vars holds the row's alias bindings to project it from.
type posRow struct {
	pos      []byte
	kn       int // length of the sorted ORDER BY keys' encoding at the start of pos (runOpts.sortedKeys)
	val      jsonv.Value
	raw      []byte // the document's own JSON text, for SELECT *; nil: val
	vars     []jsonv.Value
	deferred bool

	// rep orders the rows that DISTINCT merges: the one with the smallest
	// rep is returned, so the choice between equal values (1 and 1.0)
	// does not depend on the order the source yields documents in.
	rep []byte
}

// rowFunc is called for each row with its aliases bound; false stops the run.
type rowFunc func() (bool, error)

// eachDoc calls f for each row of each document of in.
func (ex *executor) eachDoc(in input, skipBefore uint64, f rowFunc) error {
	for {
		doc, seq, ok, err := in.next()
		if err != nil || !ok {
			return err
		}
		if seq < skipBefore {
			continue
		}
		ex.seq, ex.ord = seq, 0
		cont, err := ex.eachRow(doc, f)
		if err != nil || !cont {
			return err
		}
	}
}

// blankRun returns, for an aggregate without WHERE over Blanks whose rows
// are all alike (its select list reads no document and draws no random
// number), what eachDoc does made faster: the one row the documents all
// make, made once and counted as their number (repeat). Nil for any other
// statement or source.
func (ex *executor) blankRun(in input) func(input, uint64, rowFunc) error {
	si, ok := in.(*sourceInput)
	if !ok || !ex.top || ex.s.plan != planAggregate || ex.s.Where != nil || !ex.s.readsNoDocument() || ex.s.callsRand() {
		return nil
	}
	bs, ok := si.src.(blankSource)
	if !ok {
		return nil
	}
	b := bs.blanks()
	return func(in input, _ uint64, f rowFunc) error {
		n := b.N - b.sent
		doc, seq, ok, err := in.next()
		if err != nil || !ok {
			return err
		}
		b.sent = b.N
		si.examined += int(n - 1)
		ex.seq, ex.ord, ex.repeat = seq, 0, n
		defer func() { ex.repeat = 0 }()
		_, err = ex.eachRow(doc, f)
		return err
	}
}

// eachRow binds the rows of one document in turn and calls f for those
// WHERE accepts.
func (ex *executor) eachRow(doc jsonv.Value, f rowFunc) (bool, error) {
	s := ex.s
	if s.From == nil {
		if err := ex.tick(); err != nil {
			return false, err
		}
		return ex.filter(f)
	}
	v := doc
	if _, whole := s.From.X.(*Ident); !ex.top || !whole {
		if ex.top {
			ex.ev.env.Vars[s.container] = doc
		}
		var err error
		if v, err = ex.ev.eval(s.From.X); err != nil {
			return false, err
		}
	}
	return ex.bind(s.From, v, 0, f)
}

// bind binds src's alias to v, or with IN (or a subquery) to each element of
// v in turn, and goes on with JOIN clause next. An undefined v, or a
// non-array for IN, gives no rows.
func (ex *executor) bind(src *fromSource, v jsonv.Value, next int, f rowFunc) (bool, error) {
	_, sub := src.X.(*SubqueryExpr)
	if !src.In && !sub {
		if isUndefined(v) {
			return true, nil
		}
		if err := ex.tick(); err != nil {
			return false, err
		}
		ex.set(src.Alias, v)
		return ex.join(next, f)
	}
	arr, _ := v.([]jsonv.Value)
	for _, el := range arr {
		if err := ex.tick(); err != nil {
			return false, err
		}
		ex.set(src.Alias, el)
		if cont, err := ex.join(next, f); err != nil || !cont {
			return cont, err
		}
	}
	return true, nil
}

func (ex *executor) set(alias *Ident, v jsonv.Value) {
	if alias != nil {
		ex.ev.env.Vars[alias.Name] = v
	}
}

func (ex *executor) join(i int, f rowFunc) (bool, error) {
	if i == len(ex.s.Joins) {
		return ex.filter(f)
	}
	j := ex.s.Joins[i]
	var v jsonv.Value
	var err error
	if sub, ok := j.X.(*SubqueryExpr); ok {
		var rows []jsonv.Value
		rows, err = ex.ev.subqueryRows(sub.stmt, -1)
		v = rows
	} else {
		v, err = ex.ev.eval(j.X)
	}
	if err != nil {
		return false, err
	}
	return ex.bind(j, v, i+1, f)
}

// tick counts one binding against the work limit.
func (ex *executor) tick() error {
	if w := ex.ev.work; w != nil {
		if w.left--; w.left < 0 {
			return ErrWorkLimit
		}
	}
	return nil
}

// filter numbers the current row, applies WHERE and calls f.
func (ex *executor) filter(f rowFunc) (bool, error) {
	ex.rowOrd = ex.ord
	ex.ord++
	if ex.s.Where != nil && !(ex.top && ex.whereHolds) {
		v, err := ex.ev.eval(ex.s.Where)
		if err != nil || v != true {
			return err == nil, err
		}
	}
	return f()
}

// project computes the current row's value: the FROM alias's value for
// SELECT *, the expression for SELECT VALUE, otherwise an object of the
// select list's defined members. ok is false for an undefined VALUE, which
// is no row.
func (ex *executor) project() (v jsonv.Value, ok bool, err error) {
	s := ex.s
	switch {
	case s.Star:
		return ex.ev.env.Vars[s.From.Alias.Name], true, nil
	case s.Value:
		v, err = ex.ev.eval(s.Items[0].X)
		return v, err == nil && !isUndefined(v), err
	}
	o := jsonv.NewObject(len(s.Items))
	for i, it := range s.Items {
		v, err := ex.ev.eval(it.X)
		if err != nil {
			return nil, false, err
		}
		if !isUndefined(v) {
			o.Set(s.names[i], v)
		}
	}
	return o, true, nil
}

// eagerProjection reports whether a sorting plan should project rows when
// it keeps them: SELECT * and SELECT VALUE are cheap and can be undefined
// (no row); a select-list object is always defined and is built only for
// the rows returned.
func (ex *executor) eagerProjection() bool { return ex.s.Star || ex.s.Value }

func (ex *executor) snapshot() []jsonv.Value {
	vals := make([]jsonv.Value, len(ex.s.aliases))
	for i, a := range ex.s.aliases {
		vals[i] = ex.ev.env.Vars[a]
	}
	return vals
}

func (ex *executor) restore(vals []jsonv.Value) {
	for i, a := range ex.s.aliases {
		ex.ev.env.Vars[a] = vals[i]
	}
}

// orderKey appends the current row's ORDER BY keys to dst.
func (ex *executor) orderKey(dst []byte) ([]byte, error) {
	b, _, err := ex.orderKeyPrefix(dst, 0)
	return b, err
}

// orderKeyPrefix is orderKey that also returns where the encoding of the
// first n keys ends in the result.
func (ex *executor) orderKeyPrefix(dst []byte, n int) ([]byte, int, error) {
	end := len(dst)
	for i, k := range ex.s.OrderBy {
		v, err := ex.ev.eval(k.X)
		if err != nil {
			return dst, end, err
		}
		dst = appendKey(dst, v, k.Desc)
		if i < n {
			end = len(dst)
		}
	}
	return dst, end, nil
}
