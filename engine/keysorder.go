package engine

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/query"
)

// Several ORDER BY keys from one composite index. A composite index whose
// paths are the query's equalities' and then its first ORDER BY keys, in
// order, holds its documents in the order of those keys: ORDER BY
// c.status, c.t DESC with an index of /status and /t (Cosmos DB requires
// one for such a query). The index stores every value ascending, whatever
// direction the policy gives its path, so a read in the keys' directions
// walks the values of each key in turn: for each value of the first, in
// its direction, the values of the second under it, and so on, and under
// the values of every key the documents that share them in ascending seq
// (query.ExecOptions.TiesInSeqOrder). Each value costs one seek, so a page
// costs about a page of seeks, where sorting reads every document.
//
// The executor orders a document without one of the keys first (undefined
// comes first), which the index cannot place: it has no entry. So the plan
// needs each key's path to be defined in every document, which a WHERE
// conjunct on it implies or a count of its entries shows (definedInEvery).
// An object or array at a key makes the read give up (errUnorderable), as
// the one-key read does, and a string cut to the indexed prefix has its
// documents sorted by their full values.

// keysPlan is a composite index read in the order of several ORDER BY keys.
type keysPlan struct {
	prefix []byte     // the index's entries: its ordinal and the values its equalities fix
	paths  [][]string // the ordered paths, one per ORDER BY key the read serves
	desc   []bool     // each key's direction
	first  []keyRange // where the first key's values lie, ascending
	specs  []string   // the composite index's paths and the directions read, for index metrics
	// whereExact: every document the read yields satisfies WHERE (see
	// planComposite).
	whereExact bool
}

// planKeys picks a composite index whose paths after those that
// equalities among filters and pk fix are the query's first ORDER BY keys,
// two or more, so that reading it in their directions yields the
// documents in the order of those keys (see keysPlan). part is the
// partition's list when the query is scoped to one: the read is then
// planned only when the partition key is among the equalities, since the
// index holds every partition's entries in one order.
func (s *scope) planKeys(r kv.Reader, h query.Hints, filters []filterSpec, pk *filterSpec, part *indexPlan) (*keysPlan, bool) {
	if len(h.OrderBy) < 2 || len(s.l.composites) == 0 {
		return nil, false
	}
	all := append(slices.Clip(filters), derefSpec(pk)...)
next:
	for ord, paths := range s.l.composites {
		// The fixed paths: every one before the first ORDER BY key's.
		j := slices.IndexFunc(paths, func(p []string) bool { return slices.Equal(p, h.OrderBy[0].Path) })
		m := len(paths) - j
		if j < 0 || m < 2 || m > len(h.OrderBy) {
			continue
		}
		for i, p := range paths[j:] {
			if !slices.Equal(p, h.OrderBy[i].Path) {
				continue next
			}
		}
		prefix, used, fixed, ok := s.compositeFixed(ord, paths[:j], all)
		if !ok {
			continue
		}
		if part != nil && (pk == nil || !used[len(all)-1]) {
			continue
		}
		p := &keysPlan{prefix: prefix, first: []keyRange{{prefix, kv.PrefixEnd(prefix)}}}
		// A conjunct on the first key narrows the read to its values.
		narrowedBy := -1
		for i, f := range filters {
			if ranges, ok := rangesUnder(prefix, f); ok && slices.Equal(f.path, paths[j]) && !f.element {
				slices.SortFunc(ranges, func(a, b keyRange) int { return bytes.Compare(a.start, b.start) })
				p.first, narrowedBy = ranges, i
				break
			}
		}
		// WHERE holds for every entry read when it is nothing but
		// equalities, over values the index holds whole, that the prefix
		// fixes or that narrow the first key's read to their values.
		p.whereExact = h.Conjuncts == len(h.Where) && len(h.Where) == len(filters)
		for i, f := range filters {
			p.whereExact = p.whereExact && (used[i] || i == narrowedBy) && exactLookup(f)
			if !used[i] && f.kind <= filterIn && s.l.index.indexed(f.path) && !slices.Equal(f.path, paths[j]) {
				continue next // another equality's list is planned as before
			}
		}
		for _, o := range h.OrderBy[:m] {
			p.paths, p.desc = append(p.paths, o.Path), append(p.desc, o.Desc)
		}
		if !s.keysDefined(r, p, fixed, filters) {
			continue
		}
		for i, raw := range s.c.Composites[ord] {
			dir := " ASC"
			if i >= j && h.OrderBy[i-j].Desc {
				dir = " DESC"
			}
			p.specs = append(p.specs, raw+dir)
		}
		return p, true
	}
	return nil, false
}

// keysDefined reports whether every document that the equalities fixed
// select has a value at each of the plan's keys, so that the read misses
// none (one without a key sorts first among those sharing the keys before
// it, and has no entry). A conjunct on a key's path implies it, as the id
// and _ts are always defined. Otherwise the index tells, counting entries:
// a document has an entry in the composite index when it has a value at
// every path (or a marker where an object or array stops them, which the
// read gives up at), so with no equality the count of the entries under
// the plan's prefix equals the container's stored documents exactly when
// none lacks a key, and with one equality the count of its value's
// entries in the path index. With more, each key's path is counted
// against the container (definedInEvery). Counting reads the entries of
// the documents selected, where the one-key read would read and sort them;
// on an exclusive store a count that finds them all is remembered until a
// write breaks it (entryInEvery).
func (s *scope) keysDefined(r kv.Reader, p *keysPlan, fixed []filterSpec, filters []filterSpec) bool {
	var open [][]string // the keys no conjunct implies
	for _, path := range p.paths {
		if !alwaysDefined(path) && !constrains(filters, path) {
			open = append(open, path)
		}
	}
	switch {
	case len(open) == 0:
		return true
	case len(fixed) == 0:
		return s.definedInEvery(r, p.prefix)
	case len(fixed) == 1 && s.l.index.indexed(fixed[0].path):
		// (An equality on a path the policy leaves out of the index has no
		// entries to count the selected documents by.)
		return s.entryInEvery(r, s.equalityEntries(fixed[0]), p.prefix)
	}
	for _, path := range open {
		if !s.definedInEvery(r, indexPrefix(s.rid, path)) {
			return false
		}
	}
	return true
}

// countEntries counts the keys under prefix, at most limit+1 of them when
// limit is not negative (kv.Count: where they are, on a store that counts);
// -1 when the read fails.
func countEntries(r kv.Reader, prefix []byte, limit int64) int64 {
	n, err := kv.Count(r, prefix, kv.PrefixEnd(prefix), limit)
	if err != nil {
		return -1
	}
	return n
}

// constrains reports whether a WHERE conjunct among filters holds only for
// documents with a value at path: every kind of filter does.
func constrains(filters []filterSpec, path []string) bool {
	return slices.ContainsFunc(filters, func(f filterSpec) bool { return !f.element && slices.Equal(f.path, path) })
}

// orderedRead is a source that reads an index in ORDER BY order, and gives
// up (errUnorderable) when it meets an object or an array there.
type orderedRead interface {
	querySource
	entriesRead() int
}

// keysSource yields the documents of a keysPlan in the order of its keys.
type keysSource struct {
	docReader
	plan   *keysPlan
	filter *docFilter
	// frames are the keys being walked: frames[i] steps through the values
	// of key i under the values frames[:i] stand at.
	frames []keysFrame
	// ties reads, forwards, the entries of the documents that share the
	// values every frame stands at.
	ties    kv.Iterator
	pending []candidate // a run of cut strings, sorted by full value
	// resumeAt holds, for a resumed page, the encoded value of each key
	// at the cursor's row, and resumeSeq its document's seq (0 when later
	// keys order the documents that share those values): the walk starts
	// there (see resume).
	resumeAt  [][]byte
	resumeSeq uint64
	scanned   int
}

// keysFrame is one key's walk: the values it may take lie in ranges
// (ascending), each of whose keys starts with base; at is the key prefix
// through the value it stands at, nil before its first.
type keysFrame struct {
	base    []byte
	ranges  []keyRange
	ri      int
	at      []byte
	resumed bool // the frames before it stand at the cursor's values

	// The last key's frame reads its entries in one scan (nextInRun)
	// of [lo, hi) in the key's direction, where the others step from
	// value to value: it and a peeked entry, once opened.
	opened bool
	lo, hi []byte
	it     kv.Iterator
	peeked *peekedEntry
}

// keysSource returns the source of plan's documents in scope.
func (s *scope) keysSource(r kv.Reader, plan *keysPlan, filter *docFilter, lookAhead int) *keysSource {
	return &keysSource{docReader: newDocReader(s, r, lookAhead), plan: plan, filter: filter,
		frames: []keysFrame{{base: plan.prefix, ranges: plan.first}}}
}

// resume starts the read at the row whose keys are values (one per
// ORDER BY key, as query.Query.ResumeKeys returns them) and whose document
// has seq, inclusive: the rows before it precede the continuation, which
// the executor skips anyway. Among the documents that share the values of
// the plan's keys it starts at seq only when those are every key: a later
// key orders them otherwise. Call it before the first Next.
func (x *keysSource) resume(values []jsonv.Value, seq uint64) {
	if len(values) < len(x.plan.paths) {
		return
	}
	x.resumeAt = nil
	for _, v := range values[:len(x.plan.paths)] {
		x.resumeAt = append(x.resumeAt, appendIndexedValue(nil, v))
	}
	if len(values) == len(x.plan.paths) {
		x.resumeSeq = seq
	}
	x.frames[0].resumed = true
}

// Next implements query.Source.
func (x *keysSource) Next() (*jsonv.Object, uint64, bool, error) { return x.parsed(x) }

// Skip implements query.Skipper.
func (x *keysSource) Skip(n, then int) (int, error) { return x.skip(x, n, then) }

// next implements candidates.
func (x *keysSource) next() (candidate, bool, error) {
	for {
		c, ok, err := x.nextEntry()
		if err != nil || !ok {
			return candidate{}, false, err
		}
		if x.filter.match(c.suffix) {
			return c, true, nil
		}
	}
}

// entriesRead implements candidates.
func (x *keysSource) entriesRead() int { return x.scanned }

// nextEntry returns the next entry in the keys' order.
func (x *keysSource) nextEntry() (candidate, bool, error) {
	for {
		if len(x.pending) > 0 {
			c := x.pending[0]
			x.pending = x.pending[1:]
			return c, true, nil
		}
		if x.ties != nil {
			if x.ties.Next() {
				x.scanned++
				return candidate{seqOf(x.ties.Key()), x.ties.Value()}, true, nil
			}
			err := x.ties.Close()
			x.ties = nil
			if err != nil {
				return candidate{}, false, err
			}
		}
		if len(x.frames) == 0 {
			return candidate{}, false, nil
		}
		level := len(x.frames) - 1
		f := &x.frames[level]
		if level > 0 && level == len(x.plan.paths)-1 {
			c, ok, done, err := x.nextInRun(f, level)
			switch {
			case err != nil:
				return candidate{}, false, err
			case ok:
				return c, true, nil
			case done:
				x.frames = x.frames[:level]
			}
			continue // on to its ties or cut strings, or the frame before
		}
		under, ok, err := x.step(f, level)
		if err != nil {
			return candidate{}, false, err
		}
		if !ok {
			x.frames = x.frames[:level]
			continue
		}
		enc := f.at[len(f.base):]
		resumed := f.resumed && bytes.Equal(enc, x.resumeAt[level])
		switch {
		case maybeCut(enc):
			if x.pending, err = x.sortByFullValues(under, level); err != nil {
				return candidate{}, false, err
			}
		default: // the next key's walk, under this value (the last key's reads in one scan)
			x.frames = append(x.frames, keysFrame{base: f.at, ranges: []keyRange{under}, resumed: resumed})
		}
	}
}

// nextInRun returns the next entry of the last key's frame f, at level,
// from one scan of its range in the key's direction, where a walk from
// value to value would cost two seeks a value (two round trips on
// PostgreSQL). Ascending, entries come in the order the executor wants:
// by value, equal values in ascending seq. Descending, a value that several
// entries share is read again forwards (x.ties) and the scan resumes below
// it, and a string the index may have cut is sorted by full value
// (x.pending) and the scan resumes past it; ok and done are then false.
// done reports the frame's end.
func (x *keysSource) nextInRun(f *keysFrame, level int) (c candidate, ok, done bool, err error) {
	desc := x.plan.desc[level]
	if !f.opened {
		f.opened = true
		f.lo, f.hi = f.ranges[0].start, f.ranges[0].end // one range: the frame before's value
		if f.resumed {
			from := append(slices.Clip(f.base), x.resumeAt[level]...)
			if desc {
				f.hi = minKey(f.hi, kv.PrefixEnd(from))
			} else {
				f.lo = maxKey(f.lo, binary.BigEndian.AppendUint64(from, x.resumeSeq))
			}
		}
	}
	closeRun := func() error {
		it := f.it
		f.it, f.peeked = nil, nil
		if it == nil {
			return nil
		}
		return it.Close()
	}
	if f.it == nil {
		if bytes.Compare(f.lo, f.hi) >= 0 {
			return candidate{}, false, true, nil
		}
		f.it = x.r.Scan(f.lo, f.hi, desc)
	}
	var key, value []byte
	if p := f.peeked; p != nil {
		f.peeked = nil
		key, value = p.key, p.value
	} else if f.it.Next() {
		x.scanned++
		key, value = f.it.Key(), f.it.Value()
	} else {
		return candidate{}, false, true, closeRun()
	}
	if len(key) < len(f.base)+9 || key[len(f.base)] == tagContainer {
		return candidate{}, false, false, errors.Join(errUnorderable, closeRun())
	}
	enc := key[len(f.base) : len(key)-8]
	valueStart := append(slices.Clip(f.base), enc...)
	valueEnd := kv.PrefixEnd(valueStart)
	if maybeCut(enc) {
		vr := keyRange{maxKey(valueStart, f.lo), minKey(valueEnd, f.hi)}
		if err := closeRun(); err != nil {
			return candidate{}, false, false, err
		}
		if desc {
			f.hi = valueStart
		} else {
			f.lo = valueEnd
		}
		x.pending, err = x.sortByFullValues(vr, level)
		return candidate{}, false, false, err
	}
	c = candidate{seqOf(key), value}
	if !desc {
		return c, true, false, nil
	}
	// Descending: the entries of a value come in descending seq, and the
	// executor wants them ascending. Look at the next one.
	c.suffix = slices.Clone(value) // the iterator moves on
	if !f.it.Next() {
		return c, true, false, nil // the frame ends after c: found again next time
	}
	x.scanned++
	next := f.it.Key()
	if len(next) != len(key) || !bytes.HasPrefix(next, valueStart) {
		f.peeked = &peekedEntry{slices.Clone(next), slices.Clone(f.it.Value())}
		return c, true, false, nil
	}
	// A tie: every entry of the value, forwards, then on below it. The two
	// read here are read again.
	x.scanned -= 2
	hi := f.hi
	if err := closeRun(); err != nil {
		return candidate{}, false, false, err
	}
	from := valueStart
	if f.resumed && bytes.Equal(enc, x.resumeAt[level]) {
		from = binary.BigEndian.AppendUint64(slices.Clip(valueStart), x.resumeSeq)
	}
	f.hi = valueStart
	x.ties = x.r.Scan(from, minKey(valueEnd, hi), false)
	return candidate{}, false, false, nil
}

// step moves frame f, the walk of key level, to its next value in the
// key's direction, and returns the part of the range it found it in that
// holds that value's entries; false when f has no more values.
func (x *keysSource) step(f *keysFrame, level int) (keyRange, bool, error) {
	desc := x.plan.desc[level]
	for ; f.ri < len(f.ranges); f.ri++ {
		r := f.ranges[f.ri]
		if desc {
			r = f.ranges[len(f.ranges)-1-f.ri]
		}
		lo, hi := r.start, r.end
		if f.resumed && f.at == nil {
			// The first value is the cursor's, or the first past it.
			from := append(slices.Clip(f.base), x.resumeAt[level]...)
			if desc {
				hi = minKey(hi, kv.PrefixEnd(from))
			} else {
				lo = maxKey(lo, from)
			}
		}
		if f.at != nil {
			if desc {
				hi = minKey(hi, f.at)
			} else {
				lo = maxKey(lo, kv.PrefixEnd(f.at))
			}
		}
		if bytes.Compare(lo, hi) >= 0 {
			continue
		}
		it := x.r.Scan(lo, hi, desc)
		found := it.Next()
		var key []byte
		if found {
			x.scanned++
			key = slices.Clone(it.Key())
		}
		if err := it.Close(); err != nil {
			return keyRange{}, false, err
		}
		if !found {
			continue
		}
		if len(key) <= len(f.base) || key[len(f.base)] == tagContainer {
			return keyRange{}, false, errUnorderable
		}
		_, rest, ok := decodeComponent(key[len(f.base):])
		if !ok {
			return keyRange{}, false, errors.New("engine: a composite index entry that does not decode")
		}
		f.at = key[:len(key)-len(rest)]
		return keyRange{maxKey(f.at, r.start), minKey(kv.PrefixEnd(f.at), r.end)}, true, nil
	}
	return keyRange{}, false, nil
}

// sortByFullValues returns the entries in under, those of the documents
// whose value of key level is a string cut to the indexed prefix, sorted as
// the executor orders them: by their full values of that key and of every
// key after it, each in its direction, then by seq.
func (x *keysSource) sortByFullValues(under keyRange, level int) ([]candidate, error) {
	type entry struct {
		c    candidate
		keys [][]byte
	}
	var group []entry
	it := x.r.Scan(under.start, under.end, false)
	for it.Next() {
		x.scanned++
		group = append(group, entry{c: candidate{seqOf(it.Key()), slices.Clone(it.Value())}})
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	for i := range group {
		e := &group[i]
		rec, err := lookup(x.r, x.s.rid, e.c.suffix)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			continue // gone: the lookup leaves it out too
		}
		for _, path := range x.plan.paths[level:] {
			v, _, err := jsonv.StoredMember(rec.json, path)
			if err != nil {
				return nil, err
			}
			switch v.(type) {
			case *jsonv.Object, []jsonv.Value:
				return nil, errUnorderable
			}
			e.keys = append(e.keys, appendValue(nil, v))
		}
	}
	slices.SortStableFunc(group, func(a, b entry) int {
		for i := range min(len(a.keys), len(b.keys)) {
			c := bytes.Compare(a.keys[i], b.keys[i])
			if x.plan.desc[level+i] {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return cmp.Compare(a.c.seq, b.c.seq)
	})
	out := make([]candidate, len(group))
	for i, e := range group {
		out[i] = e.c
	}
	return out, nil
}

func maxKey(a, b []byte) []byte {
	if bytes.Compare(a, b) >= 0 {
		return a
	}
	return b
}

func (x *keysSource) seek(uint64) {} // the executor skips rows up to its cursor

func (x *keysSource) close() {
	if x.ties != nil {
		x.ties.Close()
		x.ties = nil
	}
	for i := range x.frames {
		if it := x.frames[i].it; it != nil {
			it.Close()
			x.frames[i].it = nil
		}
	}
}
