package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"

	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
)

// Re-indexing after an indexing policy change. The container record holds
// the build's cursor (IndexBuild, the next sequence number), so the work is
// restart-safe and needs no state outside the store. While it runs, writes
// already index under the new policy and removals read each version's own
// manifest, so documents are never half-indexed in a way a reader could see;
// queries scan instead of using the index until the build completes.

// BuildIndexes finishes every pending re-index synchronously and returns how
// many documents it re-indexed. The background loop does the same work in
// bounded batches.
func (e *Engine) BuildIndexes(ctx context.Context) (int, error) {
	total := 0
	for {
		n, pending, err := e.buildIndexBatch(ctx, e.opts.PurgeBatch)
		total += n
		if err != nil || !pending {
			return total, err
		}
	}
}

// buildIndexBatch re-indexes up to limit documents of the first container
// with a build pending and reports whether any build remains.
func (e *Engine) buildIndexBatch(ctx context.Context, limit int) (int, bool, error) {
	colls, err := allContainers(ctx, e.store)
	var target *collRecord
	for _, c := range colls {
		if c.IndexBuild != nil {
			target = c
			break
		}
	}
	if err != nil || target == nil {
		return 0, false, err
	}
	now, err := e.now(ctx)
	if err != nil {
		return 0, false, err
	}
	n := 0
	// No sync: a lost batch is redone from the cursor committed with it.
	err = e.store.UpdateNoSync(ctx, func(tx kv.Tx) error {
		n = 0
		db, shared, err := getContainer(tx, target.DB, target.ID)
		if err != nil {
			if isNotFound(err) {
				return nil // dropped meanwhile
			}
			return err
		}
		if shared.IndexBuild == nil || shared.RID != target.RID {
			return nil // finished or replaced meanwhile
		}
		cc := *shared // the record is shared: copy before moving the cursor
		c := &cc
		s := &scope{db: db, c: c, l: c.layout(), rid: c.rid(), pol: c.policy(), now: now}
		end := kv.PrefixEnd(collKey(pfxOrder, s.rid))
		if c.IndexBuildEnd != nil {
			end = orderKey(s.rid, *c.IndexBuildEnd+1)
		}
		it := tx.Scan(orderKey(s.rid, *c.IndexBuild), end, false)
		type item struct {
			seq    uint64
			suffix []byte
		}
		var items []item
		for len(items) < limit && it.Next() {
			k := it.Key()
			suffix, _, _, err := decodeOrderValue(it.Value(), nil)
			if err != nil {
				it.Close()
				return err
			}
			items = append(items, item{binary.BigEndian.Uint64(k[len(k)-8:]), append([]byte(nil), suffix...)})
		}
		more := it.Next()
		if err := it.Close(); err != nil {
			return err
		}
		for _, x := range items {
			rec, err := lookup(tx, s.rid, x.suffix)
			if err != nil {
				return err
			}
			if rec == nil || rec.seq != x.seq {
				continue
			}
			if err := s.reindex(tx, x.suffix, rec); err != nil {
				return err
			}
			n++
		}
		if more {
			next := items[len(items)-1].seq + 1
			c.IndexBuild = &next
		} else {
			c.IndexBuild, c.IndexBuildEnd = nil, nil
		}
		v, err := json.Marshal(c)
		if err != nil {
			return err
		}
		return tx.Put(containerKey(db.rid(), c.ID), v)
	})
	return n, true, err
}

// reindex replaces a stored version's index entries with those its current
// policy calls for, and rewrites its manifest.
func (s *scope) reindex(tx kv.Tx, suffix []byte, rec *docRecord) error {
	old, err := ownedKeys(tx, s.l, rec)
	if err != nil {
		return err
	}
	fixed := fixedKeys(s.l, rec)
	o, err := jsonv.ParseStoredObject(rec.json)
	if err != nil {
		return err
	}
	manifest, err := manifestFor(s.l, rec, o)
	if err != nil {
		return err
	}
	for _, k := range old[len(fixed):] {
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	for _, k := range manifest {
		if err := tx.Put(k, suffix); err != nil {
			return err
		}
	}
	return tx.Put(manifestHolder(fixed), encodeOrderValue(suffix, len(rec.json), manifest))
}
