package pebblekv

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// A lookup cache keeps the values that point lookups read, so that the next
// lookup of a hot key costs a map access instead of Pebble's search of its
// memtables and of every level (about 1 µs in isolation, and 4-15 µs a key
// on a busy two-core server, its caches cold: a query page looks up ten).
// Pebble's block cache keeps blocks, not values, and every lookup still
// builds an iterator over each level that may hold the key.
//
// # Exactness
//
// A lookup must never return a value older than one a finished Update wrote,
// nor newer than its own snapshot. The cache rests on Store.commits, the
// count each commit adds one to, and on the label of each View's snapshot
// (the count read before it was taken, so the snapshot holds every commit
// counted up to its label).
//
// Keys are spread over stripes. Each stripe has a pending count and last, the
// commit count of the last commit that wrote one of its keys. A commit (under
// the writer lock, so one at a time) first marks each stripe it writes
// pending and drops its keys from the cache, then commits, counts itself and
// sets the stripes' last to its count and unmarks them. The entry of a key is
// therefore always the newest committed value: any commit of the key drops it
// before the commit is visible, and no entry is added in a stripe while it is
// pending.
//
// A View with label L may use a stripe only when nothing is pending in it and
// its last <= L: then the last commit of each of the stripe's keys was
// counted before the snapshot was taken, so the snapshot holds it, and the
// entry (the newest committed value) is the snapshot's value. A commit after
// the snapshot drops the entry before it becomes visible, so a View that
// still finds the entry is reading a key that commit had not yet written. A
// View adds what it read from its snapshot under the same condition, in the
// same critical section as the check: the snapshot then holds the newest
// commit of the key, since any later one would be pending or have raised
// last above L.
//
// An Update's transaction reads the live database under the writer lock,
// where every commit so far has been counted: it uses the cache with that
// count as its label, and looks at its own writes first; once its batch is
// indexed, its reads go through the batch and not the cache.
//
// Range deletions (a dropped container) mark every stripe and empty the
// cache. A failed commit is treated as a commit: its keys were dropped, and
// last moves past every View that might have read around it.
type lookupCache struct {
	seed      maphash.Seed
	cacheable func(key []byte) bool
	stripes   [lookupStripes]lookupStripe
	// ringSize is each stripe's share of the cache's bytes.
	ringSize int

	hits, misses atomic.Int64
}

// DefaultInMemoryLookupCacheSize is the lookup cache `lethe serve` gives an
// InMemory store unless told otherwise: with 1 KB documents, about 25,000 of
// them.
const DefaultInMemoryLookupCacheSize = 32 << 20

// DefaultLookupCacheSize is the lookup cache `lethe serve` gives a store on
// disk unless told otherwise: about 1,500 documents of 1 KB, the hot ones
// (the first pages of queries a user repeats, the documents read again and
// again). A durable server is kept under 80 MB: 4 MiB took it over.
const DefaultLookupCacheSize = 2 << 20

// lookupStripes is how many stripes the keys spread over: enough that
// concurrent lookups rarely wait for each other, and that a commit, which
// marks the stripes of the few keys it writes, leaves most of the cache
// usable meanwhile.
const lookupStripes = 64

// A commit's marks hold one bit per stripe in a uint64 (commitMarks).
var _ [64 - lookupStripes]struct{}

// recordHeader is the size of a record's header in a stripe's ring: the
// key's length and the value's, four bytes each.
const recordHeader = 8

// A lookupStripe keeps its values in a ring of memory mapped outside the Go
// heap (allocChunk), as the in-memory sstables are: on the heap, the garbage
// collector would let the heap grow to about twice the cache. Records are
// written one after another, [key length][value length][key][value]; when the
// ring is full, writing starts again at its beginning, evicting the oldest
// records as it overwrites them. The map, on the heap, holds each key's
// record offset. So the ring always reads, from its start:
//
//	[0, head)             records of the current lap
//	[head, oldStart)      free
//	[oldStart, oldEnd)    records of the previous lap, the oldest first
//	[oldEnd, len(ring))   free
//
// A record whose key was dropped, or added again since, stays in the ring
// until overwritten; the map no longer points to it.
type lookupStripe struct {
	mu                     sync.Mutex
	pending                int    // commits between marking and unmarking this stripe (0 or 1: commits are serialised)
	last                   uint64 // Store.commits after the last commit that wrote a key of this stripe
	entries                map[string]uint32
	ring                   []byte // nil until the first record; freed by lookupCache.free
	head, oldStart, oldEnd uint32
	_                      [64]byte // keep stripes' locks off each other's cache lines
}

// newLookupCache returns a cache of about size bytes of keys and values, for
// the keys cacheable accepts (all keys when it is nil).
func newLookupCache(size int64, cacheable func([]byte) bool) *lookupCache {
	c := &lookupCache{seed: maphash.MakeSeed(), cacheable: cacheable, ringSize: int(min(size/lookupStripes, 1<<30))}
	for i := range c.stripes {
		c.stripes[i].entries = make(map[string]uint32)
	}
	return c
}

// free returns the rings' memory, once no transaction can use the cache.
func (c *lookupCache) free() {
	for i := range c.stripes {
		s := &c.stripes[i]
		s.mu.Lock()
		if s.ring != nil {
			freeChunk(s.ring)
		}
		s.ring = nil
		s.reset()
		s.mu.Unlock()
	}
}

// stripeOf returns the index of key's stripe.
func (c *lookupCache) stripeOf(key []byte) int {
	return int(maphash.Bytes(c.seed, key) % lookupStripes)
}

func (c *lookupCache) stripe(key []byte) *lookupStripe { return &c.stripes[c.stripeOf(key)] }

// get returns a copy of key's value for a reader whose snapshot is labelled
// label, if the cache may answer it.
func (c *lookupCache) get(key []byte, label uint64) ([]byte, bool) {
	if c.cacheable != nil && !c.cacheable(key) {
		return nil, false
	}
	s := c.stripe(key)
	s.mu.Lock()
	var off uint32
	ok := false
	if s.pending == 0 && s.last <= label {
		off, ok = s.entries[string(key)]
	}
	if !ok {
		s.mu.Unlock()
		c.misses.Add(1)
		return nil, false
	}
	_, v := s.record(off)
	out := make([]byte, len(v)) // the caller owns what Get returns
	copy(out, v)
	s.mu.Unlock()
	c.hits.Add(1)
	return out, true
}

// record returns the key and value of the record at off.
func (s *lookupStripe) record(off uint32) (key, value []byte) {
	kl := binary.LittleEndian.Uint32(s.ring[off:])
	vl := binary.LittleEndian.Uint32(s.ring[off+4:])
	k := off + recordHeader
	return s.ring[k : k+kl], s.ring[k+kl : k+kl+vl]
}

// evictOld drops the previous lap's records that start before end.
func (s *lookupStripe) evictOld(end uint32) {
	for s.oldStart < s.oldEnd && s.oldStart < end {
		k, v := s.record(s.oldStart)
		if off, ok := s.entries[string(k)]; ok && off == s.oldStart {
			delete(s.entries, string(k))
		}
		s.oldStart += recordHeader + uint32(len(k)+len(v))
	}
}

// add keeps a copy of value as key's, read from a snapshot labelled label,
// unless a commit may have written key since that label.
func (c *lookupCache) add(key, value []byte, label uint64) {
	if c.cacheable != nil && !c.cacheable(key) {
		return
	}
	n := recordHeader + len(key) + len(value)
	if n > c.ringSize {
		return
	}
	s := c.stripe(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending != 0 || s.last > label {
		return
	}
	if _, ok := s.entries[string(key)]; ok {
		return
	}
	if s.ring == nil {
		ring, err := allocChunk(c.ringSize)
		if err != nil {
			return // no memory for the cache: lookups go to the store
		}
		s.ring = ring
	}
	if int(s.head)+n > len(s.ring) { // a new lap: the current one becomes the previous
		s.evictOld(s.oldEnd)
		s.oldStart, s.oldEnd, s.head = 0, s.head, 0
	}
	s.evictOld(s.head + uint32(n))
	r := s.ring[s.head:]
	binary.LittleEndian.PutUint32(r, uint32(len(key)))
	binary.LittleEndian.PutUint32(r[4:], uint32(len(value)))
	copy(r[recordHeader:], key)
	copy(r[recordHeader+len(key):], value)
	s.entries[string(key)] = s.head
	s.head += uint32(n)
}

// drop forgets key's record, if the cache holds one. The caller holds s.mu.
func (s *lookupStripe) drop(key []byte) {
	delete(s.entries, string(key))
}

// reset forgets every record. The caller holds s.mu.
func (s *lookupStripe) reset() {
	clear(s.entries)
	s.head, s.oldStart, s.oldEnd = 0, 0, 0
}

// commitMarks is the set of stripes one commit marked pending: all, or
// those whose bits are set in stripes (lookupStripes is 64).
type commitMarks struct {
	all     bool
	stripes uint64
}

// marked reports whether stripe i is marked, one by one or with all.
func (m *commitMarks) marked(i int) bool { return m.all || m.stripes&(1<<i) != 0 }

// markBatch marks pending the stripes of every key batch writes, and drops
// those keys, before the batch commits; a range deletion, or a record kind
// this package does not write, marks every stripe and empties the cache.
// Pass the result to unmark after the commit.
func (c *lookupCache) markBatch(b *pebble.Batch) commitMarks {
	var m commitMarks
	r := b.Reader()
	for {
		kind, key, _, ok, err := r.Next()
		if err != nil {
			m.all = true
			break
		}
		if !ok {
			break
		}
		switch kind {
		case pebble.InternalKeyKindSet, pebble.InternalKeyKindDelete, pebble.InternalKeyKindDeleteSized, pebble.InternalKeyKindSingleDelete:
			if c.cacheable != nil && !c.cacheable(key) {
				continue
			}
			i := c.stripeOf(key)
			s := &c.stripes[i]
			s.mu.Lock()
			if !m.marked(i) {
				m.stripes |= 1 << i
				s.pending++
			}
			s.drop(key)
			s.mu.Unlock()
		case pebble.InternalKeyKindLogData:
		default:
			m.all = true
		}
		if m.all {
			break
		}
	}
	if m.all {
		for i := range c.stripes {
			s := &c.stripes[i]
			s.mu.Lock()
			if m.stripes&(1<<i) == 0 { // not marked one by one above
				s.pending++
			}
			s.reset()
			s.mu.Unlock()
		}
	}
	return m
}

// unmark ends what markBatch began, once the commit is counted as commit.
func (c *lookupCache) unmark(m commitMarks, commit uint64) {
	for i := range c.stripes {
		if !m.marked(i) {
			continue
		}
		s := &c.stripes[i]
		s.mu.Lock()
		s.pending--
		s.last = commit
		s.mu.Unlock()
	}
}

// LookupCacheStats counts the point lookups the cache answered and those it
// could not.
type LookupCacheStats struct {
	Hits, Misses int64
}

// LookupCache returns the lookup cache's counts since the store opened; zero
// without one.
func (s *Store) LookupCache() LookupCacheStats {
	if s.lookups == nil {
		return LookupCacheStats{}
	}
	return LookupCacheStats{Hits: s.lookups.hits.Load(), Misses: s.lookups.misses.Load()}
}
