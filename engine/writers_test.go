package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

// holdKey marks the context of a write whose transaction holdingStore
// holds open.
type holdKey struct{}

// A hold keeps one writing transaction open after its fn has run (its
// writes made, not committed) until release is closed.
type hold struct {
	reached, released sync.Once
	held              chan struct{} // closed once the transaction is held
	release           chan struct{}
}

// newHold returns a hold released at the latest when the test ends, before
// the engine and the store close (which wait for the transaction).
func newHold(t *testing.T) *hold {
	h := &hold{held: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(h.let)
	return h
}

// let releases the transaction held.
func (h *hold) let() { h.released.Do(func() { close(h.release) }) }

// holdingStore is a shared store (it does not implement kv.Exclusive)
// whose Update holds the transaction of a context carrying a *hold.
type holdingStore struct{ kv.Store }

// Update implements [kv.Store].
func (s holdingStore) Update(ctx context.Context, fn func(kv.Tx) error) error {
	h, _ := ctx.Value(holdKey{}).(*hold)
	if h == nil {
		return s.Store.Update(ctx, fn)
	}
	return s.Store.Update(ctx, func(tx kv.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		h.reached.Do(func() { close(h.held) })
		<-h.release
		return nil
	})
}

// newHoldingGateway returns a gateway on PostgreSQL (a fresh schema) with
// Options.Writers writers, over a holdingStore.
func newHoldingGateway(t *testing.T, writers int) *testEngine {
	t.Helper()
	return holdingGatewayOn(t, pgtest.Schema(t), writers)
}

// holdingGatewayOn is newHoldingGateway on a given schema.
func holdingGatewayOn(t *testing.T, schema string, writers int) *testEngine {
	t.Helper()
	return testEngineWith(t, holdingStore{openPostgresStore(t, schema)}, Options{Writers: writers})
}

// holdCreate starts a create of document id in container c (partition
// "p") and returns once its transaction is held open, its writes made; the
// create's outcome comes on the channel once the hold is let go.
func (te *testEngine) holdCreate(id string) (*hold, <-chan error) {
	h := newHold(te.t)
	done := make(chan error, 1)
	go func() {
		_, err := te.CreateDocument(context.WithValue(ctx, holdKey{}, h), ref("c", "", "p"), []byte(`{"id":"`+id+`","pk":"p"}`))
		done <- err
	}()
	<-h.held
	return h, done
}

// feedChanges reads one page of the change feed from token and returns its
// changes, as "id" in the latest-version mode and "operation id" in the
// all-versions mode, and the page's continuation.
func (te *testEngine) feedChanges(allVersions bool, token string) ([]string, string) {
	te.t.Helper()
	page, err := te.ReadChangeFeed(ctx, "db", "c", ChangeFeedOptions{Continuation: token, AllVersions: allVersions, MaxItems: 1000})
	if err != nil {
		te.t.Fatal(err)
	}
	var out []string
	for _, d := range page.Docs {
		var c struct {
			ID       string `json:"id"`
			Metadata struct {
				OperationType string `json:"operationType"`
				ID            string `json:"id"` // deletes and expiries
			} `json:"metadata"`
			Current struct {
				ID string `json:"id"`
			} `json:"current"`
		}
		if err := json.Unmarshal(d, &c); err != nil {
			te.t.Fatalf("change %s: %v", d, err)
		}
		if allVersions {
			out = append(out, c.Metadata.OperationType+" "+c.Current.ID+c.Metadata.ID)
		} else {
			out = append(out, c.ID)
		}
	}
	return out, page.ETag
}

// TestFeedWaitsForWritesUnderWay: with several writers in one gateway, a
// write that took its order key first may commit after one that took a
// later key. A change feed read in between must not serve the later one:
// its continuation would then lie past the earlier write, which the reader
// would never see. Both modes, and every change once when both are done.
func TestFeedWaitsForWritesUnderWay(t *testing.T) {
	te := newHoldingGateway(t, 2)
	te.mustDB("db")
	te.mustContainer("c", retain)
	te.clock.Advance(time.Second) // past the container's second, for the all-versions mode
	_, latest := te.feedChanges(false, "")
	_, all := te.feedChanges(true, "")

	h, first := te.holdCreate("first")
	if _, err := te.CreateDocument(ctx, ref("c", "", "p"), []byte(`{"id":"second","pk":"p"}`)); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(time.Second)
	if got, _ := te.feedChanges(false, latest); len(got) != 0 {
		t.Fatalf("latest version, while the first create is under way: %v, want nothing", got)
	}
	if got, _ := te.feedChanges(true, all); len(got) != 0 {
		t.Fatalf("all versions, while the first create is under way: %v, want nothing", got)
	}

	h.let()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// The first create may have conflicted with the second at its commit
	// and run again, after it: either order is right.
	te.clock.Advance(time.Second)
	if got, _ := te.feedChanges(false, latest); !slices.Equal(sorted(got), []string{"first", "second"}) {
		t.Errorf("latest version, once both committed: %v, want first and second", got)
	}
	if got, _ := te.feedChanges(true, all); !slices.Equal(sorted(got), []string{"create first", "create second"}) {
		t.Errorf("all versions, once both committed: %v, want both creates", got)
	}
}

// mixedWrite is step i of writer w in container m: an upsert, a replace,
// a patch or a delete of one of the writer's documents.
func mixedWrite(te *testEngine, w, i int) error {
	r := ref("m", fmt.Sprintf("w%d-%d", w, i/4), "p")
	body := []byte(fmt.Sprintf(`{"id":%q,"pk":"p","n":%d}`, r.ID, i))
	var err error
	switch i % 4 {
	case 0:
		_, err = te.UpsertDocument(ctx, r, body, Conditions{})
	case 1:
		_, err = te.ReplaceDocument(ctx, r, body, Conditions{})
	case 2:
		var p *Patch
		if p, err = ParsePatch([]byte(`{"operations":[{"op":"incr","path":"/n","value":1}]}`)); err == nil {
			_, err = te.PatchDocument(ctx, r, p, Conditions{})
		}
	case 3:
		_, err = te.DeleteDocument(ctx, r, Conditions{})
	}
	return err
}

// TestPolicyChangeUnderWayWithWrites: a lowered defaultTtl expires
// documents at its transaction's second. While the change is held open, a
// create of the next second commits and an all-versions read passes the
// change's second; once the change commits, the read from there serves
// each expiry once, and the create. (The reader finds expiries that a
// policy change placed behind its position by the container's TTL history,
// so this passes without the floors too: what it guards is the outcome
// under concurrent writers.)
func TestPolicyChangeUnderWayWithWrites(t *testing.T) {
	te := newHoldingGateway(t, 2)
	te.mustDB("db")
	te.mustContainer("c", retain+`,"defaultTtl":3600`)
	for _, id := range []string{"a", "b"} {
		if err := te.create("c", `{"id":"`+id+`","pk":"p"}`); err != nil {
			t.Fatal(err)
		}
	}
	te.clock.Advance(10 * time.Second)
	_, all := te.feedChanges(true, "") // the two creates

	h := newHold(t)
	replaced := make(chan error, 1)
	go func() {
		body := `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":5,` + retain + `}`
		_, err := te.ReplaceContainer(context.WithValue(ctx, holdKey{}, h), "db", "c", []byte(body), "")
		replaced <- err
	}()
	<-h.held
	// A second later (an all-versions read serves no further than the
	// start of the current second), a create commits.
	te.clock.Advance(time.Second)
	if err := te.create("c", `{"id":"x","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	got, next := te.feedChanges(true, all)
	if len(got) != 0 {
		t.Fatalf("while the policy change is under way: %v, want nothing", got)
	}
	h.let()
	if err := <-replaced; err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(time.Second)
	got, _ = te.feedChanges(true, next)
	if want := []string{"create x", "delete a", "delete b"}; !slices.Equal(sorted(got), want) {
		t.Errorf("once the change committed: %v, want %v", got, want)
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// TestFeedWithConcurrentWriters: four writers of one gateway create
// documents while a reader follows the change feed; the reader sees every
// document once. Each writer also replaces, upserts, patches and deletes
// documents of another container with a log, and the engine's invariants
// hold at the end (under -race, this is where writers would race).
func TestFeedWithConcurrentWriters(t *testing.T) {
	te := newHoldingGateway(t, 4)
	te.mustDB("db")
	te.mustContainer("c", "")
	te.mustContainer("m", retain+`,"defaultTtl":3600`)
	const writers, each = 4, 60
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf(`{"id":"w%d-%d","pk":"p%d"}`, w, i, i%7)
				if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(fmt.Sprintf("p%d", i%7))}, []byte(body)); err != nil {
					t.Error(err)
					return
				}
				if err := mixedWrite(te, w, i); err != nil {
					t.Errorf("writer %d, step %d in m: %v", w, i, err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()

	seen := map[string]int{}
	token := ""
	read := func() {
		got, next := te.feedChanges(false, token)
		for _, id := range got {
			seen[id]++
		}
		token = next
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		read()
	}
	read() // every write has returned: the last page
	if len(seen) != writers*each {
		t.Errorf("the feed served %d documents, want %d", len(seen), writers*each)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s served %d times", id, n)
		}
	}
}

// TestWritersSplitBetweenGateways: Options.Writers is the writers of every
// gateway over the database together, split evenly among the live ones and
// rounded up.
func TestWritersSplitBetweenGateways(t *testing.T) {
	schema := pgtest.Schema(t)
	second := holdingGatewayOn(t, schema, 4)
	third := holdingGatewayOn(t, schema, 4)
	te := holdingGatewayOn(t, schema, 4)
	te.mustDB("db")
	te.mustContainer("c", "")
	gate := te.Engine.store.(leasedStore).writers
	// more holds a create open and counts the writing transactions te lets
	// start beside it.
	more := func(id string) int {
		t.Helper()
		h, done := te.holdCreate(id)
		weight := gate.weight(1 + int64(te.Gateway().Others))
		n := int64(0)
		for ; gate.sem.TryAcquire(weight); n++ {
		}
		gate.leave(n * weight)
		h.let()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	for _, step := range []struct {
		stop   *testEngine // a gateway to stop first, or nil
		others int
		more   int
	}{
		{nil, 2, 1},    // three gateways: two writers each (4/3 rounded up)
		{third, 1, 1},  // two: two each
		{second, 0, 3}, // one: all four
	} {
		if step.stop != nil {
			step.stop.Close() // a clean stop deletes its registration
			if err := te.lease.renew(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if n := te.Gateway().Others; n != step.others {
			t.Fatalf("the gateway sees %d others, want %d", n, step.others)
		}
		if n := more(fmt.Sprintf("held%d", step.others)); n != step.more {
			t.Errorf("%d other gateways, 4 writers: %d writes may start beside a running one, want %d", step.others, n, step.more)
		}
	}
}

// TestWriterGateAdmitsTheShare: for every limit a gateway may be given and
// any number of gateways, the gate admits exactly the gateway's share.
func TestWriterGateAdmitsTheShare(t *testing.T) {
	for limit := 1; limit <= 64; limit++ {
		g := newWriterGate(limit)
		for gateways := int64(1); gateways <= 70; gateways++ {
			share := writerShare(int64(limit), gateways)
			// the least share, at least one, that covers limit between them
			if share < 1 || share*gateways < int64(limit) || share > 1 && (share-1)*gateways >= int64(limit) {
				t.Fatalf("%d writers, %d gateways: share %d", limit, gateways, share)
			}
			w := g.weight(gateways)
			if fit := int64(limit*limit) / w; fit != share {
				t.Fatalf("%d writers, %d gateways: %d transactions fit, want %d", limit, gateways, fit, share)
			}
		}
	}
}
