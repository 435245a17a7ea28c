package engine

import (
	"context"
	"encoding/base64"
	"sync"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/kv/pebblekv"
	"github.com/lethe-db/lethe/kv/pgkv"
	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

// fakeClock is an injected wall clock that tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// testEngine is an engine over an in-memory Pebble store with a fake clock and
// no background purger; Check runs when the test ends.
type testEngine struct {
	*Engine
	t     *testing.T
	clock *fakeClock
	store kv.Store
	// filled counts the documents fillUntilRefused created, by container.
	filled map[string]int
}

func newTestEngine(t *testing.T) *testEngine {
	t.Helper()
	// With a lookup cache, as `lethe serve --in-memory` runs, and a small one,
	// so that entries are evicted too, and with the key filter of document
	// keys; newMemStore's stores have neither.
	store, err := pebblekv.Open(pebblekv.Options{InMemory: true, LookupCacheSize: 1 << 20, LookupCacheable: LookupCacheable, FilterPrefix: DocumentKeyPrefix(), FilterKeys: DocumentKeys})
	if err != nil {
		t.Fatal(err)
	}
	return testEngineOn(t, store)
}

// newPostgresEngine is newTestEngine on PostgreSQL: a fresh schema of the
// test binary's server (pgtest), a store other gateways could share.
func newPostgresEngine(t *testing.T) *testEngine {
	t.Helper()
	return newPostgresGateways(t, 1)[0]
}

// newPostgresGateways returns n test engines on one fresh schema, as n
// gateways over one database.
func newPostgresGateways(t *testing.T, n int) []*testEngine {
	t.Helper()
	schema := pgtest.Schema(t)
	gateways := make([]*testEngine, n)
	for i := range gateways {
		gateways[i] = testEngineOn(t, openPostgresStore(t, schema))
	}
	return gateways
}

// openPostgresStore opens a store on schema of the test binary's server.
func openPostgresStore(t *testing.T, schema string) *pgkv.Store {
	t.Helper()
	store, err := pgkv.Open(context.Background(), pgkv.Options{DSN: pgtest.DSN(t), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// testEngineOn opens the test engine over store, which it closes when the
// test ends, after checking the engine's invariants.
func testEngineOn(t *testing.T, store kv.Store) *testEngine {
	t.Helper()
	return testEngineWith(t, store, Options{})
}

// testEngineWith is testEngineOn with opts, but for the test engine's
// store, clock and background work (none), and with every cross-partition
// query served.
func testEngineWith(t *testing.T, store kv.Store, opts Options) *testEngine {
	t.Helper()
	clock := newFakeClock()
	opts.Store, opts.Now, opts.DisableBackground, opts.ServeAllCrossPartitionQueries = store, clock.Now, true, true
	e, err := Open(context.Background(), opts)
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Check(context.Background()); err != nil {
			t.Errorf("engine invariants: %v", err)
		}
		e.Close()
		store.Close()
	})
	return &testEngine{Engine: e, t: t, clock: clock, store: store}
}

// newMemStore returns an in-memory Pebble store closed when the test ends.
func newMemStore(t *testing.T) kv.Store {
	t.Helper()
	store, err := pebblekv.Open(pebblekv.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// openTestEngine opens an engine over store with a fake clock and opts; the
// engine closes when the test ends (Close is idempotent, so tests may close it
// earlier).
func openTestEngine(t *testing.T, store kv.Store, opts Options) *testEngine {
	t.Helper()
	clock := newFakeClock()
	opts.Store, opts.Now = store, clock.Now
	e, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return &testEngine{Engine: e, t: t, clock: clock, store: store}
}

// reopen closes the engine (not the store) and opens a new one over the same store.
func (te *testEngine) reopen() { te.reopenWith(nil) }

// reopenWith is reopen with options changed by edit.
func (te *testEngine) reopenWith(edit func(*Options)) {
	te.t.Helper()
	te.Engine.Close()
	o := Options{Store: te.store, Now: te.clock.Now, DisableBackground: true, ServeAllCrossPartitionQueries: true}
	if edit != nil {
		edit(&o)
	}
	e, err := Open(context.Background(), o)
	if err != nil {
		te.t.Fatal(err)
	}
	te.Engine = e
}

var ctx = context.Background()

func (te *testEngine) mustDB(id string) {
	te.t.Helper()
	if _, err := te.CreateDatabase(ctx, []byte(`{"id":"`+id+`"}`)); err != nil {
		te.t.Fatal(err)
	}
}

// mustContainer creates container id in database "db" with extra JSON members
// (e.g. `"defaultTtl":10`), partitioned on /pk.
func (te *testEngine) mustContainer(id, extra string) {
	te.t.Helper()
	body := `{"id":"` + id + `","partitionKey":{"paths":["/pk"],"kind":"Hash"}`
	if extra != "" {
		body += "," + extra
	}
	if _, err := te.CreateContainer(ctx, "db", []byte(body+"}")); err != nil {
		te.t.Fatal(err)
	}
}

func pk(v string) lethe.PartitionKey { return lethe.PartitionKey{v} }

func ref(coll, id, p string) DocRef { return DocRef{DB: "db", Coll: coll, ID: id, PK: pk(p)} }

func codeOf(err error) string {
	if err == nil {
		return "OK"
	}
	return lethe.ErrorCode(err)
}

func (te *testEngine) create(coll, body string) error {
	_, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: coll, PK: pk("p")}, []byte(body))
	return err
}

func (te *testEngine) read(coll, id string) error {
	_, err := te.ReadDocument(ctx, ref(coll, id, "p"), Conditions{})
	return err
}

func (te *testEngine) mustDelete(coll, id string) {
	te.t.Helper()
	if _, err := te.DeleteDocument(ctx, ref(coll, id, "p"), Conditions{}); err != nil {
		te.t.Fatalf("delete %s: %v", id, err)
	}
}

func base64Decode(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

// withPlan calls fn with the source and plan that query text, with params
// and partition key p in the request (nil: none), gets in container coll of
// database "db", in a view that stays open while fn runs: the engine's, as
// a query's.
func (te *testEngine) withPlan(coll, text string, params map[string]jsonv.Value, p lethe.PartitionKey, fn func(querySource, sourcePlan)) {
	te.t.Helper()
	err := te.Engine.store.View(ctx, func(r kv.Reader) error {
		s, err := te.scope(r, "db", coll, te.clock.Now().Unix())
		if err != nil {
			return err
		}
		q, err := parseStatement(text)
		if err != nil {
			return err
		}
		filter, _, err := s.filter(p, true, Scope{})
		if err != nil {
			return err
		}
		src, plan := s.querySource(r, q, params, s.partitionPlan(p), s.pkEquality(p), filter, 10)
		defer src.close()
		fn(src, plan)
		return nil
	})
	if err != nil {
		te.t.Fatal(err)
	}
}

// parsesNoDocument reports whether src yields placeholders for documents
// (their stored JSON as Raw) instead of parsing them.
func parsesNoDocument(src querySource) bool {
	switch x := src.(type) {
	case *indexSource:
		return x.rawOnly
	case *docSource:
		return x.rawOnly
	case *liveCountSource:
		return true
	}
	return false
}
