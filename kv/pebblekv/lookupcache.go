package pebblekv

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/klauspost/compress/s2"
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
//
// # Writes
//
// A successful commit also keeps the values it wrote (keepBatch), so that a
// document is found the first time it is read after it was written, not
// only from its second read on (a key read once or twice after it was
// written, as sessions and caches are, otherwise never hits). It adds them
// with its own count as the label, after unmarking, under the writer lock:
// its stripes' last is then that count, so no View that could not see the
// commit may use the entry, and a later commit of the key drops it as any
// commit does. A commit with a range deletion keeps nothing: a key it sets
// may lie in the deleted range.
//
// # Compression
//
// Values are kept compressed (S2, a faster Snappy) when that saves at least
// an eighth of their size, so that the cache's bytes hold more documents:
// JSON repeats its property names and often its values. A hit then costs a
// decompression into the copy it returns anyway (well under a microsecond
// for a kilobyte), against a search of Pebble's memtables and levels, and on
// disk a block read and its decompression, when it misses.
type lookupCache struct {
	seed      maphash.Seed
	cacheable func(key []byte) bool
	stripes   [lookupStripes]lookupStripe
	// ringSize is each stripe's share of the cache's bytes.
	ringSize int

	hits, misses atomic.Int64
}

// DefaultInMemoryLookupCacheSize is the lookup cache `lethe serve` gives an
// InMemory store unless told otherwise: with 1 KB documents that compress
// to half their size, about 50,000 of them. Halving it left an in-memory
// server's RSS where it was (the memtables and the data are most of it).
const DefaultInMemoryLookupCacheSize = 32 << 20

// DefaultLookupCacheSize is the lookup cache `lethe serve` gives a store on
// disk unless told otherwise: with 1 KB documents that compress to half
// their size, about 12,000 of them, the last written or read; with lethe
// bench's, about 32,000. The block cache gave up 6 of its 8 MiB for it
// (DefaultCacheSize), which keeps a durable server under 80 MB.
const DefaultLookupCacheSize = 8 << 20

// lookupStripes is how many stripes the keys spread over: enough that
// concurrent lookups rarely wait for each other, and that a commit, which
// marks the stripes of the few keys it writes, leaves most of the cache
// usable meanwhile.
const lookupStripes = 64

// A commit's marks hold one bit per stripe in a uint64 (commitMarks).
var _ [64 - lookupStripes]struct{}

// recordHeader is the size of a record's header in a stripe's ring: the
// key's length and the stored value's, four bytes each. The value's length
// carries compressedFlag when the value is stored compressed.
const recordHeader = 8

// compressedFlag marks, in a record's value length, a value stored
// compressed. Rings are at most 1 GiB, so no length reaches it.
const compressedFlag = 1 << 31

// compressMin is the smallest value the cache tries to compress: below it
// the saving is a few bytes at best.
const compressMin = 128

// scratchMax is the largest compression buffer kept for reuse; larger
// values (rare: documents are mostly a few kilobytes) get their own.
const scratchMax = 64 << 10

// scratch holds buffers to compress values into before they are copied
// into a ring.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// A lookupStripe keeps its values in a ring of memory mapped outside the Go
// heap (allocChunk), as the in-memory sstables are: on the heap, the garbage
// collector would let the heap grow to about twice the cache. Records are
// written one after another, [key length][value length][key][value]; when the
// ring is full, writing starts again at its beginning, evicting the oldest
// records as it overwrites them. The map, on the heap, holds the record
// offset of each key by the key's 64-bit hash, which holds no pointers for
// the collector to scan; a lookup compares the record's key with its own, so
// two keys of one hash (never seen, but possible) only miss. So the ring
// always reads, from its start:
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
	pending                int               // commits between marking and unmarking this stripe (0 or 1: commits are serialised)
	last                   uint64            // Store.commits after the last commit that wrote a key of this stripe
	entries                map[uint64]uint32 // by the key's hash (lookupCache.hash)
	ring                   []byte            // nil until the first record; freed by lookupCache.free
	head, oldStart, oldEnd uint32
	_                      [64]byte // keep stripes' locks off each other's cache lines
}

// newLookupCache returns a cache of about size bytes of keys and values, for
// the keys cacheable accepts (all keys when it is nil).
func newLookupCache(size int64, cacheable func([]byte) bool) *lookupCache {
	c := &lookupCache{seed: maphash.MakeSeed(), cacheable: cacheable, ringSize: int(min(size/lookupStripes, 1<<30))}
	for i := range c.stripes {
		c.stripes[i].entries = make(map[uint64]uint32)
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

// hash returns key's hash, which picks its stripe (stripeOf) and is its
// entry's key in the stripe.
func (c *lookupCache) hash(key []byte) uint64 { return maphash.Bytes(c.seed, key) }

// stripeOf returns the index of the stripe of a key of hash h.
func stripeOf(h uint64) int { return int(h % lookupStripes) }

// get returns a copy of key's value for a reader whose snapshot is labelled
// label, if the cache may answer it.
func (c *lookupCache) get(key []byte, label uint64) ([]byte, bool) {
	if c.cacheable != nil && !c.cacheable(key) {
		return nil, false
	}
	h := c.hash(key)
	s := &c.stripes[stripeOf(h)]
	s.mu.Lock()
	var out []byte
	ok := false
	if s.pending == 0 && s.last <= label {
		var off uint32
		if off, ok = s.entries[h]; ok {
			out, ok = s.value(off, key)
		}
	}
	s.mu.Unlock()
	if !ok {
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return out, true
}

// value returns a copy of the value of the record at off, decompressed, if
// the record is key's. The caller holds s.mu.
func (s *lookupStripe) value(off uint32, key []byte) ([]byte, bool) {
	k, stored, compressed := s.record(off)
	if !bytes.Equal(k, key) {
		return nil, false // another key of the same hash
	}
	if !compressed {
		out := make([]byte, len(stored)) // the caller owns what Get returns
		copy(out, stored)
		return out, true
	}
	n, err := s2.DecodedLen(stored)
	if err != nil {
		return nil, false // the cache wrote it: cannot happen; the store answers
	}
	out, err := s2.Decode(make([]byte, n), stored)
	return out, err == nil
}

// record returns the key and the stored value of the record at off, and
// whether the value is stored compressed.
func (s *lookupStripe) record(off uint32) (key, stored []byte, compressed bool) {
	kl := binary.LittleEndian.Uint32(s.ring[off:])
	vl := binary.LittleEndian.Uint32(s.ring[off+4:])
	compressed = vl&compressedFlag != 0
	vl &^= compressedFlag
	k := off + recordHeader
	return s.ring[k : k+kl], s.ring[k+kl : k+kl+vl], compressed
}

// evictOld drops the previous lap's records of stripe s that start before
// end. The caller holds s.mu.
func (c *lookupCache) evictOld(s *lookupStripe, end uint32) {
	for s.oldStart < s.oldEnd && s.oldStart < end {
		k, v, _ := s.record(s.oldStart)
		h := c.hash(k)
		if off, ok := s.entries[h]; ok && off == s.oldStart {
			delete(s.entries, h)
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
	stored, flag := value, uint32(0)
	if len(value) >= compressMin {
		buf := scratch.Get().(*[]byte)
		defer scratch.Put(buf) // once stored is copied into the ring
		enc := s2.Encode(*buf, value)
		if cap(enc) <= scratchMax {
			*buf = enc[:0] // the buffer s2.Encode reused, or grew for the next
		}
		if len(enc) <= len(value)-len(value)/8 {
			stored, flag = enc, compressedFlag
		}
	}
	n := recordHeader + len(key) + len(stored)
	if n > c.ringSize {
		return
	}
	h := c.hash(key)
	s := &c.stripes[stripeOf(h)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending != 0 || s.last > label {
		return
	}
	if off, ok := s.entries[h]; ok {
		if k, _, _ := s.record(off); bytes.Equal(k, key) {
			return
		}
	}
	if s.ring == nil {
		ring, err := allocChunk(c.ringSize)
		if err != nil {
			return // no memory for the cache: lookups go to the store
		}
		s.ring = ring
	}
	if int(s.head)+n > len(s.ring) { // a new lap: the current one becomes the previous
		c.evictOld(s, s.oldEnd)
		s.oldStart, s.oldEnd, s.head = 0, s.head, 0
	}
	c.evictOld(s, s.head+uint32(n))
	r := s.ring[s.head:]
	binary.LittleEndian.PutUint32(r, uint32(len(key)))
	binary.LittleEndian.PutUint32(r[4:], uint32(len(stored))|flag)
	copy(r[recordHeader:], key)
	copy(r[recordHeader+len(key):], stored)
	s.entries[h] = s.head
	s.head += uint32(n)
}

// drop forgets the record of the key of hash h, if the cache holds one.
// The caller holds s.mu.
func (s *lookupStripe) drop(h uint64) {
	delete(s.entries, h)
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
		switch {
		case pointWrite(kind):
			if c.cacheable != nil && !c.cacheable(key) {
				continue
			}
			h := c.hash(key)
			i := stripeOf(h)
			s := &c.stripes[i]
			s.mu.Lock()
			if !m.marked(i) {
				m.stripes |= 1 << i
				s.pending++
			}
			s.drop(h)
			s.mu.Unlock()
		case kind == pebble.InternalKeyKindLogData:
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

// keepBatch adds the values of the cacheable keys batch set, once it has
// committed as commit and markBatch's marks m are undone (see "Writes"
// above). A key the batch writes twice keeps its last value, and none if
// the last write deleted it.
func (c *lookupCache) keepBatch(b *pebble.Batch, m commitMarks, commit uint64) {
	if m.all {
		return
	}
	added := false // markBatch dropped every key: until an add, none to drop
	r := b.Reader()
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil || !ok {
			return
		}
		if !pointWrite(kind) || c.cacheable != nil && !c.cacheable(key) {
			continue
		}
		if added { // the key may have been set earlier in this batch
			h := c.hash(key)
			s := &c.stripes[stripeOf(h)]
			s.mu.Lock()
			s.drop(h)
			s.mu.Unlock()
		}
		if kind == pebble.InternalKeyKindSet {
			c.add(key, value, commit)
			added = true
		}
	}
}

// pointWrite reports whether a batch record of this kind sets or deletes
// one key: the writes markBatch and keepBatch follow key by key.
func pointWrite(kind pebble.InternalKeyKind) bool {
	switch kind {
	case pebble.InternalKeyKindSet, pebble.InternalKeyKindDelete, pebble.InternalKeyKindDeleteSized, pebble.InternalKeyKindSingleDelete:
		return true
	}
	return false
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
