package engine

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/query"
)

// Composite indexes. An indexing policy's compositeIndexes are ordered lists
// of paths, as in Cosmos DB. A document has one entry in each composite index
// whose paths all hold scalars:
//
//	I <collRid> 0x00 <ordinal> <value>... <seq>  ->  the primary suffix
//
// where a path index entry has its path's length, never 0, so the two never
// mix. A document with an object or an array at one of the paths has a
// marker instead, I <collRid> 0x00 <ordinal> <value>... 0x09 <seq>, with the
// values of the paths before it: after every scalar those values lead to, so
// that a read in order meets it where the executor's order puts the document
// (after strings) and gives up (see orderedSource.next). A document missing
// one of the paths before any object or array has nothing.
//
// Values are stored in ascending order whatever order the policy gives a
// path, and the index serves a query whose WHERE equalities, or the request's
// partition key, fix every path but the last, and whose first ORDER BY key is
// the last path, in either direction. The newest documents of one partition,
// ORDER BY c._ts DESC with a composite index of /pk and /_ts, then read about
// a page of entries, however many other partitions share the container,
// where the path index of /_ts holds every partition's entries in one order.

// maxComposites bounds a policy's composite indexes: an entry's ordinal is
// one byte.
const maxComposites = 256

// compileComposites validates an indexing policy's compositeIndexes and
// returns each index's paths, as written. Each must list two paths or more,
// each a document path without wildcards or arrays ("/a/b", "/\"x y\""),
// with an order of "ascending" (the default) or "descending".
func compileComposites(ip *jsonv.Object) ([][]string, error) {
	v, _ := ip.Get("compositeIndexes")
	if v == nil {
		return nil, nil
	}
	bad := func(format string, args ...any) error {
		return lethe.Errorf(lethe.CodeBadRequest, "The indexing policy's 'compositeIndexes' are invalid: "+format, args...)
	}
	list, ok := v.([]jsonv.Value)
	if !ok {
		return nil, bad("they must be an array of composite indexes, each an array of {\"path\", \"order\"}.")
	}
	if len(list) > maxComposites {
		return nil, bad("a container may have at most %d composite indexes.", maxComposites)
	}
	var out [][]string
	for i, ci := range list {
		paths, ok := ci.([]jsonv.Value)
		if !ok {
			return nil, bad("composite index %d must be an array of {\"path\", \"order\"}.", i)
		}
		if len(paths) < 2 {
			return nil, bad("composite index %d must have at least two paths.", i)
		}
		var index []string
		for _, p := range paths {
			o, ok := p.(*jsonv.Object)
			if !ok {
				return nil, bad("each path of composite index %d must be an object with a 'path'.", i)
			}
			pv, _ := o.Get("path")
			ps, ok := pv.(string)
			if !ok {
				return nil, bad("each path of composite index %d must have a string 'path'.", i)
			}
			segs, err := splitIndexPath(ps)
			if err != nil || len(segs) == 0 || slices.Contains(segs, arrayElem) {
				return nil, bad("the path '%s' of composite index %d must be a document path such as /a/b, without wildcards or arrays.", truncate(ps, 100), i)
			}
			if slices.Contains(index, ps) {
				return nil, bad("composite index %d lists the path '%s' twice.", i, truncate(ps, 100))
			}
			if ov, ok := o.Get("order"); ok && ov != nil {
				order, _ := ov.(string)
				if !strings.EqualFold(order, "ascending") && !strings.EqualFold(order, "descending") {
					return nil, bad("the order of path '%s' of composite index %d must be 'ascending' or 'descending'.", truncate(ps, 100), i)
				}
			}
			index = append(index, ps)
		}
		out = append(out, index)
	}
	return out, nil
}

// compositeLayout returns the stored composite indexes' paths as segments.
func compositeLayout(stored [][]string) [][][]string {
	var out [][][]string
	for _, index := range stored {
		var paths [][]string
		for _, p := range index {
			segs, _ := splitIndexPath(p) // validated when the policy was set
			paths = append(paths, segs)
		}
		out = append(out, paths)
	}
	return out
}

// appendCompositePrefix appends I <collRid> 0x00 <ordinal>: the start of
// every entry of composite index ord.
func appendCompositePrefix(b []byte, coll [8]byte, ord int) []byte {
	return append(appendCollKey(b, pfxIndex, coll), 0, byte(ord))
}

// appendCompositeEntry appends document o's entry in composite index ord,
// whose paths are paths, or its marker; it returns b unchanged when o lacks
// one of the paths before any object or array.
func appendCompositeEntry(b []byte, coll [8]byte, ord int, paths [][]string, o *jsonv.Object, seq uint64) []byte {
	start := len(b)
	b = appendCompositePrefix(b, coll, ord)
	for _, p := range paths {
		v, ok := o.GetPath(p)
		if !ok {
			return b[:start]
		}
		switch v.(type) {
		case *jsonv.Object, []jsonv.Value:
			b = append(b, tagContainer)
			return binary.BigEndian.AppendUint64(b, seq)
		}
		b = appendIndexedValue(b, v)
	}
	return binary.BigEndian.AppendUint64(b, seq)
}

// alwaysDefined reports whether every stored document has a value at path:
// its id and its _ts.
func alwaysDefined(path []string) bool {
	return len(path) == 1 && (path[0] == "id" || path[0] == "_ts")
}

// planComposite picks a composite index that yields the query's documents
// in the order of its first ORDER BY key: equalities among filters and pk
// (the request's partition key, nil for none) fix every path of the index
// but the last, which is the ORDER BY key. As with a path index, ascending
// needs the key always defined, a WHERE conjunct on it, or a count that
// shows every document the equalities select has it (fixedDefine), since
// documents without it sort first and have no entry; descending finds them
// after the index, in the tail. An equality or IN on another indexed path
// leaves the query to the path indexes, whose list of that value may be
// far shorter.
func (s *scope) planComposite(r kv.Reader, h query.Hints, filters []filterSpec, pk *filterSpec) (*orderedPlan, bool) {
	if len(h.OrderBy) == 0 || len(s.l.composites) == 0 {
		return nil, false
	}
	first := h.OrderBy[0]
	all := append(slices.Clip(filters), derefSpec(pk)...)
next:
	for ord, paths := range s.l.composites {
		if !slices.Equal(paths[len(paths)-1], first.Path) {
			continue
		}
		prefix, used, fixed, ok := s.compositeFixed(ord, paths[:len(paths)-1], all)
		if !ok {
			continue
		}
		p := &orderedPlan{path: first.Path, desc: first.Desc, prefix: prefix}
		// WHERE holds for every entry when it is nothing but equalities the
		// prefix fixes over values the index holds whole (not for the
		// tail's documents, see orderedSource.keyOnly).
		p.whereExact = h.Conjuncts == len(h.Where) && len(h.Where) == len(filters)
		for i, f := range filters {
			p.whereExact = p.whereExact && used[i] && exactLookup(f)
			if !used[i] && f.kind <= filterIn && s.l.index.indexed(f.path) {
				// Another equality's list may hold a handful of documents
				// where the index in order reads the whole prefix to find
				// them: planned as before.
				continue next
			}
		}
		for _, raw := range s.c.Composites[ord] {
			p.specs = append(p.specs, raw+" ASC") // equalities, read either way
		}
		if first.Desc {
			p.specs[len(p.specs)-1] = s.c.Composites[ord][len(paths)-1] + " DESC"
		}
		if p.narrow(filters) {
			return p, true
		}
		among, counted, countable := s.fixedDefine(fixed, first.Path, prefix)
		if !first.Desc && !alwaysDefined(first.Path) && !(countable && s.entryInEvery(r, among, counted)) {
			continue
		}
		p.ranges = []keyRange{{prefix, kv.PrefixEnd(prefix)}}
		p.tail = first.Desc && !alwaysDefined(first.Path)
		if p.tail && countable {
			p.setDefined(r, s, among, counted, pk != nil)
		}
		return p, true
	}
	return nil, false
}

// compositeFixed returns the start of composite index ord's entries under
// the values that equalities among all fix for its leading paths, which of
// all it used, and those equalities in the paths' order; false when one of
// the paths has no such equality (fixedBy).
func (s *scope) compositeFixed(ord int, paths [][]string, all []filterSpec) (prefix []byte, used []bool, fixed []filterSpec, ok bool) {
	prefix = appendCompositePrefix(nil, s.rid, ord)
	used = make([]bool, len(all))
	for _, p := range paths {
		i, ok := fixedBy(all, p)
		if !ok {
			return nil, nil, nil, false
		}
		used[i] = true
		fixed = append(fixed, all[i])
		prefix = appendIndexedValue(prefix, all[i].values[0])
	}
	return prefix, used, fixed, true
}

// fixedDefine returns what entryInEvery checks to tell whether every
// document that the equalities fixed select has a value at path, the
// composite index's last, whose entries under those values lie under
// prefix: so that an ascending read of them misses none. With one
// equality, on an indexed path, its value's entries (among) against
// prefix's; otherwise path's entries against the container's documents
// (among nil). ok is false when path is not indexed: nothing tells.
func (s *scope) fixedDefine(fixed []filterSpec, path []string, prefix []byte) (among, counted []byte, ok bool) {
	if len(fixed) == 1 && s.l.index.indexed(fixed[0].path) {
		return s.equalityEntries(fixed[0]), prefix, true
	}
	return nil, indexPrefix(s.rid, path), s.l.index.indexed(path)
}

// equalityEntries returns the prefix of the path index entries of the
// documents that the equality f (one scalar value, fixedBy) selects.
func (s *scope) equalityEntries(f filterSpec) []byte {
	return appendIndexedValue(indexPrefix(s.rid, f.path), f.values[0])
}

// fixedBy returns which of filters is an equality on path with one scalar
// value, the value a composite index's prefix can hold.
func fixedBy(filters []filterSpec, path []string) (int, bool) {
	for i, f := range filters {
		if f.kind == filterEq && !f.element && len(f.values) == 1 && slices.Equal(f.path, path) {
			switch f.values[0].(type) {
			case nil, bool, string, jsonv.Number:
				return i, true
			}
		}
	}
	return 0, false
}

// derefSpec returns f as a one-element slice, or nothing for nil.
func derefSpec(f *filterSpec) []filterSpec {
	if f == nil {
		return nil
	}
	return []filterSpec{*f}
}
