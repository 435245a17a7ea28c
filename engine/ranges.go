package engine

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/pkrange"
)

// A container's documents are spread over partition key ranges by the
// effective partition key (EPK) of their partition key value, as Cosmos DB
// spreads them over physical partitions (package pkrange). Lethe keeps every
// document in one store whatever its range; ranges matter to clients, which
// route ReadMany, per-range queries, feed ranges and session tokens by them,
// and so to every request scoped to a range.

// partitioning is a container's partition key layout, compiled once per
// container record (part of layout).
type partitioning struct {
	npk    int  // partition key components
	multi  bool // MultiHash: one hash per component
	hashed bool // EPKs are computed (definition version 2, or MultiHash)
	ranges []pkrange.Range
}

func newPartitioning(c *collRecord) partitioning {
	p := partitioning{npk: len(c.PKPaths), multi: c.PKKind == "MultiHash", ranges: pkrange.Layout(c.rangeCount())}
	p.hashed = p.multi || c.PKVersion != 1
	return p
}

// rangeCount is the container's number of partition key ranges: fixed at
// creation, one for records written before ranges existed.
func (c *collRecord) rangeCount() int { return max(1, c.Ranges) }

// rangesAtCreation returns how many ranges a new container starts with: one
// per 10,000 RU/s of its own throughput (Cosmos DB's most per physical
// partition), one for a container without, one whose database shares its
// throughput, and one under partition key definition version 1, whose hashes
// the SDKs do not agree on (the Go SDK computes a simplified one), so that no
// client can route a request to the wrong range.
func rangesAtCreation(c *collRecord) int {
	if c.Throughput == nil || (c.PKKind != "MultiHash" && c.PKVersion == 1) {
		return 1
	}
	return pkrange.ForThroughput(c.Throughput.budget())
}

// pkDefinition reads the kind and version of a partition key definition
// (after containerSettings filled in their defaults).
func pkDefinition(o *jsonv.Object) (kind string, version int) {
	pkv, _ := o.Get("partitionKey")
	pko, _ := pkv.(*jsonv.Object)
	if pko == nil {
		return "Hash", 2
	}
	kv, _ := pko.Get("kind")
	kind, _ = kv.(string)
	version = 2
	if vv, ok := pko.Get("version"); ok {
		if n, ok := vv.(jsonv.Number); ok && n.Float64() == 1 {
			version = 1
		}
	}
	return kind, version
}

// epk returns the effective partition key of a full or prefix key value.
func (p *partitioning) epk(pk lethe.PartitionKey) string { return pkrange.EPK(pk, p.multi) }

// rangeOf returns the id of the range holding partition key value pk.
func (p *partitioning) rangeOf(pk lethe.PartitionKey) string {
	if len(p.ranges) == 1 {
		return p.ranges[0].ID
	}
	e := p.epk(pk)
	for _, r := range p.ranges {
		if r.Contains(e) {
			return r.ID
		}
	}
	return p.ranges[len(p.ranges)-1].ID
}

// rangeIDs returns the ids of every range.
func (p *partitioning) rangeIDs() []string {
	out := make([]string, len(p.ranges))
	for i, r := range p.ranges {
		out[i] = r.ID
	}
	return out
}

// Scope selects part of a container by partition key range: the documents of
// one range (RangeID), those whose EPK lies in [EPKMin, EPKMax) (a feed range
// narrower than a range), or both. The zero value selects everything.
type Scope struct {
	// RangeID is a partition key range id, as in
	// x-ms-documentdb-partitionkeyrangeid; "" for any.
	RangeID string
	// EPKMin and EPKMax bound the effective partition keys, as
	// x-ms-start-epk and x-ms-end-epk; both "" for any.
	EPKMin, EPKMax string
}

func (sc Scope) any() bool { return sc.RangeID == "" && sc.EPKMin == "" && sc.EPKMax == "" }

// docFilter selects the documents a request reads by their primary suffix
// (<pk tuple><id>): by partition key tuple prefix, by EPK bounds, both, or
// neither (nil selects everything).
type docFilter struct {
	prefix   []byte // pk tuple prefix; nil for any
	epk      bool   // EPK bounds apply
	min, max string
	part     *partitioning
}

// matchPK reports whether documents of partition key value pk (normalized)
// belong in scope.
func (f *docFilter) matchPK(pk lethe.PartitionKey) bool {
	if f == nil {
		return true
	}
	if f.prefix != nil && !bytes.HasPrefix(appendTuple(nil, pk), f.prefix) {
		return false
	}
	return !f.epk || f.inBounds(f.part.epk(pk))
}

// inBounds reports whether an EPK lies in the filter's EPK bounds.
func (f *docFilter) inBounds(e string) bool {
	return pkrange.Compare(f.min, e) <= 0 && pkrange.Compare(e, f.max) < 0
}

// match reports whether the document with primary suffix belongs in scope.
func (f *docFilter) match(suffix []byte) bool {
	if f == nil {
		return true
	}
	if f.prefix != nil && !bytes.HasPrefix(suffix, f.prefix) {
		return false
	}
	if !f.epk {
		return true
	}
	pk, ok := decodePKTuple(suffix, f.part.npk)
	if !ok {
		return false
	}
	return f.inBounds(f.part.epk(pk))
}

// filter compiles a request's partition key (allowPrefix: a prefix of a
// hierarchical key is allowed) and range scope into a docFilter, and returns
// the ids of the ranges the request reads, for its session token. Unknown
// ranges are Gone (substatus 1002, partition key range gone: clients refresh
// their routing map); malformed bounds are BadRequest.
func (s *scope) filter(pk lethe.PartitionKey, allowPrefix bool, sc Scope) (*docFilter, []string, error) {
	p := &s.l.part
	prefix, err := s.pkScope(pk, allowPrefix)
	if err != nil {
		return nil, nil, err
	}
	var f *docFilter
	if prefix != nil {
		f = &docFilter{prefix: prefix}
	}
	ids := p.rangeIDs()
	if pk != nil {
		ids = []string{p.rangeOf(pk)}
	}
	if sc.any() {
		return f, ids, nil
	}
	min, max := "", pkrange.End
	if sc.RangeID != "" {
		id := sc.RangeID
		if i := strings.LastIndexByte(id, ','); i >= 0 {
			id = id[i+1:] // some SDKs send "<collection rid>,<range id>"
		}
		if _, err := strconv.ParseUint(id, 10, 32); err != nil {
			return nil, nil, lethe.Errorf(lethe.CodeBadRequest, "The partition key range id '%s' is invalid.", truncate(sc.RangeID, 50))
		}
		var found *pkrange.Range
		for i := range p.ranges {
			if p.ranges[i].ID == id {
				found = &p.ranges[i]
			}
		}
		if found == nil {
			return nil, nil, &lethe.Error{Code: lethe.CodeGone, SubStatus: 1002, Message: "The partition key range '" + id + "' does not exist in this container: refresh the partition key ranges."}
		}
		min, max = found.Min, found.Max
		ids = []string{found.ID}
	}
	if sc.EPKMin != "" || sc.EPKMax != "" {
		lo, hi := strings.ToUpper(sc.EPKMin), strings.ToUpper(sc.EPKMax)
		if hi == "" {
			hi = pkrange.End
		}
		if !isHex(lo) || !isHex(hi) || pkrange.Compare(lo, hi) >= 0 {
			return nil, nil, lethe.Errorf(lethe.CodeBadRequest, "The effective partition key range ['%s', '%s') is invalid.", truncate(sc.EPKMin, 140), truncate(sc.EPKMax, 140))
		}
		if !p.hashed && (lo != "" || hi != pkrange.End) {
			return nil, nil, lethe.Errorf(lethe.CodeBadRequest, "Lethe does not support effective partition key ranges narrower than the container on partition key definition version 1.")
		}
		if pkrange.Compare(lo, min) > 0 {
			min = lo
		}
		if pkrange.Compare(hi, max) < 0 {
			max = hi
		}
		ids = ids[:0:0]
		for _, r := range p.ranges {
			if r.Overlaps(min, max) {
				ids = append(ids, r.ID)
			}
		}
	}
	if min == "" && max == pkrange.End {
		return f, ids, nil // the whole space
	}
	if f == nil {
		f = &docFilter{}
	}
	f.epk, f.min, f.max, f.part = true, min, max, p
	return f, ids, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
