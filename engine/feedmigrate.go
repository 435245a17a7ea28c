package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/lethe-db/lethe/changefeed"
	"github.com/lethe-db/lethe/kv"
)

// Documents written before the change feed existed (record format 1) have
// no feed entry. At Open, once per store, they get one at the order key of
// their last write (its _ts and LSN), so that a change feed read from the
// beginning finds them; keyFeedMigrated records that it was done, and a new
// store records it at once.

// keyFeedMigrated is set once every document has a change feed entry.
var keyFeedMigrated = []byte("Mfeedmigrated")

// feedMigrateBatch is how many documents one migration transaction rewrites.
const feedMigrateBatch = 256

// migrateFeed gives every format-1 document its change feed entry, unless
// that was done before.
func (e *Engine) migrateFeed(ctx context.Context) error {
	done := false
	err := e.store.View(ctx, func(r kv.Reader) error {
		_, err := r.Get(keyFeedMigrated)
		done = err == nil
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		return err
	})
	if err != nil || done {
		return err
	}
	colls, err := allContainers(ctx, e.store)
	if err != nil {
		return err
	}
	migrated := 0
	for _, c := range colls {
		l := c.layout()
		var after []byte // the last document key rewritten
		for {
			n, last, err := e.migrateFeedBatch(ctx, l, after)
			if err != nil {
				return fmt.Errorf("container %s/%s: %w", c.DB, c.ID, err)
			}
			migrated += n
			if last == nil {
				break
			}
			after = last
		}
	}
	if migrated > 0 {
		e.log.Info("gave documents written before the change feed existed their place in it", "documents", migrated)
	}
	return e.store.Update(ctx, func(tx kv.Tx) error { return tx.Put(keyFeedMigrated, []byte{1}) })
}

// migrateFeedBatch rewrites up to feedMigrateBatch format-1 documents of the
// container after document key after; it returns how many it rewrote and
// the last key it examined, nil when the container is done.
func (e *Engine) migrateFeedBatch(ctx context.Context, l *layout, after []byte) (n int, last []byte, err error) {
	err = e.store.Update(ctx, func(tx kv.Tx) error {
		n, last = 0, nil
		p := collKey(pfxDoc, l.rid)
		start := p
		if after != nil {
			start = kv.PrefixEnd(after)
		}
		it := tx.Scan(start, kv.PrefixEnd(p), false)
		type old struct {
			key []byte
			rec docRecord
		}
		var batch []old
		for it.Next() && len(batch) < feedMigrateBatch {
			last = append([]byte(nil), it.Key()...)
			rec, err := decodeDoc(it.Value())
			if err != nil {
				it.Close()
				return err
			}
			if !rec.hasFeed() {
				rec.json = append([]byte(nil), rec.json...)
				batch = append(batch, old{last, rec})
			}
		}
		if err := it.Close(); err != nil {
			return err
		}
		var mark changefeed.Key
		for _, d := range batch {
			rec := d.rec
			rec.feed = changefeed.Key{Second: rec.ts, Writer: changefeed.EmbeddedWriter, Seq: rec.lsn}
			suffix := d.key[len(p):]
			holder := manifestHolder(fixedKeys(l, &rec))
			v, err := tx.Get(holder)
			if err != nil {
				return fmt.Errorf("manifest of %x: %w", suffix, err)
			}
			s, size, manifest, err := decodeOrderValue(v, &l.rid)
			if err != nil {
				return err
			}
			fk := feedKey(l.rid, rec.feed)
			if err := tx.Put(holder, encodeOrderValue(s, size, append(manifest, fk))); err != nil {
				return err
			}
			if err := tx.Put(fk, suffix); err != nil {
				return err
			}
			if err := tx.Put(d.key, rec.encode()); err != nil {
				return err
			}
			if rec.feed.Compare(mark) > 0 {
				mark = rec.feed
			}
			n++
		}
		if n > 0 && mark.Second >= e.feedCeiling.Load() {
			// Later writes must sort after these.
			e.setFeedCeiling(mark.Second + 1)
			return tx.Put(keyFeedMark, appendInt64(nil, mark.Second+1))
		}
		return nil
	})
	return n, last, err
}
