package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

// sharedStore hides a store's kv.Exclusive, as a store shared between
// processes (PostgreSQL) would not offer it.
type sharedStore struct{ kv.Store }

// TestGatewaysShareAStore: on a store shared between processes any number
// of engines run at once, each registered in its own slot: documents written
// through both are stored once each with the right tallies (summed over the
// gateways' stripes), sequence numbers and LSNs never repeat, _ts never goes
// back when a gateway whose clock is behind writes over a document, and the
// change feed, while both are registered, serves changes feedLag seconds on.
func TestGatewaysShareAStore(t *testing.T) {
	store := sharedStore{newMemStore(t)}
	a := openTestEngine(t, store, Options{DisableBackground: true})
	clock := a.clock
	behind := newFakeClock() // gateway b's clock, a second behind a's
	behind.Set(clock.Now().Add(-time.Second))
	b, err := Open(ctx, Options{Store: store, Now: behind.Now, DisableBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.Gateway().Slot == b.Gateway().Slot || !b.Gateway().Shared || b.Gateway().Others != 1 {
		t.Fatalf("registrations: %+v and %+v", a.Gateway(), b.Gateway())
	}
	a.mustDB("db")
	a.mustContainer("c", `"defaultTtl":100`)
	etags := map[string]bool{}
	rids := map[string]bool{}
	for i := range 40 {
		e := a.Engine
		if i%2 == 1 {
			e = b
		}
		id := fmt.Sprintf("d%02d", i)
		res, err := e.CreateDocument(ctx, ref("c", id, "p"), []byte(`{"id":"`+id+`","pk":"p"}`))
		if err != nil {
			t.Fatal(err)
		}
		if etags[res.ETag] || rids[res.RID] {
			t.Fatalf("%s: etag %s or _rid %s given twice", id, res.ETag, res.RID)
		}
		etags[res.ETag], rids[res.RID] = true, true
	}
	// With both registered, the feed serves up to feedLag seconds ago.
	page, err := a.ReadChangeFeed(ctx, "db", "c", ChangeFeedOptions{})
	var res WriteResult
	if err != nil || len(page.Docs) != 0 {
		t.Fatalf("change feed at once: %d documents, %v; want none yet", len(page.Docs), err)
	}
	for _, e := range []*Engine{a.Engine, b} {
		u, err := e.ContainerUsage(ctx, "db", "c")
		if err != nil || u.Documents != 40 {
			t.Fatalf("usage %+v, %v; want 40 documents", u, err)
		}
	}
	// b's clock is behind a's (10 s now): a document a wrote is replaced,
	// by b, at a's second.
	clock.Advance(10 * time.Second)
	if _, err := a.CreateDocument(ctx, ref("c", "ahead", "p"), []byte(`{"id":"ahead","pk":"p"}`)); err != nil {
		t.Fatal(err)
	}
	res, err = b.ReplaceDocument(ctx, ref("c", "ahead", "p"), []byte(`{"id":"ahead","pk":"p","v":2}`), Conditions{})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TS int64 `json:"_ts"`
	}
	if err := json.Unmarshal(res.Body, &doc); err != nil || doc.TS < clock.Now().Unix() {
		t.Fatalf("_ts %d (%v) after a replace by a gateway a second behind; the version before was written at %d", doc.TS, err, clock.Now().Unix())
	}
	if _, err := b.DeleteDocument(ctx, ref("c", "d02", "p"), Conditions{}); err != nil {
		t.Fatal(err)
	}
	clock.Advance((feedLag + 2) * time.Second)
	behind.Advance((feedLag + 12) * time.Second)
	page, err = a.ReadChangeFeed(ctx, "db", "c", ChangeFeedOptions{MaxItems: 100})
	if err != nil || len(page.Docs) != 40 {
		t.Fatalf("change feed %d s on: %d documents, %v; want 40", feedLag+2, len(page.Docs), err)
	}
	// Once b has left, a is alone again: its own writes show at once.
	b.Close()
	if err := a.lease.renew(ctx); err != nil || a.Gateway().Others != 0 {
		t.Fatalf("after b left: %v, %+v", err, a.Gateway())
	}
	if _, err := a.CreateDocument(ctx, ref("c", "late", "p"), []byte(`{"id":"late","pk":"p"}`)); err != nil {
		t.Fatal(err)
	}
	page, err = a.ReadChangeFeed(ctx, "db", "c", ChangeFeedOptions{Continuation: page.ETag})
	if err != nil || len(page.Docs) != 1 {
		t.Fatalf("change feed after b left: %d documents, %v; want 1", len(page.Docs), err)
	}
	if err := a.Check(ctx); err != nil {
		t.Fatalf("invariants: %v", err)
	}
}

// TestGatewaysShareOneClock: gateways that read one clock (a manual clock
// kept in the store, as lethe serve --clock=manual does on PostgreSQL) write
// at its second, also a gateway that registers in the clock's last
// milliseconds of a second: trusting the readings to the nanosecond, it has
// no clock error to allow for by writing a second ahead.
func TestGatewaysShareOneClock(t *testing.T) {
	store := sharedStore{newMemStore(t)}
	a := openTestEngine(t, store, Options{DisableBackground: true})
	second := a.clock.Now().Unix()
	a.clock.Set(time.Unix(second, int64(999*time.Millisecond)))
	b, err := Open(ctx, Options{Store: store, Now: a.clock.Now, DisableBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Gateway().Others != 1 {
		t.Fatalf("b sees %d other gateways, want 1", b.Gateway().Others)
	}
	a.mustDB("db")
	a.mustContainer("c", "")
	for i, e := range []*Engine{a.Engine, b} {
		id := fmt.Sprintf("d%d", i)
		res, err := e.CreateDocument(ctx, ref("c", id, "p"), []byte(`{"id":"`+id+`","pk":"p"}`))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			TS int64 `json:"_ts"`
		}
		if err := json.Unmarshal(res.Body, &doc); err != nil || doc.TS != second {
			t.Errorf("%s: _ts %d (%v), want the shared clock's second %d", id, doc.TS, err, second)
		}
	}
}

// TestGatewaySlotTaken: a gateway that finds its slot taken by another (it
// was stalled past its lease) refuses every request with a 503, and leaves
// the other's registration alone when it closes.
func TestGatewaySlotTaken(t *testing.T) {
	store := sharedStore{newMemStore(t)}
	e, err := Open(ctx, Options{Store: store, DisableBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase(ctx, []byte(`{"id":"db"}`)); err != nil {
		t.Fatal(err)
	}
	other, _ := json.Marshal(gatewayLease{Holder: "other", Expires: time.Now().Add(time.Minute).UnixMilli()})
	key := slotKey(e.lease.slot)
	if err := store.Update(ctx, func(tx kv.Tx) error { return tx.Put(key, other) }); err != nil {
		t.Fatal(err)
	}
	if err := e.lease.renew(context.Background()); err != nil || !e.lease.lost.Load() {
		t.Fatalf("renewal over another's registration: %v, lost %v", err, e.lease.lost.Load())
	}
	if _, err := e.ReadDatabase(ctx, "db"); codeOf(err) != lethe.CodeServiceUnavailable {
		t.Fatalf("a request after the registration was lost: %v, want 503", err)
	}
	e.Close()
	var v []byte
	if err := store.View(ctx, func(r kv.Reader) error { v, err = r.Get(key); return err }); err != nil || string(v) != string(other) {
		t.Fatalf("the other gateway's registration after this one closed: %s, %v", v, err)
	}
}

// TestPurgeLease: one gateway at a time holds a container's purge lease; the
// other takes it once the holder has released it (at Close) or once it has
// lapsed (a killed holder), and the status shows who holds it.
func TestPurgeLease(t *testing.T) {
	store := sharedStore{newMemStore(t)}
	a := openTestEngine(t, store, Options{DisableBackground: true})
	b := openTestEngine(t, store, Options{DisableBackground: true})
	a.mustDB("db")
	a.mustContainer("c", `"defaultTtl":1`)
	var rid [8]byte
	if err := store.View(ctx, func(r kv.Reader) error {
		s, err := a.scope(r, "db", "c", 0)
		rid = s.rid
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if held, err := a.holdPurgeLease(ctx, rid); err != nil || !held {
		t.Fatalf("a takes the free lease: %v, %v", held, err)
	}
	if held, err := b.holdPurgeLease(ctx, rid); err != nil || held {
		t.Fatalf("b takes a's live lease: %v, %v", held, err)
	}
	st, err := b.ContainerTTLStatus(ctx, "db", "c")
	if err != nil || st.PurgeLease.Holder != a.Gateway().ID {
		t.Fatalf("status: lease %+v, %v; want a's (%s)", st.PurgeLease, err, a.Gateway().ID)
	}
	a.Close()
	if held, err := b.holdPurgeLease(ctx, rid); err != nil || !held {
		t.Fatalf("b after a closed: %v, %v", held, err)
	}
	// A lapsed lease (its holder killed) is free.
	lapsed, _ := json.Marshal(gatewayLease{Holder: "killed", Expires: time.Now().Add(-time.Millisecond).UnixMilli()})
	if err := store.Update(ctx, func(tx kv.Tx) error { return tx.Put(purgeLeaseKey(rid), lapsed) }); err != nil {
		t.Fatal(err)
	}
	b.purgeLeases.held = nil // b forgets it held it, as a new gateway would
	if held, err := b.holdPurgeLease(ctx, rid); err != nil || !held {
		t.Fatalf("b over a lapsed lease: %v, %v", held, err)
	}
}

// clockStore is a store that keeps its own time, two hours ahead of this
// machine's (kv.Clock), as a database server's clock may be.
type clockStore struct{ kv.Store }

func (clockStore) Now(context.Context) (time.Time, error) { return time.Now().Add(2 * time.Hour), nil }

// TestEngineRunsOnTheStoresTime: without Options.Now, an engine on a store
// that keeps a time (PostgreSQL's) stamps and expires documents by it, not
// by this machine's clock, so that gateways on machines whose clocks differ
// agree.
func TestEngineRunsOnTheStoresTime(t *testing.T) {
	e, err := Open(ctx, Options{Store: clockStore{newMemStore(t)}, DisableBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	now, err := e.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ahead := time.Until(time.Unix(now, 0)); ahead < time.Hour+59*time.Minute || ahead > 2*time.Hour+time.Minute {
		t.Fatalf("the engine's time is %v ahead of this machine's; the store's is 2 h", ahead)
	}
}

// TestTallyDeltasFold: on a shared store writes add tally delta rows
// without reading the tallies; a second whose deltas cancel out (documents
// created by one gateway, deleted by another) counts for nothing, also as the
// oldest pending expiry; and a fold leaves one row per tally that is not zero,
// with the same sums.
func TestTallyDeltasFold(t *testing.T) {
	store := sharedStore{newMemStore(t)}
	a := openTestEngine(t, store, Options{DisableBackground: true})
	b, err := Open(ctx, Options{Store: store, Now: a.clock.Now, DisableBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a.mustDB("db")
	a.mustContainer("c", `"defaultTtl":100`)
	first := a.clock.Now().Unix()
	for _, id := range []string{"x1", "x2", "x3"} {
		if _, err := a.CreateDocument(ctx, ref("c", id, "p"), []byte(`{"id":"`+id+`","pk":"p"}`)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"x1", "x2", "x3"} {
		if _, err := b.DeleteDocument(ctx, ref("c", id, "p"), Conditions{}); err != nil {
			t.Fatal(err)
		}
	}
	a.clock.Advance(time.Second)
	for _, id := range []string{"y1", "y2"} {
		if _, err := b.CreateDocument(ctx, ref("c", id, "p"), []byte(`{"id":"`+id+`","pk":"p"}`)); err != nil {
			t.Fatal(err)
		}
	}
	rid := a.mustRID("c")
	rows := func(pfx byte) int { return countKeys(t, store, collKey(pfx, rid)) }
	if n := rows(pfxUsage); n != 8 {
		t.Fatalf("%d usage rows before the fold, want one per write (8)", n)
	}
	check := func(when string, wantDocs int64) {
		t.Helper()
		for _, e := range []*Engine{a.Engine, b} {
			u, err := e.ContainerUsage(ctx, "db", "c")
			if err != nil || u.Documents != wantDocs {
				t.Fatalf("%s: usage %+v, %v; want %d documents", when, u, err, wantDocs)
			}
		}
		if err := a.Check(ctx); err != nil {
			t.Fatalf("%s: invariants: %v", when, err)
		}
	}
	check("before the fold", 2)
	// Past both seconds' expiry: the first second's rows (+1 +1 +1 from a,
	// -1 -1 -1 from b) cancel out; the oldest pending expiry is the next
	// second's.
	a.clock.Advance(101 * time.Second)
	backlog := func(when string) {
		t.Helper()
		got, err := a.TTLBacklog(ctx)
		if err != nil || len(got) != 1 || got[0].PendingDocuments != 2 || got[0].OldestPending.Unix() != first+101 {
			t.Fatalf("%s: backlog %+v, %v; want 2 pending, the oldest expired at %d", when, got, err, first+101)
		}
	}
	backlog("before the fold")
	check("expired, before the fold", 0)
	for _, e := range []*Engine{a.Engine, b} {
		if err := e.foldTallies(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := rows(pfxUsage); n != 1 {
		t.Fatalf("%d usage rows after the fold, want 1", n)
	}
	if n := rows(pfxExpiryBucket); n != 1 {
		t.Fatalf("%d expiry tally rows after the fold, want 1 (the second whose rows cancel out goes)", n)
	}
	backlog("after the fold")
	check("after the fold", 0)
}

// TestFoldAfterRestart: delta rows left by a gateway that stopped without
// folding them are folded by the next gateway to register, whether or not it
// writes to their container.
func TestFoldAfterRestart(t *testing.T) {
	store := sharedStore{newMemStore(t)}
	a := openTestEngine(t, store, Options{DisableBackground: true})
	a.mustDB("db")
	a.mustContainer("c", "")
	for i := range 5 {
		id := fmt.Sprintf("d%d", i)
		if _, err := a.CreateDocument(ctx, ref("c", id, "p"), []byte(`{"id":"`+id+`","pk":"p"}`)); err != nil {
			t.Fatal(err)
		}
	}
	rid := a.mustRID("c")
	a.Close() // no fold: its renewals never ran
	usageRows := func() int { return countKeys(t, store, collKey(pfxUsage, rid)) }
	if n := usageRows(); n != 5 {
		t.Fatalf("%d usage rows left, want one per create (5)", n)
	}
	b, err := Open(ctx, Options{Store: store, Now: a.clock.Now, DisableBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.foldTallies(ctx); err != nil {
		t.Fatal(err)
	}
	if n := usageRows(); n != 1 {
		t.Fatalf("%d usage rows after the next gateway's first fold, want 1", n)
	}
	if u, err := b.ContainerUsage(ctx, "db", "c"); err != nil || u.Documents != 5 {
		t.Fatalf("usage %+v, %v; want 5 documents", u, err)
	}
}

// countKeys counts the keys of store under prefix.
func countKeys(t *testing.T, store kv.Store, prefix []byte) (n int) {
	t.Helper()
	err := store.View(ctx, func(r kv.Reader) error {
		it := r.Scan(prefix, kv.PrefixEnd(prefix), false)
		defer it.Close()
		for it.Next() {
			n++
		}
		return it.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFeedFloorsAcrossGateways: with two gateways over one database, a
// change shows on the other gateway's feed once the clock has passed its
// second and its gateway has published its floor, well before feedLag; but
// never past a write still under way on the gateway that made it, which may
// yet commit below a later write that has. (Serving the later one would put
// the reader's continuation past the earlier, which it would then never
// see.)
func TestFeedFloorsAcrossGateways(t *testing.T) {
	schema := pgtest.Schema(t)
	a := holdingGatewayOn(t, schema, 4) // two writers each while two gateways run
	b := testEngineWith(t, openPostgresStore(t, schema), Options{})
	if err := a.lease.renew(ctx); err != nil || a.Gateway().Others != 1 || b.Gateway().Others != 1 {
		t.Fatalf("registrations: %v, %+v and %+v", err, a.Gateway(), b.Gateway())
	}
	a.mustDB("db")
	a.mustContainer("c", retain)
	tick := func() {
		a.clock.Advance(time.Second)
		b.clock.Advance(time.Second)
	}
	publish := func() {
		t.Helper()
		for _, g := range []*testEngine{a, b} {
			if err := g.lease.publishFloor(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	tick()
	if err := a.create("c", `{"id":"first","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	tick()
	publish()
	latest, all := "", ""
	for _, v := range []struct {
		all  bool
		tok  *string
		want string
	}{{false, &latest, "first"}, {true, &all, "create first"}} {
		got, tok := b.feedChanges(v.all, "")
		if !slices.Equal(got, []string{v.want}) {
			t.Fatalf("all versions %v: b serves %v a second after a's create, its floor published; want %q", v.all, got, v.want)
		}
		*v.tok = tok
	}

	if _, err := a.now(ctx); err != nil { // the clock's second persisted, so that the hold holds the create
		t.Fatal(err)
	}
	h, held := a.holdCreate("held")
	tick()
	if err := a.create("c", `{"id":"later","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	tick()
	publish()
	if got, _ := b.feedChanges(false, latest); len(got) != 0 {
		t.Fatalf("latest version, while a's earlier create is under way: b serves %v, want nothing", got)
	}
	if got, _ := b.feedChanges(true, all); len(got) != 0 {
		t.Fatalf("all versions, while a's earlier create is under way: b serves %v, want nothing", got)
	}
	h.let()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	tick()
	publish()
	if got, _ := b.feedChanges(false, latest); !slices.Equal(sorted(got), []string{"held", "later"}) {
		t.Errorf("latest version, once both committed: b serves %v, want held and later", got)
	}
	if got, _ := b.feedChanges(true, all); !slices.Equal(sorted(got), []string{"create held", "create later"}) {
		t.Errorf("all versions, once both committed: b serves %v, want both creates", got)
	}
}
