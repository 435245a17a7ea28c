package query

import (
	"math"

	"github.com/lethe-db/lethe/jsonv"
)

// Aggregate semantics follow Cosmos DB:
//
//   - Undefined arguments are skipped by every aggregate; COUNT(e) counts the
//     rows where e is defined, so COUNT(1) counts rows.
//   - SUM and AVG need numbers: any other defined argument (a string,
//     boolean, null, array or object) makes the result undefined.
//   - MIN and MAX compare null, booleans, numbers and strings across types in
//     the order null < false < true < numbers < strings; an array or object
//     argument makes the result undefined.
//   - Over no rows (or only undefined arguments) COUNT is 0 and SUM is 0, as
//     the Cosmos DB SDKs compute them (their sum starts at zero); AVG, MIN
//     and MAX are undefined.
//
// An undefined result leaves the member out of a select-list object and
// produces no row for SELECT VALUE.

// An accumulator computes one aggregate over a group's rows. Of several
// equal MIN or MAX values (1 and 1.0) it keeps the one of the first row in
// (seq, ordinal) order, so the result does not depend on the order the
// source yields documents in. SUM and AVG add in float64, as Cosmos DB
// does; over an unordered source the last bits of a non-integer sum can
// depend on that order.
type accumulator struct {
	count  int64
	sum    float64
	best   jsonv.Value // MIN or MAX so far, when count > 0
	bestAt rowPos      // the row best came from
	bad    bool        // the result is undefined whatever follows
}

// rowPos is a row's place in source order: (seq, ordinal).
type rowPos struct{ seq, ord uint64 }

func (p rowPos) before(q rowPos) bool { return p.seq < q.seq || p.seq == q.seq && p.ord < q.ord }

// add adds the argument value v of the row at pos.
func (a *accumulator) add(name string, v jsonv.Value, pos rowPos) {
	if isUndefined(v) || a.bad {
		return
	}
	switch name {
	case "COUNT":
		a.count++
	case "SUM", "AVG":
		f, ok := argNumber(v)
		if !ok {
			a.bad = true
			return
		}
		a.sum += f
		a.count++
	case "MIN", "MAX":
		if k := kindOf(v); k == kindArray || k == kindObject {
			a.bad = true
			return
		}
		if a.count == 0 {
			a.best, a.bestAt = v, pos
		} else if c := compareTotal(v, a.best); name == "MIN" && c < 0 || name == "MAX" && c > 0 || c == 0 && pos.before(a.bestAt) {
			a.best, a.bestAt = v, pos
		}
		a.count++
	}
}

// addRepeated adds v as the argument of n rows, the first at pos: what n
// calls of add would do, the sum's float64 additions included (a number
// that is an integer is added as a product, which is exact where each of
// the additions was).
func (a *accumulator) addRepeated(name string, v jsonv.Value, pos rowPos, n int64) {
	if n <= 1 || name == "MIN" || name == "MAX" {
		if n > 0 {
			before := a.count
			a.add(name, v, pos) // later rows tie, and come after pos
			if a.count > before {
				a.count += n - 1
			}
		}
		return
	}
	if isUndefined(v) || a.bad {
		return
	}
	switch name {
	case "COUNT":
		a.count += n
	case "SUM", "AVG":
		f, ok := argNumber(v)
		if !ok {
			a.bad = true
			return
		}
		if f == math.Trunc(f) && math.Abs(a.sum)+math.Abs(f)*float64(n) < 1<<53 && a.sum == math.Trunc(a.sum) {
			a.sum += f * float64(n)
		} else {
			for range n {
				a.sum += f
			}
		}
		a.count += n
	}
}

func (a *accumulator) result(name string) jsonv.Value {
	if a.bad {
		return undefined
	}
	switch name {
	case "COUNT":
		return number(float64(a.count))
	case "SUM":
		return number(a.sum)
	case "AVG":
		if a.count == 0 {
			return undefined
		}
		return number(a.sum / float64(a.count))
	case "MIN", "MAX":
		if a.count == 0 {
			return undefined
		}
		return a.best
	}
	return undefined
}
