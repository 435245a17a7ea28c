package engine

import (
	"encoding/binary"
	"slices"

	"github.com/lethe-db/lethe/kv"
)

// A partition-scoped query whose WHERE has an equality on another indexed
// path has two ways to find its documents, both in sequence order: the
// equality's entries, kept when they belong to the partition (an entry's
// value is the document's key, so that costs no lookup), or the partition's
// entries, whose documents must be looked up for WHERE to judge them. Which
// is cheaper depends on data no statistic tells: "type = 'order'" across a
// million users is a long list of which one partition holds a few, while
// "orderId = @id" in a partition of a million documents is a list of one.
//
// equalityRace runs both, in turns. Since each list alone yields every
// match in sequence order, a turn continues from where the last one left
// off: when a turn ends at sequence number n, the other list seeks to n+1.
// Each turn has twice the budget of the one before, so whichever list is
// the cheaper, the race costs a small multiple of it and never an unbounded
// amount more (the doubling argument of searching on a line).
type equalityRace struct {
	sides  [2]raceSide // 0: the equality's entries; 1: the partition's
	turn   int
	spent  int
	budget int
	filter *docFilter
	read   int // entries read, both lists
}

// raceSide is one list of the race: a key range of index entries in
// sequence order, read from sequence number from on.
type raceSide struct {
	r      kv.Reader
	kr     keyRange
	it     kv.Iterator
	from   uint64
	opened bool
	done   bool
}

// Costs of the race's steps, in entries read: a document lookup (and the
// parse and WHERE that follow it) costs about ten index entries.
const (
	raceLookupCost  = 10
	raceFirstBudget = 64
)

func newEqualityRace(r kv.Reader, equality, partition keyRange, filter *docFilter) *equalityRace {
	return &equalityRace{
		sides:  [2]raceSide{{r: r, kr: equality}, {r: r, kr: partition}},
		budget: raceFirstBudget,
		filter: filter,
	}
}

// seek restarts both lists at sequence number seq, the equality first.
func (rc *equalityRace) seek(seq uint64) {
	for i := range rc.sides {
		rc.sides[i].seek(seq)
	}
	rc.turn, rc.spent, rc.budget = 0, 0, raceFirstBudget
}

func (rs *raceSide) seek(seq uint64) {
	rs.close()
	rs.from, rs.opened, rs.done = seq, false, false
}

func (rs *raceSide) close() {
	if rs.it != nil {
		_ = rs.it.Close() // read errors were returned by step
		rs.it = nil
	}
}

// step reads the side's next entry: its sequence number and value (valid
// until the next step); false at the end of the range.
func (rs *raceSide) step() (uint64, []byte, bool, error) {
	if rs.done {
		return 0, nil, false, nil
	}
	if !rs.opened {
		rs.opened = true
		start := binary.BigEndian.AppendUint64(slices.Clip(rs.kr.start), rs.from)
		rs.it = rs.r.Scan(start, rs.kr.end, false)
	}
	if rs.it.Next() {
		k := rs.it.Key()
		return binary.BigEndian.Uint64(k[len(k)-8:]), rs.it.Value(), true, nil
	}
	rs.done = true
	err := rs.it.Close()
	rs.it = nil
	return 0, nil, false, err
}

// next returns the next candidate in sequence order: every match of the
// equality in the partition, and, from the turns the partition's list
// takes, the partition's other documents, which WHERE then rejects. The
// candidate's suffix is valid until the next call.
func (rc *equalityRace) next() (candidate, bool, error) {
	for {
		side := &rc.sides[rc.turn]
		seq, value, ok, err := side.step()
		if err != nil || !ok {
			// Either list alone is complete: its end is the end.
			return candidate{}, false, err
		}
		rc.read++
		rc.spent++
		in := rc.filter.match(value)
		if in && rc.turn == 1 {
			rc.spent += raceLookupCost
		}
		if rc.spent >= rc.budget {
			// Everything up to seq is settled; the other list goes on after it.
			other := 1 - rc.turn
			rc.sides[other].seek(seq + 1)
			rc.turn, rc.spent, rc.budget = other, 0, 2*rc.budget
		}
		if in {
			return candidate{seq, value}, true, nil
		}
	}
}

func (rc *equalityRace) close() {
	for i := range rc.sides {
		rc.sides[i].close()
	}
}
