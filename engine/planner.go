package engine

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strings"

	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/query"
	"github.com/lethe-db/lethe/ru"
)

// filterKind is how a WHERE conjunct constrains a root property path.
type filterKind int

// Filter kinds, from the most to the least selective in general.
const (
	filterEq filterKind = iota
	filterIn
	filterPrefix
	filterRange
	filterDefined
)

// filterSpec is one index-usable conjunct of a WHERE clause: a necessary
// condition on the scalar value at a root property path. The executor still
// evaluates the whole clause on every candidate, so an index scan only has to
// yield a superset of the matching documents.
type filterSpec struct {
	path   []string
	kind   filterKind
	values []jsonv.Value // Eq, In; Prefix's string
	lo, hi jsonv.Value
	hasLo  bool
	hasHi  bool
	loIncl bool
	hiIncl bool
	// element: path goes through the elements of an array (arrayElem
	// segments), for a hint on them (ARRAY_CONTAINS, a JOIN's alias). Its
	// entries are a superset of the documents it matches: an object's
	// member named "[]" has the same entries.
	element bool
}

// keyRange is a half-open range of index keys.
type keyRange struct{ start, end []byte }

// indexPlan is the index scan chosen for a query.
type indexPlan struct {
	spec   filterSpec
	ranges []keyRange
}

// planIndex picks the most selective usable filter whose path is indexed and
// returns its key ranges; false means the query scans the container.
func (s *scope) planIndex(filters []filterSpec) (*indexPlan, bool) {
	var best *indexPlan
	for _, f := range filters {
		if !s.l.index.indexed(f.path) {
			continue
		}
		ranges, ok := indexRanges(s.rid, f)
		if !ok {
			continue
		}
		if best == nil || f.kind < best.spec.kind {
			best = &indexPlan{spec: f, ranges: ranges}
		}
	}
	return best, best != nil
}

// indexRanges turns a filter into index key ranges that cover every document
// the filter can match. Strings are compared by their indexed (possibly cut)
// prefix, so bounds on strings are widened to stay a superset.
func indexRanges(coll [8]byte, f filterSpec) ([]keyRange, bool) {
	return rangesUnder(indexPrefix(coll, f.path), f)
}

// rangesUnder is indexRanges for the entries under prefix, whose keys hold
// the filtered value right after it: a path's index, or a composite index
// whose leading values are fixed.
func rangesUnder(prefix []byte, f filterSpec) ([]keyRange, bool) {
	exact := func(v jsonv.Value) (keyRange, bool) {
		switch v.(type) {
		case nil, bool, string, jsonv.Number:
		default:
			return keyRange{}, false // objects and arrays never equal a scalar entry
		}
		k := appendIndexedValue(append([]byte(nil), prefix...), v)
		return keyRange{k, kv.PrefixEnd(k)}, true
	}
	switch f.kind {
	case filterEq, filterIn:
		var out []keyRange
		for _, v := range f.values {
			r, ok := exact(v)
			if !ok {
				return nil, false
			}
			// Values the index holds alike (IN (1, 1), IN (5, 5.0), strings
			// cut to one prefix) share a range: read it once, or a read in
			// order yields its documents twice.
			if !slices.ContainsFunc(out, func(o keyRange) bool { return bytes.Equal(o.start, r.start) }) {
				out = append(out, r)
			}
		}
		return out, true // IN () matches nothing: an empty plan
	case filterPrefix:
		p, ok := f.values[0].(string)
		if !ok {
			return nil, false
		}
		k := appendStringOpen(append(append([]byte(nil), prefix...), tagString), indexedValue(p).(string))
		return []keyRange{{k, kv.PrefixEnd(k)}}, true
	case filterDefined:
		return []keyRange{{prefix, kv.PrefixEnd(prefix)}}, true
	case filterRange:
		return rangeKeys(prefix, f)
	}
	return nil, false
}

// rangeKeys covers a comparison range within one type: Cosmos DB compares
// values of different types as undefined, so a range on numbers only matches
// numbers, and one on strings only strings.
func rangeKeys(prefix []byte, f filterSpec) ([]keyRange, bool) {
	typeOf := func(v jsonv.Value) byte {
		switch v.(type) {
		case jsonv.Number:
			return tagNumber
		case string:
			return tagString
		}
		return 0
	}
	var tag byte
	switch {
	case f.hasLo && f.hasHi:
		if tag = typeOf(f.lo); tag == 0 || typeOf(f.hi) != tag {
			return nil, false
		}
	case f.hasLo:
		tag = typeOf(f.lo)
	case f.hasHi:
		tag = typeOf(f.hi)
	}
	if tag == 0 {
		return nil, false
	}
	base := append(append([]byte(nil), prefix...), tag)
	start, end := base, kv.PrefixEnd(base)
	// A string bound shorter than the indexed prefix compares exactly with
	// every stored (possibly cut) key; a longer one is widened to its prefix.
	widen := func(v jsonv.Value) bool { s, ok := v.(string); return ok && len(s) >= maxIndexedString }
	if f.hasLo {
		if widen(f.lo) {
			start = appendStringOpen(append([]byte(nil), base...), indexedValue(f.lo).(string))
		} else {
			k := appendValue(append([]byte(nil), prefix...), f.lo)
			if start = k; !f.loIncl {
				start = kv.PrefixEnd(k)
			}
		}
	}
	if f.hasHi {
		if widen(f.hi) {
			end = kv.PrefixEnd(appendStringOpen(append([]byte(nil), base...), indexedValue(f.hi).(string)))
		} else {
			k := appendValue(append([]byte(nil), prefix...), f.hi)
			if end = kv.PrefixEnd(k); !f.hiIncl {
				end = k
			}
		}
	}
	if bytes.Compare(start, end) >= 0 {
		return nil, true // an empty range: nothing can match
	}
	return []keyRange{{start, end}}, true
}

// appendStringOpen appends a string's escaped bytes without the terminator: a
// prefix of the encoding of every string that starts with s.
func appendStringOpen(b []byte, s string) []byte {
	enc := appendString(nil, s)
	return append(b, enc[1:len(enc)-2]...)
}

// indexSource yields the live documents an index plan selects, in sequence
// order (the order the executor expects), implementing query.Source.
//
// An equality or IN plan streams: each of its key ranges holds one indexed
// value, whose entries are stored in sequence order, so a merge of the
// ranges' iterators yields candidates in order, and a page reads about a
// page of entries and documents. Other plans (prefixes, comparisons, defined)
// hold entries in value order: their candidates are gathered and sorted
// before the first one is returned.
//
// Documents are looked up ahead of the executor (see lookAhead).
type indexSource struct {
	docReader
	ranges []keyRange
	filter *docFilter
	stream bool
	// oneEach: a document has at most one entry in ranges (an equality or
	// IN on a path that does not go through array elements: a document
	// has one value there).
	oneEach bool
	// partitionOnly: every entry of ranges belongs to a document that
	// filter admits, so a count need not look at them (see inOrder).
	partitionOnly bool

	// gathered plans
	cands    []candidate
	gathered bool
	i        int

	// streamed plans: one cursor per range, opened from seq at first use
	cursors []*rangeCursor
	from    uint64
	opened  bool

	// race, if set, yields a streamed plan's candidates instead, racing
	// other equalities' lists or the partition's (see equalityRace).
	race *equalityRace
	// gr, if set, yields a gathered plan's candidates, racing the
	// partition's list (see gatherRace).
	gr *gatherRace
	// keep, if set, is what a gathered entry's value must pass to be a
	// candidate (see conditionSource).
	keep *entryTest

	scanned int // index entries read so far
}

type candidate struct {
	seq    uint64
	suffix []byte
}

// rangeCursor is a streamed range's iterator and its next in-scope entry.
type rangeCursor struct {
	it   kv.Iterator
	head candidate
	ok   bool
}

// indexSource returns the source of plan's documents in scope, whose first
// lookup takes lookAhead candidates (see newLookAhead); it reads nothing
// until the first Next or seek.
func (s *scope) indexSource(r kv.Reader, plan *indexPlan, filter *docFilter, lookAhead int) *indexSource {
	stream := plan.spec.kind == filterEq || plan.spec.kind == filterIn
	return &indexSource{docReader: newDocReader(s, r, lookAhead), ranges: plan.ranges, filter: filter, stream: stream, oneEach: stream && !plan.spec.element}
}

// countableRanges implements storeCountable: the ranges of an equality or
// IN read as they are, nothing racing them or judging their entries.
func (x *indexSource) countableRanges() ([]keyRange, bool) {
	plain := x.race == nil && x.gr == nil && x.keep == nil && (x.filter == nil || x.partitionOnly) && !x.opened && !x.gathered && x.from == 0
	return x.ranges, plain && x.oneEach
}

// gather reads every candidate of a non-streamed plan, sorted by sequence
// number without duplicates.
func (x *indexSource) gather() error {
	x.gathered = true
	for _, kr := range x.ranges {
		it := x.r.Scan(kr.start, kr.end, false)
		for it.Next() {
			x.scanned++
			x.collect(it)
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	x.sortCandidates()
	return nil
}

// collect keeps the candidate at it's entry when it is in scope.
func (x *indexSource) collect(it kv.Iterator) {
	if !x.filter.match(it.Value()) {
		return
	}
	k := it.Key()
	if x.keep != nil && !x.keep.passes(k) {
		return
	}
	x.cands = append(x.cands, candidate{binary.BigEndian.Uint64(k[len(k)-8:]), append([]byte(nil), it.Value()...)})
}

// sortCandidates orders the gathered candidates by sequence number, without
// duplicates.
func (x *indexSource) sortCandidates() {
	slices.SortFunc(x.cands, func(a, b candidate) int { return cmp.Compare(a.seq, b.seq) })
	x.cands = slices.CompactFunc(x.cands, func(a, b candidate) bool { return a.seq == b.seq })
}

// seek restarts at the first candidate with sequence number >= seq.
func (x *indexSource) seek(seq uint64) {
	x.look.reset()
	if x.race != nil {
		x.race.seek(seq)
		return
	}
	if x.stream {
		x.close()
		x.from, x.opened = seq, false
		return
	}
	if x.gr != nil {
		x.gr.seek(seq)
		x.i = 0 // what was gathered stays; next finds seq in it
		return
	}
	if !x.gathered {
		if err := x.gather(); err != nil {
			x.err = err
			return
		}
	}
	x.i, _ = slices.BinarySearchFunc(x.cands, seq, func(c candidate, t uint64) int { return cmp.Compare(c.seq, t) })
}

// open starts every range's iterator at sequence number x.from.
func (x *indexSource) open() error {
	x.opened = true
	x.cursors = x.cursors[:0]
	for _, kr := range x.ranges {
		start := binary.BigEndian.AppendUint64(slices.Clip(kr.start), x.from)
		c := &rangeCursor{it: x.r.Scan(start, kr.end, false)}
		x.cursors = append(x.cursors, c)
		if err := x.advance(c); err != nil {
			return err
		}
	}
	return nil
}

// advance moves c to its range's next entry in scope.
func (x *indexSource) advance(c *rangeCursor) error {
	for c.it.Next() {
		x.scanned++
		if !x.filter.match(c.it.Value()) {
			continue
		}
		k := c.it.Key()
		c.head = candidate{binary.BigEndian.Uint64(k[len(k)-8:]), c.it.Value()}
		c.ok = true
		return nil
	}
	c.ok = false
	return c.it.Close()
}

// next returns the next candidate in sequence order, false at the end.
func (x *indexSource) next() (candidate, bool, error) {
	if rc := x.race; rc != nil {
		before := rc.read
		c, ok, err := rc.next()
		x.scanned += rc.read - before
		return c, ok, err
	}
	if x.gr != nil {
		return x.gr.next(x)
	}
	if !x.stream && !x.gathered {
		if err := x.gather(); err != nil {
			return candidate{}, false, err
		}
	}
	if !x.stream {
		if x.i >= len(x.cands) {
			return candidate{}, false, nil
		}
		x.i++
		return x.cands[x.i-1], true, nil
	}
	if !x.opened {
		if err := x.open(); err != nil {
			return candidate{}, false, err
		}
	}
	var low *rangeCursor
	for _, c := range x.cursors {
		if c.ok && (low == nil || c.head.seq < low.head.seq) {
			low = c
		}
	}
	if low == nil {
		return candidate{}, false, nil
	}
	// The suffix is copied: the iterator's value is valid until it moves.
	out := candidate{low.head.seq, append([]byte(nil), low.head.suffix...)}
	for _, c := range x.cursors { // a document with the value twice (arrays): once
		for c.ok && c.head.seq == out.seq {
			if err := x.advance(c); err != nil {
				return candidate{}, false, err
			}
		}
	}
	return out, true, nil
}

// nextRecord returns the next live document record in scope, without
// parsing it.
func (x *indexSource) nextRecord() (*docRecord, uint64, bool, error) { return x.record(x) }

// Next implements query.Source.
func (x *indexSource) Next() (*jsonv.Object, uint64, bool, error) { return x.parsed(x) }

// Skip implements query.Skipper.
func (x *indexSource) Skip(n, then int) (int, error) { return x.skip(x, n, then) }

// entriesRead implements candidates.
func (x *indexSource) entriesRead() int { return x.scanned }

// indexMetrics renders the x-ms-cosmos-index-utilization value (base64 JSON, as
// both SDKs decode it) for the plan used, or for a scan: a composite index's
// specs ("/pk ASC", "/_ts DESC"), or else the path index of path.
func indexMetrics(path []string, composite []string) string {
	type single struct {
		FilterExpression string `json:"FilterExpression"`
		IndexSpec        string `json:"IndexSpec"`
		FilterPreciseSet bool   `json:"FilterPreciseSet"`
		IndexPreciseSet  bool   `json:"IndexPreciseSet"`
		IndexImpactScore string `json:"IndexImpactScore"`
	}
	m := struct {
		Utilized   []single        `json:"UtilizedSingleIndexes"`
		Potential  []single        `json:"PotentialSingleIndexes"`
		UtilizedC  []compositeSpec `json:"UtilizedCompositeIndexes"`
		PotentialC []compositeSpec `json:"PotentialCompositeIndexes"`
	}{Utilized: []single{}, Potential: []single{}, UtilizedC: []compositeSpec{}, PotentialC: []compositeSpec{}}
	if composite != nil {
		m.UtilizedC = append(m.UtilizedC, compositeSpec{IndexSpecs: composite, IndexPreciseSet: true, IndexImpactScore: "High"})
	} else if path != nil {
		spec := "/" + strings.Join(path, "/") + "/?"
		m.Utilized = append(m.Utilized, single{IndexSpec: spec, FilterPreciseSet: true, IndexPreciseSet: true, IndexImpactScore: "High"})
	}
	b, _ := json.Marshal(m)
	return base64.StdEncoding.EncodeToString(b)
}

// compositeSpec is a composite index in an index utilization report.
type compositeSpec struct {
	IndexSpecs       []string `json:"IndexSpecs"`
	IndexPreciseSet  bool     `json:"IndexPreciseSet"`
	IndexImpactScore string   `json:"IndexImpactScore"`
}

// filtersFromHints converts the query's planner hints into filter specs.
func filtersFromHints(h query.Hints) []filterSpec {
	var out []filterSpec
	for _, x := range h.Where {
		f := filterSpec{path: x.Path, values: x.Values, lo: x.Lo, hi: x.Hi, hasLo: x.HasLo, hasHi: x.HasHi, loIncl: x.LoIncl, hiIncl: x.HiIncl}
		f.element = x.Element // its path's element segments are the index's (arrayElem)
		switch x.Kind {
		case query.HintEq:
			f.kind = filterEq
		case query.HintIn:
			f.kind = filterIn
		case query.HintRange:
			f.kind = filterRange
		case query.HintPrefix:
			f.kind = filterPrefix
		case query.HintDefined:
			f.kind = filterDefined
		default:
			continue
		}
		out = append(out, f)
	}
	return out
}

// querySource is what QueryDocuments reads from: a scan or an index plan.
type querySource interface {
	query.Source
	seek(seq uint64)
	close()
	// work is what the source has read so far, for the page's charge.
	work() (ru.Query, error)
}

// recordSource is a querySource that also yields the stored records of
// documents in insertion order without parsing them: the read feed's.
type recordSource interface {
	querySource
	nextRecord() (*docRecord, uint64, bool, error)
	Raw() []byte
	reader() *docReader
}

func (x *indexSource) close() {
	if x.race != nil {
		x.race.close()
	}
	if x.gr != nil {
		x.gr.close()
	}
	for _, c := range x.cursors {
		if c.ok {
			_ = c.it.Close() // read errors were returned by Next
			c.ok = false
		}
	}
}
