package engine

import (
	"encoding/binary"
	"slices"

	"github.com/lethe-db/lethe/kv"
)

// A query whose WHERE holds several equalities on indexed paths, or one
// scoped to a partition whose WHERE has an equality on another path, has
// several ways to find its documents, all in sequence order: the index list
// of any one equality, or the partition's. Which is cheapest depends on data
// no statistic tells: "type = 'order'" across a million users is a long list
// of which one partition holds a few, while "orderId = @id" in a partition
// of a million documents is a list of one.
//
// equalityRace reads them in turns. Since each list alone yields every match
// in sequence order, a turn continues from where the last one left off: when
// a turn ends at sequence number n, the next list seeks to n+1. Each turn has
// twice the budget of the one before, so whichever list is the cheapest,
// the race costs a small multiple of it (the doubling argument of searching
// on a line), never the whole of a long list.
type equalityRace struct {
	sides  []raceSide
	turn   int
	spent  int
	budget int
	filter *docFilter
	read   int // entries read, all lists
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

// newEqualityRace returns the race between the lists of entries in ranges,
// each a key range of entries in sequence order, the first read first.
func newEqualityRace(r kv.Reader, ranges []keyRange, filter *docFilter) *equalityRace {
	rc := &equalityRace{budget: raceFirstBudget, filter: filter}
	for _, kr := range ranges {
		rc.sides = append(rc.sides, raceSide{r: r, kr: kr})
	}
	return rc
}

// seek restarts every list at sequence number seq, the first list first.
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

// next returns the next candidate in sequence order: every match, and the
// other documents in scope of the lists whose turns read them, which WHERE
// then rejects. The candidate's suffix is valid until the next call.
func (rc *equalityRace) next() (candidate, bool, error) {
	for {
		side := &rc.sides[rc.turn]
		seq, value, ok, err := side.step()
		if err != nil || !ok {
			// Any list alone is complete: its end is the end.
			return candidate{}, false, err
		}
		rc.read++
		rc.spent++
		in := rc.filter.match(value)
		if in {
			rc.spent += raceLookupCost
		}
		if rc.spent >= rc.budget {
			// Everything up to seq is settled; the next list goes on after it.
			rc.turn = (rc.turn + 1) % len(rc.sides)
			rc.sides[rc.turn].seek(seq + 1)
			rc.spent, rc.budget = 0, 2*rc.budget
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
