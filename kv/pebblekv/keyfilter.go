package pebblekv

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/lethe-db/lethe/kv"
)

// A key filter lets an Update learn that a key is absent without searching
// Pebble. Every create looks its document's key up to check that the id is
// free, and nearly always finds nothing; Pebble answers that only after
// searching each memtable's skiplist and consulting a filter of every sstable
// that may hold the key, which cost 8% of an in-memory server's CPU under
// creates and 10% of a durable one's (about 15 and 30 µs a create; the
// durable filters are read through a small block cache). A Bloom filter over
// the keys of one prefix (Options.FilterPrefix: the documents) answers most
// such lookups in a few tens of nanoseconds.
//
// # Exactness
//
// The filter may answer "absent" only for a key the store does not hold, so
// it must hold every key of the prefix the store holds. It is consulted only
// by Updates, under the writer lock, which read the live database: there,
// every commit so far has happened, and each commit added the keys it set to
// the filter before it committed (noteBatch, also under the writer lock). A
// View reads a snapshot that may be older than the filter (a rebuilt filter
// has forgotten keys deleted before it was built), so Views never consult it.
// A transaction's own writes are looked at before the filter (tx.Get), and
// once its batch is indexed its reads go through the batch, not the filter.
//
// # Growth and rebuilds
//
// The filter is a list of Bloom filters, layers: keys go into the newest,
// and when it holds what it was sized for, a new one twice its size is
// added. A lookup answers "absent" when every layer does. So a growing store
// never reads its keys again; a store of a million keys has five or six
// layers. A key set again (a replace) is not added again: its bits are set.
//
// A Bloom filter cannot forget a key, so deleted keys stay in it as false
// positives and take room. Once more than half the keys it holds have been
// deleted (point deletions of the prefix, counted by noteBatch), or a range
// deletion took an unknown number of them, it is built again in the
// background: under the writer lock, the builder takes a snapshot and from
// then on commits note their keys' hashes for it as well as adding them to
// the current layers; it lists the snapshot's keys of the prefix; then,
// under the writer lock again, one layer sized for what it found and what
// commits noted replaces the current ones. Every key the live store holds
// afterwards was in the snapshot or set by a commit since.
//
// A store on disk builds its first filter from the keys it holds when it
// opens; until that completes there is no filter and lookups go to Pebble.
// An in-memory store opens empty, and so does its filter. A build lists the
// keys with Options.FilterKeys, from an index whose entries are small: a
// scan of the prefix itself reads every value through the block cache
// (under the ttl workload in memory, it filled the 64 MiB cache with
// documents, and the server's RSS rose from 218 to 332 MB), so builds are
// kept for what cannot be done without: a store's start, and deletions.
type keyFilter struct {
	prefix, end []byte
	seed        maphash.Seed
	list        func(r kv.Reader, add func(key []byte) bool) error // Options.FilterKeys, or a scan of the prefix

	// Under the writer lock:
	layers   []*blockedBloom // nil until the first build completes; the newest last
	building bool            // a build's snapshot is taken and it has not finished
	ranged   bool            // a range deletion of the prefix since the last build began
	noted    []uint64        // hashes of keys set by commits while building

	kick chan struct{} // asks the builder for a build; one slot
	stop chan struct{} // closed by Store.Close
	done chan struct{} // closed when the builder has stopped

	absent, maybe atomic.Int64 // lookups answered "absent", and passed on
	builds        atomic.Int64 // builds completed
	keys          atomic.Int64 // keys the layers hold, deleted ones included
	deleted       atomic.Int64 // point deletions of the prefix since the last build
	bytes         atomic.Int64 // the layers' memory
}

// minFilterKeys is the fewest keys a layer is sized for: 80 KB of bits.
const minFilterKeys = 1 << 16

// filterBitsPerKey sizes a layer for the keys it may hold: about one false
// positive in 100 lookups once it holds them all, at 7 probes. A rebuilt
// filter is sized for twice the keys it starts with, about one in 2,000.
const filterBitsPerKey = 10

// filterRetry is how long the builder waits after a failed build (a read
// error) before it tries again; lookups go to Pebble meanwhile, or to the
// older filter.
const filterRetry = 10 * time.Second

func newKeyFilter(prefix []byte, list func(kv.Reader, func([]byte) bool) error) *keyFilter {
	p := bytes.Clone(prefix)
	f := &keyFilter{prefix: p, end: kv.PrefixEnd(p), seed: maphash.MakeSeed(), list: list,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if f.list == nil {
		f.list = f.scanPrefix
	}
	return f
}

// scanPrefix lists the keys of the filter's prefix that r holds, by a scan.
func (f *keyFilter) scanPrefix(r kv.Reader, add func(key []byte) bool) error {
	it := r.Scan(f.prefix, f.end, false)
	defer it.Close()
	for it.Next() {
		if !add(it.Key()) {
			return nil
		}
	}
	return it.Err()
}

// startEmpty gives a store that holds no key its filter, with nothing to
// scan. Only before the store is shared.
func (f *keyFilter) startEmpty() { f.install(newBlockedBloom(minFilterKeys)) }

// install makes b, which holds b.keys keys, the filter's only layer. The
// caller holds the writer lock, or the store is not yet shared.
func (f *keyFilter) install(b *blockedBloom) {
	f.layers = []*blockedBloom{b}
	f.keys.Store(b.keys)
	f.bytes.Store(b.size())
}

// covers reports whether key is of the filter's prefix.
func (f *keyFilter) covers(key []byte) bool { return bytes.HasPrefix(key, f.prefix) }

func (f *keyFilter) hash(key []byte) uint64 { return maphash.Bytes(f.seed, key) }

// mayHold reports whether a layer may hold the key of hash h.
func (f *keyFilter) mayHold(h uint64) bool {
	for i := len(f.layers) - 1; i >= 0; i-- { // the newest first: recent keys are looked up most
		if f.layers[i].mayContain(h) {
			return true
		}
	}
	return false
}

// absentKey reports whether the store surely does not hold key. The caller
// holds the writer lock and has looked among its transaction's own writes.
func (f *keyFilter) absentKey(key []byte) bool {
	if f.layers == nil || !f.covers(key) {
		return false
	}
	if f.mayHold(f.hash(key)) {
		f.maybe.Add(1)
		return false
	}
	f.absent.Add(1)
	return true
}

// noteBatch adds the keys of the prefix that b sets to the filter, notes
// them for a running build, and counts those b deletes, before b commits.
// The caller holds the writer lock.
func (f *keyFilter) noteBatch(b *pebble.Batch) {
	r := b.Reader()
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil || !ok {
			break
		}
		if kind == pebble.InternalKeyKindRangeDelete {
			// A dropped container: how many keys went is unknown, so a
			// filter of any size is built again.
			f.ranged = f.ranged || f.layers != nil && f.overlaps(key, value)
			continue
		}
		if !pointWrite(kind) || !f.covers(key) {
			continue
		}
		if kind != pebble.InternalKeyKindSet {
			if f.layers != nil {
				f.deleted.Add(1)
			}
			continue
		}
		h := f.hash(key)
		if f.building {
			f.noted = append(f.noted, h)
		}
		if f.layers != nil && !f.mayHold(h) {
			f.add(h)
		}
	}
	if f.stale() {
		f.wake()
	}
}

// stale reports whether the filter is worth building again: it holds more
// keys than a layer's least, and more than half of them were deleted, or a
// range deletion took an unknown number. The caller holds the writer lock.
func (f *keyFilter) stale() bool {
	n := f.keys.Load()
	return n > minFilterKeys && (f.ranged || 2*f.deleted.Load() > n)
}

// overlaps reports whether [start, end) holds keys of the filter's prefix.
func (f *keyFilter) overlaps(start, end []byte) bool {
	if bytes.Compare(end, f.prefix) <= 0 {
		return false
	}
	return f.end == nil || bytes.Compare(start, f.end) < 0
}

// add adds the key of hash h to the newest layer, first adding a layer
// twice its size if it is full.
func (f *keyFilter) add(h uint64) {
	last := f.layers[len(f.layers)-1]
	if last.keys >= last.capacity {
		last = newBlockedBloom(2 * last.capacity)
		f.layers = append(f.layers, last)
		f.bytes.Add(last.size())
	}
	last.add(h)
	last.keys++
	f.keys.Add(1)
}

// wake asks the builder for a build, unless one is asked for already.
func (f *keyFilter) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// KeyFilterStats are the key filter's figures since the store opened.
type KeyFilterStats struct {
	// Absent counts lookups the filter answered (the key was absent), Maybe
	// those it passed on to Pebble: the key was there, or a false positive.
	Absent, Maybe int64
	// Builds counts the filters built from a scan of the store's keys.
	Builds int64
	// Keys is how many keys the filter holds, Deleted how many of them have
	// been deleted since it was built; Bytes is its memory.
	Keys, Deleted, Bytes int64
}

// KeyFilter returns the key filter's figures; zero without one
// (Options.FilterPrefix unset).
func (s *Store) KeyFilter() KeyFilterStats {
	f := s.filter
	if f == nil {
		return KeyFilterStats{}
	}
	return KeyFilterStats{Absent: f.absent.Load(), Maybe: f.maybe.Load(), Builds: f.builds.Load(),
		Keys: f.keys.Load(), Deleted: f.deleted.Load(), Bytes: f.bytes.Load()}
}

// runKeyFilter is the builder's goroutine: it builds the filter when asked,
// until the store closes (stopKeyFilter).
func (s *Store) runKeyFilter(f *keyFilter) {
	defer close(f.done)
	for {
		select {
		case <-f.stop:
			return
		case <-f.kick:
		}
		if err := s.buildKeyFilter(f); err != nil {
			s.log.Warn("pebblekv: build the key filter; lookups go to the store until a retry succeeds", "dir", s.desc, "err", err, "retry_in", filterRetry)
			select {
			case <-f.stop:
				return
			case <-time.After(filterRetry):
				f.wake()
			}
		}
	}
}

// stopKeyFilter stops the builder, if the store has one.
func (s *Store) stopKeyFilter() {
	if s.filter != nil {
		close(s.filter.stop)
		<-s.filter.done
	}
}

// buildKeyFilter builds a filter of the keys the store holds and puts it in
// place of the current one (see "Exactness" above). A store that is closing
// ends the build early and keeps what it had.
func (s *Store) buildKeyFilter(f *keyFilter) error {
	if err := s.enter(); err != nil {
		return nil // closed
	}
	defer s.inflight.Done()
	if !s.lockWriter(f.stop) {
		return nil
	}
	if f.layers != nil && !f.stale() {
		<-s.writeSem // asked for by commits while the last build ran
		return nil
	}
	f.building, f.noted, f.ranged = true, nil, false
	deletedBefore := f.deleted.Load()
	snap := s.db.NewSnapshot()
	<-s.writeSem

	found, err := s.filterScan(f, snap)
	_ = snap.Close() // only fails on a double close
	var b *blockedBloom
	if err == nil && found != nil { // outside the writer lock: a million keys take milliseconds
		b = newBlockedBloom(max(2*int64(len(found)), minFilterKeys))
		for _, h := range found {
			b.add(h)
		}
		b.keys = int64(len(found))
	}

	s.writeSem <- struct{}{} // writers hold it briefly; closing waits for this build
	defer func() { <-s.writeSem }()
	noted := f.noted
	f.building, f.noted = false, nil
	if b == nil {
		return err
	}
	f.install(b)
	for _, h := range noted {
		if !f.mayHold(h) {
			f.add(h)
		}
	}
	f.deleted.Add(-deletedBefore) // the deletions since the snapshot remain
	f.builds.Add(1)
	return nil
}

// filterScan returns the hashes of the keys of f's prefix in snap, or nil
// without an error when the store began closing meanwhile. It runs as a
// background job, at the lowest CPU priority where the store's flushes and
// compactions run there too.
func (s *Store) filterScan(f *keyFilter, snap *pebble.Snapshot) ([]uint64, error) {
	type result struct {
		found []uint64
		err   error
	}
	out := make(chan result, 1)
	s.jobs.add(1)
	defer s.jobs.add(-1)
	go func() { // its own goroutine: a lowered one keeps its thread until it ends
		if s.pace != nil {
			lowerGoroutine()
		}
		found, err := s.scanHashes(f, snap)
		out <- result{found, err}
	}()
	r := <-out
	return r.found, r.err
}

// afterFilterSnapshot, when set, runs as a build's scan begins, its
// snapshot taken: tests commit there, between the snapshot and the swap.
var afterFilterSnapshot func()

// scanHashes returns the hashes of the keys of f's prefix in snap, or nil
// when the store began closing.
func (s *Store) scanHashes(f *keyFilter, snap *pebble.Snapshot) ([]uint64, error) {
	if afterFilterSnapshot != nil {
		afterFilterSnapshot()
	}
	r := &reader{state: txState{src: snap, readErrors: &s.readErrors}}
	defer r.state.finish(func() error { return nil }) // the caller closes snap
	found := make([]uint64, 0, 1024)
	closing := false
	err := f.list(r, func(key []byte) bool {
		found = append(found, f.hash(key))
		closing = len(found)%4096 == 0 && s.closing.Load()
		return !closing
	})
	switch {
	case closing:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("list the keys: %w", err)
	}
	return found, nil
}

// blockedBloom is a blocked Bloom filter of 64-bit hashes: each sets bloomProbes
// bits within one 512-bit block, a cache line, so a lookup reads one line.
// Its bits are set with atomic ORs: a build's scan and commits may add at
// once.
type blockedBloom struct {
	words    []atomic.Uint64
	blocks   uint64
	capacity int64 // keys it was sized for, at filterBitsPerKey
	keys     int64 // keys added (a layer's count, kept under the writer lock)
}

// bloomProbes is how many bits a key sets in its block: near the optimum
// for 10 bits a key, and 7 × 9 bits of the hash pick them.
const bloomProbes = 7

func newBlockedBloom(keys int64) *blockedBloom {
	blocks := (keys*filterBitsPerKey + 511) / 512
	return &blockedBloom{words: make([]atomic.Uint64, blocks*8), blocks: uint64(blocks), capacity: blocks * 512 / filterBitsPerKey}
}

// size returns the filter's memory in bytes.
func (b *blockedBloom) size() int64 { return int64(len(b.words)) * 8 }

// probes returns the first word of h's block, and the hash whose 9-bit
// slices pick the bits within it.
func (b *blockedBloom) probes(h uint64) (base uint64, bitsOf uint64) {
	block, _ := bits.Mul64(h, b.blocks) // uniform over the blocks, from h's high bits
	return block * 8, h * 0x9e3779b97f4a7c15
}

func (b *blockedBloom) add(h uint64) {
	base, p := b.probes(h)
	for range bloomProbes {
		bit := p & 511
		b.words[base+bit>>6].Or(1 << (bit & 63))
		p >>= 9
	}
}

func (b *blockedBloom) mayContain(h uint64) bool {
	base, p := b.probes(h)
	for range bloomProbes {
		bit := p & 511
		if b.words[base+bit>>6].Load()&(1<<(bit&63)) == 0 {
			return false
		}
		p >>= 9
	}
	return true
}
