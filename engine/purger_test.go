package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethe-db/lethe/activity"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/purgectl"
)

// countingStore wraps a real store and counts the keys it hands out, to measure
// how much of the store an operation touches.
type countingStore struct {
	kv.Store
	reads    atomic.Int64 // Get calls plus iterator steps
	metaGets atomic.Int64 // Get calls for database and container records
	updates  atomic.Int64
	// indexPuts and indexDeletes count the secondary index entries that
	// transactions write and delete.
	indexPuts, indexDeletes atomic.Int64
	onTx                    func(n int64) // called before each Update with its ordinal
	// exclusive is what the store answers to kv.Exclusive: false by default,
	// so the engine reads its records through the store as on a shared one.
	exclusive bool
}

func (c *countingStore) Exclusive() bool { return c.exclusive }

func (c *countingStore) get(r kv.Reader, k []byte) ([]byte, error) {
	c.reads.Add(1)
	if isMetaKey(k) {
		c.metaGets.Add(1)
	}
	return r.Get(k)
}

type countingReader struct {
	kv.Reader
	s *countingStore
}

type countingTx struct {
	kv.Tx
	s *countingStore
}

type countingIter struct {
	kv.Iterator
	s *countingStore
}

func (c *countingStore) View(ctx context.Context, fn func(kv.Reader) error) error {
	return c.Store.View(ctx, func(r kv.Reader) error { return fn(countingReader{r, c}) })
}

func (c *countingStore) Update(ctx context.Context, fn func(kv.Tx) error) error {
	n := c.updates.Add(1)
	if c.onTx != nil {
		c.onTx(n)
	}
	return c.Store.Update(ctx, func(tx kv.Tx) error { return fn(countingTx{tx, c}) })
}

func (c *countingStore) UpdateNoSync(ctx context.Context, fn func(kv.Tx) error) error {
	n := c.updates.Add(1)
	if c.onTx != nil {
		c.onTx(n)
	}
	return c.Store.UpdateNoSync(ctx, func(tx kv.Tx) error { return fn(countingTx{tx, c}) })
}

func (r countingReader) Get(k []byte) ([]byte, error) { return r.s.get(r.Reader, k) }
func (r countingReader) Scan(a, b []byte, rev bool) kv.Iterator {
	return countingIter{r.Reader.Scan(a, b, rev), r.s}
}
func (t countingTx) Get(k []byte) ([]byte, error) { return t.s.get(t.Tx, k) }
func (t countingTx) Put(k, v []byte) error {
	if k[0] == pfxIndex {
		t.s.indexPuts.Add(1)
	}
	return t.Tx.Put(k, v)
}
func (t countingTx) Delete(k []byte) error {
	if k[0] == pfxIndex {
		t.s.indexDeletes.Add(1)
	}
	return t.Tx.Delete(k)
}
func (t countingTx) Scan(a, b []byte, rev bool) kv.Iterator {
	return countingIter{t.Tx.Scan(a, b, rev), t.s}
}
func (i countingIter) Next() bool { i.s.reads.Add(1); return i.Iterator.Next() }

// fill creates n documents with the given extra members, ids prefix0..prefixN-1.
func (te *testEngine) fill(coll, prefix string, n int, extra string) {
	te.t.Helper()
	for i := range n {
		if err := te.create(coll, fmt.Sprintf(`{"id":"%s%d","pk":"p"%s}`, prefix, i, extra)); err != nil {
			te.t.Fatal(err)
		}
	}
}

func (te *testEngine) feedCount(coll string) int {
	te.t.Helper()
	n, cont := 0, ""
	for {
		page, err := te.ReadFeed(ctx, "db", coll, FeedOptions{MaxItems: 1000, Continuation: cont})
		if err != nil {
			te.t.Fatal(err)
		}
		n += len(page.Docs)
		if cont = page.Continuation; cont == "" {
			return n
		}
	}
}

func TestPurgeDeletesExactlyTheExpired(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":100`)
	te.fill("c", "default", 30, "")
	te.fill("c", "own", 20, `,"ttl":50`)
	te.fill("c", "never", 10, `,"ttl":-1`)
	te.clock.Advance(60 * time.Second)
	te.fill("c", "young", 5, "")
	if n, err := te.Purge(ctx); err != nil || n != 20 {
		t.Fatalf("purge at +60s = %d, %v; want the 20 own-ttl documents", n, err)
	}
	te.clock.Advance(40 * time.Second)
	if n, err := te.Purge(ctx); err != nil || n != 30 {
		t.Fatalf("purge at +100s = %d, %v; want the 30 default documents", n, err)
	}
	if n, err := te.Purge(ctx); err != nil || n != 0 {
		t.Fatalf("second purge = %d, %v; want 0", n, err)
	}
	if got := te.feedCount("c"); got != 15 {
		t.Errorf("live documents = %d; want 15", got)
	}
	if st := te.PurgeStats(); st.Purged != 50 {
		t.Errorf("PurgeStats.Purged = %d; want 50", st.Purged)
	}
}

// TestPurgeWorkIsProportionalToExpired: with 20,000 live documents and 40
// expired ones, a purge touches a number of keys on the order of the 40, not
// of the container.
func TestPurgeWorkIsProportionalToExpired(t *testing.T) {
	cs := &countingStore{Store: newMemStore(t)}
	te := openTestEngine(t, cs, Options{DisableBackground: true})
	e, clock := te.Engine, te.clock
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":1000`)
	te.fill("c", "old", 20, "")
	te.fill("c", "short", 20, `,"ttl":5`)
	clock.Advance(500 * time.Second)
	te.fill("c", "live", 10_000, "")
	te.fill("c", "liveown", 10_000, `,"ttl":100000`)
	clock.Advance(500 * time.Second)

	before := cs.reads.Load()
	n, err := e.Purge(ctx)
	if err != nil || n != 40 {
		t.Fatalf("purge = %d, %v; want 40", n, err)
	}
	touched := cs.reads.Load() - before
	if touched > 40*10 {
		t.Errorf("purging 40 of 20,040 documents touched %d keys; want O(expired)", touched)
	}
	t.Logf("purging 40 expired among 20,040 documents touched %d keys", touched)
	if err := e.Check(ctx); err != nil {
		t.Error(err)
	}
}

// TestPurgeIsFairAcrossContainers: each container gets a batch before any gets a second.
func TestPurgeIsFairAcrossContainers(t *testing.T) {
	cs := &countingStore{Store: newMemStore(t)}
	te := openTestEngine(t, cs, Options{DisableBackground: true, PurgeBatch: 10})
	e, clock := te.Engine, te.clock
	te.mustDB("db")
	for _, c := range []string{"big", "small1", "small2"} {
		te.mustContainer(c, `"defaultTtl":1`)
	}
	te.fill("big", "d", 100, "")
	te.fill("small1", "d", 10, "")
	te.fill("small2", "d", 10, "")
	clock.Advance(2 * time.Second)

	if _, err := e.Now(ctx); err != nil { // persist this second now, not during the purge
		t.Fatal(err)
	}
	// Stop the purge after its first three batches: one round over three containers.
	pctx, cancel := context.WithCancel(ctx)
	start := cs.updates.Load()
	cs.onTx = func(n int64) {
		if n-start > 3 {
			cancel()
		}
	}
	_, _ = e.purge(pctx, false)
	cs.onTx = nil
	stored := storedPerContainer(t, cs)
	want := map[string]int{"big": 90, "small1": 0, "small2": 0}
	for name, n := range want {
		if stored[name] != n {
			t.Errorf("after one round, %s physically holds %d documents; want %d (all: %v)", name, stored[name], n, stored)
		}
	}
}

// storedPerContainer counts the documents physically stored in each container
// of database "db", expired or not.
func storedPerContainer(t *testing.T, s kv.Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	err := s.View(ctx, func(r kv.Reader) error {
		db, err := getDatabase(r, "db")
		if err != nil {
			return err
		}
		colls, err := listContainerRecords(r, db.rid())
		if err != nil {
			return err
		}
		for _, c := range colls {
			p := collKey(pfxDoc, c.rid())
			it := r.Scan(p, kv.PrefixEnd(p), false)
			for it.Next() {
				out[c.ID]++
			}
			if err := it.Close(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPurgeRestartsWhereItStopped(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":1`)
	te.fill("c", "d", 300, "")
	te.clock.Advance(time.Second)
	te.reopen() // a restart: the purger keeps no state of its own
	if n, err := te.Purge(ctx); err != nil || n != 300 {
		t.Fatalf("purge after restart = %d, %v", n, err)
	}
}

func TestBackgroundPurger(t *testing.T) {
	te := openTestEngine(t, newMemStore(t), Options{PurgeInterval: 5 * time.Millisecond})
	e, clock := te.Engine, te.clock
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":10`)
	te.fill("c", "d", 50, "")
	clock.Advance(10 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for e.PurgeStats().Purged < 50 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if p := e.PurgeStats().Purged; p != 50 {
		t.Fatalf("background purger deleted %d of 50 expired documents", p)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	if err := e.Check(ctx); err != nil {
		t.Error(err)
	}
}

// TestPurgeCursorsAcrossManySmallBatches: with batches of 7, a pass resumes each
// index where the last batch stopped, across both indexes, and still deletes
// exactly the expired documents.
func TestPurgeCursorsAcrossManySmallBatches(t *testing.T) {
	te := openTestEngine(t, newMemStore(t), Options{DisableBackground: true, PurgeBatch: 7})
	e, clock := te.Engine, te.clock
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":50`)
	for i := range 60 {
		te.fill("c", fmt.Sprintf("t%d-", i), 1, "")                           // T index, expires at +50+i
		te.fill("c", fmt.Sprintf("x%d-", i), 1, fmt.Sprintf(`,"ttl":%d`, 20)) // X index, expires at +20+i
		te.fill("c", fmt.Sprintf("n%d-", i), 1, `,"ttl":-1`)                  // never
		clock.Advance(time.Second)
	}
	clock.Advance(40 * time.Second) // now = start+100: all X expired, T up to i=50
	n, err := e.Purge(ctx)
	if err != nil || n != 60+51 {
		t.Fatalf("purge = %d, %v; want %d", n, err, 60+51)
	}
	if got := te.feedCount("c"); got != 60+9 {
		t.Errorf("live documents = %d; want 69", got)
	}
	if err := e.Check(ctx); err != nil {
		t.Error(err)
	}
}

// TestPurgeWaitsOutStoreWork: while users are active and the store reports
// background work of its own (a compaction), the purger's next batch waits
// for that work to end; with users idle it goes ahead at once, at full size.
func TestPurgeWaitsOutStoreWork(t *testing.T) {
	var busy atomic.Bool
	busy.Store(true)
	users := &activity.Tracker{}
	te := openTestEngine(t, newMemStore(t), Options{DisableBackground: true, Activity: users, StoreBusy: busy.Load})

	if limit, paced := te.paceForUsers(context.Background(), purgectl.MinShare); paced || limit != te.opts.PurgeBatch {
		t.Fatalf("users idle, store busy: batch %d paced %v, want a full batch at once", limit, paced)
	}

	end := users.Begin() // a user operation in flight for the rest of the test
	defer end()
	type result struct {
		limit int
		paced bool
	}
	done := make(chan result, 1)
	go func() {
		limit, paced := te.paceForUsers(context.Background(), purgectl.MinShare)
		done <- result{limit, paced}
	}()
	select {
	case r := <-done:
		t.Fatalf("users active, store busy: the batch went ahead (%+v)", r)
	case <-time.After(userWaitMax + 100*time.Millisecond):
	}
	busy.Store(false)
	select {
	case r := <-done:
		if !r.paced || r.limit >= te.opts.PurgeBatch {
			t.Errorf("after the store's work ended: batch %d paced %v, want a small paced batch", r.limit, r.paced)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the batch still waited after the store's work ended")
	}
}

// TestPurgeWaitsForStoreBacklog: while the store reports its background work
// backed up, the purge deletes nothing and keeps asking; once the backlog
// clears, it purges everything expired.
func TestPurgeWaitsForStoreBacklog(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":10`)
	te.fill("c", "d", 20, "")
	te.clock.Advance(10 * time.Second)

	var backlogged atomic.Bool
	var asked atomic.Int64
	askedThrice := make(chan struct{})
	backlogged.Store(true)
	te.reopenWith(func(o *Options) {
		o.StoreBacklogged = func() bool {
			if asked.Add(1) == 3 {
				close(askedThrice)
			}
			return backlogged.Load()
		}
	})
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := te.Purge(ctx)
		done <- result{n, err}
	}()
	select {
	case <-askedThrice: // the purge is waiting, and keeps asking
	case r := <-done:
		t.Fatalf("the purge finished while the store was backlogged: %d purged, %v", r.n, r.err)
	}
	backlogged.Store(false)
	if r := <-done; r.err != nil || r.n != 20 {
		t.Fatalf("after the backlog cleared: purged %d, %v; want 20", r.n, r.err)
	}
}
