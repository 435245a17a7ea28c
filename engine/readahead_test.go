package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/lethe-db/lethe/kv/pgkv"
)

// roundTrips returns what fn cost te's PostgreSQL store in round trips.
func roundTrips(t *testing.T, te *testEngine, what string, fn func() error) int64 {
	t.Helper()
	pg := te.store.(*pgkv.Store)
	before := pg.Stats().RoundTrips
	if err := fn(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return pg.Stats().RoundTrips - before
}

// TestReadAheadRoundTrips checks what each request costs on PostgreSQL once
// its container has been seen: the database and container records and the
// document in one round trip with the BEGIN, then the request's own, then
// the COMMIT (with the writes; a create's check that its key is free
// too); a point read all three in one statement and no transaction; and no
// transaction at all to admit a request. Reading the records one after the
// other costs two more each, checking a create's key first one, a read's
// transaction one.
func TestReadAheadRoundTrips(t *testing.T) {
	te := newPostgresEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)
	for i := range 20 {
		if err := te.create("c", fmt.Sprintf(`{"id":"d%d","pk":"p","k":%d}`, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := te.Admit(ctx, "db", "c"); err != nil {
		t.Fatal(err)
	}
	body := func(id string, k int) []byte { return fmt.Appendf(nil, `{"id":%q,"pk":"p","k":%d}`, id, k) }
	for _, c := range []struct {
		what string
		most int64
		fn   func() error
	}{
		{"admission", 0, func() error { _, err := te.Admit(ctx, "db", "c"); return err }},
		{"read", 1, func() error { return te.read("c", "d3") }},
		{"read of an absent document", 1, func() error {
			if err := te.read("c", "absent"); codeOf(err) != "NotFound" {
				return fmt.Errorf("read of an absent document: %v, want NotFound", err)
			}
			return nil
		}},
		{"replace", 2, func() error {
			_, err := te.ReplaceDocument(ctx, ref("c", "d4", "p"), body("d4", 40), Conditions{})
			return err
		}},
		{"upsert of a stored document", 2, func() error {
			_, err := te.UpsertDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk("p")}, body("d5", 50), Conditions{})
			return err
		}},
		{"patch", 2, func() error {
			p, err := ParsePatch([]byte(`{"operations":[{"op":"set","path":"/k","value":7}]}`))
			if err != nil {
				return err
			}
			_, err = te.PatchDocument(ctx, ref("c", "d7", "p"), p, Conditions{})
			return err
		}},
		{"delete", 2, func() error { _, err := te.DeleteDocument(ctx, ref("c", "d6", "p"), Conditions{}); return err }},
		{"create", 2, func() error { return te.create("c", string(body("new", 1))) }},
		{"query page", 4, func() error {
			_, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT * FROM c WHERE c.k > 2", PK: pk("p"), MaxItems: 10})
			return err
		}},
	} {
		if n := roundTrips(t, te, c.what, c.fn); n > c.most {
			t.Errorf("%s: %d round trips, want at most %d", c.what, n, c.most)
		}
	}
}

// TestReadAheadAfterRecreation checks that what a gateway reads ahead never
// answers for what another gateway changed: the database and the container
// deleted and created again elsewhere (new _rids, so the keys read ahead
// are the old ones), every point operation answers from the new ones.
func TestReadAheadAfterRecreation(t *testing.T) {
	gw := newPostgresGateways(t, 2)
	a, b := gw[0], gw[1]
	b.mustDB("db")
	b.mustContainer("c", `"defaultTtl":-1`)
	if err := b.create("c", `{"id":"x","pk":"p","v":"first"}`); err != nil {
		t.Fatal(err)
	}
	readV := func() string {
		t.Helper()
		res, err := a.ReadDocument(ctx, ref("c", "x", "p"), Conditions{})
		if err != nil {
			t.Fatalf("read through the other gateway: %v", err)
		}
		return userPart(t, res.Body)
	}
	if got, want := readV(), `{"id":"x","pk":"p","v":"first"}`; got != want {
		t.Fatalf("read %s, want %s", got, want)
	}
	for round, recreate := range []func(){
		func() { // the container, in the same database
			if err := b.DeleteContainer(ctx, "db", "c"); err != nil {
				t.Fatal(err)
			}
			b.mustContainer("c", `"defaultTtl":-1`)
		},
		func() { // the database and the container
			if err := b.DeleteDatabase(ctx, "db"); err != nil {
				t.Fatal(err)
			}
			b.mustDB("db")
			b.mustContainer("c", `"defaultTtl":-1`)
		},
	} {
		recreate()
		if _, err := a.ReadDocument(ctx, ref("c", "x", "p"), Conditions{}); codeOf(err) != "NotFound" {
			t.Fatalf("round %d: read of a document of the deleted container: %v, want NotFound", round, err)
		}
		want := fmt.Sprintf(`{"id":"x","pk":"p","v":"round %d"}`, round)
		if err := b.create("c", want); err != nil {
			t.Fatal(err)
		}
		if got := readV(); got != want {
			t.Fatalf("round %d: read %s, want %s", round, got, want)
		}
		if _, err := a.ReplaceDocument(ctx, ref("c", "x", "p"), []byte(`{"id":"x","pk":"p","v":"replaced"}`), Conditions{}); err != nil {
			t.Fatalf("round %d: replace: %v", round, err)
		}
		if got, want := readV(), `{"id":"x","pk":"p","v":"replaced"}`; got != want {
			t.Fatalf("round %d: read %s after the replace, want %s", round, got, want)
		}
		a.mustDelete("c", "x")
		if _, err := b.ReadDocument(ctx, ref("c", "x", "p"), Conditions{}); codeOf(err) != "NotFound" {
			t.Fatalf("round %d: read after the delete: %v, want NotFound", round, err)
		}
	}
}

// TestAdmissionOnSharedStore checks how soon a gateway enforces a new offer:
// at once when it made the change, within admissionStaleness when another
// gateway did; and that meanwhile admitting costs no round trip.
func TestAdmissionOnSharedStore(t *testing.T) {
	gw := newPostgresGateways(t, 2)
	a, b := gw[0], gw[1]
	a.mustDB("db")
	if _, err := a.CreateContainerWithThroughput(ctx, "db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]}}`), mustThroughput(t, "400", "")); err != nil {
		t.Fatal(err)
	}
	offers, err := a.ListOffers(ctx)
	if err != nil || len(offers) != 1 {
		t.Fatalf("offers: %d, %v", len(offers), err)
	}
	id := decodeOffer(t, offers[0]).ID
	rate := func(te *testEngine) float64 {
		t.Helper()
		bucket, err := te.BudgetFor(ctx, "db", "c")
		if err != nil || bucket == nil {
			t.Fatalf("budget: %v, %v", bucket, err)
		}
		return bucket.Rate() / te.gatewayShare()
	}
	base := rate(a)
	if n := roundTrips(t, a, "admission", func() error { rate(a); return nil }); n != 0 {
		t.Errorf("admission with the throughput read just before: %d round trips, want 0", n)
	}
	if _, err := a.ReplaceOffer(ctx, id, []byte(`{"content":{"offerThroughput":800}}`), ""); err != nil {
		t.Fatal(err)
	}
	if got := rate(a); got != 2*base {
		t.Fatalf("rate right after this gateway's change: %v, want %v", got, 2*base)
	}
	if _, err := b.ReplaceOffer(ctx, id, []byte(`{"content":{"offerThroughput":1200}}`), ""); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * admissionStaleness)
	for rate(a) != 3*base {
		if time.Now().After(deadline) {
			t.Fatalf("rate %v long after another gateway's change, want %v", rate(a), 3*base)
		}
		time.Sleep(admissionStaleness / 20)
	}
}

// TestUncheckedCreateFallsBack checks the creates that find their key
// taken, on PostgreSQL, where a create stores its key unchecked and runs
// again checked when the store says it was taken: by a live document, a
// 409 that wrote nothing; by an expired one still stored, a create that
// replaces it (the engine's invariants, checked when the test ends, hold
// the old version's index entries gone).
func TestUncheckedCreateFallsBack(t *testing.T) {
	te := newPostgresEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":10`)
	if err := te.create("c", `{"id":"x","pk":"p","v":1}`); err != nil {
		t.Fatal(err)
	}
	if err := te.create("c", `{"id":"x","pk":"p","v":2}`); codeOf(err) != "Conflict" {
		t.Fatalf("create of a live document's id: %v, want Conflict", err)
	}
	res, err := te.ReadDocument(ctx, ref("c", "x", "p"), Conditions{})
	if err != nil || userPart(t, res.Body) != `{"id":"x","pk":"p","v":1}` {
		t.Fatalf("after the refused create: %v, %v", res.Body, err)
	}
	te.clock.Advance(10 * time.Second)
	if err := te.read("c", "x"); codeOf(err) != "NotFound" {
		t.Fatalf("read at the expiry instant: %v, want NotFound", err)
	}
	if err := te.create("c", `{"id":"x","pk":"p","v":3}`); err != nil {
		t.Fatalf("create over an expired document: %v", err)
	}
	res, err = te.ReadDocument(ctx, ref("c", "x", "p"), Conditions{})
	if err != nil || userPart(t, res.Body) != `{"id":"x","pk":"p","v":3}` {
		t.Fatalf("after the create over the expired one: %s, %v", res.Body, err)
	}
	page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT VALUE c.v FROM c WHERE c.v > 0", PK: pk("p")})
	if err != nil || len(page.Rows) != 1 || string(page.Rows[0]) != "3" {
		t.Fatalf("query after: %q, %v", page.Rows, err)
	}
}
