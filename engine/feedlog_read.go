package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/changefeed"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/ru"
	"github.com/lethe-db/lethe/ttl"
)

// Reading the all versions and deletes feed: the log's records merged, in
// order key order, with the expiries synthesised from the expiry indexes.
// Within one TTL epoch of default n, the T index (documents without own ttl,
// by _ts then sequence number) lists the documents expiring at _ts + n in
// the order of their expiry keys (instant, sequence number), and the X index
// (own ttl, by _ts + ttl) likewise; so each index, for each epoch whose span
// meets the range read, is a stream in key order, and a page reads about a
// page of each. An epoch that began inside the range also expires at its
// start every document it dooms at once (a defaultTtl lowered, TTL turned
// on): those are found by scanning the indexes below that instant, and
// sorted, once per page that reaches it. changefeed.Merge pages through
// the streams; this file opens them over the engine's structures.

// avRead is one all-versions read: its snapshot, scope and range.
type avRead struct {
	r               kv.Reader
	s               *scope
	after, w        []byte // the range (after, w], as encoded keys
	afterKey, wKey  changefeed.Key
	from            int64 // the log's first second
	examined, bytes int
}

// logStream reads the log's records in the range.
type logStream struct {
	rd   *avRead
	it   kv.Iterator
	item *changefeed.Item
}

func (st *logStream) Cur() *changefeed.Item { return st.item }
func (st *logStream) Close() error          { return st.it.Close() }

func (st *logStream) Next() error {
	st.item = nil
	if !st.it.Next() {
		return st.it.Err()
	}
	suffix, rec, err := decodeLogValue(st.it.Value())
	if err != nil {
		return err
	}
	st.rd.examined++
	st.rd.bytes += len(st.it.Value())
	// The record's byte fields alias the iterator's value: copy them.
	st.item = &changefeed.Item{Key: bytes.Clone(st.it.Key()[9:]), Suffix: bytes.Clone(suffix), Rec: rec}
	st.item.Rec.Current, st.item.Rec.Previous = bytes.Clone(rec.Current), bytes.Clone(rec.Previous)
	if rec.CurrentIsLive {
		// The version is the document's live one: its body is there.
		live, err := lookup(st.rd.r, st.rd.s.rid, suffix)
		if err != nil {
			return err
		}
		if live == nil || live.lsn != rec.LSN {
			return fmt.Errorf("change feed record %x: version %d of document %x is not stored: %w", st.it.Key(), rec.LSN, suffix, errCorruptRecord)
		}
		st.item.Rec.Current, st.item.Rec.CurrentIsLive = live.json, false // the lookup's own copy
		st.rd.bytes += len(live.json)
	}
	return nil
}

// indexStream synthesises the expiries that one expiry index holds for one
// epoch: the entries whose instant plus shift (the epoch's default for T,
// 0 for X) falls in [lo, hi].
type indexStream struct {
	rd    *avRead
	shift int64
	it    kv.Iterator
	item  *changefeed.Item
}

func newIndexStream(rd *avRead, pfx byte, shift, lo, hi int64) *indexStream {
	// Start after the position: past its sequence number when it is an
	// expiry's, past its whole second's expiries when it is a write's.
	startAt, startSeq := lo, uint64(0)
	if a := rd.afterKey; a.Second >= lo {
		startAt = a.Second
		switch {
		case !a.IsExpiry():
			startAt++
		case len(a.Doc) == 8:
			if q := binary.BigEndian.Uint64(a.Doc); q == math.MaxUint64 {
				startAt++
			} else {
				startSeq = q + 1
			}
		}
	}
	rid := rd.s.rid
	start := tsKey(pfx, rid, startAt-shift, startSeq)
	end := tsBound(pfx, rid, hi-shift+1)
	return &indexStream{rd: rd, shift: shift, it: rd.r.Scan(start, end, false)}
}

func (st *indexStream) Cur() *changefeed.Item { return st.item }
func (st *indexStream) Close() error          { return st.it.Close() }

func (st *indexStream) Next() error {
	st.item = nil
	for st.it.Next() {
		k := st.it.Key()
		if len(k) != 1+8+8+8 {
			return errCorruptRecord
		}
		at := decodeInt64(k[9:17]) + st.shift
		if bytes.Compare(changefeed.ExpiryOf(at, decodeSeq(k)).Append(nil), st.rd.w) > 0 {
			return nil // past the range's end: the index is in key order
		}
		item, err := st.rd.synthesise(k, st.it.Value(), at)
		if err != nil || item != nil {
			st.item = item
			return err
		}
	}
	return st.it.Err()
}

// atOnceStream gathers the documents that the epoch beginning at start
// expired at that instant, all at once, from both expiry indexes below it.
func atOnceStream(rd *avRead, start int64, p ttl.Policy) (*changefeed.SliceStream, error) {
	var items []*changefeed.Item
	scan := func(pfx byte, shift int64) error {
		it := rd.r.Scan(collKey(pfx, rd.s.rid), tsBound(pfx, rd.s.rid, start-shift), false)
		defer it.Close()
		for it.Next() {
			item, err := rd.synthesise(it.Key(), it.Value(), start)
			if err != nil {
				return err
			}
			if item != nil {
				items = append(items, item)
			}
		}
		return it.Close()
	}
	if err := scan(pfxByExpiry, 0); err != nil {
		return nil, err
	}
	if p.Default > 0 {
		if err := scan(pfxByTS, p.Default); err != nil {
			return nil, err
		}
	}
	return changefeed.NewSliceStream(items), nil
}

// synthesise returns the expiry record of the version an expiry index entry
// (key k, value v) belongs to, if that version expires at instant at and the
// record falls in the read's range; nil otherwise.
func (rd *avRead) synthesise(k, v []byte, at int64) (*changefeed.Item, error) {
	seq := decodeSeq(k)
	key := changefeed.ExpiryOf(at, seq).Append(nil)
	if bytes.Compare(key, rd.after) <= 0 || bytes.Compare(key, rd.w) > 0 {
		return nil, nil
	}
	rd.examined++
	suffix, _, _, err := decodeOrderValue(v, nil)
	if err != nil {
		return nil, err
	}
	dead, err := lookup(rd.r, rd.s.rid, suffix)
	if err != nil || dead == nil || dead.seq != seq {
		return nil, err
	}
	rd.bytes += len(dead.json)
	ek, rec, ok := rd.s.expiryRecord(suffix, dead, rd.from)
	if !ok || ek.Second != at {
		return nil, nil // it expires at another instant, or never
	}
	return &changefeed.Item{Key: key, Suffix: bytes.Clone(suffix), Rec: rec}, nil
}

// readAllVersions reads one page of the all versions and deletes feed into
// page, up to the durable watermark.
func (s *scope) readAllVersions(r kv.Reader, opts ChangeFeedOptions, durable changefeed.Key, page *ChangeFeedPage) error {
	if !s.logging() {
		return lethe.Errorf(lethe.CodeBadRequest, "The all versions and deletes change feed needs a change feed policy: container '%s' has no changeFeedPolicy with a retentionDuration above 0. Set one (JavaScript SDK: ChangeFeedPolicy) or start the server with --change-feed-retention.", truncate(s.c.ID, 100))
	}
	from, err := s.feedFrom(r)
	if err != nil {
		return err
	}
	// Serve whole seconds only: an expiry at the current second is not final
	// until the second is over (a defaultTtl lowered later in it expires
	// documents at it), so a position inside it could step over one.
	first := changefeed.SecondStart(from)
	w := durable
	if c := changefeed.SecondStart(s.now); w.Compare(c) > 0 {
		w = c
	}
	if w.Compare(first) < 0 {
		w = first
	}
	tooOld := func() error {
		return lethe.Errorf(lethe.CodeBadRequest, "The change feed position is older than the retained changes of container '%s' (changeFeedPolicy.retentionDuration %d minutes): changes before %s are no longer kept. Start again from now.",
			truncate(s.c.ID, 100), s.c.FeedRetention, time.Unix(from, 0).UTC().Format(time.RFC3339))
	}
	var after changefeed.Key
	switch {
	case opts.Continuation != "":
		k, err := parseFeedPosition(opts.Continuation)
		if err != nil {
			return err
		}
		if k.Compare(first) < 0 {
			return tooOld()
		}
		after = k
	case opts.Start == FromNow:
		after = w
	case opts.Start == FromTime:
		after = changefeed.SecondStart(opts.Since.Unix())
		if after.Compare(first) < 0 {
			return tooOld()
		}
	default:
		after = first
	}
	filter, ranges, err := s.filter(opts.PK, false, opts.Scope)
	if err != nil {
		return err
	}
	page.RangeIDs = ranges
	rd := &avRead{r: r, s: s, after: after.Append(nil), w: w.Append(nil), afterKey: after, wKey: w, from: from}
	if after.Compare(w) >= 0 {
		page.ETag = after.Token()
		page.Charge = ru.Feed(0, 0)
		return nil
	}
	streams, err := rd.streams()
	defer func() {
		for _, st := range streams {
			st.Close()
		}
	}()
	if err != nil {
		return err
	}
	emit := func(item *changefeed.Item) int {
		if item.Rec.Op == changefeed.OpDelete {
			item.Rec.ID, item.Rec.PartitionKey = s.identity(item.Suffix)
		}
		doc := item.Rec.AppendWire(nil)
		page.Docs = append(page.Docs, doc)
		return len(doc)
	}
	m, err := changefeed.Merge(streams, rd.after, filter.match, pageLimit(opts.MaxItems), maxPageBytes, emit)
	if err != nil {
		return err
	}
	for _, st := range streams {
		if err := st.Close(); err != nil {
			return err
		}
	}
	streams = nil
	last := m.Last
	if !m.Full {
		last = rd.w
	}
	k, err := changefeed.DecodeKey(last)
	if err != nil {
		return err
	}
	page.ETag = k.Token()
	page.Charge = ru.Feed(rd.examined, rd.bytes)
	return nil
}

// streams opens the read's streams, each positioned on its first record:
// the log, and the expiry indexes for each epoch that meets the range.
func (rd *avRead) streams() ([]changefeed.Stream, error) {
	rid := rd.s.rid
	logStart := append(feedLogKey(rid, rd.afterKey), 0)
	logEnd := append(feedLogKey(rid, rd.wKey), 0)
	streams := []changefeed.Stream{&logStream{rd: rd, it: rd.r.Scan(logStart, logEnd, false)}}
	if h := rd.s.c.TTLHistory; h != nil {
		lo, hi := max(rd.afterKey.Second, rd.from), rd.wKey.Second
		for i, ep := range h.Epochs {
			if !ep.Policy.On {
				continue
			}
			end := int64(math.MaxInt64)
			if i+1 < len(h.Epochs) {
				end = h.Epochs[i+1].Start
			}
			a, b := max(lo, ep.Start), min(hi, end)
			if a > b {
				continue
			}
			streams = append(streams, newIndexStream(rd, pfxByExpiry, 0, a, b))
			if ep.Policy.Default > 0 {
				streams = append(streams, newIndexStream(rd, pfxByTS, ep.Policy.Default, a, b))
			}
			if ep.Start >= lo && ep.Start <= hi {
				st, err := atOnceStream(rd, ep.Start, ep.Policy)
				if err != nil {
					return streams, err
				}
				streams = append(streams, st)
			}
		}
	}
	for _, st := range streams {
		if err := st.Next(); err != nil {
			return streams, err
		}
	}
	return streams, nil
}
