package engine

import (
	"sync"

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

// scopeHints are the records each container had when a transaction last
// read them on a store that is not exclusive, where nothing else can be
// remembered of them (metaGuard): only to know which keys to read ahead.
type scopeHints struct {
	mu sync.RWMutex
	m  map[string]*cachedScope // by scopeKey; gen unused
}

// maxScopeHints bounds the hints; past it they start over.
const maxScopeHints = 4096

func newScopeHints() *scopeHints { return &scopeHints{m: map[string]*cachedScope{}} }

// get returns the container's hint, or nil.
func (h *scopeHints) get(dbID, collID string) *cachedScope {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.m[scopeKey(dbID, collID)]
}

// saw records the records a transaction read. They come from the decode
// cache, so records that did not change are the same pointers.
func (h *scopeHints) saw(dbID, collID string, db *dbRecord, c *collRecord, l *layout) {
	key := scopeKey(dbID, collID)
	h.mu.RLock()
	old := h.m[key]
	h.mu.RUnlock()
	if old != nil && old.db == db && old.c == c {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.m) >= maxScopeHints {
		clear(h.m)
	}
	h.m[key] = &cachedScope{db: db, c: c, l: l}
}

// readAhead reads, in r, the records of container collID of dbID and the
// document at doc (nil: none) in one round trip, when r reads ahead and the
// container was seen before. A read-ahead error is the transaction's: the
// store reports it again on the next read.
func (e *Engine) readAhead(r kv.Reader, dbID, collID string, doc *DocRef) error {
	if _, ok := r.(kv.Prefetcher); !ok {
		return nil
	}
	h := e.hints.get(dbID, collID)
	if h == nil {
		return nil
	}
	keys := [][]byte{databaseKey(dbID), containerKey(h.db.rid(), collID)}
	if doc != nil && doc.ID != "" && doc.PK != nil {
		if pk, err := normalizePK(doc.PK, h.c.PKPaths); err == nil {
			keys = append(keys, docKey(h.l.rid, primarySuffix(pk, doc.ID)))
		}
	}
	return kv.Prefetch(r, keys)
}
