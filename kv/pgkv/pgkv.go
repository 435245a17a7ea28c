// Package pgkv implements the [kv.Store] contract on PostgreSQL 15 or later,
// so that several stateless Lethe gateways can share one database.
//
// # Layout
//
// The store keeps everything in one PostgreSQL schema of its own (Options.Schema,
// "lethe" by default), which [Open] creates and migrates: a table kv(key bytea
// primary key, value bytea not null) holds the data, and a table meta holds the
// schema version (see schema.go). PostgreSQL compares bytea values with memcmp
// and then by length, which is exactly the bytewise order the contract needs,
// whatever the database's collation.
//
// The primary key's btree limits keys to about 2,700 bytes (more if they
// compress): an Update with a longer key fails with SQLSTATE 54000. Values
// may be up to PostgreSQL's 1 GB; large ones are compressed and stored out of
// line (TOAST).
//
// # Transactions
//
//   - [Store.View] runs in a REPEATABLE READ READ ONLY transaction: all its
//     statements read the snapshot taken by the first one.
//   - [Store.Update] runs in a SERIALIZABLE transaction. Serialization failures
//     and deadlocks (SQLSTATE 40001, 40P01) are [kv.ErrConflict], and Update
//     retries them itself after a short jittered backoff, for as long as its
//     context allows: fn must be safe to run more than once.
//   - [Store.UpdateNoSync] is Update with synchronous_commit off for that
//     transaction: PostgreSQL acknowledges the commit before its WAL record is
//     flushed, and the next synchronous commit flushes it.
//
// Durability is PostgreSQL's: a committed Update is durable when Update returns
// if the server runs with fsync and synchronous_commit on (its defaults).
// Concurrent commits share WAL flushes in PostgreSQL as group commit.
//
// # Round trips
//
// A transaction holds one pooled connection from its first statement to its end.
// Writes (Put, Delete, DeleteRange) are buffered and sent, pipelined, with the
// next read or with the COMMIT; BEGIN is sent with the first statement. A View
// with one Get therefore costs two round trips (BEGIN+SELECT, COMMIT), and an
// Update that reads a key and writes it back costs two (BEGIN+SELECT,
// INSERT+COMMIT). Because writes are deferred, an error a write meets (a full
// disk, say) is reported by the next read or by Update, not by Put itself.
// Reads see the transaction's own writes because they are statements in the
// same PostgreSQL transaction, sent after the writes.
//
// Scans are streamed in pages with keyset pagination (WHERE key > last ORDER BY
// key LIMIT n), the first page small so that a short scan costs one round trip,
// later ones larger; a scan never holds more than one page in memory.
//
// # Sharing
//
// The store does not implement [kv.Exclusive]: other processes may write the
// same schema at any time, which is the point of this backend. It uses no
// advisory locks, LISTEN/NOTIFY or extensions, only what CockroachDB and
// YugabyteDB also offer. What would differ there:
//
//   - CockroachDB runs transactions SERIALIZABLE unless configured otherwise,
//     which only makes Views stronger, but even its read-only transactions may
//     fail with a retryable error (40001, a read uncertainty): View would then
//     need to retry as Update does. It does not honour synchronous_commit, so
//     UpdateNoSync would be a plain Update (or the SET must go).
//   - YugabyteDB hash-shards a primary key unless told otherwise: the table
//     must be created with PRIMARY KEY (key ASC) there, or every scan reads
//     the whole table. Its replication, not synchronous_commit, decides
//     durability.
//   - Both report disk-full and corruption errors with their own codes, which
//     would surface as plain errors rather than kv.ErrNoSpace and kv.ErrIO;
//     and both do schema changes in transactions with caveats, which Open's
//     migration would have to respect.
package pgkv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lethe-db/lethe/kv"
)

// Options configures [Open].
type Options struct {
	// DSN is the PostgreSQL connection string, as a URL
	// (postgres://user@host:5432/db?sslmode=disable) or as key=value pairs;
	// pgx's and libpq's parameters and PG* environment variables apply.
	// Required.
	DSN string

	// Schema is the PostgreSQL schema holding the store's tables; Open creates
	// it if missing. Stores with different schemas in one database are
	// independent. The default is DefaultSchema.
	Schema string

	// MaxConns is the size of the connection pool: how many transactions the
	// store runs at once; more wait for a connection. Zero means pgx's
	// default, the larger of 4 and the number of CPUs (or pool_max_conns in
	// the DSN).
	MaxConns int

	// firstPageRows, if set, is the number of rows in a scan's first page
	// instead of the constant firstPageRows: tests set it small to cross
	// many page boundaries with few keys.
	firstPageRows int
}

// cancelDeadline is how long a statement whose context has ended may take to
// stop after the server was asked to cancel it, before pgx closes the
// connection.
const cancelDeadline = 2 * time.Second

// DefaultSchema is the schema used when Options.Schema is empty.
const DefaultSchema = "lethe"

// maxIdentifierLen is PostgreSQL's limit on identifiers (NAMEDATALEN-1): a
// longer schema name would be silently truncated, and two stores could meet
// in one schema.
const maxIdentifierLen = 63

// EnsureDefaults fills the zero fields of o with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
}

// Validate reports every problem with o at once.
func (o *Options) Validate() error {
	var errs []error
	if o.DSN == "" {
		errs = append(errs, errors.New("pgkv: Options.DSN is required"))
	}
	if len(o.Schema) > maxIdentifierLen {
		errs = append(errs, fmt.Errorf("pgkv: schema name %q is longer than %d bytes", o.Schema, maxIdentifierLen))
	}
	if o.MaxConns < 0 {
		errs = append(errs, fmt.Errorf("pgkv: Options.MaxConns is negative (%d)", o.MaxConns))
	}
	return errors.Join(errs...)
}

// Store is a [kv.Store] in a PostgreSQL schema. It is safe for concurrent use,
// and any number of Stores, in any number of processes, may share a schema.
//
//	s, err := pgkv.Open(ctx, pgkv.Options{DSN: "postgres://lethe@db/lethe"})
//	if err != nil { ... }
//	defer s.Close()
//	err = s.Update(ctx, func(tx kv.Tx) error {
//		return tx.Put([]byte("k"), []byte("v"))
//	})
type Store struct {
	pool      *pgxpool.Pool
	sql       statements
	firstPage int // rows in the first page of a scan
	closed    atomic.Bool
	clock     clock // the database's time (clock.go)
	// background counts the store's goroutines (a clock reading), which
	// Close waits for.
	background sync.WaitGroup
	// retries and reconnects count transactions run again after a conflict
	// and after a lost connection, roundTrips the batches of statements sent
	// (Stats).
	retries, reconnects, roundTrips atomic.Int64
}

// Stats are the store's counters since Open.
type Stats struct {
	// Retries counts transactions run again after a serialization conflict
	// or a deadlock with a concurrent one; Reconnects those run again after
	// losing their connection before committing.
	Retries, Reconnects int64
	// RoundTrips counts the times the store sent statements and waited for
	// their results (in a transaction, or one statement of ViewKeys): what
	// a request costs in network latency and in the database's per-message
	// work, whatever the statements.
	RoundTrips int64
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{Retries: s.retries.Load(), Reconnects: s.reconnects.Load(), RoundTrips: s.roundTrips.Load()}
}

var _ kv.Store = (*Store)(nil)

// Open connects to PostgreSQL, creates or migrates the store's schema, and
// returns the store. It fails if the schema was written by a newer version of
// this package.
func Open(ctx context.Context, opts Options) (*Store, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(opts.DSN)
	if err != nil {
		// pgconn's parse error quotes the DSN with its password masked.
		return nil, fmt.Errorf("pgkv: parse DSN: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = int32(opts.MaxConns)
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "lethe"
	}
	// When a context ends during a statement, ask the server to cancel it and
	// wait for the answer, so that the connection can be reused after a
	// ROLLBACK; break it only if the server does not answer soon. pgx's
	// default breaks the connection at once (and cancels the statement from
	// another), which costs a new connection for every cancelled call.
	cfg.ConnConfig.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: cancelDeadline}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgkv: create connection pool: %w", err)
	}
	s := &Store{pool: pool, sql: newStatements(opts.Schema), firstPage: firstPageRows}
	if opts.firstPageRows > 0 {
		s.firstPage = opts.firstPageRows
	}
	if err := migrate(ctx, pool, opts.Schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgkv: open schema %q: %w", opts.Schema, err)
	}
	return s, nil
}

// Close closes the connection pool, after waiting for the transactions in
// flight to finish. Every method of a closed store returns [kv.ErrClosed];
// Close itself is safe to call more than once.
func (s *Store) Close() error {
	// Closed under the clock's lock, under which Now checks it before it
	// starts a background reading: none starts once Close waits for them.
	s.clock.mu.Lock()
	already := s.closed.Swap(true)
	s.clock.mu.Unlock()
	if already {
		return nil
	}
	s.pool.Close()
	s.background.Wait()
	return nil
}

// acquire returns a connection for a transaction, or kv.ErrClosed.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	if s.closed.Load() {
		return nil, kv.ErrClosed
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		if s.closed.Load() { // closed since the check above
			return nil, kv.ErrClosed
		}
		return nil, mapError(ctx, "acquire connection", err)
	}
	return conn, nil
}

// View runs fn in a read-only transaction over one snapshot of the store,
// taken by its first read. fn's error is returned unchanged; a panic in fn
// ends the transaction and propagates. The [kv.Reader] may be used from
// several goroutines, one call at a time, but not after fn returns.
func (s *Store) View(ctx context.Context, fn func(kv.Reader) error) error {
	return s.view(ctx, modeView, fn)
}

var _ kv.KeyViewer = (*Store)(nil)

// ViewKeys implements [kv.KeyViewer]: the keys are read in one statement
// outside a transaction block, which PostgreSQL reads in one snapshot.
func (s *Store) ViewKeys(ctx context.Context, keys [][]byte) ([][]byte, error) {
	var vals [][]byte
	err := s.view(ctx, modeStatement, func(r kv.Reader) error {
		var err error
		vals, err = r.(reader).t.GetBatch(keys)
		return err
	})
	return vals, err
}

// view runs fn in a transaction of mode (modeView; modeStatement, when fn
// runs a single statement), again on a new connection if it lost its own.
func (s *Store) view(ctx context.Context, mode txMode, fn func(kv.Reader) error) error {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		retry, err := s.viewOnce(ctx, mode, fn)
		if !retry || !s.reconnectPause(ctx, attempt) {
			return err
		}
		s.reconnects.Add(1)
	}
}

// viewOnce runs one attempt of a View and reports whether it lost its
// connection, so that it may run again on another.
func (s *Store) viewOnce(ctx context.Context, mode txMode, fn func(kv.Reader) error) (retry bool, err error) {
	conn, err := s.acquire(ctx)
	if err != nil {
		return errors.Is(err, kv.ErrUnavailable), err
	}
	t := newTxn(ctx, s, conn, mode)
	defer t.end() // also on a panic in fn
	if err := fn(reader{t}); err != nil {
		return t.lostBeforeCommit(), err
	}
	err = t.commit()
	return t.lostBeforeCommit(), err
}

// Reconnection: a transaction that lost its connection before committing
// (the database restarting, failing over) runs again on a new one, up to
// reconnectTries times over about reconnectWait, so that a short outage is
// a slower request rather than a failed one; after that its error
// (kv.ErrUnavailable) is returned.
const (
	reconnectTries = 6
	reconnectWait  = 3 * time.Second
)

// reconnectPause waits before the attempt-th reconnection and reports
// whether to try again.
func (s *Store) reconnectPause(ctx context.Context, attempt int) bool {
	if attempt+1 >= reconnectTries {
		return false
	}
	pause := reconnectWait >> (reconnectTries - 1 - attempt) // doubling, summing to about reconnectWait
	timer := time.NewTimer(pause)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// Update runs fn in a serializable read-write transaction and commits it if
// fn returns nil; when Update returns nil the commit is durable. Reads in fn
// see the transaction's own writes. A conflict with a concurrent transaction
// rolls the transaction back and runs fn again after a short randomised pause,
// until it commits or ctx ends, so fn must be safe to run more than once.
// fn's error is returned unchanged; a panic in fn rolls back and propagates.
// A commit that fails for another reason returns the error wrapped: a full
// disk as [kv.ErrNoSpace]. If ctx ends or the connection fails while the
// COMMIT is on its way, the transaction may have committed although Update
// returns an error: as with any network database, the outcome is unknown.
func (s *Store) Update(ctx context.Context, fn func(kv.Tx) error) error {
	return s.update(ctx, fn, modeUpdate)
}

// UpdateNoSync is [Store.Update] without waiting for the commit's WAL flush
// (synchronous_commit off for this transaction): the commit is atomic and
// visible at once, but a server crash may lose it.
func (s *Store) UpdateNoSync(ctx context.Context, fn func(kv.Tx) error) error {
	return s.update(ctx, fn, modeUpdateNoSync)
}

// Retry backoff: the n-th retry of a conflicting Update waits a random time
// in [0, min(retryBase<<n, retryMax)), "full jitter", so that transactions
// that conflicted once do not meet again in lockstep.
const (
	retryBase = time.Millisecond
	retryMax  = 100 * time.Millisecond
)

// update runs attempts of an Update until one does not conflict.
func (s *Store) update(ctx context.Context, fn func(kv.Tx) error, mode txMode) error {
	lost := 0
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		retry, err := s.updateOnce(ctx, fn, mode)
		if errors.Is(err, kv.ErrUnavailable) {
			if !retry || !s.reconnectPause(ctx, lost) {
				return err
			}
			lost++
			s.reconnects.Add(1)
			continue
		}
		if !retry {
			return err
		}
		s.retries.Add(1)
		backoff := min(retryBase<<min(attempt, 16), retryMax)
		timer := time.NewTimer(rand.N(backoff) + 1)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// updateOnce runs one attempt of an Update and reports whether it met a
// conflict and should be retried.
func (s *Store) updateOnce(ctx context.Context, fn func(kv.Tx) error, mode txMode) (retry bool, err error) {
	conn, err := s.acquire(ctx)
	if err != nil {
		return errors.Is(err, kv.ErrUnavailable), err // nothing was sent
	}
	t := newTxn(ctx, s, conn, mode)
	defer t.end() // rolls back unless committed, also on a panic in fn
	fnErr := fn(t)
	if t.conflicted() || t.lostBeforeCommit() {
		// fn saw a conflict or lost its connection, whatever it made of
		// it: its reads are void, and nothing was committed.
		return true, t.failed()
	}
	if fnErr != nil {
		return false, fnErr
	}
	if err := t.commit(); err != nil {
		// A connection lost during the COMMIT leaves the outcome unknown:
		// never run fn again then.
		return errors.Is(err, kv.ErrConflict) || t.lostBeforeCommit(), err
	}
	return false, nil
}

// statements holds the SQL text of every statement the store runs, with the
// schema name quoted in. pgx prepares and caches each one per connection.
type statements struct {
	get                  string
	getMany              string // key = ANY($1): GetBatch
	put                  string
	putMany              string // Puts of distinct keys, from two arrays
	insert               string
	create               string // INSERT that fails on a present key: Create
	del                  string
	delMany              string // key = ANY($1)
	delFrom, delRange    string
	scanFrom, scanRange  string // forward, first page: key >= $1
	scanAfter, scanBelow string // forward, later pages: key > $1
	revFrom, revRange    string // reverse: key >= $1 [AND key < $2]
	countFrom            string // key >= $1, at most $2 (NULL: all)
	countRange           string // key >= $1 AND key < $2, at most $3
}

func newStatements(schema string) statements {
	t := pgx.Identifier{schema, "kv"}.Sanitize()
	sel := "SELECT key, value FROM " + t + " WHERE "
	return statements{
		get:     "SELECT value FROM " + t + " WHERE key = $1",
		getMany: sel + "key = ANY($1)",
		put:     "INSERT INTO " + t + " (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
		insert:  "INSERT INTO " + t + " (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING true",
		create:  "INSERT INTO " + t + " (key, value) VALUES ($1, $2)",
		putMany: "INSERT INTO " + t + " (key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[])" +
			" ON CONFLICT (key) DO UPDATE SET value = excluded.value",
		del:       "DELETE FROM " + t + " WHERE key = $1",
		delMany:   "DELETE FROM " + t + " WHERE key = ANY($1)",
		delFrom:   "DELETE FROM " + t + " WHERE key >= $1",
		delRange:  "DELETE FROM " + t + " WHERE key >= $1 AND key < $2",
		scanFrom:  sel + "key >= $1 ORDER BY key LIMIT $2",
		scanRange: sel + "key >= $1 AND key < $2 ORDER BY key LIMIT $3",
		scanAfter: sel + "key > $1 ORDER BY key LIMIT $2",
		scanBelow: sel + "key > $1 AND key < $2 ORDER BY key LIMIT $3",
		revFrom:   sel + "key >= $1 ORDER BY key DESC LIMIT $2",
		revRange:  sel + "key >= $1 AND key < $2 ORDER BY key DESC LIMIT $3",
		// The key index answers these alone (an index-only scan where the
		// visibility map allows), and only the count crosses the network.
		countFrom:  "SELECT count(*) FROM (SELECT FROM " + t + " WHERE key >= $1 LIMIT $2) s",
		countRange: "SELECT count(*) FROM (SELECT FROM " + t + " WHERE key >= $1 AND key < $2 LIMIT $3) s",
	}
}
