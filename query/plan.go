package query

import (
	"bytes"
	"encoding/binary"
	"math"
	"sort"

	"github.com/lethe-db/lethe/jsonv"
)

// The plans: how the rows of a run become its result (see plan in stmt.go).

// run executes the statement over in and returns the selected rows and
// whether more rows follow them.
func (ex *executor) run(in input, o runOpts) ([]outRow, bool, error) {
	switch ex.s.plan {
	case planStream:
		if o.ordered {
			return ex.runStream(in, o)
		}
		return ex.runSorted(in, o)
	case planOrder:
		return ex.runSorted(in, o)
	case planDistinct:
		return ex.runDistinct(in, o)
	case planOrderDistinct:
		return ex.runOrderDistinct(in, o)
	default:
		return ex.runGroups(in, o)
	}
}

// runStream returns rows in input order, stopping once it has want rows: it
// does not read on to see whether another follows, since a full page of a
// streaming query promises more anyway (see Execute).
func (ex *executor) runStream(in input, o runOpts) ([]outRow, bool, error) {
	afterSeq, afterOrd, hasAfter := uint64(0), uint64(0), o.after != nil
	if hasAfter {
		afterSeq, afterOrd = binary.BigEndian.Uint64(o.after), binary.BigEndian.Uint64(o.after[8:])
	}
	skip := o.skip
	var rows []outRow
	err := ex.eachDoc(in, afterSeq, func() (bool, error) {
		if hasAfter && ex.seq == afterSeq && ex.rowOrd <= afterOrd {
			return true, nil
		}
		v, ok, err := ex.project()
		if err != nil || !ok {
			return err == nil, err
		}
		if skip > 0 {
			skip--
			return true, nil
		}
		r := outRow{val: v, seq: ex.seq, ord: ex.rowOrd}
		if ex.raw != nil {
			r.raw = ex.raw() // nil when the source has none at hand
		}
		rows = append(rows, r)
		return len(rows) < o.want, nil
	})
	return rows, false, err
}

// runSorted keeps the rows with the smallest positions after o.after:
// (ORDER BY keys, seq, ordinal), or (seq, ordinal) for a streaming
// statement over an unordered input.
func (ex *executor) runSorted(in input, o runOpts) ([]outRow, bool, error) {
	h := topK{k: satAdd(o.skip, o.want, 1)}
	var skipBefore uint64
	if ex.s.plan == planStream && o.after != nil {
		skipBefore = binary.BigEndian.Uint64(o.after)
	}
	sorted := 0
	if ex.s.plan == planOrder {
		sorted = min(o.sortedKeys, len(ex.s.OrderBy))
	}
	// Rows in position order: (keys, seq, ordinal) is a row's whole
	// position when the input is sorted by every key, ties in seq, and a
	// document has one row.
	inOrder := sorted == len(ex.s.OrderBy) && sorted > 0 && o.tiesBySeq && ex.s.oneRowPerDocument()
	err := ex.eachDoc(in, skipBefore, func() (bool, error) {
		buf, kn, err := ex.orderKeyPrefix(ex.buf[:0], sorted)
		ex.buf = appendSeqOrd(buf, ex.seq, ex.rowOrd)
		if err != nil {
			return false, err
		}
		// With the input sorted by its first keys, once the heap is full a
		// row whose sorted keys are beyond the worst kept row's cannot
		// enter, and neither can any later one: stop reading.
		if sorted > 0 && len(h.rows) == h.k && bytes.Compare(ex.buf[:kn], h.rows[0].pos[:h.rows[0].kn]) > 0 {
			return false, nil
		}
		// In position order, no later row can enter a full page either.
		if inOrder && len(h.rows) == h.k && bytes.Compare(ex.buf, h.rows[0].pos) > 0 {
			return false, nil
		}
		if o.after != nil && bytes.Compare(ex.buf, o.after) <= 0 || !h.admits(ex.buf) {
			return true, nil
		}
		r := posRow{deferred: !ex.eagerProjection()}
		if r.deferred {
			r.vars = ex.snapshot()
		} else {
			v, ok, err := ex.project()
			if err != nil || !ok {
				return err == nil, err
			}
			r.val = v
		}
		r.pos = bytes.Clone(ex.buf)
		r.kn = kn
		if ex.raw != nil {
			r.raw = ex.raw() // SELECT * over whole documents: their own text
		}
		h.push(&r)
		return true, nil
	})
	if err != nil {
		return nil, false, err
	}
	return ex.finish(h.sorted(), o)
}

// runDistinct keeps the distinct rows with the smallest encodings after
// o.after.
func (ex *executor) runDistinct(in input, o runOpts) ([]outRow, bool, error) {
	h := topK{k: satAdd(o.skip, o.want, 1), held: map[string]*posRow{}}
	var rep [16]byte
	err := ex.eachDoc(in, 0, func() (bool, error) {
		v, ok, err := ex.project()
		if err != nil || !ok {
			return err == nil, err
		}
		ex.buf = appendValue(ex.buf[:0], v)
		if o.after != nil && bytes.Compare(ex.buf, o.after) <= 0 {
			return true, nil
		}
		r := appendSeqOrd(rep[:0], ex.seq, ex.rowOrd)
		if held := h.held[string(ex.buf)]; held != nil {
			if bytes.Compare(r, held.rep) < 0 {
				held.val, held.rep = v, bytes.Clone(r)
			}
			return true, nil
		}
		if h.admits(ex.buf) {
			h.push(&posRow{pos: bytes.Clone(ex.buf), val: v, rep: bytes.Clone(r)})
		}
		return true, nil
	})
	if err != nil {
		return nil, false, err
	}
	return ex.finish(h.sorted(), o)
}

// runOrderDistinct returns each distinct row once, at the position of its
// first occurrence in ORDER BY order. A row whose first occurrence is at or
// before o.after was returned (or skipped) by an earlier page, so every
// distinct row is remembered until the end.
func (ex *executor) runOrderDistinct(in input, o runOpts) ([]outRow, bool, error) {
	first := map[string]*posRow{}
	var enc []byte
	err := ex.eachDoc(in, 0, func() (bool, error) {
		v, ok, err := ex.project()
		if err != nil || !ok {
			return err == nil, err
		}
		buf, err := ex.orderKey(ex.buf[:0])
		ex.buf = appendSeqOrd(buf, ex.seq, ex.rowOrd)
		if err != nil {
			return false, err
		}
		enc = appendValue(enc[:0], v)
		if r := first[string(enc)]; r == nil {
			first[string(enc)] = &posRow{pos: bytes.Clone(ex.buf), val: v}
		} else if bytes.Compare(ex.buf, r.pos) < 0 {
			r.pos, r.val = bytes.Clone(ex.buf), v
		}
		return true, nil
	})
	if err != nil {
		return nil, false, err
	}
	rows := make([]posRow, 0, len(first))
	for _, r := range first {
		if o.after == nil || bytes.Compare(r.pos, o.after) > 0 {
			rows = append(rows, *r)
		}
	}
	sortRows(rows)
	return ex.finish(rows, o)
}

// group is one group of a grouped statement.
type group struct {
	keys  []jsonv.Value // the GROUP BY values of the group's first row
	first rowPos        // that row, in source order
	pos   []byte        // the encoding of the keys
	accs  []accumulator // one per aggregate of the select list
}

// runGroups accumulates every row into its group, then projects one row per
// group, ordered by the group key (or, with DISTINCT, by the row's value).
func (ex *executor) runGroups(in input, o runOpts) ([]outRow, bool, error) {
	s := ex.s
	groups := map[string]*group{}
	if s.plan == planAggregate { // one group, even of no rows
		groups[""] = &group{pos: []byte{}, accs: make([]accumulator, len(s.aggs))}
	}
	each := ex.eachDoc
	if b := ex.blankRun(in); b != nil {
		each = b
	}
	err := each(in, 0, func() (bool, error) {
		buf, vals := ex.buf[:0], ex.vals[:0]
		for _, k := range s.GroupBy {
			v, err := ex.ev.eval(k)
			if err != nil {
				return false, err
			}
			buf, vals = appendKey(buf, v, false), append(vals, v)
		}
		ex.buf, ex.vals = buf, vals
		at := rowPos{ex.seq, ex.rowOrd}
		g := groups[string(buf)]
		if g == nil {
			g = &group{keys: append([]jsonv.Value(nil), vals...), first: at, pos: bytes.Clone(buf), accs: make([]accumulator, len(s.aggs))}
			groups[string(buf)] = g
		} else if at.before(g.first) { // an unordered source: equal keys may be spelled differently
			g.keys, g.first = append(g.keys[:0], vals...), at
		}
		for i, a := range s.aggs {
			v, err := ex.ev.eval(a.Arg)
			if err != nil {
				return false, err
			}
			g.accs[i].addRepeated(a.Name, v, at, max(ex.repeat, 1))
		}
		return !(o.firstDecides && s.plan == planAggregate), nil
	})
	if err != nil {
		return nil, false, err
	}
	distinct := s.Distinct && s.plan == planGroup
	rows := make([]posRow, 0, len(groups))
	seen := map[string]int{} // DISTINCT: row index by position
	ex.ev.aggs = make([]jsonv.Value, len(s.aggs))
	defer func() { ex.ev.aggs, ex.ev.keys = nil, nil }()
	for _, g := range groups {
		for i, a := range s.aggs {
			ex.ev.aggs[i] = g.accs[i].result(a.Name)
		}
		ex.ev.keys = g.keys
		v, ok, err := ex.project()
		if err != nil {
			return nil, false, err
		}
		if !ok {
			continue
		}
		pos := g.pos
		if distinct {
			pos = appendValue(nil, v)
		}
		if o.after != nil && bytes.Compare(pos, o.after) <= 0 {
			continue
		}
		if distinct {
			if i, dup := seen[string(pos)]; dup {
				if bytes.Compare(g.pos, rows[i].rep) < 0 {
					rows[i].val, rows[i].rep = v, g.pos
				}
				continue
			}
			seen[string(pos)] = len(rows)
		}
		rows = append(rows, posRow{pos: pos, val: v, rep: g.pos})
	}
	sortRows(rows)
	return ex.finish(rows, o)
}

// finish applies skip and want to sorted candidates and projects the
// deferred ones.
func (ex *executor) finish(rows []posRow, o runOpts) ([]outRow, bool, error) {
	if len(rows) <= o.skip {
		return nil, false, nil
	}
	rows = rows[o.skip:]
	more := len(rows) > o.want
	if more {
		rows = rows[:o.want]
	}
	out := make([]outRow, len(rows))
	for i, r := range rows {
		if r.deferred && r.raw == nil {
			ex.restore(r.vars)
			v, _, err := ex.project()
			if err != nil {
				return nil, false, err
			}
			r.val = v
		}
		out[i] = outRow{val: r.val, raw: r.raw, pos: r.pos}
	}
	return out, more, nil
}

func sortRows(rows []posRow) {
	sort.Slice(rows, func(i, j int) bool { return bytes.Compare(rows[i].pos, rows[j].pos) < 0 })
}

// satAdd adds non-negative ints, saturating at math.MaxInt.
func satAdd(xs ...int) int {
	sum := 0
	for _, x := range xs {
		if x > math.MaxInt-sum {
			return math.MaxInt
		}
		sum += x
	}
	return sum
}
