package pgkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/kv/kvtest"
	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

// TestMain runs the tests against the test binary's PostgreSQL server, stops
// it, and fails the package if a test left goroutines behind (pgxpool's
// background goroutines must stop on Close).
func TestMain(m *testing.M) { os.Exit(pgtest.RunLeakChecked(m)) }

// openSchema opens a store on schema, which may already hold one, and closes
// it when tb ends.
func openSchema(tb testing.TB, schema string, opts Options) *Store {
	tb.Helper()
	if opts.DSN == "" {
		opts.DSN = pgtest.DSN(tb)
	}
	opts.Schema = schema
	s, err := Open(context.Background(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// newStore opens a store on a fresh schema.
func newStore(tb testing.TB) *Store {
	tb.Helper()
	return openSchema(tb, pgtest.Schema(tb), Options{})
}

func TestContract(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kv.Store { return newStore(t) })
}

func put(t testing.TB, s kv.Store, key, value string) {
	t.Helper()
	err := s.Update(context.Background(), func(tx kv.Tx) error {
		return tx.Put([]byte(key), []byte(value))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// get returns the value at key, or "<absent>".
func get(t testing.TB, s kv.Store, key string) string {
	t.Helper()
	var got string
	err := s.View(context.Background(), func(r kv.Reader) error {
		v, err := r.Get([]byte(key))
		if errors.Is(err, kv.ErrNotFound) {
			got = "<absent>"
			return nil
		}
		got = string(v)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestConflictRetried: an Update whose read is overwritten by a concurrent
// commit fails to commit with a serialization failure, and Update runs its
// function again, which then sees the other commit.
func TestConflictRetried(t *testing.T) {
	s := newStore(t)
	put(t, s, "n", "1")
	increment := func(tx kv.Tx) (int, error) {
		v, err := tx.Get([]byte("n"))
		if err != nil {
			return 0, err
		}
		var n int
		if _, err := fmt.Sscan(string(v), &n); err != nil {
			return 0, err
		}
		return n + 1, tx.Put([]byte("n"), []byte(fmt.Sprint(n+1)))
	}

	read, other := make(chan struct{}), make(chan struct{})
	var attempts []int // the value each attempt of the slow Update wrote
	done := make(chan error, 1)
	go func() {
		done <- s.Update(context.Background(), func(tx kv.Tx) error {
			n, err := increment(tx)
			attempts = append(attempts, n)
			if len(attempts) == 1 {
				close(read)
				<-other // the other Update commits meanwhile
			}
			return err
		})
	}()
	<-read
	if err := s.Update(context.Background(), func(tx kv.Tx) error { _, err := increment(tx); return err }); err != nil {
		t.Fatal(err)
	}
	close(other)
	if err := <-done; err != nil {
		t.Fatalf("the conflicting Update: %v", err)
	}
	if want := []int{2, 3}; !slices.Equal(attempts, want) {
		t.Errorf("attempts wrote %v, want %v: one conflict, then a retry that saw the other commit", attempts, want)
	}
	if got := get(t, s, "n"); got != "3" {
		t.Errorf("n = %s, want 3", got)
	}
	if st := s.Stats(); st.Retries != 1 || st.Reconnects != 0 {
		t.Errorf("stats %+v, want one retry", st)
	}
}

// TestDeadlockRetried: two Updates that lock two keys in opposite orders
// deadlock; PostgreSQL aborts one (SQLSTATE 40P01), whose read returns
// kv.ErrConflict inside its function, and Update retries it even though the
// function wrapped the error in its own.
func TestDeadlockRetried(t *testing.T) {
	// The server waits deadlock_timeout (1s by default) before it looks for
	// a deadlock; the superuser the tests connect as may shorten it.
	dsn := pgtest.DSN(t)
	switch {
	case !strings.HasPrefix(dsn, "postgres"):
		dsn += " deadlock_timeout=50ms"
	case strings.Contains(dsn, "?"):
		dsn += "&deadlock_timeout=50ms"
	default:
		dsn += "?deadlock_timeout=50ms"
	}
	s := openSchema(t, pgtest.Schema(t), Options{DSN: dsn})
	put(t, s, "a", "0")
	put(t, s, "b", "0")

	var sawConflict atomic.Int32
	locked := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	lockBoth := func(me int, first, second string) func(kv.Tx) error {
		attempt := 0
		return func(tx kv.Tx) error {
			attempt++
			// A read sends the buffered write: the row is locked when it returns.
			lock := func(key string) error {
				if err := tx.Put([]byte(key), []byte(fmt.Sprint(me))); err != nil {
					return err
				}
				_, err := tx.Get([]byte(key))
				if errors.Is(err, kv.ErrConflict) {
					sawConflict.Add(1)
				}
				return err
			}
			if err := lock(first); err != nil {
				return fmt.Errorf("updater %d: %w", me, err)
			}
			if attempt == 1 {
				close(locked[me])
				<-locked[1-me]
			}
			if err := lock(second); err != nil {
				return fmt.Errorf("updater %d: %w", me, err)
			}
			return nil
		}
	}
	var wg sync.WaitGroup
	for me, keys := range [][2]string{{"a", "b"}, {"b", "a"}} {
		wg.Go(func() {
			if err := s.Update(context.Background(), lockBoth(me, keys[0], keys[1])); err != nil {
				t.Errorf("updater %d: %v", me, err)
			}
		})
	}
	wg.Wait()
	if sawConflict.Load() == 0 {
		t.Error("no read met kv.ErrConflict: the deadlock was not provoked")
	}
	if a, b := get(t, s, "a"), get(t, s, "b"); a != b {
		t.Errorf("a = %s, b = %s: the updaters' writes interleaved", a, b)
	}
}

// TestConcurrentIncrements: two stores on one schema (two gateways), each
// with several goroutines incrementing one counter: every increment commits
// exactly once.
func TestConcurrentIncrements(t *testing.T) {
	schema := pgtest.Schema(t)
	stores := []*Store{openSchema(t, schema, Options{MaxConns: 3}), openSchema(t, schema, Options{MaxConns: 3})}
	const perStore, perWorker = 3, 20
	var calls atomic.Int64
	var wg sync.WaitGroup
	for _, s := range stores {
		for range perStore {
			wg.Go(func() {
				for range perWorker {
					err := s.Update(context.Background(), func(tx kv.Tx) error {
						calls.Add(1)
						v, err := tx.Get([]byte("counter"))
						n := 0
						if err == nil {
							_, err = fmt.Sscan(string(v), &n)
						} else if errors.Is(err, kv.ErrNotFound) {
							err = nil
						}
						if err != nil {
							return err
						}
						return tx.Put([]byte("counter"), []byte(fmt.Sprint(n+1)))
					})
					if err != nil {
						t.Errorf("increment: %v", err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	want := len(stores) * perStore * perWorker
	if got := get(t, stores[1], "counter"); got != fmt.Sprint(want) {
		t.Errorf("counter = %s, want %d", got, want)
	}
	t.Logf("%d increments took %d attempts", want, calls.Load())
}

// TestClosed: every method of a closed store returns kv.ErrClosed, without
// running its function; an Update in flight when Close is called finishes
// first.
func TestClosed(t *testing.T) {
	s := newStore(t)
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Update(context.Background(), func(tx kv.Tx) error {
			close(inside)
			<-release
			return tx.Put([]byte("k"), []byte("v"))
		})
	}()
	<-inside
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the Update in flight at Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context.Background()
	called := false
	for name, err := range map[string]error{
		"View":         s.View(ctx, func(kv.Reader) error { called = true; return nil }),
		"Update":       s.Update(ctx, func(kv.Tx) error { called = true; return nil }),
		"UpdateNoSync": s.UpdateNoSync(ctx, func(kv.Tx) error { called = true; return nil }),
	} {
		if !errors.Is(err, kv.ErrClosed) {
			t.Errorf("%s after Close = %v, want kv.ErrClosed", name, err)
		}
	}
	if called {
		t.Error("a function ran on a closed store")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestContextCancelledInside: a context cancelled while fn runs fails its
// next read with the context's error, which Update returns; nothing commits,
// and the store goes on (the connection pgx closed is not reused).
func TestContextCancelledInside(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	var readErr error
	err := s.Update(ctx, func(tx kv.Tx) error {
		if err := tx.Put([]byte("k"), []byte("v")); err != nil {
			return err
		}
		cancel()
		_, readErr = tx.Get([]byte("k"))
		return readErr
	})
	if !errors.Is(err, context.Canceled) || !errors.Is(readErr, context.Canceled) {
		t.Errorf("Update = %v, read = %v; want context.Canceled", err, readErr)
	}
	if got := get(t, s, "k"); got != "<absent>" {
		t.Errorf("k = %q after a cancelled Update", got)
	}
	put(t, s, "k", "v2")
	if got := get(t, s, "k"); got != "v2" {
		t.Errorf("k = %q, want v2", got)
	}
}

// TestCancelWhileBlocked: an Update whose context ends while it waits for a
// row lock returns the context's error, its statement stops waiting on the
// server too, so that it holds no locks behind a caller that has gone, and
// the transaction holding the lock commits.
func TestCancelWhileBlocked(t *testing.T) {
	s := newStore(t)
	put(t, s, "k", "0")
	admin, err := pgx.Connect(context.Background(), pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	// lockWaiters counts the sessions waiting for a lock on this database.
	lockWaiters := func() int {
		var n int
		err := admin.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()").Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}

	locked, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		holder <- s.Update(context.Background(), func(tx kv.Tx) error {
			if err := tx.Put([]byte("k"), []byte("holder")); err != nil {
				return err
			}
			if _, err := tx.Get([]byte("k")); err != nil { // sends the write: k is locked
				return err
			}
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	ctx, cancel := context.WithCancel(context.Background())
	blocked := make(chan error, 1)
	go func() {
		blocked <- s.Update(ctx, func(tx kv.Tx) error {
			if err := tx.Put([]byte("k"), []byte("blocked")); err != nil {
				return err
			}
			_, err := tx.Get([]byte("k"))
			return err
		})
	}()
	waitFor("the second Update to wait for the lock", func() bool { return lockWaiters() == 1 })
	cancel()
	if err := <-blocked; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled Update = %v, want context.Canceled", err)
	}
	waitFor("the server to stop the cancelled statement", func() bool { return lockWaiters() == 0 })
	close(release)
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "k"); got != "holder" {
		t.Errorf("k = %q, want holder", got)
	}
}

// TestTransactionEnded: an iterator or a transaction kept past the end of its
// function fails instead of touching a connection that is no longer its own.
func TestTransactionEnded(t *testing.T) {
	s := newStore(t)
	put(t, s, "a", "1")
	var (
		it   kv.Iterator
		kept kv.Tx
	)
	if err := s.View(context.Background(), func(r kv.Reader) error {
		it = r.Scan(nil, nil, false)
		if _, ok := r.(kv.Tx); ok {
			t.Error("a View's Reader is a kv.Tx")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if it.Next() || !errors.Is(it.Close(), errEnded) {
		t.Errorf("an iterator used after its View: Err = %v, want errEnded", it.Err())
	}
	if err := s.Update(context.Background(), func(tx kv.Tx) error { kept = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := kept.Put([]byte("b"), nil); !errors.Is(err, errEnded) {
		t.Errorf("Put after its Update = %v, want errEnded", err)
	}
}

// binaryKeys returns every key of length 0 to 4 over the bytes 0x00, 0x01,
// 0x80, 0xff, in bytewise order: keys that are prefixes of one another and
// keys at both ends of the byte range, where an ordering by signed bytes,
// by a collation or by length first would go wrong.
func binaryKeys() [][]byte {
	alphabet := []byte{0x00, 0x01, 0x80, 0xff}
	keys := [][]byte{{}}
	for prev := keys; len(prev[0]) < 4; {
		var next [][]byte
		for _, p := range prev {
			for _, c := range alphabet {
				next = append(next, append(slices.Clone(p), c))
			}
		}
		keys = append(keys, next...)
		prev = next
	}
	slices.SortFunc(keys, bytes.Compare)
	return keys
}

// TestScanPages compares scans across page boundaries, in both directions,
// with random bounds (stored keys and keys between them, nil end), against
// the sorted keys, with the default pages and with tiny ones.
func TestScanPages(t *testing.T) {
	keys := binaryKeys() // 341 keys
	for _, first := range []int{0, 3} {
		t.Run(fmt.Sprintf("firstPage=%d", first), func(t *testing.T) {
			s := openSchema(t, pgtest.Schema(t), Options{firstPageRows: first})
			shuffled := slices.Clone(keys)
			rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if err := s.Update(context.Background(), func(tx kv.Tx) error {
				for _, k := range shuffled {
					if err := tx.Put(k, append([]byte("v"), k...)); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}

			rng := rand.New(rand.NewPCG(7, uint64(first)))
			bound := func() []byte {
				k := slices.Clone(keys[rng.IntN(len(keys))])
				switch rng.IntN(3) {
				case 0:
					return k
				case 1:
					return append(k, 0x42) // between stored keys
				default:
					return append(k, 0xff, 0xff, 0xff, 0xff, 0xff)
				}
			}
			check := func(r kv.Reader, start, end []byte, reverse bool) error {
				var want [][]byte
				for _, k := range keys {
					if bytes.Compare(k, start) >= 0 && (end == nil || bytes.Compare(k, end) < 0) {
						want = append(want, k)
					}
				}
				if reverse {
					slices.Reverse(want)
				}
				it := r.Scan(start, end, reverse)
				defer it.Close()
				var got [][]byte
				for it.Next() {
					if !bytes.Equal(it.Value(), append([]byte("v"), it.Key()...)) {
						return fmt.Errorf("value %x at key %x", it.Value(), it.Key())
					}
					got = append(got, slices.Clone(it.Key()))
				}
				if err := it.Err(); err != nil {
					return err
				}
				if !slices.EqualFunc(got, want, bytes.Equal) {
					t.Errorf("Scan(%x, %x, reverse=%v): got %d keys, want %d\n got  %x\n want %x",
						start, end, reverse, len(got), len(want), got, want)
				}
				return nil
			}
			err := s.View(context.Background(), func(r kv.Reader) error {
				var errs []error
				for _, reverse := range []bool{false, true} {
					errs = append(errs, check(r, nil, nil, reverse))
					for range 60 {
						start, end := bound(), bound()
						if rng.IntN(4) == 0 {
							end = nil
						}
						if end != nil && bytes.Compare(start, end) > 0 && rng.IntN(2) == 0 {
							start, end = end, start
						}
						errs = append(errs, check(r, start, end, reverse))
					}
				}
				return errors.Join(errs...)
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestScanPageSizes: ranges holding exactly a page, one key less and one
// more, whose last page is full or empty.
func TestScanPageSizes(t *testing.T) {
	s := newStore(t)
	const n = firstPageRows*(1+pageGrowth) + 2
	if err := s.Update(context.Background(), func(tx kv.Tx) error {
		for i := range n {
			if err := tx.Put(fmt.Appendf(nil, "k%05d", i), nil); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	key := func(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }
	err := s.View(context.Background(), func(r kv.Reader) error {
		for _, size := range []int{firstPageRows - 1, firstPageRows, firstPageRows + 1,
			firstPageRows * (1 + pageGrowth), firstPageRows*(1+pageGrowth) + 1} {
			for _, reverse := range []bool{false, true} {
				it := r.Scan(key(1), key(1+size), reverse)
				count := 0
				for it.Next() {
					want := 1 + count
					if reverse {
						want = size - count
					}
					if !bytes.Equal(it.Key(), key(want)) {
						t.Errorf("size %d reverse=%v: entry %d is %s, want %s", size, reverse, count, it.Key(), key(want))
					}
					count++
				}
				if err := it.Close(); err != nil {
					return err
				}
				if count != size {
					t.Errorf("size %d reverse=%v: scanned %d keys", size, reverse, count)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTwoGateways: two stores on one schema, as two gateway processes: each
// sees what the other committed, and a View of one keeps its snapshot while
// the other commits.
func TestTwoGateways(t *testing.T) {
	schema := pgtest.Schema(t)
	a := openSchema(t, schema, Options{})
	put(t, a, "from-a", "1")
	b := openSchema(t, schema, Options{})
	if got := get(t, b, "from-a"); got != "1" {
		t.Errorf("b reads from-a = %q, want 1", got)
	}
	put(t, b, "from-b", "2")
	if got := get(t, a, "from-b"); got != "2" {
		t.Errorf("a reads from-b = %q, want 2", got)
	}
	err := a.View(context.Background(), func(r kv.Reader) error {
		if _, err := r.Get([]byte("from-a")); err != nil {
			return err
		}
		put(t, b, "late", "3")
		if _, err := r.Get([]byte("late")); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("a View saw a commit made after its snapshot: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentOpen: stores opening a new schema at once all succeed, and
// the schema is created and migrated once.
func TestConcurrentOpen(t *testing.T) {
	schema := pgtest.Schema(t)
	var wg sync.WaitGroup
	stores := make([]*Store, 4)
	for i := range stores {
		wg.Go(func() {
			s, err := Open(context.Background(), Options{DSN: pgtest.DSN(t), Schema: schema, MaxConns: 1})
			if err != nil {
				t.Errorf("Open %d: %v", i, err)
				return
			}
			stores[i] = s
		})
	}
	wg.Wait()
	for _, s := range stores {
		if s != nil {
			put(t, s, "k", "v")
			s.Close()
		}
	}
}

// TestSchemaVersion: the schema records its version, and a store refuses a
// schema written by a newer version of the package.
func TestSchemaVersion(t *testing.T) {
	schema := pgtest.Schema(t)
	s := openSchema(t, schema, Options{})
	s.Close()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	meta := pgx.Identifier{schema, "meta"}.Sanitize()
	var version int
	if err := conn.QueryRow(ctx, "SELECT value FROM "+meta+" WHERE name = $1", versionKey).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != len(migrations) {
		t.Errorf("schema version %d, want %d", version, len(migrations))
	}
	if _, err := conn.Exec(ctx, "UPDATE "+meta+" SET value = $1 WHERE name = $2", len(migrations)+1, versionKey); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, Options{DSN: pgtest.DSN(t), Schema: schema})
	if err == nil {
		s.Close()
		t.Fatal("Open accepted a schema from a newer version")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a newer schema: %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{Schema: strings.Repeat("s", 64), MaxConns: -1}
	err := o.Validate()
	for _, want := range []string{"DSN is required", "longer than 63", "MaxConns is negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to say %q", err, want)
		}
	}
	o = Options{DSN: "postgres://x"}
	o.EnsureDefaults()
	if o.Schema != DefaultSchema || o.Validate() != nil {
		t.Errorf("defaults: %+v, %v", o, o.Validate())
	}
}

// TestTransactionModes checks, from inside each kind of transaction, the
// settings PostgreSQL runs it with.
func TestTransactionModes(t *testing.T) {
	s := newStore(t)
	settings := func(t *txn) (string, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		var got string
		err := t.roundTrip("settings", "SELECT current_setting('transaction_isolation') || ' ' || "+
			"current_setting('transaction_read_only') || ' ' || current_setting('synchronous_commit')", nil,
			func(rows pgx.Rows) error {
				for rows.Next() {
					if err := rows.Scan(&got); err != nil {
						return err
					}
				}
				return nil
			})
		return got, err
	}
	ctx := context.Background()
	var view, update, noSync string
	err := errors.Join(
		s.View(ctx, func(r kv.Reader) (err error) { view, err = settings(r.(reader).t); return err }),
		s.Update(ctx, func(tx kv.Tx) (err error) { update, err = settings(tx.(*txn)); return err }),
		s.UpdateNoSync(ctx, func(tx kv.Tx) (err error) { noSync, err = settings(tx.(*txn)); return err }),
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"View", view, "repeatable read on on"},
		{"Update", update, "serializable off on"},
		{"UpdateNoSync", noSync, "serializable off off"},
	} {
		if c.got != c.want {
			t.Errorf("%s runs with isolation, read-only, synchronous_commit = %q, want %q", c.name, c.got, c.want)
		}
	}
}

// TestLongKey: the primary key's btree limits keys to about 2.7 KB (after
// compression); a longer key fails its Update with an error, and commits
// nothing.
func TestLongKey(t *testing.T) {
	s := newStore(t)
	rng := rand.New(rand.NewPCG(1, 1))
	long := func(n int) []byte { // incompressible
		k := make([]byte, n)
		for i := range k {
			k[i] = byte(rng.Uint32())
		}
		return k
	}
	ok, tooLong := long(2600), long(3000)
	if err := s.Update(context.Background(), func(tx kv.Tx) error { return tx.Put(ok, []byte("v")) }); err != nil {
		t.Fatalf("a 2,600-byte key: %v", err)
	}
	err := s.Update(context.Background(), func(tx kv.Tx) error {
		return errors.Join(tx.Put([]byte("other"), []byte("v")), tx.Put(tooLong, []byte("v")))
	})
	if !errors.Is(err, kv.ErrTooLarge) {
		t.Fatalf("a 3,000-byte key: %v, want kv.ErrTooLarge", err)
	}
	if got := get(t, s, "other"); got != "<absent>" {
		t.Errorf("the failed Update committed a write: other = %q", got)
	}
}

// TestReconnect: a transaction whose connection is lost before its commit
// (the database restarting or failing over) runs again on a new connection
// and commits once; while the database stays away, View and Update give up
// after their reconnection attempts with kv.ErrUnavailable; and the store
// serves again once it is back.
func TestReconnect(t *testing.T) {
	dsn, proxy := pgtest.Proxied(t, pgtest.DSN(t))
	s := openSchema(t, pgtest.Schema(t), Options{DSN: dsn})
	ctx := context.Background()
	if err := s.Update(ctx, func(tx kv.Tx) error { return tx.Put([]byte("a"), []byte("1")) }); err != nil {
		t.Fatal(err)
	}

	runs := 0
	err := s.Update(ctx, func(tx kv.Tx) error {
		runs++
		if _, err := tx.Get([]byte("a")); err != nil {
			return err
		}
		if runs == 1 { // the database goes away and comes back mid-transaction
			proxy.Cut()
			proxy.Restore()
		}
		if _, err := tx.Get([]byte("a")); err != nil {
			return err
		}
		return tx.Put([]byte("b"), []byte("2"))
	})
	if err != nil || runs != 2 || get(t, s, "b") != "2" {
		t.Fatalf("an Update that lost its connection before committing: %v after %d runs, b = %q", err, runs, get(t, s, "b"))
	}
	if st := s.Stats(); st.Reconnects != 1 {
		t.Errorf("stats %+v after one lost connection, want one reconnect", st)
	}

	proxy.Cut()
	if err := s.View(ctx, func(r kv.Reader) error { _, err := r.Get([]byte("a")); return err }); !errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("a View while the database is away: %v, want kv.ErrUnavailable", err)
	}
	if err := s.Update(ctx, func(tx kv.Tx) error { return tx.Put([]byte("c"), []byte("3")) }); !errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("an Update while the database is away: %v, want kv.ErrUnavailable", err)
	}
	proxy.Restore()
	if got := get(t, s, "a"); got != "1" {
		t.Errorf("a once the database is back: %q", got)
	}
	if got := get(t, s, "c"); got != "<absent>" {
		t.Errorf("the Update refused while the database was away wrote c = %q", got)
	}
}

// TestNow: the store's time is the database's clock (within the test's own
// round trips and the error bound of the store's reading), never goes back,
// and costs a database reading at most once a second.
func TestNow(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var db time.Time
	readDB := func() time.Time {
		t.Helper()
		if err := s.pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&db); err != nil {
			t.Fatal(err)
		}
		return db
	}
	before := readDB()
	now, err := s.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after := readDB()
	// The reading is pinned to the middle of its round trip, and the
	// database's clock is read somewhere within it, at a microsecond's
	// resolution: the store's time may be off by that much either way.
	bound := s.clock.bound
	if bound <= 0 || bound > time.Second {
		t.Fatalf("the reading's error bound is %v", bound)
	}
	if now.Before(before.Add(-bound)) || now.After(after.Add(bound)) {
		t.Fatalf("Now %v is not between the database's clock before (%v) and after (%v), give or take the reading's bound %v", now, before, after, bound)
	}
	last := now
	for range 1000 {
		n, err := s.Now(ctx)
		if err != nil || n.Before(last) {
			t.Fatalf("Now went from %v to %v (%v)", last, n, err)
		}
		last = n
	}
	s.Close()
	s.clock.local = time.Time{} // force a reading
	if _, err := s.Now(ctx); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("Now on a closed store: %v", err)
	}
}

// TestNowInsideATransaction: Now, called by a transaction that holds the
// pool's only connection once the clock's reading is due again, answers
// from the reading it has instead of waiting for a connection to read the
// database's clock (which would wait for ever), and the new reading is
// taken once a connection is free; the time never goes back meanwhile.
func TestNowInsideATransaction(t *testing.T) {
	s := openSchema(t, pgtest.Schema(t), Options{MaxConns: 1})
	ctx := context.Background()
	first, err := s.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	age := func(d time.Duration) time.Time { // make the reading d older, the time unchanged
		s.clock.mu.Lock()
		defer s.clock.mu.Unlock()
		s.clock.db, s.clock.local = s.clock.db.Add(-d), s.clock.local.Add(-d)
		return s.clock.local
	}
	aged := age(2 * clockRefresh)
	var inside time.Time
	err = s.View(ctx, func(r kv.Reader) error {
		if _, err := r.Get([]byte("k")); !errors.Is(err, kv.ErrNotFound) { // takes the connection
			return err
		}
		answered := make(chan error, 1)
		go func() {
			var err error
			inside, err = s.Now(ctx)
			answered <- err
		}()
		select {
		case err := <-answered:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("Now waited for a connection held by the transaction that called it")
			return nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if inside.Before(first) {
		t.Fatalf("Now went back from %v to %v", first, inside)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.clock.mu.Lock()
		local, refreshing := s.clock.local, s.clock.refreshing
		s.clock.mu.Unlock()
		if local.After(aged) && !refreshing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new reading of the database's clock once the connection was free")
		}
	}
	if later, err := s.Now(ctx); err != nil || later.Before(inside) {
		t.Fatalf("Now after the new reading: %v (%v), before %v", later, err, inside)
	}
	age(2 * clockStale) // past clockStale, Now waits for a reading: a free connection
	if _, err := s.Now(ctx); err != nil {
		t.Fatal(err)
	}
	if s.clock.local.Before(time.Now().Add(-clockRefresh)) {
		t.Fatalf("Now past clockStale did not take a reading: it is from %v", s.clock.local)
	}
}

// TestInsertClaimsOnce: transactions racing to insert the same absent key,
// each committing what its last attempt saw, leave exactly one winner, whose
// value is stored; the losers saw the key present (or conflicted and ran
// again until they did).
func TestInsertClaimsOnce(t *testing.T) {
	s := newStore(t)
	const racers = 8
	won := make([]bool, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := s.Update(context.Background(), func(tx kv.Tx) error {
				ok, err := tx.(kv.Inserter).Insert([]byte("claimed"), []byte{byte(i)})
				won[i] = ok
				return err
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	winners := 0
	var winner byte
	for i, ok := range won {
		if ok {
			winners++
			winner = byte(i)
		}
	}
	if winners != 1 {
		t.Fatalf("%d transactions inserted the key, want 1", winners)
	}
	err := s.View(context.Background(), func(r kv.Reader) error {
		v, err := r.Get([]byte("claimed"))
		if err != nil || len(v) != 1 || v[0] != winner {
			t.Errorf("stored %v, %v; want the winner's value %d", v, err, winner)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
