package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/query"
	"github.com/lethe-db/lethe/ru"
)

// An ordered index plan serves ORDER BY from the index: it yields documents in
// the order of the first ORDER BY key, so the executor stops reading once the
// page is settled (query.ExecOptions.SortedByFirstKey). It must reproduce the
// executor's order exactly: undefined < null < false < true < number < string
// < array < object. Hence:
//   - ascending, it is used only when a WHERE conjunct on the same path
//     excludes undefined values (they would come first and have no entry);
//   - descending without such a conjunct, documents without the property
//     (undefined, last) are found by a scan after the index is exhausted, which
//     costs nothing when the page fills first;
//   - the index does not order arrays and objects: their entries (markers,
//     after every scalar) make the read give up when it meets one
//     (errUnorderable), and the page is planned again without reading in
//     order; a descending read meets them first, an ascending one only if
//     the page has not filled before;
//   - strings long enough to have been cut to the indexed prefix are regrouped
//     and sorted by their full value.

// orderedPlan describes an ordered index read.
type orderedPlan struct {
	path   []string
	desc   bool
	ranges []keyRange // ascending
	tail   bool       // then documents where the path is undefined
	// defined, for a descending read of a path a document may lack,
	// reports whether every document in the read's scope has a value
	// there, so that no document is left for the tail: from a proof an
	// earlier count left, or, with count, from counting (see
	// entryInEvery). The plan drops its tail when a proof is known; the
	// source, once the index is done, counts before it reads every
	// document of the scope for the tail.
	defined func(r kv.Reader, count bool) bool
	// head, for an ascending read of a path that some document lacks, has
	// the read yield those documents first, in insertion order, as the
	// executor orders them (undefined sorts first): see orderedHead.
	head bool
	spec *filterSpec
	// prefix is what the index's keys hold before the ordered value: the
	// path's index prefix, or a composite index's prefix and the values
	// its equalities fix (composite).
	prefix []byte
	specs  []string // a composite index's paths and the directions read; nil for a path index
	// whereExact: every document the index yields satisfies the query's
	// WHERE (see planComposite).
	whereExact bool
}

// composite reports whether the plan reads a composite index.
func (p *orderedPlan) composite() bool { return p.specs != nil }

// planOrdered decides whether ORDER BY can read the index in order. part is
// the partition's list when the query is scoped to one (nil otherwise):
// there an ascending read on a path that a document may lack is not
// planned, since proving that none lacks it reads the path's entries of
// the whole container, where the partition's documents may be few to sort.
// An ascending read needs that proof on its first page only: a page that
// resumes after a row whose key is defined (scope.afterDefined) has every
// document without the key behind it, since those sort first, so the index
// holds every row it can return. Its pages then cost a page, also where
// some documents lack the key (which the proof can never show), on a
// shared store (which keeps no proof), and in a partition (where the read
// races the partition's list, as a descending one does: see budgeted).
// On the embedded store, with headed, a read that no remembered proof
// covers yields the documents without the key first (orderedPlan.head),
// found by the seqs its entries lack rather than by reading every
// document; its gathering is the count that proves none lacks it. Without
// headed (an equality's list races the read) such a read is planned only
// when the count proves it.
func (s *scope) planOrdered(r kv.Reader, h query.Hints, filters []filterSpec, part *indexPlan, headed bool) (*orderedPlan, bool) {
	if len(h.OrderBy) == 0 {
		return nil, false
	}
	first := h.OrderBy[0]
	if !s.l.index.indexed(first.Path) {
		return nil, false
	}
	prefix := indexPrefix(s.rid, first.Path)
	p := &orderedPlan{path: first.Path, desc: first.Desc, prefix: prefix}
	if p.narrow(filters) {
		return p, true
	}
	p.ranges = []keyRange{{prefix, kv.PrefixEnd(prefix)}}
	if !first.Desc && !alwaysDefined(first.Path) && !s.afterDefined {
		if part != nil {
			return nil, false
		}
		// On a shared store, gathering every entry and walking the
		// insertion order are two rows over the connection a document,
		// where reading and sorting every document is one (BENCHMARKS.md,
		// thirtieth session).
		_, embedded := r.(*metaReader)
		switch {
		case headed && embedded:
			// The head counts as it gathers, and proves it when no
			// document lacks the key.
			p.head = !s.entryKnownInEvery(r, nil, prefix)
		case !s.definedInEvery(r, prefix):
			return nil, false
		}
	}
	if p.tail = first.Desc && !alwaysDefined(first.Path); p.tail {
		p.setDefined(r, s, nil, prefix, part != nil)
	}
	return p, true
}

// setDefined gives a descending plan with a tail its defined check, whether
// every document with an entry under among (nil: every document) has one
// under counted (entryInEvery), and drops the tail when a proof already
// says so. A query scoped to a partition counts only among an equality's
// documents: a count of the container's entries may cost more than reading
// the partition's documents, so there only a proof serves.
func (p *orderedPlan) setDefined(r kv.Reader, s *scope, among, counted []byte, scoped bool) {
	p.defined = func(r kv.Reader, count bool) bool {
		if count && (among != nil || !scoped) {
			return s.entryInEvery(r, among, counted)
		}
		return s.entryKnownInEvery(r, among, counted)
	}
	p.tail = !p.defined(r, false)
}

// narrow limits p's read to the ranges, under its prefix, of the first of
// filters on p's path that the index can serve, and reports whether there
// was one.
func (p *orderedPlan) narrow(filters []filterSpec) bool {
	for i, f := range filters {
		if !slices.Equal(f.path, p.path) {
			continue
		}
		if ranges, ok := rangesUnder(p.prefix, f); ok {
			slices.SortFunc(ranges, func(a, b keyRange) int { return bytes.Compare(a.start, b.start) })
			p.ranges, p.spec = ranges, &filters[i]
			return true
		}
	}
	return false
}

// planMinMax returns the ordered read that answers MIN (ascending) or MAX
// (descending) of path with its first row that passes WHERE (see
// query.Query.MinMaxPath): documents without the path have no entry, and
// MIN and MAX skip them. A WHERE conjunct on the path narrows the read to
// its ranges. An object or array at the path makes MIN and MAX undefined,
// and the index does not order them: a descending read meets their markers
// first and gives up (errUnorderable), but an ascending one would stop
// before them, so MIN is not planned when the path holds any. Nil when the
// path is not indexed, or for such a MIN.
func (s *scope) planMinMax(r kv.Reader, path []string, max bool, filters []filterSpec) *orderedPlan {
	if !s.l.index.indexed(path) {
		return nil
	}
	prefix := indexPrefix(s.rid, path)
	p := &orderedPlan{path: path, desc: max, prefix: prefix, ranges: []keyRange{{prefix, kv.PrefixEnd(prefix)}}}
	p.narrow(filters)
	if max {
		return p
	}
	markers := append(slices.Clip(prefix), tagContainer)
	it := r.Scan(markers, kv.PrefixEnd(markers), false)
	found := it.Next()
	if it.Close() != nil || found {
		return nil
	}
	return p
}

// definedInEvery reports whether every document the container stores has
// a value at the path whose index entries lie under prefix, so that an
// ascending read of them misses no document (one without the value sorts
// first, and has no entry). A document has one entry at a path where it
// has a value (a scalar's, or the marker of an object or array), and the
// container's usage tally counts its stored documents, expired or not, as
// the index holds them: the two counts are equal exactly when none lacks
// the value. Counting reads every entry, a small part of what reading and
// sorting every document costs ("ORDER BY c.name" over a container where
// every document has a name). On an exclusive store a count that finds
// every document is remembered until a write breaks it (definedProofs), so
// the pages after it count nothing.
func (s *scope) definedInEvery(r kv.Reader, prefix []byte) bool {
	return s.entryInEvery(r, nil, prefix)
}

// entryInEvery reports whether every document with an entry under among
// (one entry a document: the path index's entries of one value; nil for
// every stored document) has one under prefix, by counting both, or from a
// proof that an earlier count left (definedProofs).
func (s *scope) entryInEvery(r kv.Reader, among, prefix []byte) bool {
	if s.entryKnownInEvery(r, among, prefix) {
		return true
	}
	var want int64
	if among == nil {
		stored, err := s.storedTally(r)
		if err != nil || stored.count <= 0 {
			return false
		}
		want = stored.count
	} else if want = countEntries(r, among, -1); want < 0 {
		return false
	}
	definednessCounts.Add(1)
	if countEntries(r, prefix, want) != want {
		return false
	}
	s.provedEvery(r, among, prefix)
	return true
}

// provedEvery records what a count on r's snapshot found: every document
// with an entry under among (nil: every stored document) has one under
// prefix. On an exclusive store the proof is kept (definedProofs).
func (s *scope) provedEvery(r kv.Reader, among, prefix []byte) {
	m, _ := r.(*metaReader)
	if m == nil || m.snap.guard.defined == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), proofWatchWait)
	defer cancel()
	m.snap.guard.defined.counted(ctx, m.snap.guard.Store, s.rid, among, prefix, m.snap.proofEpoch)
}

// entryKnownInEvery is entryInEvery from a remembered proof alone: false
// where only a count could tell.
func (s *scope) entryKnownInEvery(r kv.Reader, among, prefix []byte) bool {
	m, _ := r.(*metaReader)
	if m == nil || m.snap.guard.defined == nil {
		return false
	}
	return m.snap.guard.defined.holds(s.rid, among, prefix, m.snap.proofEpoch)
}

// proofWatchWait bounds how long a query waits for the writers to let it
// watch a prefix (definedProofs.watch), which it does once for each proof:
// a turn behind the writers queued before it, unless writes stall; past it
// the prefix stays unwatched and the next count tries again.
const proofWatchWait = 50 * time.Millisecond

// orderedSource yields the documents of an ordered plan.
type orderedSource struct {
	docReader // the index's documents
	plan      *orderedPlan
	filter    *docFilter

	ranges []keyRange  // the plan's, narrowed by resume
	ri     int         // next range
	it     kv.Iterator // current range
	cur    keyRange    // it's bounds
	// ties, in a descending read, reads forwards the entries of one value
	// that several share, so that they come in ascending seq; then the
	// descending read goes on below tiesStart.
	ties      kv.Iterator
	tiesStart []byte
	// enc and suffix hold a descending read's last entry while it looks
	// at the next (readTiesForwards); the candidate it yields refers to
	// suffix until the next call.
	enc, suffix []byte
	// resumeTies, in a descending read resumed within the entries of one
	// value, is where their forward read starts (see resume).
	resumeTies []byte
	pending    []candidate  // a regrouped run of cut strings, in order
	head       *orderedHead // the undefined documents, before the index (plan.head)
	tail       recordSource // the undefined documents, once the index is done
	part       *indexPlan   // the partition's list, when scoped to one (see partitionPlan)
	// budget, when positive, is how many index entries the source may read
	// before it counts the entries of alt, the list it races (see
	// raceOrdered), up to what the budget would pay for reading them
	// instead: if they are all counted, the source fails with
	// errOverBudget, for the page to read that list instead; otherwise it
	// goes on with four times the budget.
	budget int
	alt    []keyRange
	// altCost is how many of the source's index entries one of alt's is
	// worth: raceLookupCost for a partition's list, where the read rules
	// out other partitions' entries without a lookup but each of the
	// list's is a lookup; 1 for an equality's, where both are lookups.
	altCost int
	// altSource builds what reads alt, for the page to go on with once the
	// budget is spent.
	altSource func() (querySource, sourcePlan)
	peeked    *peekedEntry
	done      bool
	scanned   int // index entries read so far
}

// orderedSource returns the source of plan's documents in scope, whose first
// lookup takes lookAhead documents (see newLookAhead).
func (s *scope) orderedSource(r kv.Reader, plan *orderedPlan, part *indexPlan, filter *docFilter, lookAhead int) *orderedSource {
	x := &orderedSource{docReader: newDocReader(s, r, lookAhead), plan: plan, part: part, filter: filter, ranges: plan.ranges}
	if plan.head {
		x.head = &orderedHead{}
	}
	return x
}

// keyOnly returns plan, the source's plan for query q, with whereHolds set
// when q has no WHERE, or one the index answers exactly, and returns its
// documents' stored JSON ordered by the path the source orders by (SELECT *
// ... ORDER BY c._ts DESC): the
// executor then looks into each document for that path's value only, so
// the source yields, with each document's JSON, an object holding just
// that value (see docReader.keyPath) instead of parsing it.
func (x *orderedSource) keyOnly(q *query.Query, plan sourcePlan) sourcePlan {
	// The tail (documents without the key) comes from the partition or the
	// container, unfiltered by the index: WHERE must judge it.
	if q.Filters() && !(x.plan.whereExact && !x.plan.tail && !x.plan.head) {
		return plan
	}
	plan.whereHolds = true
	if path, ok := q.ReadsOnlyRawAndFirstKey(); ok && slices.Equal(path, x.plan.path) {
		x.keyPath = path
	}
	return plan
}

// errUnorderable is an ordered read's failure when it meets a document with
// an object or an array where it orders: the index cannot place it among
// the others as the executor would (see queryPage).
var errUnorderable = errors.New("engine: an ordered read met an object or array")

// errOverBudget is a source's failure once it has read its budget of
// index entries (see raceOrdered).
var errOverBudget = errors.New("engine: the plan read its budget of index entries")

// resume starts the read at the documents whose first ORDER BY key is v,
// inclusive, or (undefined) at the documents without it, which come first
// in an ascending read and last in a descending one: the rows of every
// document before them precede the continuation, which the executor skips
// anyway, so a later page reads about a page, not every page before it.
// With tie, among the documents whose key is v it starts at the one whose
// seq is seq (ties come in ascending seq, see next), so that a later page
// within hundreds of documents sharing a key still reads a page. Call it
// before the first Next.
func (x *orderedSource) resume(v jsonv.Value, undefined bool, seq uint64, tie bool) {
	if undefined && !x.plan.desc { // first: the head from seq on, if any, then the whole index
		if x.head != nil && tie {
			x.head.from = seq
		}
		return
	}
	if undefined { // last in a descending read: the tail only
		x.ranges = nil
		return
	}
	// The entries of v and of every value after it in the plan's direction.
	// A string the index cuts starts its run of equal cut values, which is
	// regrouped whole.
	at := appendIndexedValue(slices.Clone(x.plan.prefix), v)
	from := at // where the read starts among v's entries
	if tie && !maybeCut(at[len(x.plan.prefix):]) {
		from = binary.BigEndian.AppendUint64(slices.Clone(at), seq)
		x.resumeTies = from
	}
	var ranges []keyRange
	for _, kr := range x.plan.ranges {
		if x.plan.desc {
			kr.end = minKey(kr.end, kv.PrefixEnd(at))
		} else if bytes.Compare(from, kr.start) > 0 {
			kr.start = from
		}
		if bytes.Compare(kr.start, kr.end) < 0 {
			ranges = append(ranges, kr)
		}
	}
	x.ranges = ranges
}

func minKey(a, b []byte) []byte {
	if bytes.Compare(a, b) <= 0 {
		return a
	}
	return b
}

type peekedEntry struct{ key, value []byte }

// nextEntry returns the next index entry in plan order.
func (x *orderedSource) nextEntry() (key, value []byte, ok bool) {
	if p := x.peeked; p != nil {
		x.peeked = nil
		return p.key, p.value, true
	}
	for {
		if x.ties != nil {
			if x.ties.Next() {
				return x.ties.Key(), x.ties.Value(), true
			}
			x.closeIter(x.ties)
			x.ties = nil
			x.cur.end = x.tiesStart
			x.it = x.r.Scan(x.cur.start, x.cur.end, true)
		}
		if x.it != nil {
			if x.it.Next() {
				return x.it.Key(), x.it.Value(), true
			}
			x.closeIter(x.it)
			x.it = nil
		}
		if x.ri >= len(x.ranges) {
			return nil, nil, false
		}
		i := x.ri
		if x.plan.desc {
			i = len(x.ranges) - 1 - x.ri
		}
		x.ri++
		x.cur = x.ranges[i]
		x.it = x.r.Scan(x.cur.start, x.cur.end, x.plan.desc)
	}
}

// closeIter closes it, keeping its error if it is the source's first.
func (x *orderedSource) closeIter(it kv.Iterator) {
	if err := it.Close(); err != nil && x.err == nil {
		x.err = err
	}
}

// readTiesForwards is called in a descending read that has just read the
// entry key, whose encoded value is enc: when the next entry shares it, it
// drops both and reads every entry of that value forwards, in ascending
// seq, before the read goes on below them (see nextEntry), and reports
// true. Otherwise the next entry waits in peeked.
func (x *orderedSource) readTiesForwards(enc []byte) bool {
	if x.ties != nil || x.it == nil || x.peeked != nil {
		return false // a regrouped run's next entry, or already forwards
	}
	it := x.it
	if !it.Next() {
		return false // nextEntry finds the end again
	}
	key := it.Key()
	if len(key) < len(x.plan.prefix)+8 || !bytes.Equal(key[len(x.plan.prefix):len(key)-8], enc) {
		x.peeked = &peekedEntry{append([]byte(nil), key...), append([]byte(nil), it.Value()...)}
		return false
	}
	x.scanned++
	start := append(slices.Clone(x.plan.prefix), enc...)
	x.closeIter(it)
	x.it = nil
	x.tiesStart = start
	from := start
	if x.resumeTies != nil && bytes.HasPrefix(x.resumeTies, start) && len(x.resumeTies) == len(start)+8 {
		from = x.resumeTies // the resumed value: from the cursor's document on
	}
	x.resumeTies = nil
	x.ties = x.r.Scan(from, minKey(kv.PrefixEnd(start), x.cur.end), false)
	return true
}

// maybeCut reports whether an encoded index value may be a string cut to the
// indexed prefix (its entries then need regrouping by full value).
func maybeCut(enc []byte) bool {
	return len(enc) > 0 && enc[0] == tagString && len(enc) >= maxIndexedString-3
}

// Next implements query.Source.
func (x *orderedSource) Next() (*jsonv.Object, uint64, bool, error) {
	if x.tail == nil && !x.done {
		o, seq, ok, err := x.parsed(x)
		if err != nil || ok {
			return o, seq, ok, err
		}
		if !x.plan.tail || x.plan.defined != nil && x.plan.defined(x.r, true) {
			x.done = true
			return nil, 0, false, nil
		}
		x.tail = x.s.inOrder(x.r, x.part, x.filter, x.look.n, false)
		x.tail.seek(0)
	}
	if x.done {
		return nil, 0, false, nil
	}
	return x.nextUndefined()
}

// Skip implements query.Skipper: over the index's documents, not the
// tail's, which are read as they come.
func (x *orderedSource) Skip(n, then int) (int, error) {
	if x.tail != nil || x.done {
		return 0, nil
	}
	return x.skip(x, n, then)
}

// next implements candidates: the index's next entry in scope, in plan
// order, a run of cut strings regrouped by full value, and entries of equal
// values in ascending seq (read forwards in a descending read).
func (x *orderedSource) next() (candidate, bool, error) {
	if h := x.head; h != nil && !h.done {
		c, ok, err := x.nextInHead()
		if err != nil || ok {
			return c, ok, err
		}
	}
	for {
		if x.budget > 0 && x.scanned >= x.budget {
			n, small, err := countRanges(x.r, x.alt, x.filter, x.budget/x.altCost)
			x.scanned += n
			switch {
			case err != nil:
				return candidate{}, false, err
			case small:
				return candidate{}, false, errOverBudget
			}
			x.budget *= 4
		}
		var c candidate
		if len(x.pending) > 0 {
			c, x.pending = x.pending[0], x.pending[1:]
		} else {
			key, value, ok := x.nextEntry()
			if !ok {
				return candidate{}, false, x.err
			}
			x.scanned++
			enc := key[len(x.plan.prefix) : len(key)-8]
			if len(enc) > 0 && enc[0] == tagContainer {
				return candidate{}, false, errUnorderable
			}
			c = candidate{seqOf(key), value}
			if maybeCut(enc) {
				c.suffix = append([]byte(nil), value...)
				x.pending = x.regroup(enc, c)
				continue
			}
			if x.plan.desc && x.ties == nil {
				// Looking ahead moves the iterator: keep what this entry
				// says first.
				x.enc = append(x.enc[:0], enc...)
				x.suffix = append(x.suffix[:0], value...)
				c.suffix = x.suffix
				if x.readTiesForwards(x.enc) {
					continue
				}
			}
		}
		if x.filter.match(c.suffix) {
			return c, true, nil
		}
	}
}

// entriesRead implements candidates.
func (x *orderedSource) entriesRead() int { return x.scanned }

// regroup collects every entry sharing a possibly cut string value, and orders
// them by their documents' full values. The first entry after the run is kept
// for nextEntry.
func (x *orderedSource) regroup(enc []byte, first candidate) []candidate {
	enc = append([]byte(nil), enc...)
	group := []candidate{first}
	for {
		key, value, ok := x.nextEntry()
		if !ok {
			break
		}
		if !bytes.Equal(key[len(x.plan.prefix):len(key)-8], enc) {
			x.peeked = &peekedEntry{append([]byte(nil), key...), append([]byte(nil), value...)}
			break
		}
		x.scanned++
		group = append(group, candidate{seqOf(key), append([]byte(nil), value...)})
	}
	return x.sortByFull(group)
}

func (x *orderedSource) sortByFull(group []candidate) []candidate {
	full := make([]string, len(group))
	for i, c := range group {
		if rec, err := lookup(x.r, x.s.rid, c.suffix); err == nil && rec != nil {
			if o, err := jsonv.ParseStoredObject(rec.json); err == nil {
				full[i], _ = valueAt(o, x.plan.path).(string)
			}
		}
	}
	idx := make([]int, len(group))
	for i := range idx {
		idx[i] = i
	}
	// Equal values in ascending seq, as the executor counts on
	// (query.ExecOptions.TiesInSeqOrder).
	sort.Slice(idx, func(a, b int) bool {
		fa, fb := full[idx[a]], full[idx[b]]
		if fa != fb {
			return fa < fb != x.plan.desc
		}
		return group[idx[a]].seq < group[idx[b]].seq
	})
	out := make([]candidate, len(group))
	for i, j := range idx {
		out[i] = group[j]
	}
	return out
}

// nextUndefined yields, after the index, the documents without the property.
func (x *orderedSource) nextUndefined() (*jsonv.Object, uint64, bool, error) {
	for {
		o, seq, ok, err := x.tail.Next()
		if err != nil || !ok {
			x.done = !ok
			return nil, 0, false, err
		}
		if valueAt(o, x.plan.path) == nil {
			if _, present := o.GetPath(x.plan.path); !present {
				x.raw = x.tail.Raw()
				return o, seq, true, nil
			}
		}
	}
}

func seqOf(key []byte) uint64 {
	k := key[len(key)-8:]
	return uint64(k[0])<<56 | uint64(k[1])<<48 | uint64(k[2])<<40 | uint64(k[3])<<32 | uint64(k[4])<<24 | uint64(k[5])<<16 | uint64(k[6])<<8 | uint64(k[7])
}

func (x *orderedSource) seek(uint64) {} // the executor skips rows up to its cursor
func (x *orderedSource) close() {
	if x.it != nil {
		x.it.Close()
	}
	if x.head != nil && x.head.it != nil {
		x.head.it.Close()
	}
	if x.tail != nil {
		x.tail.close()
	}
}
func (x *orderedSource) work() (ru.Query, error) {
	w, err := x.docReader.work()
	if x.tail != nil {
		t, _ := x.tail.work()
		w.Add(t)
	}
	return w, err
}

// orderedHead finds, for an ascending read of a path that some documents in
// the container lack (orderedPlan.head), those documents, which sort first
// and have no entry in the path's index, without reading every document:
// the seqs of the documents the index holds (every entry under the plan's
// prefix) are gathered, and the container's insertion order is walked for
// the seqs they lack. The usage tally counts the stored
// documents as the insertion order holds them (expired or not, in any
// partition), so the walk stops once it has met as many as the tally
// exceeds the entries by: when those documents are old (a property added
// later), it reads about a page of insertion order, and otherwise the
// entries and the order's keys, no document but those yielded. A page that
// resumes among them starts yielding at its cursor's seq.
type orderedHead struct {
	from uint64 // the first seq to yield
	// The seqs of the documents with an entry: a bitmap of the seqs from
	// lo on, where they are dense enough for it to take no more memory
	// than they do (seqs are given out in turn, so they mostly are), else
	// have, sorted, which the walk passes in step.
	lo      uint64
	bits    []uint64
	have    []uint64
	next    int         // have's first seq not yet passed in the walk
	lacking int64       // stored documents without an entry
	it      kv.Iterator // the walk of the insertion order; nil until it starts
	done    bool
}

// holds reports whether a document of seq has an entry. Asked in
// ascending seq.
func (h *orderedHead) holds(seq uint64) bool {
	if h.bits != nil {
		i := seq - h.lo
		return seq >= h.lo && i/64 < uint64(len(h.bits)) && h.bits[i/64]&(1<<(i%64)) != 0
	}
	for h.next < len(h.have) && h.have[h.next] < seq {
		h.next++
	}
	return h.next < len(h.have) && h.have[h.next] == seq
}

// gathered files the seqs in have, as a bitmap where they are dense
// enough, else sorted.
func (h *orderedHead) gathered() {
	if len(h.have) == 0 {
		return
	}
	lo, hi := slices.Min(h.have), slices.Max(h.have)
	if words := (hi-lo)/64 + 1; words > uint64(len(h.have)) {
		slices.Sort(h.have)
		return
	}
	h.lo, h.bits = lo, make([]uint64, (hi-lo)/64+1)
	for _, seq := range h.have {
		i := seq - lo
		h.bits[i/64] |= 1 << (i % 64)
	}
	h.have = nil
}

// maxHeadEntries bounds the seqs an orderedHead gathers (8 bytes each, so
// 8 MiB at most for a page): a path of more entries is not read in order by
// a query that needs a head, which then reads every document and sorts
// them, as without the index.
const maxHeadEntries = 1 << 20

// nextInHead returns the head's next candidate in scope; false once every
// document without an entry has been met.
func (x *orderedSource) nextInHead() (candidate, bool, error) {
	h := x.head
	if h.it == nil {
		if err := x.startHead(); err != nil || h.done {
			h.done = true
			return candidate{}, false, err
		}
	}
	for h.lacking > 0 && h.it.Next() {
		x.scanned++
		k := h.it.Key()
		seq := binary.BigEndian.Uint64(k[len(k)-8:])
		if h.holds(seq) {
			continue
		}
		h.lacking--
		if seq < h.from {
			continue
		}
		suffix, _, _, err := decodeOrderValue(h.it.Value(), nil)
		if err != nil {
			return candidate{}, false, err
		}
		if x.filter.match(suffix) {
			return candidate{seq, suffix}, true, nil
		}
	}
	h.done = true
	return candidate{}, false, h.it.Err()
}

// startHead gathers the seqs of the documents with an entry and counts
// those without one; the head is done at once when there are none, which
// proves it as definedInEvery's count does.
func (x *orderedSource) startHead() error {
	h := x.head
	stored, err := x.s.storedTally(x.r)
	if err != nil {
		return err
	}
	definednessCounts.Add(1)
	h.have = make([]uint64, 0, min(max(stored.count, 0), 1<<17)) // as many entries, at most, and 1 MiB to start
	it := x.r.Scan(x.plan.prefix, kv.PrefixEnd(x.plan.prefix), false)
	for it.Next() {
		x.scanned++
		if len(h.have) == maxHeadEntries {
			it.Close()
			return errUnorderable // too many to gather: read without the index's order
		}
		h.have = append(h.have, seqOf(it.Key()))
	}
	if err := it.Close(); err != nil {
		return err
	}
	// A document has one entry at a path (see definedInEvery).
	if h.lacking = stored.count - int64(len(h.have)); h.lacking <= 0 {
		h.done = true
		if stored.count > 0 {
			x.s.provedEvery(x.r, nil, x.plan.prefix)
		}
		return nil
	}
	h.gathered()
	h.it = x.r.Scan(collKey(pfxOrder, x.s.rid), kv.PrefixEnd(collKey(pfxOrder, x.s.rid)), false)
	return nil
}
