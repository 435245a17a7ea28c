package engine

import (
	"cmp"
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
	turns  raceTurns
	filter *docFilter
	read   int // entries read, all lists
}

// raceTurns keeps a race's turns: which list reads, what its turn has spent,
// in entries read and lookups, and what it may spend, twice the budget of
// the turn before. lookupCost is what a candidate's lookup costs, in
// entries: raceLookupCost, or scanLookupCost for a container's documents.
type raceTurns struct {
	turn, spent, budget, lookupCost int
}

func newRaceTurns(lookupCost int) raceTurns {
	return raceTurns{budget: raceFirstBudget, lookupCost: lookupCost}
}

// spend counts read entries and, when lookup is set, a candidate's lookup,
// and reports whether that ended the turn: the next of n lists then has the
// turn, with twice the budget.
func (t *raceTurns) spend(read int, lookup bool, n int) bool {
	t.spent += read
	if lookup {
		t.spent += t.lookupCost
	}
	if t.spent < t.budget {
		return false
	}
	t.turn = (t.turn + 1) % n
	t.spent, t.budget = 0, 2*t.budget
	return true
}

// raceSide is one list of the race: the entries of one or more key ranges
// (an equality's value, each value of an IN, a partition), each in sequence
// order, merged, read from sequence number from on.
type raceSide struct {
	r      kv.Reader
	ranges []keyRange
	// inOrder: the ranges hold insertion-order entries (O), whose values
	// carry the document's suffix after its size; index lists' values are
	// the suffix.
	inOrder bool
	cursors []raceCursor
	from    uint64
	opened  bool
	last    uint64 // the sequence number step returned last
	stepped bool   // step has returned an entry since the side was opened
}

// raceCursor reads one range of a raceSide: it holds the entry at seq
// while ok.
type raceCursor struct {
	it  kv.Iterator
	seq uint64
	ok  bool
}

// Costs of the race's steps, in entries read: a document lookup (and the
// parse and WHERE that follow it) costs about ten index entries.
const (
	raceLookupCost  = 10
	raceFirstBudget = 64
)

// newEqualityRace returns the race between lists, each the key ranges of
// one list, the first read first.
func newEqualityRace(r kv.Reader, lists [][]keyRange, filter *docFilter) *equalityRace {
	rc := &equalityRace{turns: newRaceTurns(raceLookupCost), filter: filter}
	for _, ranges := range lists {
		rc.sides = append(rc.sides, raceSide{r: r, ranges: ranges})
	}
	return rc
}

// seek restarts every list at sequence number seq, the first list first.
func (rc *equalityRace) seek(seq uint64) {
	for i := range rc.sides {
		rc.sides[i].seek(seq)
	}
	rc.turns = newRaceTurns(raceLookupCost)
}

func (rs *raceSide) seek(seq uint64) {
	rs.close()
	rs.from, rs.opened, rs.stepped = seq, false, false
}

func (rs *raceSide) close() {
	for i := range rs.cursors {
		if c := &rs.cursors[i]; c.it != nil {
			_ = c.it.Close() // read errors were returned by step
			c.it, c.ok = nil, false
		}
	}
}

// step reads the side's next entry in sequence order: its sequence number,
// its value (valid until the next step) and how many entries it read to
// find it; false at the end. A document in two of the ranges (an array
// holding two values of an IN) comes once.
func (rs *raceSide) step() (seq uint64, value []byte, read int, ok bool, err error) {
	if !rs.opened {
		rs.opened = true
		rs.cursors = rs.cursors[:0]
		for _, kr := range rs.ranges {
			start := binary.BigEndian.AppendUint64(slices.Clip(kr.start), rs.from)
			rs.cursors = append(rs.cursors, raceCursor{it: rs.r.Scan(start, kr.end, false)})
			c := &rs.cursors[len(rs.cursors)-1]
			if err := c.advance(&read); err != nil {
				return 0, nil, read, false, err
			}
		}
	} else if rs.stepped {
		for i := range rs.cursors {
			if c := &rs.cursors[i]; c.ok && c.seq == rs.last {
				if err := c.advance(&read); err != nil {
					return 0, nil, read, false, err
				}
			}
		}
	}
	var low *raceCursor
	for i := range rs.cursors {
		if c := &rs.cursors[i]; c.ok && (low == nil || c.seq < low.seq) {
			low = c
		}
	}
	if low == nil {
		return 0, nil, read, false, nil
	}
	rs.last, rs.stepped = low.seq, true
	value = low.it.Value()
	if rs.inOrder {
		if value, _, _, err = decodeOrderValue(value, nil); err != nil {
			return 0, nil, read, false, err
		}
	}
	return low.seq, value, read, true, nil
}

// advance moves c to its range's next entry, counting it in *read.
func (c *raceCursor) advance(read *int) error {
	if c.it.Next() {
		k := c.it.Key()
		c.seq, c.ok = binary.BigEndian.Uint64(k[len(k)-8:]), true
		*read++
		return nil
	}
	c.ok = false
	err := c.it.Close()
	c.it = nil
	return err
}

// next returns the next candidate in sequence order: every match, and the
// other documents in scope of the lists whose turns read them, which WHERE
// then rejects. The candidate's suffix is valid until the next call.
func (rc *equalityRace) next() (candidate, bool, error) {
	for {
		side := &rc.sides[rc.turns.turn]
		seq, value, read, ok, err := side.step()
		rc.read += read
		if err != nil || !ok {
			// Any list alone is complete: its end is the end.
			return candidate{}, false, err
		}
		in := rc.filter.match(value)
		if rc.turns.spend(read, in, len(rc.sides)) {
			// Everything up to seq is settled; the next list goes on after it.
			rc.sides[rc.turns.turn].seek(seq + 1)
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

// gatherRace serves a plan whose entries are not in sequence order (a
// range, a prefix: gathered whole and sorted before the first candidate)
// in a query scoped to a partition, or over the whole container.
// Gathering reads the plan's entries of every partition; the partition's
// list, or the container's documents in insertion order, yield a page
// after about a page of documents when they match, but every one of them
// when few do. So the two take turns of doubling budgets, as in
// equalityRace: the list's turns return candidates in order, the
// gathering's collect; once the gathering is complete, the gathered
// candidates continue after the last one the list returned. A range spread
// over a container ("WHERE c.price >= @p") thus reads about a page of
// documents for a page, and a narrow one about its index entries; one
// whose matches lie late in insertion order (a creation time) costs up to
// about twice its gathering (see scanLookupCost).
type gatherRace struct {
	part  raceSide
	ri    int         // the plan's next range to gather
	it    kv.Iterator // the plan's range being gathered
	done  bool        // every entry of the plan is gathered
	turns raceTurns   // turn 0: gathering; 1: the partition
	after uint64      // candidates from here on remain (inclusive)
	// entryCost is what gathering an entry costs, in entries: 1, or more
	// when each gathered entry's value is judged (see conditionSource).
	entryCost int
}

// scanLookupCost is what a document read in insertion order costs in a
// gatherRace over a whole container, in index entries: its lookup, its
// parse and the WHERE that rejects it when the range leaves it out. Counted
// as raceLookupCost, a range whose matches lie late in insertion order (a
// creation time, a counter) cost 2-6 times what gathering it alone costs,
// with documents of a kilobyte; counted as 100, 1.5-2 times, while a range
// spread over the container still reads about a page where gathering it
// alone reads every match (BenchmarkRangeFirstPage). That is on the
// embedded store (an exclusive one, whose readers are metaReaders). On a
// shared one (PostgreSQL, where a page's lookups are one round trip and
// gathering fetches each entry's row from the table) a lookup costs about
// raceLookupCost instead: counted as 100 there, a spread range gathered
// thousands of entries (44-56 ms against 2.5 for a page), and a late one
// costs about the same either way.
const scanLookupCost = 100

func newGatherRace(r kv.Reader, partition keyRange) *gatherRace {
	return &gatherRace{part: raceSide{r: r, ranges: []keyRange{partition}}, turns: newRaceTurns(raceLookupCost), entryCost: 1}
}

// newScanRace returns the gatherRace of a plan over the whole of container
// coll, whose other side reads its documents in insertion order.
func newScanRace(r kv.Reader, coll [8]byte) *gatherRace {
	order := collKey(pfxOrder, coll)
	all := keyRange{order, kv.PrefixEnd(order)}
	cost := raceLookupCost // a shared store's (see scanLookupCost)
	if _, embedded := r.(*metaReader); embedded {
		cost = scanLookupCost
	}
	return &gatherRace{part: raceSide{r: r, ranges: []keyRange{all}, inOrder: true}, turns: newRaceTurns(cost), entryCost: 1}
}

// seek restarts at sequence number seq; what was gathered stays.
func (g *gatherRace) seek(seq uint64) {
	g.part.seek(seq)
	g.after, g.turns = seq, newRaceTurns(g.turns.lookupCost)
}

func (g *gatherRace) close() {
	g.part.close()
	if g.it != nil {
		_ = g.it.Close()
		g.it = nil
	}
}

// next returns x's next candidate in sequence order.
func (g *gatherRace) next(x *indexSource) (candidate, bool, error) {
	for {
		if g.done {
			if x.i < len(x.cands) && x.cands[x.i].seq < g.after {
				x.i, _ = slices.BinarySearchFunc(x.cands, g.after, func(c candidate, t uint64) int { return cmp.Compare(c.seq, t) })
			}
			if x.i >= len(x.cands) {
				return candidate{}, false, nil
			}
			x.i++
			return x.cands[x.i-1], true, nil
		}
		if g.turns.turn == 0 {
			if err := g.gather(x); err != nil {
				return candidate{}, false, err
			}
			continue
		}
		seq, value, read, ok, err := g.part.step()
		x.scanned += read
		if err != nil || !ok {
			return candidate{}, false, err // the partition's list alone is complete
		}
		in := x.filter.match(value)
		g.turns.spend(read, in, 2)
		g.after = seq + 1
		if in {
			return candidate{seq, value}, true, nil
		}
	}
}

// gather reads the plan's entries for one turn, or to their end.
func (g *gatherRace) gather(x *indexSource) error {
	for {
		if g.it == nil {
			if g.ri == len(x.ranges) {
				x.sortCandidates()
				x.i, g.done = 0, true
				return nil
			}
			kr := x.ranges[g.ri]
			g.ri++
			g.it = x.r.Scan(kr.start, kr.end, false)
		}
		if !g.it.Next() {
			err := g.it.Close()
			g.it = nil
			if err != nil {
				return err
			}
			continue
		}
		x.scanned++
		x.collect(g.it)
		if g.turns.spend(g.entryCost, false, 2) {
			return nil // the partition's list goes on where its last turn stopped
		}
	}
}
