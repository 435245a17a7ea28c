// Package pebblekv implements the [kv.Store] contract on top of Pebble, the
// LSM key-value engine from CockroachDB. It is Lethe's embedded backend: one
// process, one directory, no external services.
//
// # Transactions
//
// Pebble has no transactions of its own, only atomic batches and snapshots, so
// this package builds them:
//
//   - [Store.View] reads from a Pebble snapshot, a consistent point-in-time view
//     that concurrent commits do not disturb.
//   - [Store.Update] runs its function under a store-wide writer lock, against a
//     batch layered over the live database, and commits the batch before the
//     lock is released. Writers therefore execute one at a time and see every
//     earlier commit, which makes read-write transactions serializable without
//     any conflict detection: [kv.ErrConflict] is never produced by this backend.
//     The batch is indexed only once a read needs it to see the transaction's
//     own writes (see tx), which most transactions never do.
//
// Serialising writers costs little because the slow part of a commit, the WAL
// fsync, happens after the lock is released: each committer asks Pebble to sync
// the WAL up to and including its batch, and Pebble's WAL writer folds all sync
// requests that are pending at the same moment into one fsync (group commit).
//
// Reads in a View may observe a transaction whose Update has committed but not
// yet returned (its WAL sync still in flight). If the process crashes at that
// moment the transaction is lost, but its Update never reported success either.
package pebblekv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	dto "github.com/prometheus/client_model/go"

	"github.com/lethe-db/lethe/kv"
)

// Options configures [Open]. The zero value of every field selects its default,
// but a store needs either a Dir or InMemory.
type Options struct {
	// Dir is the directory holding the database files. It is created if missing.
	// Only one Store (in any process) may have a directory open at a time.
	// Ignored when InMemory is set.
	Dir string

	// InMemory keeps the whole store in process memory: nothing touches the
	// disk, the write-ahead log is disabled and nothing is ever synced. The data
	// vanish on Close. It exists for test suites, where a throwaway store should
	// be as fast as possible.
	InMemory bool

	// Logger receives Pebble's own log output: informational messages at debug
	// level (so they stay quiet unless debug logging is enabled) and background
	// errors at error level. Nil means slog.Default().
	Logger *slog.Logger

	// Foreground, if set, reports whether user requests are being served, and
	// makes flushes and compactions yield the CPU to them: their goroutines
	// run at the lowest CPU priority, or, where that is not possible,
	// compactions rest between writes while Foreground reports true (see
	// compactionRestFactor). A process that sets it should give Go
	// a P for each running job (Jobs, cpuprio.Procs). Nil leaves background
	// work at normal priority, unpaced.
	Foreground func() bool

	// Jobs, if set, is told how many flushes and compactions run, each time
	// the number changes, so that a process can give Go a P for each while it
	// runs (cpuprio.Procs, up to BackgroundJobs). It is called from Pebble's
	// goroutines and must not block.
	Jobs func(running int)

	// CacheSize is how many bytes of sstable blocks Pebble's block cache may
	// hold. Zero means DefaultCacheSize (DefaultInMemoryCacheSize when
	// InMemory). Pebble also reserves the memtables'
	// memory in the block cache, so the cache is created larger by
	// memTablesCharged memtables; CacheSize is what remains for blocks.
	CacheSize int64

	// BackgroundWriteRate is how many bytes a second compactions may write
	// while Foreground reports true and level 0 is healthy, so that durable
	// user writes do not queue at the disk behind them. Zero means
	// DefaultBackgroundWriteRate; negative means unlimited. Ignored without
	// Foreground.
	BackgroundWriteRate int64

	// Reserve is how much free space the store keeps on its filesystem for
	// the writes that free space (deletions, the TTL purge) and for its own
	// flushes and compactions: below half of it the store reports itself low
	// (SpaceLow), and the other half is held in a ballast file released when
	// the disk fills (see space.go). Zero means DefaultReserve for the
	// filesystem's size; negative turns the guard off. Ignored InMemory.
	Reserve int64

	// SlowDiskThreshold is how long a disk write or sync may take before it
	// is logged and counted as slow (DiskStats.SlowOperations). Zero means
	// DefaultSlowDiskThreshold.
	SlowDiskThreshold time.Duration

	// FS, if set, holds the store instead of the operating system's
	// filesystem, with the write-ahead log and syncs as on disk: for tests
	// that simulate a power loss (vfs.NewStrictMem drops what was not
	// synced). Dir is then a path in FS.
	FS vfs.FS

	// LookupCacheSize is how many bytes of values the lookup cache keeps:
	// values that point lookups read, answered from memory the next time
	// without searching the LSM tree (lookupcache.go), exactly as the store
	// would answer. Zero means none.
	LookupCacheSize int64

	// LookupCacheable, if set, chooses the keys the lookup cache keeps: those
	// read often and written seldom (a document, not a counter every write
	// changes). Nil means every key.
	LookupCacheable func(key []byte) bool

	// FilterPrefix, if not nil, is the prefix of the keys that Updates
	// often look up while they are absent, as a create does its document's
	// key: the store keeps a Bloom filter of the keys under it, so that such
	// a lookup costs a few tens of nanoseconds instead of a search of the
	// LSM tree (keyfilter.go). An empty, non-nil prefix covers every key.
	FilterPrefix []byte

	// FilterKeys, if set, lists the keys under FilterPrefix that r holds,
	// passing each to add (which copies what it keeps) until add returns
	// false, for the filter's builds: from a structure smaller than the
	// keys' own values (an index), where a scan of the prefix would read
	// every value through the block cache. It must list every such key; one
	// it leaves out may be reported absent while the store holds it. Nil:
	// the store scans the prefix.
	FilterKeys func(r kv.Reader, add func(key []byte) bool) error

	// tweak, if set, changes the Pebble options last: for tests that need
	// Pebble to behave in a way no option offers (no automatic compactions).
	tweak func(*pebble.Options)
}

// DefaultCacheSize is the block cache used when Options.CacheSize is zero:
// 2 MiB beyond the memtables' reservation. Pebble's cache is one memory
// budget shared with the memtables, so in practice it holds the index and
// filter blocks every point lookup reads first, plus whatever the memtables
// leave free. Documents read by key are answered mostly by the lookup cache
// (DefaultLookupCacheSize), which keeps them compressed; blocks are kept
// decompressed. Measured after 30,000 durable 1 KB creates, TTL and the
// change feed on, under lethe bench's create and read workloads (server CPU
// per read as a multiple of the ceiling's, RSS): a 2 MiB lookup cache with
// 8 MiB of blocks 1.75, 77 MB; an 8 MiB lookup cache with 4 MiB of blocks
// 1.24, 81 MB; with 2 MiB of blocks 1.26-1.28, 73-75 MB. Creates moved
// less than the runs spread. The purge pays a little: 100,000 documents
// purged at 79-93k a second with 2 MiB against 84-100k with 8 MiB, in three
// alternating pairs, each lower with 2 MiB (BenchmarkPurge). Before the
// lookup cache, 8 MiB of blocks took a partition query's page from 201-217
// to 152-169 us against 2 MiB; with it, the page cost 253 and 280 us in two
// runs with 2 MiB, 267-287 in three with 4 MiB.
const DefaultCacheSize = 2 << 20

// DefaultInMemoryCacheSize is the block cache of an InMemory store when
// Options.CacheSize is zero: 64 MiB. Its sstables are already in memory, but
// compressed: without a cache of decompressed blocks every read copies and
// decompresses a block (measured: a page of 10 documents by partition key
// cost 204 us of server CPU under load with 2 MiB, 158 us with 48 MiB, a point
// read 55 and 45 us). The cache fills only with blocks read, so a small store
// does not pay for it.
const DefaultInMemoryCacheSize = 64 << 20

// DefaultMemTableSize is the size of each memtable of a store on disk:
// 8 MiB. Pebble keeps two while it keeps up (one taking writes, the other
// kept for reuse), and both stay resident: with 16 MiB they were a third of
// a durable server's memory. Memtables that small flush often, which the
// purge pays for unless two things hold: each compaction out of level 0
// still takes in defaultL0CompactionBytes (so it waits for more tables),
// and writes may queue maxQueuedMemTableBytes of memtables behind a flush
// before they stop (memTableStopWrites), as two 16 MiB ones did. Measured
// purging 1,000,000 indexed documents, alternating: 8 MiB with both 91k,
// 105k, 117k and 119k documents/s; 16 MiB 99k-123k in six runs; 8 MiB with
// writes stopping at Pebble's default of two memtables 77k and 81k. Durable
// server RSS under the issue-21 workloads: 81-86 MB against 95-101 MB with
// 16 MiB (119-127 with 32 MiB).
const DefaultMemTableSize = 8 << 20

// InMemoryMemTableSize is the size of each memtable of an InMemory store:
// 16 MiB. Pebble keeps two resident (one taking writes, one kept for
// reuse), and they hold their documents uncompressed. With
// compactions out of level 0 still starting at inMemoryL0CompactionThreshold
// tables and inMemoryCompression, 16 MiB took an in-memory server from
// 202-210 MB to 158-165 MB after the issue-21 workloads (lethe bench,
// 30,000 documents, time to live and the change feed on, three alternating
// rounds), creates, reads and partition queries within the spread of the
// rounds (BENCHMARKS.md, seventeenth session); under creates that expire
// 10 s later with the purge on, 212-221 MB against 383-427. The price is
// paid by writes that keep coming into a large store: compactions out of
// level 0 come twice as often, loading a million documents took 106-107 s
// of CPU against 85 with 32 MiB (BenchmarkRSSAfterLoad), with or without
// inMemoryCompression, and the sustained creates cost 10-30% more.
const InMemoryMemTableSize = 16 << 20

// inMemoryL0CompactionThreshold is how many level-0 tables start a
// compaction out of level 0 in an InMemory store: four, Pebble's default,
// whatever the memtable size. The larger thresholds of a store on disk
// (l0CompactionThreshold) serve the purge's rewrites of a level on disk; in
// memory, with 16 MiB memtables, eight tables cost partition queries, which
// merge every level-0 table they overlap: 0.75-0.77 of the ceiling in three
// rounds against 0.81-0.86 with 32 MiB memtables and four tables; with 16
// MiB and four, 0.81-0.82 against 0.77-0.84.
const inMemoryL0CompactionThreshold = 4

// compactionThreshold returns the level-0 compaction threshold of a store
// with memtables of memTable bytes.
func compactionThreshold(inMemory bool, memTable int64) int {
	if inMemory {
		return inMemoryL0CompactionThreshold
	}
	return l0CompactionThreshold(memTable)
}

// inMemoryCompression is the compression of an InMemory store's tables,
// whose bytes are the store's memory: Pebble's "balanced" settings, zstd at
// level 1 for the lowest level, where settled data lies, and the fastest
// compression above it, where flushes and most compactions write. Measured
// on 1 KB documents of words, numbers and identifiers settled into the
// lowest level (BenchmarkInMemoryColdGet): 497 bytes a document against 754
// with Pebble's default (snappy everywhere), for 17-18 us against 11 a
// point read that neither the block cache nor the lookup cache answers.
// A store on disk keeps the default: its reads miss its small caches far
// more often, and disk space is cheaper than memory.
func inMemoryCompression() pebble.DBCompressionSettings { return pebble.DBCompressionBalanced }

// inMemoryBlockSize is the size of an InMemory store's data blocks: 16 KiB,
// against Pebble's 4 KiB. Each block is compressed on its own, and what
// repeats from one document to the next (property names, the system
// properties' common parts, a record's layout) compresses only against what
// the same block holds: a 4 KiB block holds three 1 KB documents. Measured
// with inMemoryCompression (BenchmarkInMemoryColdGet, 100,000 documents of
// words, numbers and identifiers): 420 table bytes a document against 497,
// and a point read that no cache answers took 32 us against 18 (32 KiB
// blocks: 385 bytes, 48 us). lethe bench's documents, whose padding repeats,
// took half the tables' bytes (BenchmarkRSSAfterLoad, 200,000 documents,
// time to live and the log on: 37 MiB against 75). The lookup cache answers
// most point reads of a busy server before any block is read; where it does
// not (300,000 documents read at random), reads cost 3-14% more server
// CPU.
const inMemoryBlockSize = 16 << 10

// inMemoryLBaseMaxBytes is the most an InMemory store's base level (the
// level compactions out of level 0 write) holds before it moves up a level:
// 4 MiB, against Pebble's 64 MiB. Every compaction out of level 0 rewrites
// the whole of the base level, since each level-0 table, a flushed memtable,
// spans the whole key space. Below 64 MiB of tables the base level was the
// lowest one, zstd-compressed (inMemoryCompression), so every such
// compaction compressed the store's settled data again (loading 200,000
// documents, the lowest level was written 136 MB for 27 MB of data). With a
// small base level those rewrites go to the level above, in the fast
// compression, and the lowest level takes them in larger sweeps: loading a
// million documents took a tenth to a fifth less CPU and ended in less
// memory, and a create of the issue-21 workloads took about a seventh less
// server CPU than with 16 MiB (BENCHMARKS.md, issue 21, twentieth session,
// has the runs).
const inMemoryLBaseMaxBytes = 4 << 20

// defaultL0CompactionBytes is about how much a compaction out of level 0
// takes in: Pebble starts one when level 0 holds L0CompactionThreshold
// tables, each a flushed memtable. A purge writes tombstones all over the
// key space, so every such compaction rewrites the whole of the level below;
// the more it takes in at once, the fewer times that level is rewritten.
// 128 MiB is Pebble's default threshold (four tables) times 32 MiB memtables,
// which the purge was tuned with.
const defaultL0CompactionBytes = 128 << 20

// l0CompactionThreshold returns how many level-0 tables start a compaction
// with memtables of memTable bytes: defaultL0CompactionBytes' worth, from
// Pebble's default of four to sixteen (more would make every read look
// through more tables; each table's bloom filter keeps most of them from
// costing more than a filter probe).
func l0CompactionThreshold(memTable int64) int {
	return int(min(max(defaultL0CompactionBytes/memTable, 4), 16))
}

// maxQueuedMemTableBytes is about how much memtable writes may fill while
// flushes are behind before Pebble stops them: two 16 MiB memtables, the
// depth the purge was tuned with. Only a backlog holds them; while flushes
// keep up, one memtable takes writes and one waits for reuse.
const maxQueuedMemTableBytes = 32 << 20

// memTableStopWrites returns how many memtables (the one taking writes and
// those waiting to be flushed) stop writes, with memtables of memTable
// bytes: maxQueuedMemTableBytes' worth, from Pebble's default of two to
// four. A small filesystem's memtables (memTableFor) are sized so that four
// of them and their logs take no more of it than two did.
func memTableStopWrites(memTable int64) int {
	return int(min(max(maxQueuedMemTableBytes/memTable, 2), 4))
}

// l0StopWritesFactor is how many times l0CompactionThreshold level 0 may
// hold before Pebble stops writes until compactions catch up: Pebble's
// default is three (12 sublevels for a threshold of 4).
const l0StopWritesFactor = 3

// memTablesCharged is how many memtables' sizes the block cache is made
// larger by: Pebble charges every memtable's arena to the cache, and after
// the first flush two are always charged (one taking writes, the other being
// flushed or kept for reuse). Without them, a cache no larger than two
// memtables holds no block at all, and every read decodes its block again.
const memTablesCharged = 2

// bloomBitsPerKey sizes the bloom filter written into every sstable above the
// lowest level: 10 bits a key give about a 1% false-positive rate. A point
// read then skips the sstables that cannot hold its key without reading
// their index and data blocks, which matters most while level 0 holds many
// overlapping tables (during a burst of writes or a purge).
//
// The lowest level's tables carry no filter. A read that gets that far has
// found its key in no level above, and the key is nearly always there: the
// one lookup of absent keys on every request, a create's check that its id
// is free, is answered by the store's own filter of document keys
// (Options.FilterPrefix) before Pebble is asked. That level holds most of
// the keys, so its filters were most of the filters' bytes: without them a
// million settled documents (time to live and the log on, in memory) took
// 130.8 MiB of tables against 144.7, and a lookup of an absent key that the
// key filter does not cover costs about a microsecond more
// (BenchmarkCreateLookup/none). RocksDB offers the same trade as
// optimize_filters_for_hits.
const bloomBitsPerKey = 10

// Store is a [kv.Store] backed by a Pebble database. It is safe for concurrent
// use by multiple goroutines. Create one with [Open] and release it with
// [Store.Close].
type Store struct {
	db       *pebble.DB
	pace     *pacer // paces compactions for the foreground; nil if not
	jobs     *jobCounter
	fsCloser io.Closer   // stops the disk-health checker; nil if none
	space    *spaceGuard // watches free space and keeps the ballast; nil if not
	durable  bool        // WAL enabled: committed Updates must be synced before returning
	desc     string      // directory (or "memory") for error messages
	dir      string
	log      *slog.Logger
	mem      *tableFS     // an in-memory store's file system; nil on disk
	lookups  *lookupCache // nil without Options.LookupCacheSize
	filter   *keyFilter   // nil without Options.FilterPrefix

	// options builds the Pebble options for (re)opening the database.
	options func(readOnly bool) *pebble.Options
	// readOnly is set while the database is open read-only, after a start
	// on a full disk; rwStop and rwDone stop the goroutine that reopens it
	// for writing (nil when it never ran).
	readOnly       atomic.Bool
	rwStop, rwDone chan struct{}

	slowOps    atomic.Int64 // disk operations slower than SlowDiskThreshold
	readErrors atomic.Int64 // reads the storage failed (kv.ErrIO)
	bgErrors   atomic.Int64 // flushes and compactions that failed
	refused    atomic.Int64 // Updates refused with kv.ErrNoSpace
	stalls     stallClock   // writes stopped behind flushes and compactions

	l0 level0Watch // level 0 backed up: compactions unpaced, the purge waits

	// commits counts the Updates that committed (or tried to), and shared is
	// the snapshot Views share while none has since (snapshot.go).
	commits atomic.Uint64
	snapMu  sync.Mutex // taking and publishing a new shared snapshot
	shared  atomic.Pointer[sharedSnap]

	// writeSem is the writer lock, a one-slot semaphore rather than a
	// sync.Mutex so that a writer waiting for its turn can give up when its
	// context is cancelled.
	writeSem chan struct{}

	// closeMu guards closed and orders inflight.Add before inflight.Wait:
	// transactions register under the read lock, Close flips closed under the
	// write lock and then waits for the registered ones to finish, because
	// Pebble must not be closed under a running transaction.
	closeMu  sync.RWMutex
	closed   bool
	closing  atomic.Bool // mirrors closed for lock-free checks by queued writers
	inflight sync.WaitGroup
}

// Compile-time check that Store satisfies the storage contract.
var _ kv.Store = (*Store)(nil)

// errClosed is returned by every method of a closed Store.
var errClosed = fmt.Errorf("pebblekv: %w", kv.ErrClosed)

// Open opens (creating if necessary) the store described by opts.
func Open(opts Options) (*Store, error) {
	return open(opts, opts.FS)
}

// open is Open with an optional file system override, used by tests to
// simulate crashes with a crashable in-memory file system. A non-nil fs keeps
// the WAL and syncing on (unlike InMemory), so the store is durable with
// respect to fs.
func open(opts Options, fs vfs.FS) (*Store, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	dir, desc := opts.Dir, opts.Dir
	var base, pfs vfs.FS
	var mem *tableFS
	switch {
	case fs != nil:
		base = fs
	case opts.InMemory:
		mem = newTableFS()
		pfs = mem
		dir, desc = "", "memory"
	case dir == "":
		return nil, errors.New("pebblekv: open: Options.Dir is empty and InMemory is false")
	default:
		base = vfs.Default
	}
	s := &Store{desc: desc, dir: dir, log: logger, writeSem: make(chan struct{}, 1), mem: mem}
	s.stalls.now = time.Now
	if base != nil {
		if err := base.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("pebblekv: open %s: %w", desc, err)
		}
		s.space = newSpaceGuard(base, dir, opts.Reserve, logger)
		if s.space != nil {
			base = spaceFS{FS: base, g: s.space}
		}
		// Over the space guard: a log's fill is more of the log's writes, and
		// meets a full disk as they do.
		base = walFillFS{FS: base}
		// What Pebble does when Options.FS is nil, except that we own the
		// closer (Pebble does not close its own wrapper when Open fails,
		// leaking the wrapper's ticker goroutine), and slow operations are
		// counted as well as logged.
		threshold := opts.SlowDiskThreshold
		if threshold <= 0 {
			threshold = DefaultSlowDiskThreshold
		}
		pfs, s.fsCloser = vfs.WithDiskHealthChecks(base, threshold, nil,
			func(info vfs.DiskSlowInfo) {
				logger.Warn("pebblekv: slow disk operation", "dir", desc, "op", info.String())
				s.slowOps.Add(1) // after the log line, for whoever waits on the count
			})
	}
	memTable := int64(DefaultMemTableSize)
	switch {
	case opts.InMemory:
		memTable = InMemoryMemTableSize
	case s.space != nil:
		memTable = memTableFor(s.space.total.Load())
	}
	if opts.Foreground != nil {
		rate := opts.BackgroundWriteRate
		switch {
		case rate == 0:
			rate = DefaultBackgroundWriteRate
		case rate < 0:
			rate = 0 // unlimited
		}
		s.pace = &pacer{foreground: opts.Foreground, writeRate: rate, l0: &s.l0}
		pfs = pacedFS{FS: pfs, p: s.pace}
	}
	s.jobs = &jobCounter{notify: opts.Jobs}
	s.l0.depth = pacedL0Factor * compactionThreshold(opts.InMemory, memTable)
	s.options = func(readOnly bool) *pebble.Options {
		return s.pebbleOptions(opts, pfs, memTable, readOnly)
	}
	if s.space != nil {
		s.space.start()
	}
	// On a disk too full even for the files opening writes (a new
	// write-ahead log, a MANIFEST), open read-only: reads are served, writes
	// refused, and the store reopens for writing once space returns.
	readOnly := s.space != nil && s.space.exhausted.Load()
	db, err := s.openPebble(readOnly)
	if err != nil {
		s.stopWatchers()
		return nil, fmt.Errorf("pebblekv: open %s: %w", desc, err)
	}
	s.setDB(db, readOnly)
	s.durable = !opts.InMemory
	if opts.LookupCacheSize > 0 {
		s.lookups = newLookupCache(opts.LookupCacheSize, opts.LookupCacheable)
	}
	if opts.FilterPrefix != nil {
		s.filter = newKeyFilter(opts.FilterPrefix, opts.FilterKeys)
		if opts.InMemory {
			s.filter.startEmpty() // a new store holds no key
		} else {
			s.filter.wake() // the first build: the keys the store holds
		}
		go s.runKeyFilter(s.filter)
	}
	if readOnly {
		logger.Error("pebblekv: the disk is full: opened read-only; writes are refused until space returns", "dir", desc, "free_bytes", s.space.free.Load())
		s.rwStop, s.rwDone = make(chan struct{}), make(chan struct{})
		go s.reopenWhenSpace()
	}
	return s, nil
}

// memTableFor sizes the memtables for a filesystem of totalBytes: each
// memtable's write-ahead log takes about its size on disk, and up to
// memTableStopWrites of them may wait to be flushed, so a small filesystem
// gets smaller ones (a thirty-second of it, at least 1 MiB).
func memTableFor(totalBytes int64) int64 {
	return min(DefaultMemTableSize, max(totalBytes/32, 1<<20))
}

// pebbleOptions returns a fresh set of Pebble options (Pebble keeps and
// changes the ones it is opened with, so each Open gets its own).
func (s *Store) pebbleOptions(opts Options, fs vfs.FS, memTable int64, readOnly bool) *pebble.Options {
	po := &pebble.Options{
		Logger: pebbleLogger{logger: s.log},
		// Lethe has no stores written by older Pebble versions, so new stores
		// start at the newest stable on-disk format.
		FormatMajorVersion: pebble.FormatNewest,
		FS:                 fs,
		ReadOnly:           readOnly,
		DisableWAL:         opts.InMemory,
	}
	po.MemTableSize = uint64(memTable)
	po.L0CompactionThreshold = compactionThreshold(opts.InMemory, memTable)
	po.L0StopWritesThreshold = l0StopWritesFactor * po.L0CompactionThreshold
	po.MemTableStopWritesThreshold = memTableStopWrites(memTable)
	blocks := int64(DefaultCacheSize)
	switch {
	case opts.CacheSize > 0:
		blocks = opts.CacheSize
	case opts.InMemory:
		blocks = DefaultInMemoryCacheSize
	}
	po.CacheSize = blocks + memTablesCharged*memTable
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
	}
	po.Levels[len(po.Levels)-1].FilterPolicy = pebble.NoFilterPolicy // see bloomBitsPerKey
	events := s.jobs.listener()
	// Pebble's defaults log these, and exit the process on corruption; a
	// corrupt block fails the reads that meet it, counted, and the store
	// serves the rest.
	events.BackgroundError = func(err error) {
		s.bgErrors.Add(1)
		s.log.Error("pebblekv: background error", "dir", s.desc, "err", err)
	}
	events.DataCorruption = func(info pebble.DataCorruptionInfo) {
		s.readErrors.Add(1)
		s.log.Error("pebblekv: corrupt data", "dir", s.desc, "info", info.String())
	}
	s.stalls.listen(events)
	po.EventListener = events
	if opts.InMemory {
		// See inMemoryCompression and inMemoryBlockSize.
		po.ApplyCompressionSettings(inMemoryCompression)
		for i := range po.Levels {
			po.Levels[i].BlockSize = inMemoryBlockSize
		}
		po.LBaseMaxBytes = inMemoryLBaseMaxBytes
	}
	if opts.tweak != nil {
		opts.tweak(po)
	}
	return po
}

// openPebble opens the database with the store's options, its compactions
// held back until Open has returned (gatedScheduler).
func (s *Store) openPebble(readOnly bool) (*pebble.DB, error) {
	po := s.options(readOnly)
	gate := gateCompactions(po)
	db, err := pebble.Open(s.dir, po)
	if err != nil {
		gate.abandon()
		return nil, err
	}
	gate.openGate()
	return db, nil
}

// setDB installs db as the store's database. The caller holds closeMu for
// writing, or the store is not yet shared.
func (s *Store) setDB(db *pebble.DB, readOnly bool) {
	s.db = db
	s.readOnly.Store(readOnly)
	l0 := func() int { return int(db.Metrics().Levels[0].Sublevels) }
	s.l0.sublevels.Store(&l0)
}

// reopenWhenSpace is the goroutine of a store opened read-only on a full
// disk: once the guard sees room for small writes again, it reopens the
// database for writing. Close stops it.
func (s *Store) reopenWhenSpace() {
	defer close(s.rwDone)
	t := time.NewTicker(spacePollShort)
	defer t.Stop()
	for {
		select {
		case <-s.rwStop:
			return
		case <-t.C:
		}
		if s.space.exhausted.Load() || s.space.free.Load() < 2*exhaustedFloor {
			continue
		}
		switch err := s.reopenWritable(); {
		case err == nil:
			return
		case errors.Is(err, kv.ErrClosed):
			return
		default:
			s.log.Warn("pebblekv: reopen for writing", "dir", s.desc, "err", err)
		}
	}
}

// reopenWritable closes the read-only database and opens it for writing,
// while no transaction runs; if that fails, it opens it read-only again.
func (s *Store) reopenWritable() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return errClosed
	}
	s.inflight.Wait() // enter blocks meanwhile, on closeMu
	s.unshareSnapshot()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close read-only: %w", err)
	}
	db, err := s.openPebble(false)
	if err == nil {
		// Logged before the store takes writes, so that whoever sees it
		// writable (a test that waits for it) finds the line too.
		s.log.Info("pebblekv: disk space returned: reopened for writing", "dir", s.desc, "free_bytes", s.space.free.Load())
		s.setDB(db, false)
		return nil
	}
	ro, rerr := s.openPebble(true)
	if rerr != nil {
		// Neither: every call fails from now on, as after Close.
		s.closed = true
		s.closing.Store(true)
		return fmt.Errorf("open for writing: %w; and read-only again: %w", err, rerr)
	}
	s.setDB(ro, true)
	return fmt.Errorf("open for writing: %w", err)
}

// stopReopen stops the goroutine waiting to reopen a read-only store for
// writing, if it runs.
func (s *Store) stopReopen() {
	if s.rwStop != nil {
		close(s.rwStop)
		<-s.rwDone
		s.rwStop = nil
	}
}

// stopWatchers stops the goroutines that watch the disk: the space guard's
// poll loop and the disk-health checker.
func (s *Store) stopWatchers() {
	if s.space != nil {
		s.space.close()
	}
	if s.fsCloser != nil {
		_ = s.fsCloser.Close() // only stops a goroutine; cannot fail
	}
}

// DefaultSlowDiskThreshold is how long a disk operation may take before it
// is logged and counted as slow when Options.SlowDiskThreshold is zero
// (Pebble's default).
const DefaultSlowDiskThreshold = 5 * time.Second

// enter registers a transaction so that Close waits for it. Every successful
// enter must be paired with s.inflight.Done().
func (s *Store) enter() error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errClosed
	}
	s.inflight.Add(1)
	return nil
}

// View runs fn against a consistent point-in-time snapshot of the store,
// holding every Update that returned before View was called; Views that run
// while nothing commits share one snapshot (snapshot.go). fn's error is
// returned unchanged; a panic in fn releases the snapshot and
// propagates. The [kv.Reader] passed to fn may be used from several goroutines
// at once, but not after fn returns; iterators fn leaves open are closed.
func (s *Store) View(ctx context.Context, fn func(kv.Reader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.inflight.Done()
	sh := s.acquireSnapshot()
	r := &reader{state: txState{src: sh.snap, readErrors: &s.readErrors}, cache: s.lookups, label: sh.label}
	defer r.state.finish(func() error {
		sh.unref()
		return nil
	})
	return fn(r)
}

// Exclusive implements [kv.Exclusive]: the store is open in this process only
// (Pebble locks its directory), View reads a snapshot taken before fn runs
// that holds every Update that returned before View was called, and Update
// runs fn under the writer lock, so nothing commits meanwhile.
func (s *Store) Exclusive() bool { return true }

// Update runs fn in a serializable read-write transaction and commits it if fn
// returns nil. Reads inside fn see the transaction's own writes on top of
// everything committed before it. When Update returns nil the transaction is
// durable (its WAL record is synced), unless the store is InMemory.
//
// Updates execute one at a time (see the package documentation), so fn should
// not block for long, and must not call Update on the same store: that
// deadlocks. Because of this serialisation [kv.ErrConflict] never occurs and
// fn runs exactly once per call.
//
// fn's error is returned unchanged and the transaction is discarded. A panic in
// fn discards the transaction, releases the writer lock and propagates. The
// [kv.Tx] passed to fn must not be used concurrently or after fn returns.
func (s *Store) Update(ctx context.Context, fn func(kv.Tx) error) error {
	return s.update(ctx, fn, true)
}

// UpdateNoSync implements [kv.Store]: Update without waiting for the WAL sync.
func (s *Store) UpdateNoSync(ctx context.Context, fn func(kv.Tx) error) error {
	return s.update(ctx, fn, false)
}

// lockWriter takes the writer lock, unless stop closes first (an Update's
// context is done, or a filter build is told to stop).
func (s *Store) lockWriter(stop <-chan struct{}) bool {
	select {
	case s.writeSem <- struct{}{}:
		return true
	case <-stop:
		return false
	}
}

func (s *Store) update(ctx context.Context, fn func(kv.Tx) error, sync bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.inflight.Done()
	if s.readOnly.Load() || s.space != nil && s.space.exhausted.Load() {
		s.refused.Add(1)
		return fmt.Errorf("pebblekv: write to %s: %w", s.desc, kv.ErrNoSpace)
	}

	if !s.lockWriter(ctx.Done()) {
		return ctx.Err()
	}
	wrote, err := s.runUpdate(ctx, fn) // releases writeSem
	if err != nil || !wrote || !s.durable || !sync {
		return err
	}
	// Wait, outside the writer lock, until the WAL is synced up to our batch.
	// LogData(nil, Sync) commits an empty WAL-only record (it is not applied to
	// the memtable and consumes no sequence number) and waits for it to be
	// synced. WAL records are written in commit order under Pebble's commit
	// pipeline mutex, and the LogWriter guarantees that a sync request covers
	// all data queued before it (record.LogWriter.flushLoop), so this also
	// syncs our batch; a WAL rotation in between closes and syncs the old log
	// file synchronously (DB.rotateWAL). Concurrent sync requests are served
	// by a single fsync. CockroachDB's SyncWAL is implemented the same way.
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("pebblekv: sync wal %s: %w", s.desc, err)
	}
	return nil
}

// runUpdate executes fn under the writer lock, which the caller has acquired
// and which runUpdate releases, and commits the batch without waiting for the
// WAL sync. It reports whether anything was committed.
func (s *Store) runUpdate(ctx context.Context, fn func(kv.Tx) error) (wrote bool, err error) {
	defer func() { <-s.writeSem }()
	if s.closing.Load() {
		return false, errClosed
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	t := newTx(s.db, &s.readErrors, s.lookups, s.commits.Load())
	t.filter = s.filter
	// Runs before the writer lock is released, also when fn panics, so the
	// next writer never shares the batch and an uncommitted batch leaves no
	// trace. Closing a committed batch only recycles it.
	defer t.state.finish(t.close)

	if err := fn(t); err != nil {
		return false, err
	}
	if t.batch.Empty() {
		return false, nil
	}
	// NoSync: the commit is applied and visible to the next writer now; the
	// caller waits for durability after releasing the lock. Counted even if
	// it fails: a View then takes a fresh snapshot, which is always right.
	if s.filter != nil {
		s.filter.noteBatch(t.batch) // before the keys can be read
	}
	var marks commitMarks
	if s.lookups != nil {
		marks = s.lookups.markBatch(t.batch)
	}
	err = t.batch.Commit(pebble.NoSync)
	commit := s.commits.Add(1)
	if s.lookups != nil {
		s.lookups.unmark(marks, commit)
	}
	s.unshareSnapshot()
	if err != nil {
		return false, fmt.Errorf("pebblekv: commit %s: %w", s.desc, err)
	}
	if s.lookups != nil {
		s.lookups.keepBatch(t.batch, marks, commit)
	}
	return true, nil
}

// Close waits for running transactions to finish and then closes the
// database. After Close every method returns an error wrapping [kv.ErrClosed].
// Calling Close again returns nil at once.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	s.closing.Store(true)
	s.closeMu.Unlock()

	s.inflight.Wait()
	s.stopKeyFilter()
	s.stopReopen()
	s.unshareSnapshot()
	s.flushBeforeClose()
	err := s.db.Close()
	if s.mem != nil {
		s.mem.release() // Pebble has closed every file
	}
	if s.lookups != nil {
		s.lookups.free() // no transaction runs, and none can start
	}
	s.stopWatchers()
	if err != nil {
		return fmt.Errorf("pebblekv: close %s: %w", s.desc, err)
	}
	return nil
}

// flushBeforeClose writes a durable store's memtables out before it closes,
// so that the next open has no write-ahead log to replay. Open replays the
// log into memtables and waits for them to be flushed: with up to two full
// 32 MiB memtables that took the first open after a restart 0.3-0.4 s with
// 300,000 documents (BenchmarkOpenWithDocs). The flush is skipped where it
// cannot or should not write: in memory, read-only, or with the disk low on
// space. The write-ahead log holds the data either way, so a failed flush is
// logged, not returned.
func (s *Store) flushBeforeClose() {
	if !s.durable || s.SpaceLow() {
		return
	}
	if err := s.db.Flush(); err != nil {
		s.log.Warn("pebblekv: flush before close failed; the next open replays the write-ahead log instead", "dir", s.desc, "err", err)
	}
}

// Metrics returns Pebble's human-readable metrics report (LSM shape, cache
// hit rates, WAL and compaction statistics) for diagnostics, or "" once the
// store is closed.
func (s *Store) Metrics() string {
	if s.enter() != nil {
		return ""
	}
	defer s.inflight.Done()
	return s.db.Metrics().String()
}

// Compacting reports whether a compaction is writing its output at normal
// CPU priority, pacing itself instead (see Options.Foreground); false when
// compactions run at background priority, or Foreground is not set. Other
// background work (the purge) consults it so as not to take a second core
// beside such a compaction while users are active.
func (s *Store) Compacting() bool { return s.pace != nil && s.pace.writing.Load() > 0 }

// PacingStats count, since the store opened, how flushes and compactions
// yielded to the foreground (see Options.Foreground and
// BackgroundWriteRate); all zero without Foreground.
type PacingStats struct {
	// Rested is how long compactions rested to leave the CPU to user
	// requests (only where background priority is unavailable).
	Rested time.Duration
	// Throttled is how long compactions waited for the background write rate.
	Throttled time.Duration
	// LoweredFiles is how many output files were written at background CPU
	// priority.
	LoweredFiles int64
	// BytesWritten is how many bytes flushes and compactions wrote to their
	// output files.
	BytesWritten int64
}

// Pacing returns the store's pacing counters, for tests and diagnostics.
func (s *Store) Pacing() PacingStats {
	if s.pace == nil {
		return PacingStats{}
	}
	return PacingStats{
		Rested:       time.Duration(s.pace.rested.Load()),
		Throttled:    time.Duration(s.pace.throttled.Load()),
		LoweredFiles: s.pace.lowered.Load(),
		BytesWritten: s.pace.written.Load(),
	}
}

// BackgroundJobsRunning reports how many flushes and compactions are running
// now, for diagnostics: benchmarks use it to see which of their measurements
// overlapped background work.
func (s *Store) BackgroundJobsRunning() int { return int(s.jobs.running.Load()) }

// jobCounter counts the flushes and compactions in progress through Pebble's
// event listener, which calls each Begin and its End exactly once. Pebble's
// Metrics reports the same, but computes the whole LSM's figures under the
// DB's mutex on every call, too much to sample every few milliseconds.
type jobCounter struct {
	running atomic.Int64
	notify  func(running int) // Options.Jobs; nil if unset
}

// listener returns the Pebble event listener that keeps the count.
func (j *jobCounter) listener() *pebble.EventListener {
	begin := func() { j.add(1) }
	end := func() { j.add(-1) }
	return &pebble.EventListener{
		CompactionBegin: func(pebble.CompactionInfo) { begin() },
		CompactionEnd:   func(pebble.CompactionInfo) { end() },
		FlushBegin:      func(pebble.FlushInfo) { begin() },
		FlushEnd:        func(pebble.FlushInfo) { end() },
	}
}

// add counts d more jobs running (d < 0: fewer) and tells Options.Jobs.
func (j *jobCounter) add(d int64) {
	n := j.running.Add(d)
	if j.notify != nil {
		j.notify(int(n))
	}
}

// IOStats are the store's cumulative write figures and its size on disk, for
// measuring what an operation costs in bytes (benchmarks) and how much of the
// disk the store holds (metrics).
type IOStats struct {
	// WALBytes is how many bytes commits wrote to the write-ahead log (0 for
	// an in-memory store, which has none).
	WALBytes uint64
	// WALSyncs is how many times the write-ahead log was synced, and Commits
	// how many Updates committed: durable Updates that commit while a sync
	// runs share the next one, and a sync costs the machine CPU as well as
	// time.
	WALSyncs, Commits uint64
	// FlushedBytes and CompactedBytes are how many bytes flushes and
	// compactions wrote to sstables.
	FlushedBytes, CompactedBytes uint64
	// DiskBytes is the space the store's files take now, obsolete files not
	// yet removed included.
	DiskBytes uint64
	// LiveTableBytes is the size of the sstables in the LSM tree now: the
	// data, and the deletions compactions have not yet dropped.
	LiveTableBytes uint64
}

// IOStats returns the store's write figures, or the zero value once it is
// closed. It takes Pebble's metrics lock: call it at most a few times a
// second.
func (s *Store) IOStats() IOStats {
	if s.enter() != nil {
		return IOStats{}
	}
	defer s.inflight.Done()
	m := s.db.Metrics()
	st := IOStats{WALBytes: m.WAL.BytesWritten, DiskBytes: m.DiskSpaceUsage(), Commits: s.commits.Load()}
	if h := m.LogWriter.FsyncLatency; h != nil {
		var sample dto.Metric
		if h.Write(&sample) == nil {
			st.WALSyncs = sample.GetHistogram().GetSampleCount()
		}
	}
	for _, l := range m.Levels {
		st.LiveTableBytes += uint64(max(l.TablesSize, 0))
		st.FlushedBytes += l.TableBytesFlushed + l.BlobBytesFlushed
		st.CompactedBytes += l.TableBytesCompacted + l.BlobBytesCompacted
	}
	return st
}

// Settle flushes the memtable and waits until no flush or compaction has
// run for settleQuiet, so that a benchmark can count the background work an
// operation caused. It is for benchmarks and tests: with writes going on it
// may not return until ctx ends.
func (s *Store) Settle(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.inflight.Done()
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("pebblekv: flush %s: %w", s.desc, err)
	}
	return s.waitQuiet(ctx)
}

// WaitIdle waits, as Settle does, until no flush or compaction has run for
// settleQuiet, but flushes nothing: what the memtables hold stays only in
// the write-ahead log, as a crash would find it. It is for benchmarks and
// tests.
func (s *Store) WaitIdle(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.inflight.Done()
	return s.waitQuiet(ctx)
}

func (s *Store) waitQuiet(ctx context.Context) error {
	quietSince := time.Now()
	for time.Since(quietSince) < settleQuiet {
		if s.jobs.running.Load() > 0 || s.db.Metrics().Compact.NumInProgress > 0 {
			quietSince = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// settleQuiet is how long Settle waits for no background work: Pebble starts
// the compactions a flush makes due within milliseconds of it.
const settleQuiet = 500 * time.Millisecond

// SpaceLow reports whether the store's disk is nearly full, so that writes
// which add data should be refused while deletions, which free space, go on
// (see Options.Reserve). Always false for a store that does not watch its
// disk.
func (s *Store) SpaceLow() bool {
	return s.space != nil && (s.space.low.Load() || s.space.exhausted.Load()) || s.readOnly.Load()
}

// DiskStats are the store's disk figures, for metrics and operators.
type DiskStats struct {
	SpaceStats
	// ReadOnly is set while the store, opened on a full disk, waits for
	// space to reopen for writing: every write is refused.
	ReadOnly bool
	// SlowOperations is how many disk writes and syncs took longer than
	// Options.SlowDiskThreshold since the store opened.
	SlowOperations int64
	// ReadErrors is how many reads the storage failed (kv.ErrIO), or found
	// corrupt data.
	ReadErrors int64
	// BackgroundErrors is how many flushes and compactions failed (Pebble
	// retries them).
	BackgroundErrors int64
	// RefusedWrites is how many Updates were refused with kv.ErrNoSpace.
	RefusedWrites int64
}

// Disk returns the store's disk figures.
func (s *Store) Disk() DiskStats {
	return DiskStats{SpaceStats: s.space.stats(), ReadOnly: s.readOnly.Load(), SlowOperations: s.slowOps.Load(),
		ReadErrors: s.readErrors.Load(), BackgroundErrors: s.bgErrors.Load(), RefusedWrites: s.refused.Load()}
}
