package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/changefeed"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/ttl"
)

// The change feed's all versions and deletes mode (docs/changefeed.md). A
// container whose changeFeedPolicy retains changes keeps a log, L <collRid>
// <order key>, with one record per create, replace and delete, written in
// the change's own transaction. TTL expiries are not logged when they
// happen, since nothing happens then: a reader synthesises them from the
// expiry indexes (T, X), and whatever removes an expired version (the purge,
// a write over it, a unique key taken over) writes its record into the log
// at the same key, in the same transaction. A reader's snapshot therefore
// holds each expiry exactly once, in the indexes or in the log.
//
// W <collRid> holds the first second of the log's complete window: every
// change from that second on is in the log or synthesised from the indexes,
// and a position before it is refused.

// maxFeedRetention caps changeFeedPolicy.retentionDuration, in minutes (one
// year; Cosmos DB allows less).
const maxFeedRetention = 366 * 24 * 60

// feedPolicy reads a container body's changeFeedPolicy: the retention in
// minutes and whether the body set one.
func feedPolicy(o *jsonv.Object) (minutes int64, set bool, err error) {
	v, ok := o.Get("changeFeedPolicy")
	if !ok || v == nil {
		return 0, false, nil
	}
	p, ok := v.(*jsonv.Object)
	if !ok {
		return 0, false, lethe.Errorf(lethe.CodeBadRequest, "The changeFeedPolicy must be an object.")
	}
	d, ok := p.Get("retentionDuration")
	if !ok || d == nil {
		return 0, true, nil
	}
	n, isNum := d.(jsonv.Number)
	f := n.Float64()
	if !isNum || f != math.Trunc(f) || f < 0 || f > maxFeedRetention {
		return 0, false, lethe.Errorf(lethe.CodeBadRequest, "The changeFeedPolicy's retentionDuration %s is invalid: it must be a whole number of minutes from 0 to %d.", truncate(string(jsonv.Marshal(d)), 50), maxFeedRetention)
	}
	return int64(f), true, nil
}

// setFeedPolicy writes the retention into the body as Cosmos DB echoes it.
func setFeedPolicy(o *jsonv.Object, minutes int64) {
	p := jsonv.NewObject(1)
	p.Set("retentionDuration", jsonv.Number(strconv.FormatInt(minutes, 10)))
	o.Set("changeFeedPolicy", p)
}

// applyFeedPolicy sets rec's retention from the body: the body's own, else
// (on create) the server default or (on replace) the container's current
// one, so that a client that does not know the property (the Go SDK) cannot
// switch the log off by replacing the container. It starts, keeps or drops
// the log accordingly, inside tx.
func (e *Engine) applyFeedPolicy(tx kv.Tx, o *jsonv.Object, rec, old *collRecord, now int64) error {
	minutes, set, err := feedPolicy(o)
	if err != nil {
		return err
	}
	switch {
	case !set && old == nil:
		minutes = int64(e.opts.ChangeFeedRetention.Minutes())
	case !set:
		minutes = old.FeedRetention
	}
	if minutes > 0 || set {
		setFeedPolicy(o, minutes)
	}
	rec.FeedRetention = minutes
	rid := rec.rid()
	switch {
	case minutes == 0:
		rec.TTLHistory = nil
		if old != nil && old.FeedRetention > 0 {
			// The log goes: a later policy starts a new one.
			p := collKey(pfxFeedLog, rid)
			if err := tx.DeleteRange(p, kv.PrefixEnd(p)); err != nil {
				return err
			}
			return tx.Delete(collKey(pfxFeedFrom, rid))
		}
		return nil
	case old == nil:
		// A new container: its log is complete from its first second.
		h := ttl.Begin(rec.policy(), ttl.Initial, now)
		rec.TTLHistory = &h
		return tx.Put(collKey(pfxFeedFrom, rid), appendInt64(nil, now))
	case old.FeedRetention == 0:
		// The log starts now. Writes of this second before it are not in
		// it, so its window starts with the next second; the history starts
		// here, everything before summarised by the watermarks.
		h := ttl.Begin(rec.policy(), old.Watermarks.Close(old.policy(), now), now)
		rec.TTLHistory = &h
		return tx.Put(collKey(pfxFeedFrom, rid), appendInt64(nil, now+1))
	}
	h := *old.TTLHistory
	if rec.policy() != old.policy() {
		h = h.Change(rec.policy(), now)
	}
	from, err := feedLogFrom(tx, rid)
	if err != nil {
		return err
	}
	h = h.Forget(from)
	rec.TTLHistory = &h
	return nil
}

// feedLogFrom returns the first second of a container's complete log.
func feedLogFrom(r kv.Reader, rid [8]byte) (int64, error) {
	v, err := r.Get(collKey(pfxFeedFrom, rid))
	if errors.Is(err, kv.ErrNotFound) {
		return math.MaxInt64, nil // no log
	}
	if err != nil {
		return 0, fmt.Errorf("read change feed window: %w", err)
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("change feed window: %w", errCorruptRecord)
	}
	return decodeInt64(v), nil
}

// feedLogKey returns the log key of the change at order key k.
func feedLogKey(coll [8]byte, k changefeed.Key) []byte {
	return k.Append(collKey(pfxFeedLog, coll))
}

// logging reports whether the scope's container keeps the all-versions log.
func (s *scope) logging() bool { return s.c.FeedRetention > 0 }

// identity returns the id and the metadata.partitionKey object of the
// document at suffix: each partition key path, without its leading slash, to
// its value (a path the document lacks is left out).
func (s *scope) identity(suffix []byte) (string, []byte) {
	vals, ok := decodePKTuple(suffix, len(s.c.PKPaths)+1)
	if !ok {
		return "", nil
	}
	id, _ := vals[len(vals)-1].(string)
	o := jsonv.NewObject(len(s.c.PKPaths))
	for i, path := range s.c.PKPaths {
		name := strings.TrimPrefix(path, "/")
		switch v := vals[i].(type) {
		case lethe.Undefined:
		case float64:
			o.Set(name, jsonv.NumberFromFloat(v))
		default:
			o.Set(name, v)
		}
	}
	return id, jsonv.Marshal(o)
}

// logWrite logs rec, just written: a create or a replace (rec.logOp).
// When rec.logRefers (the version outlives its record: outlivesRecord), the
// record refers to the document for its body (CurrentIsLive): the log keeps
// no second copy of a version that lives, and logBody writes one if the
// version goes while its record is kept.
func (s *scope) logWrite(tx kv.Tx, suffix []byte, rec *docRecord) error {
	r := writeRecord(rec)
	if rec.logRefers {
		r.CurrentIsLive, r.Current = true, nil
	}
	return tx.Put(feedLogKey(s.rid, rec.feed), encodeLogValue(suffix, &r))
}

// writeRecord returns the log record of the write of rec (rec.logOp is
// known) with its body: what logWrite writes for a version whose record
// does not refer to it, and what bodyEntry writes once a version whose
// record does is gone.
func writeRecord(rec *docRecord) changefeed.Record {
	return changefeed.Record{Op: rec.logOp, LSN: rec.lsn, PreviousLSN: rec.logPrev, Second: rec.feed.Second, Current: rec.json}
}

// outlivesRecord reports whether version rec, as the container's time to
// live stands now, expires no sooner than the log drops its record (the
// retention after its write), or never. A version that expires sooner gets
// its body copied into its record at once: the purge would have to copy it
// when it removes the version, and the purge's writes wait whenever the
// store's flushes and compactions fall behind, where a user's write does
// not (BENCHMARKS.md, nineteenth session). A later change of the policy
// only moves the copy from one write to the other.
func (s *scope) outlivesRecord(rec *docRecord) bool {
	h := s.c.TTLHistory
	if h == nil {
		return true
	}
	at, expires := h.Expiry(rec.ts, rec.own)
	return !expires || at-rec.ts >= s.c.FeedRetention*60
}

// A log entry's value is the document's primary key suffix, for scoping a
// read by partition key or range and naming a deleted document, then its
// record (changefeed.Record, without the id and partition key, which the
// suffix holds).

func encodeLogValue(suffix []byte, r *changefeed.Record) []byte {
	b := binary.AppendUvarint(make([]byte, 0, 64+len(suffix)+len(r.Current)+len(r.Previous)), uint64(len(suffix)))
	b = append(b, suffix...)
	return r.Append(b)
}

func decodeLogValue(v []byte) ([]byte, changefeed.Record, error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)-w) {
		return nil, changefeed.Record{}, fmt.Errorf("change feed log: %w", errCorruptRecord)
	}
	r, err := changefeed.DecodeRecord(v[w+int(n):])
	if err != nil {
		return nil, changefeed.Record{}, fmt.Errorf("change feed log: %w", err)
	}
	return v[w : w+int(n)], r, nil
}

// logDelete logs the deletion of live, the version at suffix, as a change
// of its own with a new LSN, carrying the deleted version as previous.
func (s *scope) logDelete(e *Engine, tx kv.Tx, suffix []byte, live *docRecord) error {
	lsn := e.nextLSN()
	s.lsns = append(s.lsns, lsn)
	k := e.feedKey(s, lsn)
	r := changefeed.Record{Op: changefeed.OpDelete, LSN: lsn, PreviousLSN: live.lsn, Second: k.Second,
		Previous: live.json}
	return tx.Put(feedLogKey(s.rid, k), encodeLogValue(suffix, &r))
}

// expiryRecord returns the expiry record of dead, the expired version at
// suffix, and its order key; ok is false when the container's history does
// not place it at or after from (it expired before the log's window).
//
// An expiry's LSN is its version's plus one: every write takes two numbers
// (see nextLSN), so that one is never anyone else's, and a synthesised
// record and the one the purge later writes are the same.
func (s *scope) expiryRecord(suffix []byte, dead *docRecord, from int64) (changefeed.Key, changefeed.Record, bool) {
	h := s.c.TTLHistory
	if h == nil {
		return changefeed.Key{}, changefeed.Record{}, false
	}
	at, ok := h.Expiry(dead.ts, dead.own)
	if !ok || at < from || at > s.now {
		return changefeed.Key{}, changefeed.Record{}, false
	}
	return changefeed.ExpiryOf(at, dead.seq), changefeed.Record{Op: changefeed.OpDelete, TTLExpired: true,
		LSN: dead.lsn + 1, PreviousLSN: dead.lsn, Second: at, Previous: dead.json}, true
}

// logExpiry writes the expiry record of dead, the expired version at suffix
// that the transaction removes, into the log: until now readers synthesised
// it from the expiry index entry that goes with the version.
func (s *scope) logExpiry(tx kv.Tx, suffix []byte, dead *docRecord) error {
	if !s.logging() {
		return nil
	}
	from, err := s.feedFrom(tx)
	if err != nil {
		return err
	}
	k, r, ok := s.expiryRecord(suffix, dead, from)
	if !ok {
		return nil
	}
	return tx.Put(feedLogKey(s.rid, k), encodeLogValue(suffix, &r))
}

// feedFrom returns the first second of the container's complete log
// (feedLogFrom), read once per transaction.
func (s *scope) feedFrom(r kv.Reader) (int64, error) {
	if !s.logFromSet {
		from, err := feedLogFrom(r, s.rid)
		if err != nil {
			return 0, err
		}
		s.logFrom, s.logFromSet = from, true
	}
	return s.logFrom, nil
}

// removeExpired removes dead, the expired version at suffix, logging its
// expiry.
func (s *scope) removeExpired(tx kv.Tx, suffix []byte, dead *docRecord) error {
	if err := s.logExpiry(tx, suffix, dead); err != nil {
		return err
	}
	return s.remove(tx, suffix, dead)
}

// logBody copies old's body into old's own log record, in the transaction
// that replaces or removes old, the version at suffix: until then the
// record took the body from the document (changefeed.Record.CurrentIsLive).
func (s *scope) logBody(tx kv.Tx, suffix []byte, old *docRecord) error {
	if !s.logging() || !old.logRefers {
		return nil
	}
	from, err := s.feedFrom(tx)
	if err != nil {
		return err
	}
	e, ok, err := s.bodyEntry(tx, suffix, old, from)
	if err != nil || !ok {
		return err
	}
	return tx.Put(e.key, e.value)
}

// bodyEntry returns what logBody writes: old's log record with old's body,
// given from, the first second of the complete log (feedFrom). ok is false
// when there is nothing to write: the record holds the body already
// (old.logRefers is false), or the container keeps no log, or the record is
// no longer in it (trimmed).
func (s *scope) bodyEntry(r kv.Reader, suffix []byte, old *docRecord, from int64) (e logEntry, ok bool, err error) {
	if !s.logging() || !old.logRefers || old.feed.Second < from {
		return logEntry{}, false, nil
	}
	k := feedLogKey(s.rid, old.feed)
	if old.logOp != 0 {
		// The record is in the log (from is its start, and the log loses
		// records only below it), and the version's header says what it
		// holds: no need to read it.
		rec := writeRecord(old)
		return logEntry{k, encodeLogValue(suffix, &rec)}, true, nil
	}
	v, err := r.Get(k)
	if errors.Is(err, kv.ErrNotFound) {
		return logEntry{}, false, nil
	}
	if err != nil {
		return logEntry{}, false, fmt.Errorf("read the change feed record of version %d: %w", old.lsn, err)
	}
	logged, rec, err := decodeLogValue(v)
	if err != nil {
		return logEntry{}, false, err
	}
	if !rec.CurrentIsLive || rec.LSN != old.lsn || !bytes.Equal(logged, suffix) {
		return logEntry{}, false, fmt.Errorf("change feed record %x is of version %d, want %d of %x: %w", k, rec.LSN, old.lsn, suffix, errCorruptRecord)
	}
	rec.CurrentIsLive, rec.Current = false, old.json
	return logEntry{k, encodeLogValue(suffix, &rec)}, true, nil
}

// decodeSeq returns the sequence number at the end of an index key.
func decodeSeq(k []byte) uint64 { return binary.BigEndian.Uint64(k[len(k)-8:]) }

// logEntry is a record to write into the log.
type logEntry struct{ key, value []byte }

// expiryRecords returns the log records that the removal of the expired
// documents at suffixes writes (the purge removes them): each one's expiry,
// and its own record with its body (bodyEntry). It reads everything before
// the caller writes anything; none when the container keeps no log.
func (s *scope) expiryRecords(r kv.Reader, suffixes iter.Seq[[]byte]) ([]logEntry, error) {
	if !s.logging() {
		return nil, nil
	}
	from, err := s.feedFrom(r)
	if err != nil {
		return nil, err
	}
	var out []logEntry
	for suffix := range suffixes {
		dead, err := lookup(r, s.rid, suffix)
		if err != nil {
			return nil, err
		}
		if dead == nil {
			continue
		}
		if k, rec, ok := s.expiryRecord(suffix, dead, from); ok {
			out = append(out, logEntry{feedLogKey(s.rid, k), encodeLogValue(suffix, &rec)})
		}
		body, ok, err := s.bodyEntry(r, suffix, dead, from)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, body)
		}
	}
	return out, nil
}

// trimStep is how far, in seconds, a log's window start must have fallen
// behind its retention before a trim moves it: trims are range deletions,
// one per container and step.
const trimStep = 60

// TrimChangeFeeds drops from every container's all-versions log the changes
// older than its retention, with one range deletion each, and returns how
// many logs it trimmed. The purger runs it in the background; it is never
// charged to users.
func (e *Engine) TrimChangeFeeds(ctx context.Context) (int, error) {
	now, err := e.now(ctx)
	if err != nil {
		return 0, err
	}
	colls, err := allContainers(ctx, e.store)
	if err != nil {
		return 0, fmt.Errorf("list containers to trim: %w", err)
	}
	trimmed := 0
	for _, c := range colls {
		if c.FeedRetention <= 0 {
			continue
		}
		// Most passes have nothing to trim: find out without a transaction.
		var from int64
		if err := e.store.View(ctx, func(r kv.Reader) error {
			var err error
			from, err = feedLogFrom(r, c.rid())
			return err
		}); err != nil {
			return trimmed, fmt.Errorf("read the change feed window of %s/%s: %w", c.DB, c.ID, err)
		}
		if now-c.FeedRetention*60-from < trimStep {
			continue
		}
		done := false
		err := e.store.UpdateNoSync(ctx, func(tx kv.Tx) error {
			done = false
			_, cur, err := getContainer(tx, c.DB, c.ID)
			if isNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			if cur.RID != c.RID || cur.FeedRetention <= 0 {
				return nil // dropped, re-created or switched off meanwhile
			}
			rid := cur.rid()
			from, err := feedLogFrom(tx, rid)
			if err != nil {
				return err
			}
			cut := now - cur.FeedRetention*60
			if cut-from < trimStep {
				return nil
			}
			if err := tx.DeleteRange(collKey(pfxFeedLog, rid), feedLogKey(rid, changefeed.SecondStart(cut))); err != nil {
				return err
			}
			done = true
			return tx.Put(collKey(pfxFeedFrom, rid), appendInt64(nil, cut))
		})
		if err != nil {
			return trimmed, fmt.Errorf("trim the change feed of %s/%s: %w", c.DB, c.ID, err)
		}
		if done {
			trimmed++
		}
	}
	return trimmed, nil
}
