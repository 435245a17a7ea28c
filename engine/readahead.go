package engine

import (
	"context"
	"errors"

	"github.com/lethe-db/lethe/kv"
)

// Reading ahead, on stores that read keys one round trip at a time
// (kv.Prefetcher: PostgreSQL). A request's transaction reads the database
// record, then the container record, whose key holds the database's _rid,
// then the document, whose key holds the container's: three round trips one
// after the other. The keys are those of the last transaction on the same
// container, nearly always; so the transaction reads all three ahead, in
// one round trip, at the keys the container had when last seen, and then
// reads them as always. A guess that no longer holds (the database or the
// container deleted and created again) costs only the reads it did not
// save, since whatever is read ahead is read in the transaction's own
// snapshot: the records are checked as they always are, never trusted
// from the hint.

// hint is what the engine last read of a container's records from a store
// that is not exclusive, where nothing else can be remembered of them
// (metaGuard): only to know which keys to read ahead.
type hint struct {
	db *dbRecord
	c  *collRecord
	l  *layout
}

// sawRecords records, as the container's hint, the records a transaction
// read. They come from the decode cache, so records that did not change are
// the same pointers, and the hint is not written again.
func (e *Engine) sawRecords(dbID, collID string, db *dbRecord, c *collRecord, l *layout) {
	key := scopeKey(dbID, collID)
	if old, ok := e.hints.get(key); ok && old.db == db && old.c == c {
		return
	}
	e.hints.put(key, hint{db: db, c: c, l: l})
}

// readAhead reads, in p, the records of container collID of dbID and the
// document at doc (nil: none) in one round trip, when the container was
// seen before. A read-ahead error is the transaction's: the
// store reports it again on the next read.
func (e *Engine) readAhead(p kv.Prefetcher, dbID, collID string, doc *DocRef) error {
	keys := e.aheadKeys(dbID, collID, doc)
	if keys == nil {
		return nil
	}
	return p.Prefetch(keys)
}

// aheadKeys returns the keys of the records of container collID of dbID and
// of the document at doc (nil: none), as the container had them when last
// seen; nil when it was not seen.
func (e *Engine) aheadKeys(dbID, collID string, doc *DocRef) [][]byte {
	h, ok := e.hints.get(scopeKey(dbID, collID))
	if !ok {
		return nil
	}
	keys := [][]byte{databaseKey(dbID), containerKey(h.db.rid(), collID)}
	if doc != nil && doc.ID != "" && doc.PK != nil {
		if pk, err := normalizePK(doc.PK, h.c.PKPaths); err == nil {
			keys = append(keys, docKey(h.l.rid, primarySuffix(pk, doc.ID)))
		}
	}
	return keys
}

// viewFetched runs fn, a read of the document at doc, over the container's
// records and that document read in one statement, when the store can
// (kv.KeyViewer: one round trip, where a transaction costs two) and the
// container was seen before. It reports whether fn ran to the end: not when
// fn, or the scope, needed a key that was not read (the guess was wrong:
// the container was created again elsewhere), and the caller then runs its
// ordinary view. What fn sees is one snapshot, as in a View.
func (e *Engine) viewFetched(ctx context.Context, dbID, collID string, doc DocRef, fn func(r kv.Reader, s *scope) error) (bool, error) {
	kvr, ok := e.guard.Store.(kv.KeyViewer)
	if !ok {
		return false, nil
	}
	keys := e.aheadKeys(dbID, collID, &doc)
	if len(keys) < 3 {
		return false, nil
	}
	if err := e.lease.check(); err != nil {
		return true, err
	}
	now, err := e.now(ctx)
	if err != nil {
		return true, err
	}
	vals, err := kvr.ViewKeys(ctx, keys)
	if err != nil {
		return true, err
	}
	r := fetchedKeys{}
	for i, k := range keys {
		r[string(k)] = vals[i]
	}
	s, err := e.scopeOf(r, dbID, collID, nil, now)
	if err == nil {
		err = fn(r, s)
	}
	if errors.Is(err, errNotFetched) {
		return false, nil
	}
	return true, err
}

// errNotFetched is what fetchedKeys answers for a key it was not given.
var errNotFetched = errors.New("engine: the key was not read ahead")

// fetchedKeys is a kv.Reader of the values of a few keys read in one snapshot
// (nil: absent); any other key, or a scan, is errNotFetched.
type fetchedKeys map[string][]byte

// Get implements kv.Reader.
func (f fetchedKeys) Get(key []byte) ([]byte, error) {
	v, ok := f[string(key)]
	switch {
	case !ok:
		return nil, errNotFetched
	case v == nil:
		return nil, kv.ErrNotFound
	}
	return v, nil
}

// Scan implements kv.Reader.
func (f fetchedKeys) Scan(start, end []byte, reverse bool) kv.Iterator {
	return failedIterator{errNotFetched}
}

// failedIterator is an iterator that met err before its first entry.
type failedIterator struct{ err error }

func (it failedIterator) Next() bool    { return false }
func (it failedIterator) Key() []byte   { return nil }
func (it failedIterator) Value() []byte { return nil }
func (it failedIterator) Err() error    { return it.err }
func (it failedIterator) Close() error  { return it.err }
