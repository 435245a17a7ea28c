package pgkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lethe-db/lethe/kv"
)

// txMode is the kind of transaction a txn runs.
type txMode int

const (
	modeView txMode = iota
	modeUpdate
	modeUpdateNoSync
	// modeStatement runs one statement on its own, outside a transaction
	// block: PostgreSQL reads it in one snapshot (ViewKeys).
	modeStatement
)

// beginSQL holds the statements that open a transaction of each mode. They
// are sent with the transaction's first read or write, not on their own.
var beginSQL = [...][]string{
	modeView:         {"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"},
	modeUpdate:       {"BEGIN ISOLATION LEVEL SERIALIZABLE"},
	modeUpdateNoSync: {"BEGIN ISOLATION LEVEL SERIALIZABLE", "SET LOCAL synchronous_commit = off"},
	modeStatement:    nil,
}

// Limits on the writes a transaction buffers before it sends them without
// waiting for a read or the commit: they bound the memory a large
// transaction holds in its pending batch, and the size of one pipelined
// round trip.
const (
	maxBatchStatements = 512
	maxBatchBytes      = 1 << 20
)

// rollbackTimeout bounds the ROLLBACK sent when a transaction ends without
// committing (fn failed, panicked or met a conflict), also when the caller's
// context has ended. If it fails, the pool closes the connection, and the
// server rolls back when it notices.
const rollbackTimeout = 5 * time.Second

// errEnded is returned by a transaction used after its function returned, for
// example through an iterator it left open.
var errEnded = errors.New("pgkv: transaction used after its function returned")

// txn is a transaction on one pooled connection: the kv.Tx of Update, and,
// wrapped in a reader, the kv.Reader of View. Its methods may be called from
// several goroutines; they take turns on the connection.
type txn struct {
	ctx  context.Context // the View's or Update's, for the duration of the call
	s    *Store
	sql  *statements
	mode txMode

	mu struct {
		sync.Mutex
		// conn is the transaction's connection; nil once it has ended.
		conn *pgxpool.Conn
		// batch holds the statements not sent yet: the BEGIN until the first
		// round trip, then the writes buffered since the last one.
		batch *pgx.Batch
		// batchBytes is the size of the keys and values in batch.
		batchBytes int
		// writes counts the writes in batch and run.
		writes int
		// run holds the latest writes of one kind, Puts or Deletes, not yet
		// queued in batch: sent as one statement (flushRun), they cost
		// PostgreSQL one statement's overhead instead of one each.
		run writeRun
		// begun is set once the BEGIN has been sent.
		begun bool
		// err is the first error a round trip met. PostgreSQL aborts the
		// transaction on any error, so every later call returns it.
		err error
		// committing is set once the COMMIT is on its way: a connection lost
		// from then on leaves the outcome unknown.
		committing bool
		// ahead holds the keys Prefetch read and the transaction has not
		// written since, with their values; nil for an absent key.
		ahead map[string][]byte
	}
}

func newTxn(ctx context.Context, s *Store, conn *pgxpool.Conn, mode txMode) *txn {
	t := &txn{ctx: ctx, s: s, sql: &s.sql, mode: mode}
	t.mu.conn = conn
	t.mu.batch = &pgx.Batch{}
	for _, q := range beginSQL[mode] {
		t.mu.batch.Queue(q)
	}
	return t
}

var _ kv.Tx = (*txn)(nil)

// reader is the kv.Reader of a View. It is a type of its own so that a View's
// function cannot reach the write methods, even by a type assertion.
type reader struct{ t *txn }

var (
	_ kv.Reader      = reader{}
	_ kv.Prefetcher  = reader{}
	_ kv.Prefetcher  = (*txn)(nil)
	_ kv.BatchGetter = reader{}
	_ kv.BatchGetter = (*txn)(nil)
	_ kv.Counter     = reader{}
	_ kv.Counter     = (*txn)(nil)
)

// Get implements kv.Reader.
func (r reader) Get(key []byte) ([]byte, error) { return r.t.Get(key) }

// Prefetch implements kv.Prefetcher.
func (r reader) Prefetch(keys [][]byte) error { return r.t.Prefetch(keys) }

// GetBatch implements kv.BatchGetter.
func (r reader) GetBatch(keys [][]byte) ([][]byte, error) { return r.t.GetBatch(keys) }

// Scan implements kv.Reader.
func (r reader) Scan(start, end []byte, reverse bool) kv.Iterator {
	return r.t.Scan(start, end, reverse)
}

// Count implements kv.Counter.
func (r reader) Count(start, end []byte, limit int64) (int64, error) {
	return r.t.Count(start, end, limit)
}

// roundTrip sends the pending statements and then q, if q is not empty, in
// one pipelined round trip. It passes q's rows to read, or executes q when
// read is nil. Any error is recorded as the transaction's. t.mu must be held.
func (t *txn) roundTrip(op, q string, args []any, read func(pgx.Rows) error) error {
	if t.mu.conn == nil {
		return errEnded
	}
	if t.mu.err != nil {
		return t.mu.err
	}
	t.flushRun()
	b := t.mu.batch
	pending := b.Len()
	if q != "" {
		b.Queue(q, args...)
	}
	if b.Len() == 0 {
		return nil
	}
	t.mu.batch, t.mu.batchBytes, t.mu.writes, t.mu.begun = &pgx.Batch{}, 0, 0, true

	t.s.roundTrips.Add(1)
	br := t.mu.conn.SendBatch(t.ctx, b)
	var err error
	for range pending {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if err == nil && q != "" {
		if read == nil {
			var tag pgconn.CommandTag
			tag, err = br.Exec()
			if err == nil && q == "COMMIT" && tag.String() != "COMMIT" {
				err = fmt.Errorf("COMMIT returned %q", tag.String())
			}
		} else {
			err = readRows(br, read)
		}
	}
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		t.mu.err = mapError(t.ctx, op, err)
		return t.mu.err
	}
	return nil
}

// readRows passes the rows of the next result of br to read.
func readRows(br pgx.BatchResults, read func(pgx.Rows) error) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := read(rows); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// columns sets dst[i] to the bytes of column i of the current row. They are
// the driver's buffer in the binary format (pgx's default, a bytea's raw
// bytes), valid until rows moves; in the text format (simple protocol, set in
// the DSN), pgx decodes them.
func columns(rows pgx.Rows, dst [][]byte) error {
	fields := rows.FieldDescriptions()
	binary := true
	for i := range dst {
		binary = binary && fields[i].Format == pgx.BinaryFormatCode
	}
	if binary {
		copy(dst, rows.RawValues())
		return nil
	}
	vals, err := rows.Values()
	if err != nil {
		return fmt.Errorf("decode row: %w", err)
	}
	for i := range dst {
		b, ok := vals[i].([]byte)
		if !ok {
			return fmt.Errorf("column %d is %T, want bytea", i, vals[i])
		}
		dst[i] = b
	}
	return nil
}

// nonNil returns b, or an empty slice for nil, which pgx would send as NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Get implements kv.Reader. The value is a copy the caller owns.
func (t *txn) Get(key []byte) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.mu.ahead[string(key)]; ok && t.mu.err == nil && t.mu.conn != nil {
		if v == nil {
			return nil, kv.ErrNotFound
		}
		return append([]byte{}, v...), nil
	}
	var (
		value []byte
		found bool
		cols  [1][]byte
	)
	err := t.roundTrip("get", t.sql.get, []any{nonNil(key)}, func(rows pgx.Rows) error {
		if !rows.Next() {
			return nil
		}
		if err := columns(rows, cols[:]); err != nil {
			return err
		}
		value, found = append([]byte{}, cols[0]...), true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, kv.ErrNotFound
	}
	return value, nil
}

// Count implements kv.Counter: PostgreSQL counts the range, after the
// pending writes, in one round trip.
func (t *txn) Count(start, end []byte, limit int64) (int64, error) {
	var max any // NULL: LIMIT NULL is no limit
	if limit >= 0 {
		max = limit + 1
	}
	q, args := t.sql.countFrom, []any{nonNil(start), max}
	if end != nil {
		if bytes.Compare(start, end) >= 0 {
			return 0, nil
		}
		q, args = t.sql.countRange, []any{nonNil(start), end, max}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var n int64
	err := t.roundTrip("count", q, args, func(rows pgx.Rows) error {
		if rows.Next() {
			return rows.Scan(&n)
		}
		return nil
	})
	return n, err
}

// GetBatch implements kv.BatchGetter: the keys are looked up in one
// statement, sent with the pending writes in one round trip.
func (t *txn) GetBatch(keys [][]byte) ([][]byte, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	arg := make([][]byte, len(keys))
	at := make(map[string][]int, len(keys)) // a key asked for twice gets its value twice
	for i, k := range keys {
		arg[i] = nonNil(k)
		at[string(k)] = append(at[string(k)], i)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	vals := make([][]byte, len(keys))
	var cols [2][]byte
	err := t.roundTrip("get", t.sql.getMany, []any{arg}, func(rows pgx.Rows) error {
		for rows.Next() {
			if err := columns(rows, cols[:]); err != nil {
				return err
			}
			for _, i := range at[string(cols[0])] {
				vals[i] = append([]byte{}, cols[1]...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return vals, nil
}

// Prefetch implements kv.Prefetcher: the keys are looked up in one
// statement, sent with the pending writes in one round trip (with the BEGIN,
// when it is the transaction's first).
func (t *txn) Prefetch(keys [][]byte) error {
	vals, err := t.GetBatch(keys)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.ahead == nil {
		t.mu.ahead = make(map[string][]byte, len(keys))
	}
	for i, k := range keys {
		t.mu.ahead[string(k)] = vals[i]
	}
	return nil
}

// forget drops what Prefetch kept of key, which the transaction is writing.
// t.mu must be held.
func (t *txn) forget(key []byte) {
	if t.mu.ahead != nil {
		delete(t.mu.ahead, string(key))
	}
}

// queueWrite buffers the write statement q, whose keys and values are size
// bytes, after the run's writes, and sends the buffer once it is large. t.mu
// must be held.
func (t *txn) queueWrite(q string, size int, args ...any) error {
	if err := t.writable(); err != nil {
		return err
	}
	t.flushRun()
	t.mu.batch.Queue(q, args...)
	return t.counted(size)
}

// queueRun adds a Put of key and value, or with del a Delete of key, to the
// run of writes, which first goes to the batch if it holds the other kind.
// t.mu must be held.
func (t *txn) queueRun(del bool, key, value []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	r := &t.mu.run
	if len(r.keys) > 0 && r.del != del {
		t.flushRun() // empties *r
	}
	r.del = del
	r.keys = append(r.keys, key)
	if !del {
		r.values = append(r.values, value)
	}
	return t.counted(len(key) + len(value))
}

// writable returns why the transaction can take no more writes, if it
// cannot. t.mu must be held.
func (t *txn) writable() error {
	if t.mu.conn == nil {
		return errEnded
	}
	return t.mu.err
}

// counted counts a write of size bytes just buffered, and sends the buffer
// once it is large. t.mu must be held.
func (t *txn) counted(size int) error {
	t.mu.batchBytes += size
	t.mu.writes++
	if t.mu.writes >= maxBatchStatements || t.mu.batchBytes >= maxBatchBytes {
		return t.roundTrip("write", "", nil, nil)
	}
	return nil
}

// writeRun is a run of writes of one kind in the order they were made: Puts
// (values holds theirs) or Deletes (del).
type writeRun struct {
	del    bool
	keys   [][]byte
	values [][]byte
}

// flushRun queues the run of writes in the batch as one statement (one
// write alone as its own statement) and empties it. A run's writes commute
// but for writes of one key, where the last Put wins: a statement may
// write a row once, so only the last Put of each key goes. t.mu must be held.
func (t *txn) flushRun() {
	r := &t.mu.run
	switch {
	case len(r.keys) == 0:
		return
	case len(r.keys) == 1 && r.del:
		t.mu.batch.Queue(t.sql.del, r.keys[0])
	case len(r.keys) == 1:
		t.mu.batch.Queue(t.sql.put, r.keys[0], r.values[0])
	case r.del:
		t.mu.batch.Queue(t.sql.delMany, r.keys)
	default:
		keys, values := lastPuts(r.keys, r.values)
		t.mu.batch.Queue(t.sql.putMany, keys, values)
	}
	// The batch holds the slices until it is sent: a new run starts afresh.
	*r = writeRun{}
}

// lastPuts returns the keys of a run of Puts, each once, with the value of
// its last Put.
func lastPuts(keys, values [][]byte) ([][]byte, [][]byte) {
	last := make(map[string]int, len(keys))
	for i, k := range keys {
		last[string(k)] = i
	}
	if len(last) == len(keys) {
		return keys, values
	}
	ks, vs := make([][]byte, 0, len(last)), make([][]byte, 0, len(last))
	for i, k := range keys {
		if last[string(k)] == i {
			ks, vs = append(ks, k), append(vs, values[i])
		}
	}
	return ks, vs
}

// Put implements kv.Tx. The write is sent with the transaction's next read or
// its commit, so an error it meets is reported there.
func (t *txn) Put(key, value []byte) error {
	k, v := copyPair(key, value)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forget(k)
	return t.queueRun(false, k, v)
}

// queuePair buffers the write statement q of key and value (Create).
func (t *txn) queuePair(q string, key, value []byte) error {
	k, v := copyPair(key, value)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forget(k)
	return t.queueWrite(q, len(k)+len(v), k, v)
}

// copyPair copies a key and a value into one allocation: pgx encodes the
// arguments only when the batch is sent, after the caller may have reused
// them.
func copyPair(key, value []byte) (k, v []byte) {
	buf := make([]byte, len(key)+len(value))
	k, v = buf[:len(key):len(key)], buf[len(key):]
	copy(k, key)
	copy(v, value)
	return k, v
}

var _ kv.Inserter = (*txn)(nil)

// Insert implements kv.Inserter with INSERT ... ON CONFLICT DO NOTHING, in
// one round trip with the buffered writes. The conflict check reads the
// index with a dirty snapshot, which takes no predicate lock: a concurrent
// transaction's reads near the key still conflict with the insert itself, and
// a concurrent insert of the same key waits for this transaction and then
// fails to serialize (or this one does).
func (t *txn) Insert(key, value []byte) (bool, error) {
	k, v := copyPair(key, value)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forget(k)
	inserted := false
	err := t.roundTrip("insert", t.sql.insert, []any{k, v}, func(rows pgx.Rows) error {
		inserted = rows.Next()
		return nil
	})
	return inserted, err
}

var _ kv.Creator = (*txn)(nil)

// Create implements kv.Creator with a plain INSERT, sent later like Put:
// the primary key's unique check fails it (SQLSTATE 23505, kv.ErrExists) if
// the key is present, and PostgreSQL then aborts the transaction. The check
// takes no predicate lock, as Insert's does not; a concurrent create of the
// same key waits for this transaction, then fails.
func (t *txn) Create(key, value []byte) error { return t.queuePair(t.sql.create, key, value) }

// Delete implements kv.Tx; like Put, it is sent later.
func (t *txn) Delete(key []byte) error {
	k := append([]byte{}, key...)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forget(k)
	return t.queueRun(true, k, nil)
}

// DeleteSized implements kv.Tx. PostgreSQL reclaims space by vacuum whatever
// the size, so the hint is ignored.
func (t *txn) DeleteSized(key []byte, _ int) error { return t.Delete(key) }

// DeleteRange implements kv.Tx; like Put, it is sent later.
func (t *txn) DeleteRange(start, end []byte) error {
	s := append([]byte{}, start...)
	if end != nil && bytes.Compare(s, end) >= 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.mu.ahead {
		if k >= string(s) && (end == nil || k < string(end)) {
			delete(t.mu.ahead, k)
		}
	}
	if end == nil {
		return t.queueWrite(t.sql.delFrom, len(s), s)
	}
	e := append([]byte{}, end...)
	return t.queueWrite(t.sql.delRange, len(s)+len(e), s, e)
}

// conflicted reports whether a statement of the transaction met a conflict.
func (t *txn) conflicted() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return errors.Is(t.mu.err, kv.ErrConflict)
}

// lostBeforeCommit reports whether the transaction's connection was lost
// before its COMMIT was sent: the server rolled it back, and it may run
// again on another connection.
func (t *txn) lostBeforeCommit() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return errors.Is(t.mu.err, kv.ErrUnavailable) && !t.mu.committing
}

// failed returns the first error the transaction's statements met.
func (t *txn) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.err
}

// commit sends the buffered writes and COMMIT in one round trip. A
// transaction that sent nothing has nothing to commit and costs none.
func (t *txn) commit() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.err != nil {
		return t.mu.err
	}
	if (!t.mu.begun && t.mu.writes == 0) || t.mode == modeStatement {
		return nil
	}
	t.mu.committing = t.mode != modeView
	return t.roundTrip("commit", "COMMIT", nil, nil)
}

// end rolls back the transaction if it is still open on its connection and
// returns the connection to the pool. It runs when View or Update returns,
// also by a panic.
func (t *txn) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	conn := t.mu.conn
	if conn == nil {
		return
	}
	t.mu.conn = nil
	pg := conn.Conn().PgConn()
	if !pg.IsClosed() && !pg.IsBusy() && pg.TxStatus() != 'I' {
		t.s.roundTrips.Add(1)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), rollbackTimeout)
		// An error leaves the connection in the transaction: Release then
		// closes it instead of pooling it.
		_, _ = conn.Exec(ctx, "ROLLBACK")
		cancel()
	}
	conn.Release()
}
