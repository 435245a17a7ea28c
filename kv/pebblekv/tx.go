package pebblekv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/lethe-db/lethe/kv"
)

// errTxDone is returned when a transaction is used after its function returned.
// Pebble recycles batches, so such a use must not reach Pebble.
var errTxDone = errors.New("pebblekv: transaction used after it ended")

// source is what a transaction reads from: a *pebble.Snapshot (View) or an
// indexed *pebble.Batch (Update), which overlays its own writes on the DB.
type source interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// txState is the bookkeeping shared by both kinds of transaction: the read
// source, whether the transaction has ended, and the iterators still open
// (closed when the transaction ends, as Pebble must not see leaked iterators
// and a batch must not be recycled under one).
type txState struct {
	src  source
	done atomic.Bool
	// readErrors, if set, counts reads the storage failed (the store's
	// counter).
	readErrors *atomic.Int64

	mu    sync.Mutex
	iters map[*iterator]struct{}
}

// readFailed wraps a read's storage error as kv.ErrIO and counts it: a
// failed read of a file (EIO) or a corrupt block, never a missing key.
func (st *txState) readFailed(op string, err error) error {
	if st != nil && st.readErrors != nil {
		st.readErrors.Add(1)
	}
	return fmt.Errorf("pebblekv: %s: %w: %w", op, kv.ErrIO, err)
}

// finish ends the transaction: it closes leaked iterators, then releases the
// source with release.
func (st *txState) finish(release func() error) {
	st.mu.Lock()
	st.done.Store(true)
	// Closed under mu, so that a later iterator.Close, which finds the
	// iterator gone from the map, knows it is fully closed.
	for it := range st.iters {
		it.closeInternal(errTxDone)
	}
	st.iters = nil
	st.mu.Unlock()
	_ = release() // snapshot and batch Close only fail on double close
}

// reader implements [kv.Reader] over a source. It deliberately has no write
// methods: the value View passes to fn cannot be asserted to [kv.Tx].
type reader struct {
	state txState
	// cache, when set, answers lookups of keys whose newest commit the
	// source holds; label is the commit count it holds every commit up to
	// (see lookupcache.go).
	cache *lookupCache
	label uint64
}

var _ kv.Reader = (*reader)(nil)

// Get implements [kv.Reader]. The returned slice is a private copy.
func (r *reader) Get(key []byte) ([]byte, error) {
	if r.state.done.Load() {
		return nil, errTxDone
	}
	if r.cache != nil {
		if v, ok := r.cache.get(key, r.label); ok {
			return v, nil
		}
	}
	v, closer, err := r.state.src.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, kv.ErrNotFound
	}
	if err != nil {
		return nil, r.state.readFailed("get", err)
	}
	out := make([]byte, len(v)) // non-nil even for an empty value
	copy(out, v)
	if r.cache != nil {
		r.cache.add(key, out, r.label)
	}
	if err := closer.Close(); err != nil {
		return nil, fmt.Errorf("pebblekv: get: %w", err)
	}
	return out, nil
}

// Scan implements [kv.Reader].
func (r *reader) Scan(start, end []byte, reverse bool) kv.Iterator {
	if end != nil && bytes.Compare(start, end) >= 0 {
		return &iterator{exhausted: true} // empty range
	}
	st := &r.state
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done.Load() {
		return &iterator{err: errTxDone, exhausted: true}
	}
	// Pebble keeps references to the bounds for the iterator's lifetime, and
	// the caller may reuse its buffers, so copy them (in one allocation).
	bounds := make([]byte, 0, len(start)+len(end))
	bounds = append(bounds, start...)
	bounds = append(bounds, end...)
	opts := &pebble.IterOptions{}
	if len(start) > 0 {
		// An empty lower bound is the same as none; passing it as nil also
		// avoids a Pebble invariants-build bug (index out of range on an
		// empty seek key in testingDisableSeekOpt, hit under -race).
		opts.LowerBound = bounds[:len(start):len(start)]
	}
	if end != nil {
		opts.UpperBound = bounds[len(start):]
	}
	pit, err := st.src.NewIter(opts)
	if err != nil {
		return &iterator{err: st.readFailed("scan", err), exhausted: true}
	}
	it := &iterator{owner: st, it: pit, reverse: reverse}
	if st.iters == nil {
		st.iters = make(map[*iterator]struct{})
	}
	st.iters[it] = struct{}{}
	return it
}

// tx implements [kv.Tx] over a batch, under the store's writer lock.
//
// Indexing a batch (a skiplist of its keys, so that reads see the
// transaction's own writes) costs about as much per key as the memtable
// insert its commit makes, and most transactions never need it: they read
// first and write after, or read back only keys they have not written (the
// usage tallies written last). So a transaction starts on a plain batch and
// reads the database itself, which nothing else changes while the writer
// lock is held. A point read after writes looks for its key among the
// batch's own writes, newest first; only a scan after writes, a range
// deletion, or a point read once the batch is large turns the batch into an
// indexed one (its writes so far copied in), through which every later read
// goes.
type tx struct {
	reader
	db    *pebble.DB
	batch *pebble.Batch
	// looked counts the writes point reads have looked through in the plain
	// batch: once they cost more than indexing it would have, it is indexed.
	looked int
	// filter, when set, tells keys the store surely does not hold
	// (keyfilter.go).
	filter *keyFilter
}

var _ kv.Tx = (*tx)(nil)

// Point reads look through a plain batch's writes while that stays cheaper
// than indexing them: while the batch holds at most maxLinearOps writes, and
// the reads have looked through at most linearBudget times as many writes as
// it holds (plus a few, for small batches). A transaction that reads between
// many writes (a transactional batch of many documents) soon has its batch
// indexed; one that reads a few keys at the end (a create's usage tallies)
// never does. Looking at a write costs a few nanoseconds, indexing it a
// skiplist insert, about a hundred times as much.
const (
	maxLinearOps = 1024
	linearBudget = 8
	linearSlack  = 256
)

// newTx starts a transaction on db. The caller must hold the writer lock.
// cache, if not nil, answers lookups of keys the transaction has not
// written; commits is the commit count, which holds every commit so far
// while the writer lock is held.
func newTx(db *pebble.DB, readErrors *atomic.Int64, cache *lookupCache, commits uint64) *tx {
	return &tx{reader: reader{state: txState{src: db, readErrors: readErrors}, cache: cache, label: commits}, db: db, batch: db.NewBatch()}
}

// close releases the transaction's batch: after a commit it is only recycled.
func (t *tx) close() error { return t.batch.Close() }

// indexed makes the batch an indexed one, through which every later read
// goes, unless it is already, or holds no write to see.
func (t *tx) indexed() error {
	if t.batch.Indexed() || t.batch.Empty() {
		return nil
	}
	ib := t.db.NewIndexedBatch()
	if err := ib.Apply(t.batch, nil); err != nil {
		_ = ib.Close()
		return fmt.Errorf("pebblekv: index batch: %w", err)
	}
	_ = t.batch.Close()
	t.batch = ib
	t.state.mu.Lock()
	t.state.src = ib
	t.state.mu.Unlock()
	// The batch may now hold the key a read asks for: reads go to it, and
	// what they find is not the committed value the cache keeps.
	t.cache = nil
	return nil
}

// Get implements [kv.Reader]: the transaction's own writes first.
func (t *tx) Get(key []byte) ([]byte, error) {
	if t.state.done.Load() {
		return nil, errTxDone
	}
	if !t.batch.Indexed() && !t.batch.Empty() {
		n := int(t.batch.Count())
		t.looked += n
		if n > maxLinearOps || t.looked > linearBudget*n+linearSlack {
			if err := t.indexed(); err != nil {
				return nil, err
			}
		} else if v, found, err := t.ownWrite(key); err != nil || found {
			return v, err
		}
	}
	// Not among the writes of a plain batch: the database decides, and the
	// filter may know it holds nothing there. An indexed batch is read
	// whole, its writes with the database's.
	if t.filter != nil && !t.batch.Indexed() && t.filter.absentKey(key) {
		return nil, kv.ErrNotFound
	}
	return t.reader.Get(key)
}

// ownWrite looks for key among the writes of the plain batch: found reports
// whether the batch decides its value, v is that value (a copy) or nil with
// kv.ErrNotFound when the last write deleted it. A range deletion in the
// batch indexes it instead, and leaves the read to the indexed batch.
func (t *tx) ownWrite(key []byte) (v []byte, found bool, err error) {
	var deleted bool
	r := t.batch.Reader()
	for {
		kind, k, value, ok, err := r.Next()
		if err != nil {
			return nil, false, fmt.Errorf("pebblekv: get: %w", err)
		}
		if !ok {
			break
		}
		switch kind {
		case pebble.InternalKeyKindSet:
			if bytes.Equal(k, key) {
				v, found, deleted = value, true, false
			}
		case pebble.InternalKeyKindDelete, pebble.InternalKeyKindDeleteSized:
			if bytes.Equal(k, key) {
				v, found, deleted = nil, true, true
			}
		default: // a range deletion, or a kind this package never writes
			return nil, false, t.indexed()
		}
	}
	switch {
	case !found:
		return nil, false, nil
	case deleted:
		return nil, true, kv.ErrNotFound
	}
	out := make([]byte, len(v)) // non-nil even for an empty value
	copy(out, v)
	return out, true, nil
}

// Scan implements [kv.Reader]: after writes, through the indexed batch.
func (t *tx) Scan(start, end []byte, reverse bool) kv.Iterator {
	if err := t.indexed(); err != nil {
		return &iterator{err: err, exhausted: true}
	}
	return t.reader.Scan(start, end, reverse)
}

// Put implements [kv.Tx]. Pebble copies key and value into the batch.
func (t *tx) Put(key, value []byte) error {
	if t.state.done.Load() {
		return errTxDone
	}
	if err := t.batch.Set(key, value, nil); err != nil {
		return fmt.Errorf("pebblekv: put: %w", err)
	}
	return nil
}

// Delete implements [kv.Tx].
func (t *tx) Delete(key []byte) error {
	if t.state.done.Load() {
		return errTxDone
	}
	if err := t.batch.Delete(key, nil); err != nil {
		return fmt.Errorf("pebblekv: delete: %w", err)
	}
	return nil
}

// DeleteSized implements [kv.Tx]. Pebble records the deleted value's size
// with the tombstone and counts it into the sstable's estimate of the space
// its deletions free, so that compactions pick tables full of such deletions
// sooner and the space of deleted documents leaves the disk.
func (t *tx) DeleteSized(key []byte, valueSize int) error {
	if t.state.done.Load() {
		return errTxDone
	}
	size := uint32(min(max(valueSize, 0), math.MaxUint32))
	if err := t.batch.DeleteSized(key, size, nil); err != nil {
		return fmt.Errorf("pebblekv: delete: %w", err)
	}
	return nil
}

// DeleteRange implements [kv.Tx]. It writes a single range tombstone, so its
// cost does not depend on how many keys the range holds. As in Scan, a nil end
// means no upper bound; an empty range (start >= end) is a no-op.
func (t *tx) DeleteRange(start, end []byte) error {
	if t.state.done.Load() {
		return errTxDone
	}
	if end == nil {
		// A tombstone needs a finite end. Writers are serialised, so no key
		// beyond the current last one can appear before this batch commits
		// (later writes in this batch override the tombstone anyway), and
		// ending just after the last key is exact.
		last, err := t.lastKeyFrom(start)
		if err != nil || last == nil {
			return err
		}
		end = append(last, 0) // the immediate successor of last
	} else if bytes.Compare(start, end) >= 0 {
		return nil
	}
	if err := t.batch.DeleteRange(start, end, nil); err != nil {
		return fmt.Errorf("pebblekv: delete range: %w", err)
	}
	return nil
}

// lastKeyFrom returns a copy of the greatest key >= start visible to the
// transaction, or nil if there is none.
func (t *tx) lastKeyFrom(start []byte) ([]byte, error) {
	if err := t.indexed(); err != nil {
		return nil, err
	}
	opts := &pebble.IterOptions{}
	if len(start) > 0 { // see Scan about empty bounds
		opts.LowerBound = start
	}
	it, err := t.state.src.NewIter(opts) // the indexed batch, or the database
	if err != nil {
		return nil, fmt.Errorf("pebblekv: delete range: %w", err)
	}
	var last []byte
	if it.Last() {
		last = append([]byte(nil), it.Key()...)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("pebblekv: delete range: %w", err)
	}
	return last, nil
}

// iterator implements [kv.Iterator] over a Pebble iterator.
type iterator struct {
	owner   *txState         // nil for iterators that never opened a Pebble iterator
	it      *pebble.Iterator // nil once closed
	reverse bool
	started bool
	// exhausted is set once Next has returned false; Pebble is not asked again.
	exhausted  bool
	key, value []byte
	err        error
}

// Next implements [kv.Iterator].
func (i *iterator) Next() bool {
	if i.exhausted || i.it == nil {
		i.exhausted = true
		i.key, i.value = nil, nil
		return false
	}
	var ok bool
	switch {
	case !i.started:
		i.started = true
		if i.reverse {
			ok = i.it.Last()
		} else {
			ok = i.it.First()
		}
	case i.reverse:
		ok = i.it.Prev()
	default:
		ok = i.it.Next()
	}
	if !ok {
		if err := i.it.Error(); err != nil {
			i.err = i.owner.readFailed("scan", err)
		}
		i.exhausted = true
		i.key, i.value = nil, nil
		return false
	}
	v, err := i.it.ValueAndErr()
	if err != nil {
		i.err = i.owner.readFailed("scan", err)
		i.exhausted = true
		i.key, i.value = nil, nil
		return false
	}
	i.key, i.value = i.it.Key(), v
	return true
}

// Key implements [kv.Iterator].
func (i *iterator) Key() []byte { return i.key }

// Value implements [kv.Iterator].
func (i *iterator) Value() []byte { return i.value }

// Err implements [kv.Iterator].
func (i *iterator) Err() error { return i.err }

// Close implements [kv.Iterator]. It is safe to call more than once.
func (i *iterator) Close() error {
	if i.owner != nil {
		i.owner.mu.Lock()
		_, open := i.owner.iters[i]
		delete(i.owner.iters, i)
		i.owner.mu.Unlock()
		if !open {
			// Already closed, by an earlier Close or by the end of the
			// transaction (under owner.mu, which we have since acquired).
			return i.err
		}
	}
	i.closeInternal(nil)
	return i.err
}

// closeInternal releases the Pebble iterator, recording cause (if the caller
// had not finished) or Pebble's close error as the iterator's error.
func (i *iterator) closeInternal(cause error) {
	if i.it == nil {
		return
	}
	err := i.it.Close()
	i.it = nil
	if i.err == nil && err != nil {
		i.err = i.owner.readFailed("scan", err)
	}
	if i.err == nil && cause != nil && !i.exhausted {
		i.err = cause
	}
	i.exhausted = true
	i.key, i.value = nil, nil
}
