package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/changefeed"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/ru"
)

// The change feed, latest-version mode (docs/changefeed.md). Every write
// puts its document under F <collRid> <order key>, listed in the version's
// manifest so that whatever removes the version (a replace, a delete, the
// purge) removes the entry; a read scans F from a position up to the durable
// watermark and serves each document's current version if it is still live.

// txSecond returns the second a writing transaction that took its instant
// at now runs at: now, raised to the last second a transaction or an
// all-versions read used (see allVersionsWatermark). It makes the seconds,
// and so the order keys, of document transactions grow in the order they
// call it, which under a writer lock (kv.Exclusive) is commit order; and the
// transaction decides liveness, stamps _ts and places its changes at that
// one second, so that a document's expiry (at _ts + ttl) never sorts before
// the write that set it. The result is never ahead of the clock: every
// second it returns was a clock reading.
//
// It also puts w under way, on its first call (see feedWrite): a
// transaction calls it before it gives out any order key, and on every
// attempt.
func (e *Engine) txSecond(now int64, w *feedWrite) int64 {
	e.feedMu.Lock()
	defer e.feedMu.Unlock()
	if !w.underWay {
		w.floor = changefeed.SecondStart(e.feedSecond.Load())
		if !w.expiries {
			w.floor.Writer, w.floor.Seq = changefeed.EmbeddedWriter, e.lsn.Load()
		}
		w.underWay = true
		e.underWay = append(e.underWay, w)
	}
	e.reserveSecond(now)
	return e.feedSecond.Load()
}

// reserveSecond makes later transactions run at second s or after (see
// txSecond). feedMu must be held.
func (e *Engine) reserveSecond(s int64) {
	if s > e.feedSecond.Load() {
		e.feedSecond.Store(s)
	}
}

// A feedWrite is a writing transaction as the change feed's watermarks see
// it. It is under way from its first txSecond until endWrite, which runs
// once it has returned and, if it committed, its keys are in durableFeed;
// every order key it gives out lies above its floor. Its seconds are at
// least the floor's, since feedSecond only grows, and a document write's
// LSNs are above the last one given out when the floor was taken; a TTL
// policy change places expiries at its second (expiries), so its floor is
// that second's start. With writers one at a time a floor is above every
// key already given out, and the watermarks are the durable one; with
// several (on a shared store, Options.Writers) a read never serves past a
// key that a transaction still under way may yet commit below it.
type feedWrite struct {
	expiries bool
	underWay bool
	floor    changefeed.Key
}

// endWrite takes w off the transactions under way, once it has returned
// and recorded its keys (feedDurable). Calling it for a write that never
// took a second does nothing.
func (e *Engine) endWrite(w *feedWrite) {
	if !w.underWay {
		return
	}
	e.feedMu.Lock()
	defer e.feedMu.Unlock()
	for i, u := range e.underWay {
		if u == w {
			last := len(e.underWay) - 1
			e.underWay[i], e.underWay[last] = e.underWay[last], nil
			e.underWay = e.underWay[:last]
			break
		}
	}
	w.underWay = false
}

// raiseSecond makes later transactions run at second s or after (see
// txSecond): s is another gateway's clock reading, a little ahead of this
// one's.
func (e *Engine) raiseSecond(s int64) {
	e.feedMu.Lock()
	defer e.feedMu.Unlock()
	e.reserveSecond(s)
}

// feedKey returns the change feed order key of a write with lsn in the
// transaction of scope s, at its second (see txSecond): LSNs grow in commit
// order too. A transaction whose second reaches the persisted ceiling raises
// it (see update).
func (e *Engine) feedKey(s *scope, lsn uint64) changefeed.Key {
	if !s.feedSet {
		s.feedSecond = s.now
		s.feedSet = true
		if s.feedSecond >= e.feedCeiling.Load() {
			s.feedCeiling = s.feedSecond + 1
		}
	}
	s.lastFeed = changefeed.Key{Second: s.feedSecond, Writer: changefeed.EmbeddedWriter, Seq: lsn}
	return s.lastFeed
}

// allVersionsWatermark is the highest position an all-versions read at
// instant now may serve. Expiries need no write to become visible: while
// no writing transaction is under way, it is the start of now's second,
// which the read reserves (transactions starting later run at it or after,
// see txSecond), so that no change can still appear below it; otherwise,
// the feed's watermark.
func (e *Engine) allVersionsWatermark(now int64) changefeed.Key {
	durable := e.durableWatermark() // before the floors: see feedWatermark
	e.feedMu.Lock()
	defer e.feedMu.Unlock()
	e.reserveSecond(now)
	if len(e.underWay) > 0 {
		return e.belowUnderWay(durable)
	}
	return changefeed.SecondStart(now)
}

// The feed ceiling (keyFeedMark) is a second above every order key given
// out, persisted with the first write of each second that reaches it: at
// most one small write a second, instead of one per transaction. At Open,
// every key on disk is below it and durable, so later writes start at it.

// raiseFeedCeiling records a ceiling the transaction just committed.
func (e *Engine) raiseFeedCeiling(c int64) {
	for {
		cur := e.feedCeiling.Load()
		if c <= cur || e.feedCeiling.CompareAndSwap(cur, c) {
			return
		}
	}
}

// feedDurable records that the writes up to order key k are durable: their
// transaction's Update has returned, and the write-ahead log is synced in
// commit order, so every earlier key is durable too.
func (e *Engine) feedDurable(k changefeed.Key) {
	if k.Writer == changefeed.ExpiryWriter {
		return // the transaction wrote no document
	}
	for {
		cur := e.durableFeed.Load()
		if cur != nil && cur.Compare(k) >= 0 {
			return
		}
		if e.durableFeed.CompareAndSwap(cur, &k) {
			return
		}
	}
}

// feedWatermark is the highest position a change feed read may serve: the
// last durable write (before any, the start of time), but below every
// transaction under way (see feedWrite). The durable key is read first: a
// transaction that is not under way when the floors are read either has
// returned, or takes its floor later, above every key given out so far,
// the durable one included.
func (e *Engine) feedWatermark() changefeed.Key {
	durable := e.durableWatermark()
	e.feedMu.Lock()
	defer e.feedMu.Unlock()
	return e.belowUnderWay(durable)
}

// durableWatermark is the last durable write's key (before any, the start
// of time).
func (e *Engine) durableWatermark() changefeed.Key {
	if d := e.durableFeed.Load(); d != nil {
		return *d
	}
	return changefeed.SecondStart(math.MinInt64)
}

// belowUnderWay lowers w to the floor of every transaction under way.
// feedMu must be held.
func (e *Engine) belowUnderWay(w changefeed.Key) changefeed.Key {
	for _, u := range e.underWay {
		if u.floor.Compare(w) < 0 {
			w = u.floor
		}
	}
	return w
}

// On a store shared by several gateways (docs/postgres.md section 4), a
// gateway knows when its own writes are durable, not the others'. Each
// gateway therefore publishes a floor in its registry row, a few times a
// second (feedFloor, lease.publishFloor): a second below which every write
// it gave a second to has returned, and at or above which it runs every
// later one. A read serves up to the lowest floor of the other live
// gateways, and its own watermark below that: a change then shows on every
// gateway about a second after it was made.
//
// A gateway that stalls publishes nothing; for it, and for one that
// publishes no floor at all, a read still serves up to feedLag seconds ago:
// every writing transaction on a shared store aborts, and runs again at a
// later second, when it would commit maxCommitDelay or more after its
// second (beforeCommit), so every transaction of a second served has
// committed, or never will, with feedLag - maxCommitDelay to spare for the
// COMMIT itself. Time is the store's, which every gateway shares.
const (
	maxCommitDelay = 4 * time.Second
	feedLag        = 6 // seconds
)

// errCommitLate aborts a transaction that would commit too late for the
// change feed (see beforeCommit); update runs it again.
var errCommitLate = errors.New("the transaction ran too long after its second for the change feed: run it again")

// beforeCommit is the last step of a writing transaction at second txNow:
// on a shared store it refuses a commit maxCommitDelay or more after it.
func (e *Engine) beforeCommit(txNow int64) error {
	if e.lease != nil && e.opts.Now().Sub(time.Unix(txNow, 0)) >= maxCommitDelay {
		return errCommitLate
	}
	return nil
}

// feedFloor returns the floor this gateway publishes to the others at
// instant now (Unix seconds): every write it gave a second below the floor
// has returned (committed or failed), and every later one runs at the floor
// or after, since the floor reserves its second as an all-versions read
// does (txSecond never goes below it). It is the lowest second of the
// writes under way, or now's when none is.
func (e *Engine) feedFloor(now int64) int64 {
	e.feedMu.Lock()
	defer e.feedMu.Unlock()
	e.reserveSecond(now)
	return e.belowUnderWay(changefeed.SecondStart(e.feedSecond.Load())).Second
}

// sharedFeedWatermark returns the highest position a change feed read in
// the snapshot r, at second now, may serve, given own, what this engine's
// own writes allow: own, unless other gateways are registered in r (on a
// shared store); then own, but not past the start of the lowest floor they
// published, and, for one that published none, the start of the second
// feedLag seconds before now. A floor the snapshot holds was published
// after the writes below it returned, so the snapshot holds them too. A
// gateway registering starts its writes above anything served by gateways
// that did not yet see it (takeLease).
func (e *Engine) sharedFeedWatermark(ctx context.Context, r kv.Reader, now int64, own changefeed.Key) (changefeed.Key, error) {
	if e.lease == nil {
		return own, nil
	}
	others, err := e.lease.readOthers(r, e.leaseNow(ctx))
	if err != nil {
		return own, fmt.Errorf("read the gateway registry: %w", err)
	}
	if others.n == 0 {
		return own, nil
	}
	w := changefeed.SecondStart(now - feedLag)
	if !others.floored {
		return w, nil
	}
	floored := own
	if f := changefeed.SecondStart(others.floor); f.Compare(floored) < 0 {
		floored = f
	}
	if floored.Compare(w) > 0 {
		w = floored
	}
	return w, nil
}

// parseFeedPosition parses a change feed continuation (If-None-Match).
func parseFeedPosition(token string) (changefeed.Key, error) {
	k, err := changefeed.ParseToken(token)
	if err != nil {
		return k, lethe.Errorf(lethe.CodeBadRequest, "The continuation (If-None-Match) %q is not a change feed position of this server.", truncate(token, 100))
	}
	return k, nil
}

// loadFeedMark restores, at Open, the feed ceiling persisted before the
// engine last stopped: every key on disk is below it and durable, and later
// writes take seconds from it on.
func (e *Engine) loadFeedMark(r kv.Reader) error {
	v, err := r.Get(keyFeedMark)
	if errors.Is(err, kv.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(v) != 8 {
		return fmt.Errorf("change feed ceiling: %w", errCorruptRecord)
	}
	e.setFeedCeiling(decodeInt64(v))
	return nil
}

// setFeedCeiling starts the feed at ceiling c: every key on disk is below
// it and durable. Writes continue in the last second used, c - 1, above the
// keys there by their LSNs (see startFeed).
func (e *Engine) setFeedCeiling(c int64) {
	e.feedCeiling.Store(c)
	e.feedSecond.Store(max(e.feedSecond.Load(), c-1))
}

// startFeed sets, at Open once LSNs start above every one given out, the
// durable watermark just below the next write's key.
func (e *Engine) startFeed() {
	if e.feedCeiling.Load() == 0 {
		return // a new store: no key given out yet
	}
	w := changefeed.Key{Second: e.feedSecond.Load(), Writer: changefeed.EmbeddedWriter, Seq: e.lsn.Load()}
	e.durableFeed.Store(&w)
}

// ChangeFeedStart is where a change feed read starts when it has no
// continuation.
type ChangeFeedStart int

// Starts of a change feed read.
const (
	// FromBeginning reads every live document.
	FromBeginning ChangeFeedStart = iota
	// FromNow reads only what changes after the read.
	FromNow
	// FromTime reads what changed at or after ChangeFeedOptions.Since.
	FromTime
)

// ChangeFeedOptions are a change feed read's parameters.
type ChangeFeedOptions struct {
	// Start applies when Continuation is empty.
	Start ChangeFeedStart
	// Since is FromTime's instant (whole seconds count).
	Since time.Time
	// Continuation is the etag of an earlier response: the read resumes
	// after it.
	Continuation string
	// PK confines the read to one partition key; nil for any.
	PK lethe.PartitionKey
	// Scope confines it to a partition key range or feed range.
	Scope Scope
	// MaxItems caps the page; 0 means the default.
	MaxItems int
	// AllVersions reads the all versions and deletes mode (A-IM:
	// Full-Fidelity Feed) instead of the latest version mode.
	AllVersions bool
}

// ChangeFeedPage is one page of the change feed.
type ChangeFeedPage struct {
	// Docs are the changed documents' latest versions, each with _lsn; in
	// the all versions and deletes mode, the change records in their wire
	// form (changefeed.Record.AppendWire).
	Docs [][]byte
	// ETag is the position after this page: the next read's continuation.
	// With no Docs, nothing changed since the position (HTTP 304).
	ETag string
	// ContainerRID is the container's _rid.
	ContainerRID string
	// RangeIDs are the partition key ranges read.
	RangeIDs []string
	// Charge is the request's RU charge.
	Charge float64
}

// ReadChangeFeed reads the change feed of a container. In the latest-version
// mode: the documents written after the position, in the order of their last
// write, each once, as they are now (a document written again appears at its
// last write; deleted and expired documents do not appear). With
// opts.AllVersions: every create, replace, delete and TTL expiry after the
// position, each as its own record (feedlog_read.go). Only durable writes are
// served.
func (e *Engine) ReadChangeFeed(ctx context.Context, dbID, collID string, opts ChangeFeedOptions) (ChangeFeedPage, error) {
	defer e.begin()()
	limit := pageLimit(opts.MaxItems)
	var page ChangeFeedPage
	// The watermark is read before the snapshot is taken: every write up to
	// it has returned from its commit, so the snapshot holds it. (Read
	// after, it could cover a write the snapshot missed, and the read would
	// step over it.)
	w := e.feedWatermark()
	if opts.AllVersions || e.lease != nil {
		// On a shared store, other gateways' writes are not in this one's
		// durable watermark: when no write of its own is under way, the
		// read serves up to now's second, reserved (see
		// sharedFeedWatermark for when other gateways are registered).
		now, err := e.now(ctx)
		if err != nil {
			return page, err
		}
		if av := e.allVersionsWatermark(now); opts.AllVersions || av.Compare(w) > 0 {
			w = av
		}
	}
	err := e.view(ctx, dbID, collID, func(r kv.Reader, s *scope) error {
		page.ContainerRID = s.c.RID
		w, err := e.sharedFeedWatermark(ctx, r, s.now, w)
		if err != nil {
			return err
		}
		if opts.AllVersions {
			return s.readAllVersions(r, opts, w, &page)
		}
		var after changefeed.Key
		switch {
		case opts.Continuation != "":
			k, err := parseFeedPosition(opts.Continuation)
			if err != nil {
				return err
			}
			after = k
		case opts.Start == FromNow:
			after = w
		case opts.Start == FromTime:
			after = changefeed.SecondStart(opts.Since.Unix())
		default:
			after = changefeed.SecondStart(math.MinInt64)
		}
		filter, ranges, err := s.filter(opts.PK, false, opts.Scope)
		if err != nil {
			return err
		}
		page.RangeIDs = ranges
		// Positions are keys, and a read serves what sorts after its
		// position up to the watermark, that included: the key followed by a
		// zero byte is the first after it, for whole keys and for a
		// second's start (whose expiry keys continue with a tag byte).
		p := collKey(pfxFeed, s.rid)
		start := append(after.Append(append([]byte(nil), p...)), 0)
		end := append(w.Append(append([]byte(nil), p...)), 0)
		it := r.Scan(start, end, false)
		defer it.Close()
		examined, loaded, bytesOut := 0, 0, 0
		last, full := after, false
		for it.Next() {
			if len(page.Docs) >= limit || bytesOut >= maxPageBytes {
				full = true
				break
			}
			k, err := changefeed.DecodeKey(it.Key()[len(p):])
			if err != nil {
				return err
			}
			last = k
			examined++
			suffix := it.Value()
			if !filter.match(suffix) {
				continue
			}
			rec, err := lookup(r, s.rid, suffix)
			if errors.Is(err, kv.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			loaded += len(rec.json)
			if !s.live(rec) || rec.feed.Compare(k) != 0 {
				continue // expired, or a later version comes later
			}
			page.Docs = append(page.Docs, changefeed.AppendWithLSN(make([]byte, 0, len(rec.json)+32), rec.json, rec.lsn))
			bytesOut += len(rec.json)
		}
		if err := it.Close(); err != nil {
			return err
		}
		if !full && last.Compare(w) < 0 {
			last = w // read to the watermark: resume there
		}
		page.ETag = last.Token()
		page.Charge = ru.Feed(examined, loaded)
		return nil
	})
	return page, err
}
