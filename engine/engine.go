// Package engine is Lethe's document store: databases, containers, documents,
// partition keys, time to live and the background purger, written once against
// the kv contract so that it runs on every storage backend. It never speaks HTTP.
//
// Every operation fixes one "now" when it starts (see [Engine.now]) and judges
// every document it touches against that instant with the pure rules of package
// ttl, so an expired document is invisible to every path at the same moment.
package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lethe-db/lethe/activity"
	"github.com/lethe-db/lethe/changefeed"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/purgectl"
)

// Options configure an Engine. The zero value of each field means its default.
type Options struct {
	// Store is the key-value store holding all data. Required.
	Store kv.Store
	// Now is the wall clock. The default is the store's time when it keeps
	// one (kv.Clock: PostgreSQL's), else time.Now. Tests inject their own,
	// and gateways sharing a manual clock read it from the store. A Now
	// set here on a store shared by gateways must read the same in each:
	// gateways trust it to the nanosecond, where readings of the store's
	// own time may differ by maxClockError.
	Now func() time.Time
	// Logger receives operational logs. The default discards them.
	Logger *slog.Logger
	// PurgeInterval is how often the purger looks for expired documents when it
	// is not woken earlier. The default is 250ms.
	PurgeInterval time.Duration
	// PurgeBatch is how many documents one purge transaction deletes at most.
	// The default is 512.
	PurgeBatch int
	// PurgeControl decides how much of the machine the background purge may
	// take while users are active, from how long the oldest pending expiry
	// has waited (package purgectl). The zero value takes its defaults.
	PurgeControl purgectl.Settings
	// DisablePurger stops the physical deletion of expired documents (clients
	// see no difference: expiry is decided on every request). Background
	// re-indexing still runs.
	DisablePurger bool
	// DisableBackground starts no background goroutine at all: tests then call
	// Purge and BuildIndexes themselves.
	DisableBackground bool
	// Activity is where the engine marks user operations, for background work
	// to yield to them: the purger reads it, and so can the store (pass its
	// Active method to pebblekv.Options.Foreground). Nil means a tracker of
	// the engine's own.
	Activity *activity.Tracker
	// EnforceDefaultThroughput makes the default offer of every container
	// created without throughput in a database without shared throughput
	// (400 RU/s manual, as in Cosmos DB) throttle requests and budget the TTL
	// purge like any provisioned throughput. The default, off, serves default
	// offers through the offers API but treats those containers as unlimited,
	// as the Cosmos DB emulator does without /EnableRateLimiting. A default
	// offer replaced through the offers API is explicit, and enforced, either
	// way.
	EnforceDefaultThroughput bool
	// StoreBusy, if set, reports whether the store is running background work
	// of its own that takes a core, such as a compaction
	// (pebblekv.Store.Compacting). While users are active the purger waits for
	// it to finish rather than take the other core too.
	StoreBusy func() bool
	// StoreBacklogged, if set, reports whether the store's background work
	// is so far behind that more writes would soon make it stop writes
	// until that work catches up (pebblekv.Store.Backlogged). The purge
	// then waits before its next batch on an idle server and while it keeps
	// up: otherwise a purge of a large backlog drives the store into such
	// stops, and a user's write that arrives during one waits for it (up to
	// seconds, measured). Behind while users write, it goes on
	// (waitForStoreBacklog).
	StoreBacklogged func() bool
	// ServeAllCrossPartitionQueries evaluates on the server the cross-partition
	// queries that Cosmos DB's gateway refuses (ORDER BY, GROUP BY, aggregates,
	// DISTINCT, TOP, OFFSET LIMIT without a partition key or range): clients
	// without a query pipeline (the Go SDK, REST) can then run them. Off, such
	// a query is a 400 carrying the query plan, as in Cosmos DB, and SDKs with
	// a pipeline (JavaScript, .NET, Java) run the plan one range at a time.
	ServeAllCrossPartitionQueries bool
	// SpaceLow, if set, reports whether the store's disk is nearly full
	// (pebblekv.Store.SpaceLow): writes that add documents are then refused
	// with Cosmos DB's 403 for an exhausted storage quota, while deletions
	// and the purge, which free space, go on.
	SpaceLow func() bool
	// MaxStorage, if positive, caps the bytes of live documents across all
	// containers: a write that adds documents beyond it is refused as for a
	// full disk. Expired documents do not count, purged or not.
	MaxStorage int64
	// ChangeFeedRetention is the all versions and deletes change feed's
	// retention for containers created without a changeFeedPolicy (whole
	// minutes count). Zero, the default, keeps no log for them, as Cosmos DB
	// keeps none without the policy.
	ChangeFeedRetention time.Duration
	// Writers is how many writing transactions the gateways over a shared
	// store run at once between them, split evenly among the live ones and
	// rounded up (writerShare); zero means DefaultWriters. More let writes
	// overlap their round trips to the database, at the price of conflicts
	// between them (each runs again). An exclusive store runs its writers
	// one at a time whatever this says.
	Writers int
}

// DefaultWriters is Options.Writers when it is zero: on PostgreSQL on this
// project's machine, one gateway with four writers made about half as many
// creates again as with one, with 2-4% of its writes run again after a
// conflict (BENCHMARKS.md, thirty-second session).
const DefaultWriters = 4

// EnsureDefaults fills in the defaults of unset fields.
func (o *Options) EnsureDefaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.PurgeInterval <= 0 {
		o.PurgeInterval = 250 * time.Millisecond
	}
	if o.PurgeBatch <= 0 {
		o.PurgeBatch = 512
	}
	if o.Activity == nil {
		o.Activity = &activity.Tracker{}
	}
	if o.Writers <= 0 {
		o.Writers = DefaultWriters
	}
}

// storeTime is the time of a store that keeps one ([kv.Clock]): what the
// engine runs on when Options.Now is not set. When the store cannot tell (it
// is unreachable, and the request fails there anyway), the last time it gave
// stands.
func storeTime(c kv.Clock) func() time.Time {
	var mu sync.Mutex
	var last time.Time
	return func() time.Time {
		t, err := c.Now(context.Background())
		mu.Lock()
		defer mu.Unlock()
		if err == nil && t.After(last) {
			last = t
		} else if last.IsZero() {
			last = time.Now()
		}
		return last
	}
}

// Engine is the document store. Create one with Open and release it with Close.
type Engine struct {
	opts  Options
	store kv.Store // the guard over Options.Store (behind the lease on a shared store); every access goes through it
	guard *metaGuard
	// hints are the records last seen of each container, on stores that
	// read ahead (readahead.go).
	hints *recent[hint]
	log   *slog.Logger

	closeOnce sync.Once

	// hwm is the highest server time, in Unix seconds, the engine has used and
	// persisted: now never goes below it, so a clock stepping back resurrects nothing.
	hwm     atomic.Int64
	clockMu sync.Mutex // serialises persisting a new hwm
	// clockError is how far two gateways' readings of Options.Now may
	// differ on a shared store: maxClockError for the store's own time,
	// none for a Now the caller gave (lease.go).
	clockError time.Duration

	lsn atomic.Uint64 // log sequence number of the last write; etags and session tokens
	// lsnCeiling is the persisted bound (keyLSN) below which LSNs are given
	// out; a write that comes within half a block of it persists a new one.
	lsnCeiling atomic.Uint64

	purger  *purger
	budgets *budgets // RU buckets of containers with provisioned throughput
	governs *governedBy
	storage storageGate

	// feedSecond is the second of the last change feed order key given to
	// a write; durableFeed the last such key whose transaction has returned
	// (nil before the first). See changefeed.go.
	feedSecond  atomic.Int64
	durableFeed atomic.Pointer[changefeed.Key]
	feedCeiling atomic.Int64 // persisted: above every order key given out
	// feedMu orders transactions' seconds (txSecond) with the change feed's
	// watermarks (feedWatermark, allVersionsWatermark); underWay are the
	// writing transactions that have taken a second and not yet returned,
	// guarded by it.
	feedMu   sync.Mutex
	underWay []*feedWrite

	// clockUnsaved is set while the clock's high-water mark cannot be
	// persisted because the disk is full, so that it is logged once.
	clockUnsaved atomic.Bool

	// lease is the engine's registration on a shared store (nil on an
	// exclusive one).
	lease *lease
	// On a shared store, lsnMu serialises claims of LSN blocks (lsnCeiling
	// is then the end of the block in use).
	lsnMu sync.Mutex
	// seqs holds the blocks of document sequence numbers the engine gives
	// out (nextSeq): its own on a shared store, the one every engine on an
	// exclusive store shares (metaGuard.seqs). Nil on a store that is
	// neither, where every insert moves the container's counter.
	seqs *seqBlocks
	// purgeLeases are the containers this gateway purges (purgelease.go).
	purgeLeases purgeLeases
}

// Open starts an engine over opts.Store, restoring the persisted clock high-water mark.
func Open(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Store == nil {
		return nil, errors.New("engine: Options.Store is required")
	}
	var clockError time.Duration
	if opts.Now == nil {
		if c, ok := opts.Store.(kv.Clock); ok {
			opts.Now = storeTime(c)
			clockError = maxClockError
		}
	}
	opts.EnsureDefaults()
	guard := acquireGuard(opts.Store)
	e := &Engine{opts: opts, store: guard, guard: guard, hints: newRecent[hint](), log: opts.Logger, budgets: newBudgets(), governs: newGovernedBy(), clockError: clockError}
	e.storage.spaceLow, e.storage.max = opts.SpaceLow, opts.MaxStorage
	l, err := e.takeLease(ctx)
	if err != nil {
		releaseGuard(guard)
		return nil, fmt.Errorf("engine: %w", err)
	}
	if l != nil {
		e.lease, e.store = l, leasedStore{Store: guard, l: l, writers: newWriterGate(opts.Writers)}
	}
	switch {
	case l != nil:
		e.seqs = newSeqBlocks()
	case guard.exclusive:
		e.seqs = guard.seqs
	}
	fail := func(err error) (*Engine, error) {
		l.release()
		releaseGuard(guard)
		return nil, err
	}
	err = e.store.View(ctx, func(r kv.Reader) error {
		v, err := r.Get(keyClock)
		switch {
		case errors.Is(err, kv.ErrNotFound):
		case err != nil:
			return err
		case len(v) == 8:
			e.hwm.Store(decodeInt64(v))
		}
		if err := e.loadLSNCeiling(r); err != nil {
			return err
		}
		return e.loadFeedMark(r)
	})
	if err != nil {
		return fail(fmt.Errorf("engine: read clock high-water mark: %w", err))
	}
	if err := e.loadProvisioned(ctx); err != nil {
		return fail(fmt.Errorf("engine: %w", err))
	}
	if err := e.migrateFeed(ctx); err != nil {
		return fail(fmt.Errorf("engine: change feed entries for older documents: %w", err))
	}
	// LSNs only need to grow, also across restarts: they start from the
	// microseconds since the epoch, or from the persisted ceiling when that
	// is higher (a manual clock, a restart within the same microseconds'
	// worth of writes).
	e.lsn.Store(max(uint64(max(opts.Now().UnixMicro(), e.hwm.Load()*1e6)), e.lsnCeiling.Load()))
	if e.lease != nil {
		// Other gateways give LSNs out too: this one takes blocks of its own.
		e.lsnCeiling.Store(0)
		if err := e.ensureLSNs(ctx); err != nil {
			return fail(fmt.Errorf("engine: %w", err))
		}
	}
	e.startFeed()
	e.purger = newPurger(e)
	if !opts.DisableBackground {
		e.purger.start()
	}
	return e, nil
}

// Close stops the purger. It does not close the store, which the caller owns.
// It is safe to call more than once.
func (e *Engine) Close() error {
	e.purger.stop()
	e.closeOnce.Do(func() {
		e.lease.release()
		releaseGuard(e.guard)
	})
	return nil
}

// now returns the server time for one operation, in Unix seconds: the wall clock,
// but never less than any instant already used. Before an operation may use a
// second later than the persisted high-water mark, that second is persisted, so a
// crash followed by a clock stepping back cannot resurrect what was reported expired.
// At most one synced write per second results.
func (e *Engine) now(ctx context.Context) (int64, error) {
	return e.nowAt(ctx, e.opts.Now())
}

// nowAt is now for a wall-clock reading taken by the caller.
func (e *Engine) nowAt(ctx context.Context, at time.Time) (int64, error) {
	wall := at.Unix()
	if wall <= e.hwm.Load() {
		return e.hwm.Load(), nil
	}
	e.clockMu.Lock()
	defer e.clockMu.Unlock()
	if cur := e.hwm.Load(); wall <= cur {
		return cur, nil
	}
	err := e.store.Update(ctx, func(tx kv.Tx) error {
		if e.lease != nil {
			// Other gateways persist it too: never lower theirs.
			if v, err := tx.Get(keyClock); err == nil && len(v) == 8 && decodeInt64(v) >= wall {
				return nil
			}
		}
		return tx.Put(keyClock, appendInt64(nil, wall))
	})
	if errors.Is(err, kv.ErrNoSpace) {
		// A full disk must not stop reads, nor freeze expiry: go on with the
		// wall clock in memory, and persist it once space returns. Only a
		// crash before then, followed by the clock stepping back, could
		// bring back what was reported expired meanwhile.
		if !e.clockUnsaved.Swap(true) {
			e.log.Warn("the disk is full: the server time is not persisted until space returns", "now", wall)
		}
		e.hwm.Store(wall)
		return wall, nil
	}
	if err != nil {
		return 0, fmt.Errorf("persist clock high-water mark: %w", err)
	}
	if e.clockUnsaved.Swap(false) {
		e.log.Info("the server time is persisted again", "now", wall)
	}
	e.hwm.Store(wall)
	return wall, nil
}

// nowAndObject fixes a metadata write's instant and parses its JSON body.
func (e *Engine) nowAndObject(ctx context.Context, body []byte) (int64, *jsonv.Object, error) {
	now, err := e.now(ctx)
	if err != nil {
		return 0, nil, err
	}
	o, err := jsonv.ParseObject(body)
	if err != nil {
		return 0, nil, badBody(err)
	}
	return now, o, nil
}

// Now returns the server's current time in Unix seconds, as operations see it.
func (e *Engine) Now(ctx context.Context) (int64, error) { return e.now(ctx) }

// instant returns an operation's now in whole seconds (what expiry is judged
// against) and the precise instant within that second, for the query
// language's current-time functions. When the wall clock is behind the
// high-water mark the precise instant is the start of that second.
func (e *Engine) instant(ctx context.Context) (int64, time.Time, error) {
	wall := e.opts.Now()
	now, err := e.nowAt(ctx, wall)
	if err != nil {
		return 0, time.Time{}, err
	}
	if wall.Unix() != now {
		return now, time.Unix(now, 0).UTC(), nil
	}
	return now, wall.UTC(), nil
}

// begin marks a user operation in progress until the returned func is called.
func (e *Engine) begin() func() { return e.opts.Activity.Begin() }

// lsnBlock is how many LSNs a persisted ceiling covers beyond the last one
// given out.
const lsnBlock = 1 << 24

// loadLSNCeiling restores the persisted LSN ceiling at Open.
func (e *Engine) loadLSNCeiling(r kv.Reader) error {
	v, err := r.Get(keyLSN)
	if errors.Is(err, kv.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(v) != 8 {
		return fmt.Errorf("LSN ceiling: %w", errCorruptRecord)
	}
	e.lsnCeiling.Store(binary.BigEndian.Uint64(v))
	return nil
}

// persistLSN persists, inside tx, a new LSN ceiling when the LSNs given out
// come within half a block of the current one, and returns it (0: none), for
// raiseLSNCeiling once tx has committed. On a shared store, blocks are
// claimed on their own instead (ensureLSNs).
func (e *Engine) persistLSN(tx kv.Tx) (uint64, error) {
	if e.lease != nil {
		return 0, nil
	}
	cur := e.lsn.Load()
	if cur+lsnBlock/2 < e.lsnCeiling.Load() {
		return 0, nil
	}
	c := cur + lsnBlock
	return c, tx.Put(keyLSN, binary.BigEndian.AppendUint64(nil, c))
}

// raiseLSNCeiling records a ceiling a transaction persisted.
func (e *Engine) raiseLSNCeiling(c uint64) {
	for {
		cur := e.lsnCeiling.Load()
		if c <= cur || e.lsnCeiling.CompareAndSwap(cur, c) {
			return
		}
	}
}

// sharedLSNBlock is how many LSNs a gateway on a shared store claims at a
// time.
const sharedLSNBlock = 1 << 20

// ensureLSNs claims, on a shared store, a new block of LSNs when less than
// half of the current one is left: in a transaction of its own that moves
// the shared ceiling (M lsn) past it, so that gateways' blocks never overlap
// and no write transaction touches that row. A transaction takes a few LSNs
// per document, far fewer than half a block.
func (e *Engine) ensureLSNs(ctx context.Context) error {
	if e.lease == nil || e.lsn.Load()+sharedLSNBlock/2 < e.lsnCeiling.Load() {
		return nil
	}
	e.lsnMu.Lock()
	defer e.lsnMu.Unlock()
	if e.lsn.Load()+sharedLSNBlock/2 < e.lsnCeiling.Load() {
		return nil
	}
	var base uint64
	err := e.guard.Update(ctx, func(tx kv.Tx) error {
		base = e.lsn.Load()
		v, err := tx.Get(keyLSN)
		switch {
		case errors.Is(err, kv.ErrNotFound):
		case err != nil:
			return err
		case len(v) != 8:
			return fmt.Errorf("LSN ceiling: %w", errCorruptRecord)
		default:
			base = max(base, binary.BigEndian.Uint64(v))
		}
		return tx.Put(keyLSN, binary.BigEndian.AppendUint64(nil, base+sharedLSNBlock))
	})
	if err != nil {
		return fmt.Errorf("claim a block of LSNs: %w", err)
	}
	for {
		cur := e.lsn.Load()
		if cur >= base || e.lsn.CompareAndSwap(cur, base) {
			break
		}
	}
	e.lsnCeiling.Store(base + sharedLSNBlock)
	return nil
}

// nextLSN allocates a log sequence number for one write. It takes two: the
// one after a document version's LSN is its TTL expiry's, in the change
// feed (see expiryRecord).
func (e *Engine) nextLSN() uint64 { return e.lsn.Add(2) }

// LSN returns the latest log sequence number, for session tokens.
func (e *Engine) LSN() uint64 { return e.lsn.Load() }

// etagFor renders the _etag of a resource written at lsn: a quoted, GUID-shaped
// string, unique per write.
func etagFor(lsn uint64) string {
	// `"%08x-0000-0000-%04x-%012x"` of lsn>>48, lsn>>32 and lsn's low 48
	// bits, without fmt: every read and write makes one.
	var b [38]byte
	b[0], b[37] = '"', '"'
	putHex(b[1:9], lsn>>48)
	copy(b[9:20], "-0000-0000-")
	putHex(b[20:24], lsn>>32)
	b[24] = '-'
	putHex(b[25:37], lsn)
	return string(b[:])
}

// putHex writes the low 4*len(dst) bits of v into dst as lower-case hex
// digits, zero-padded.
func putHex(dst []byte, v uint64) {
	const digits = "0123456789abcdef"
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = digits[v&0xf]
		v >>= 4
	}
}

// nextCounter increments the big-endian counter of size bytes (4 or 8) at key
// inside tx and returns the new value.
func nextCounter(tx kv.Tx, key []byte, size int) (uint64, error) {
	var n uint64
	v, err := tx.Get(key)
	switch {
	case err == nil && len(v) == size && size == 4:
		n = uint64(binary.BigEndian.Uint32(v))
	case err == nil && len(v) == size:
		n = binary.BigEndian.Uint64(v)
	case err != nil && !errors.Is(err, kv.ErrNotFound):
		return 0, err
	}
	n++
	if size == 4 {
		return n, tx.Put(key, binary.BigEndian.AppendUint32(nil, uint32(n)))
	}
	return n, tx.Put(key, binary.BigEndian.AppendUint64(nil, n))
}
