// Package kv defines Lethe's storage contract: a transactional, ordered key-value
// store. Every engine behaviour is written once against this interface and runs on
// every backend (embedded Pebble today, PostgreSQL later).
//
// # Design principles
//
//   - Keys and values are opaque byte strings; keys sort bytewise.
//   - All access goes through managed transactions: [Store.View] for a consistent
//     read-only snapshot and [Store.Update] for an atomic read-write transaction.
//     The function's error (or panic) rolls the transaction back; a nil return commits.
//   - Update retries [ErrConflict] by itself, so callers never see it from Update;
//     the function passed to Update must therefore be safe to run more than once.
//   - A committed Update is durable when Update returns, unless the store was opened
//     without durability (an in-memory store). Concurrent committers share syncs
//     (group commit), so durability does not serialise throughput on the disk.
//   - Contexts are per call and never stored.
//   - Get returns a slice the caller owns: it stays valid and unchanged after the
//     transaction ends, so a value read once can be handed to the client without
//     another copy. Slices returned by an Iterator are valid only until it moves;
//     copy them to keep them.
//   - Reads inside an Update see that transaction's own writes.
//
// Backends map their own errors onto the sentinels below; the contract suite in
// kv/kvtest checks that they do.
package kv

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors. Backends return these (possibly wrapped) and callers branch on
// them with errors.Is.
var (
	// ErrNotFound is returned by Get when the key is absent.
	ErrNotFound = errors.New("kv: not found")
	// ErrConflict means a concurrent transaction wrote data this one depended on;
	// the transaction may be retried. Update retries it internally.
	ErrConflict = errors.New("kv: conflict")
	// ErrClosed is returned by every method of a closed store.
	ErrClosed = errors.New("kv: store closed")
	// ErrReadOnly is returned by writes attempted through a read-only transaction.
	ErrReadOnly = errors.New("kv: read-only transaction")
	// ErrNoSpace is returned by Update when the store refuses writes because
	// it cannot make them durable: its disk is full. Nothing was written;
	// reads go on, and writes are accepted again once space returns.
	ErrNoSpace = errors.New("kv: out of storage space")
	// ErrIO means the storage failed a read (an I/O error, a corrupt block):
	// that request fails, the store goes on.
	ErrIO = errors.New("kv: storage I/O error")
	// ErrUnavailable means the store could not be reached: a lost or refused
	// connection to a network database (restarting, failing over to a
	// standby). The request may be retried; an Update that returns it may or
	// may not have committed, if the connection went during its commit.
	ErrUnavailable = errors.New("kv: store unavailable")
	// ErrTooLarge is returned by Update when a key is longer than the store
	// takes (PostgreSQL indexes keys up to about 2,700 bytes; Pebble has no
	// such limit). Nothing was written.
	ErrTooLarge = errors.New("kv: key too large for the store")
	// ErrExists is returned by Update when the transaction created a key
	// ([Creator]) that was present. Nothing was written.
	ErrExists = errors.New("kv: key exists")
)

// Store is a transactional ordered key-value store.
type Store interface {
	// View runs fn in a read-only transaction over a consistent snapshot.
	View(ctx context.Context, fn func(Reader) error) error
	// Update runs fn in a read-write transaction and commits it atomically if fn
	// returns nil. It returns fn's error unchanged, or the commit error wrapped.
	Update(ctx context.Context, fn func(Tx) error) error
	// UpdateNoSync is Update without waiting for durability: the commit is
	// atomic and visible to later transactions at once, but a crash may lose
	// it (it becomes durable with the next Update's sync). It is for work that
	// is safe to lose because it would be redone, such as physically deleting
	// documents that stay expired anyway.
	UpdateNoSync(ctx context.Context, fn func(Tx) error) error
	// Close releases the store. It is safe to call more than once.
	Close() error
}

// Exclusive is implemented by stores that can promise three things: no other
// process writes their data; every View and Update reads one fixed state
// holding every Update that returned before it was called (a snapshot taken,
// or a writer lock held, before fn runs; a View may share a snapshot taken
// earlier if nothing has committed since); and Updates run one at a time, an
// Update's fn starting only once the one before it has run and committed (or
// rolled back). A caller may then keep state derived from the store in memory
// and validate it with its own counters of the writes it makes, instead of
// reading it in every transaction, and may order work of its own between two
// writers with an Update that writes nothing. Stores shared between processes
// (a network database behind several gateways) must not implement it or must
// return false.
type Exclusive interface {
	Exclusive() bool
}

// Clock is implemented by stores that keep a time every process using them
// agrees on: a network database's clock. An engine on such a store takes its
// time from it, so that gateways on machines whose clocks differ decide
// expiry alike, and a gateway moved to another machine does not change when
// documents expire.
type Clock interface {
	// Now returns the store's current time. Successive calls never go back.
	Now(ctx context.Context) (time.Time, error)
}

// Reader is the read side of a transaction.
type Reader interface {
	// Get returns the value stored at key, or ErrNotFound.
	Get(key []byte) ([]byte, error)
	// Scan returns an iterator over the keys in [start, end) in ascending order,
	// or descending order when reverse is true. A nil end means no upper bound.
	// The caller must Close the iterator.
	Scan(start, end []byte, reverse bool) Iterator
}

// Tx is a read-write transaction.
type Tx interface {
	Reader
	// Put stores value at key, replacing any previous value. The store copies both.
	Put(key, value []byte) error
	// Delete removes key; deleting an absent key is not an error.
	Delete(key []byte) error
	// DeleteSized is Delete for a key whose stored value the caller knows to
	// be about valueSize bytes. A store that reclaims deleted space lazily
	// (an LSM tree, by compaction) may use the hint to reclaim it sooner;
	// the outcome is Delete's whatever the hint, so a wrong one is harmless.
	DeleteSized(key []byte, valueSize int) error
	// DeleteRange removes every key in [start, end).
	DeleteRange(start, end []byte) error
}

// Inserter is implemented by the transactions of stores where claiming an
// absent key costs less than reading it first. PostgreSQL's serializable mode
// locks every index page a read visits, so a transaction that reads a key,
// finds it absent and then writes it conflicts with every concurrent
// transaction that writes near it; an insert that does nothing when the key
// exists leaves no read behind, and two transactions claiming the same key
// still conflict. Callers use it through a type assertion on [Tx] and fall back
// to Get and Put.
type Inserter interface {
	// Insert stores value at key if no value is stored there and reports
	// whether it did; a key that is present is left unchanged (read it with
	// Get to know its value). Insert judges presence by the latest committed
	// state, not by the transaction's snapshot: a key that a concurrent
	// transaction deleted and committed counts as absent, as if this
	// transaction ran after that one. Use it only where that order is harmless
	// (the transaction reads nothing else that the deleting one wrote).
	Insert(key, value []byte) (bool, error)
}

// Creator is implemented by the transactions of stores where checking that
// a key is absent costs a round trip of its own (a network database): the
// check is made where the write is made, with the transaction's other
// writes. Callers use it through a type assertion on [Tx], and fall back to
// reading the key (or claiming it with [Inserter]) when the store lacks it
// or the key turns out to be taken.
type Creator interface {
	// Create stores value at key, which must be absent. If a value is
	// stored there when the write is made (at the transaction's next read
	// or its commit, which then fail), the transaction writes nothing and
	// its Update returns an error that is [ErrExists]. Like Insert, Create
	// judges presence by the latest committed state.
	Create(key, value []byte) error
}

// BatchGetter is implemented by the readers and transactions of stores that
// look up several keys for less than a Get apiece: a network database answers
// them in one round trip instead of one each. Callers that need not know
// whether a reader batches can use [GetBatch].
type BatchGetter interface {
	// GetBatch returns the values stored at keys, in the order of keys, with
	// nil for a key that is absent (a present empty value is an empty,
	// non-nil slice). The values are copies the caller owns, as Get's are.
	GetBatch(keys [][]byte) ([][]byte, error)
}

// GetBatch looks keys up in r: in one call when r is a [BatchGetter], else
// with one Get per key. See BatchGetter.GetBatch for the result.
func GetBatch(r Reader, keys [][]byte) ([][]byte, error) {
	if b, ok := r.(BatchGetter); ok {
		return b.GetBatch(keys)
	}
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := r.Get(k)
		switch {
		case err == nil:
			vals[i] = nonNilValue(v)
		case !errors.Is(err, ErrNotFound):
			return nil, err
		}
	}
	return vals, nil
}

// Prefetcher is implemented by the readers and transactions of stores where
// reading keys one at a time costs a round trip each (a network database).
// A caller that knows which keys it is about to Get, or expects to, reads
// them ahead in one round trip; a key read ahead and never asked for costs
// only its share of that round trip. Callers use it through a type
// assertion on [Reader]: a store without it reads each key when asked.
type Prefetcher interface {
	// Prefetch reads keys in the transaction's snapshot and keeps their
	// values (or their absence) for the transaction's later Gets of them,
	// which then return what they would have read. A key the transaction
	// writes afterwards (Put, Delete, DeleteRange, Insert, Create) is no longer
	// kept: its next Get reads it again.
	Prefetch(keys [][]byte) error
}

// KeyViewer is implemented by stores that read a few keys in one snapshot
// for less than a View costs: a network database reads them in one
// statement, without a transaction around it (one round trip, where a View
// that reads them costs two: the read with its BEGIN, then the COMMIT).
// Callers use it through a type assertion on [Store].
type KeyViewer interface {
	// ViewKeys returns the values stored at keys, in the order of keys,
	// with nil for an absent key (a present empty value is an empty,
	// non-nil slice), all read in one snapshot, as GetBatch in a View
	// reads them. The values are copies the caller owns.
	ViewKeys(ctx context.Context, keys [][]byte) ([][]byte, error)
}

// Counter is implemented by the readers and transactions of stores that
// count the keys of a range without handing them over: a network database
// counts them where they are, instead of sending every key and value to be
// counted. Callers that need not know whether a reader counts can use
// [Count].
type Counter interface {
	// Count returns how many keys lie in [start, end), a nil end meaning no
	// upper bound, as a Scan of them in the same transaction would see them.
	// With limit >= 0 it stops at limit+1, enough to tell that there are
	// more than limit.
	Count(start, end []byte, limit int64) (int64, error)
}

// Count counts the keys in [start, end) in r as Counter.Count does: in one
// call when r is a [Counter], else by scanning them.
func Count(r Reader, start, end []byte, limit int64) (int64, error) {
	if c, ok := r.(Counter); ok {
		return c.Count(start, end, limit)
	}
	it := r.Scan(start, end, false)
	var n int64
	for (limit < 0 || n <= limit) && it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	return n, nil
}

// nonNilValue returns v, or an empty slice for nil: a present value, told
// apart from an absent one in GetBatch's result.
func nonNilValue(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

// Iterator walks a key range. Use it as:
//
//	it := r.Scan(start, end, false)
//	defer it.Close()
//	for it.Next() {
//		use(it.Key(), it.Value())
//	}
//	if err := it.Err(); err != nil { ... }
type Iterator interface {
	// Next advances to the next entry and reports whether there is one.
	Next() bool
	// Key returns the current key; valid until the next call to Next.
	Key() []byte
	// Value returns the current value; valid until the next call to Next.
	Value() []byte
	// Err returns the first error the iterator met, if any.
	Err() error
	// Close releases the iterator and returns Err.
	Close() error
}

// PrefixEnd returns the smallest key greater than every key with the given prefix,
// or nil when no such key exists (the prefix is all 0xff bytes).
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
