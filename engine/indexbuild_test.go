package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethe-db/lethe/activity"
	"github.com/lethe-db/lethe/kv"
)

// indexEntriesOf counts a container's index entries per path (as encoded).
func (te *testEngine) indexEntryCount(coll string, path ...string) int {
	te.t.Helper()
	n := 0
	err := te.store.View(ctx, func(r kv.Reader) error {
		_, c, err := getContainer(r, "db", coll)
		if err != nil {
			return err
		}
		p := indexPrefix(c.rid(), path)
		it := r.Scan(p, kv.PrefixEnd(p), false)
		for it.Next() {
			n++
		}
		return it.Close()
	})
	if err != nil {
		te.t.Fatal(err)
	}
	return n
}

func TestIndexRebuildAfterPolicyChange(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)
	for i := range 1200 { // more than one build batch
		if err := te.create("c", fmt.Sprintf(`{"id":"d%d","pk":"p","a":%d,"b":"x%d","tags":["t1","t2"]}`, i, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := te.indexEntryCount("c", "b"); n != 1200 {
		t.Fatalf("default policy: %d entries for /b; want 1200", n)
	}
	te.setDefaultTTL("c", `"defaultTtl":-1,"indexingPolicy":{"indexingMode":"consistent","includedPaths":[{"path":"/a/?"}],"excludedPaths":[{"path":"/*"}]}`)
	if err := te.Check(ctx); err != nil {
		t.Fatalf("invariants while the build is pending: %v", err)
	}
	// Writes during the build index under the new policy, so the build
	// re-indexes only the 1200 documents written before the replace.
	if err := te.create("c", `{"id":"new","pk":"p","a":-1,"b":"y"}`); err != nil {
		t.Fatal(err)
	}
	n, err := te.BuildIndexes(ctx)
	if err != nil || n != 1200 {
		t.Fatalf("BuildIndexes = %d, %v; want 1200", n, err)
	}
	if got := te.indexEntryCount("c", "b"); got != 0 {
		t.Errorf("after the build, /b still has %d entries", got)
	}
	if got := te.indexEntryCount("c", "a"); got != 1201 {
		t.Errorf("after the build, /a has %d entries; want 1201", got)
	}
	if n, err := te.BuildIndexes(ctx); err != nil || n != 0 {
		t.Errorf("second BuildIndexes = %d, %v", n, err)
	}
	// Back to the default policy: /b comes back; Check (at cleanup) verifies all.
	te.setDefaultTTL("c", `"defaultTtl":-1`)
	if _, err := te.BuildIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if got := te.indexEntryCount("c", "b"); got != 1201 {
		t.Errorf("default policy again: /b has %d entries; want 1201", got)
	}
	if got := te.indexEntryCount("c", "tags", arrayElem); got != 1200*2 { // "new" has no tags
		t.Errorf("/tags/[] has %d entries; want %d", got, 1200*2)
	}
}

// onlyA is an indexing policy that indexes /a alone.
const onlyA = `"indexingPolicy":{"indexingMode":"consistent","includedPaths":[{"path":"/a/?"}],"excludedPaths":[{"path":"/*"}]}`

// buildState reads a container's pending build: its cursor and end, nil when
// none is pending.
func (te *testEngine) buildState(coll string) (cursor, end *uint64) {
	te.t.Helper()
	err := te.Engine.store.View(ctx, func(r kv.Reader) error {
		_, c, err := getContainer(r, "db", coll)
		if err != nil {
			return err
		}
		cursor, end = c.IndexBuild, c.IndexBuildEnd
		return nil
	})
	if err != nil {
		te.t.Fatal(err)
	}
	return cursor, end
}

// showSeq formats a build's cursor or end.
func showSeq(p *uint64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// TestIndexBuildEndsUnderSteadyCreates: a re-index covers the documents
// written before the policy changed and no more, so it ends even when users
// create documents faster than it re-indexes them (here 20 creates after
// every batch of 10). Before the build had an end it chased the newest
// document and, under such a load, never finished: queries scanned forever.
func TestIndexBuildEndsUnderSteadyCreates(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	te.fill("c", "old", 50, `,"a":1,"b":"x"`)
	te.setDefaultTTL("c", onlyA)
	if _, end := te.buildState("c"); end == nil || *end != 50 {
		t.Fatalf("build end = %s; want 50, the last sequence number before the replace", showSeq(end))
	}
	batches := 0
	for ; batches < 100; batches++ {
		if _, pending, err := te.buildIndexBatch(ctx, 10); err != nil {
			t.Fatal(err)
		} else if !pending {
			break
		}
		te.fill("c", fmt.Sprintf("new%d-", batches), 20, `,"a":2,"b":"y"`)
	}
	// Five batches re-index the 50 documents; the sixth call finds nothing.
	if batches != 5 {
		t.Errorf("the build took %d batches of 10 for 50 documents; want 5", batches)
	}
	if cursor, end := te.buildState("c"); cursor != nil || end != nil {
		t.Errorf("after the build: cursor %s end %s; want none", showSeq(cursor), showSeq(end))
	}
	total := 50 + 20*batches
	if got := te.indexEntryCount("c", "a"); got != total {
		t.Errorf("/a has %d entries; want %d", got, total)
	}
	if got := te.indexEntryCount("c", "b"); got != 0 {
		t.Errorf("/b has %d entries under a policy that excludes it", got)
	}
	// Cleanup's Check verifies every entry of every document.
}

// TestIndexBuildRestartsOnAnotherChange: a second policy change during a
// build restarts it from the first document with a new end, and replacing
// documents (which keep their sequence numbers) meanwhile indexes them under
// the newest policy.
func TestIndexBuildRestartsOnAnotherChange(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	te.fill("c", "d", 30, `,"a":1,"b":"x"`)
	te.setDefaultTTL("c", onlyA)
	if _, _, err := te.buildIndexBatch(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if cursor, end := te.buildState("c"); cursor == nil || *cursor != 11 || end == nil || *end != 30 {
		t.Fatalf("after one batch: cursor %s end %s; want 11 and 30", showSeq(cursor), showSeq(end))
	}
	te.fill("c", "e", 5, `,"a":2,"b":"y"`)
	if _, err := te.ReplaceDocument(ctx, ref("c", "d3", "p"), []byte(`{"id":"d3","pk":"p","a":9,"b":"z"}`), Conditions{}); err != nil {
		t.Fatal(err)
	}
	te.setDefaultTTL("c", "") // the default policy: everything indexed again
	if cursor, end := te.buildState("c"); cursor == nil || *cursor != 0 || end == nil || *end != 35 {
		t.Fatalf("after the second change: cursor %s end %s; want 0 and 35", showSeq(cursor), showSeq(end))
	}
	if n, err := te.BuildIndexes(ctx); err != nil || n != 35 {
		t.Fatalf("BuildIndexes = %d, %v; want 35", n, err)
	}
	if got := te.indexEntryCount("c", "b"); got != 35 {
		t.Errorf("/b has %d entries; want 35", got)
	}
}

// TestIndexBuildWithoutEnd: a build recorded before builds had an end (no
// indexBuildEnd in the container record) still runs, to the last document.
func TestIndexBuildWithoutEnd(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	te.fill("c", "d", 20, `,"a":1,"b":"x"`)
	te.setDefaultTTL("c", onlyA)
	err := te.Engine.store.Update(ctx, func(tx kv.Tx) error {
		db, shared, err := getContainer(tx, "db", "c")
		if err != nil {
			return err
		}
		c := *shared
		c.IndexBuildEnd = nil
		v, err := json.Marshal(&c)
		if err != nil {
			return err
		}
		return tx.Put(containerKey(db.rid(), "c"), v)
	})
	if err != nil {
		t.Fatal(err)
	}
	te.fill("c", "e", 5, `,"a":2,"b":"y"`)
	if n, err := te.BuildIndexes(ctx); err != nil || n != 25 {
		t.Fatalf("BuildIndexes = %d, %v; want 25 (to the last document)", n, err)
	}
	if got := te.indexEntryCount("c", "a"); got != 25 {
		t.Errorf("/a has %d entries; want 25", got)
	}
}

// TestIndexBuildPacedBatches: while users are active the background re-index
// takes small batches, as the purge does (a batch holds the store's writer
// lock, and its rest is in proportion to its length); with users idle it
// takes full ones. Before, it always took full batches, and on a busy
// machine one such batch and its 16-fold rest could hold a re-index of a few
// hundred documents up for seconds after users had gone quiet.
func TestIndexBuildPacedBatches(t *testing.T) {
	users := &activity.Tracker{}
	cs := &countingStore{Store: newMemStore(t)}
	te := openTestEngine(t, cs, Options{DisableBackground: true, Activity: users})
	te.mustDB("db")
	te.mustContainer("c", "")
	te.fill("c", "d", 100, `,"a":1,"b":"x"`)

	te.setDefaultTTL("c", onlyA)
	end := users.Begin() // a user operation in flight throughout the build
	before := cs.updates.Load()
	if err := te.buildIndexesYielding(context.Background()); err != nil {
		t.Fatal(err)
	}
	end()
	// Batches of max(16, 512/32) = 16: six full ones and one of 4.
	if got := cs.updates.Load() - before; got != 7 {
		t.Errorf("users active: the re-index of 100 documents took %d transactions; want 7 batches of at most 16", got)
	}

	te.setDefaultTTL("c", "")
	// Idle: wait out the tracker's quiet window (10 ms of real time) after
	// the replace, the last user operation.
	for te.usersActive() {
		time.Sleep(time.Millisecond)
	}
	before = cs.updates.Load()
	if err := te.buildIndexesYielding(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := cs.updates.Load() - before; got != 1 {
		t.Errorf("users idle: the re-index of 100 documents took %d transactions; want one full batch", got)
	}
	if n := te.indexEntryCount("c", "b"); n != 100 {
		t.Errorf("/b has %d entries; want 100", n)
	}
}

// slowCommitStore runs beforeCommit, when set, between an Update's fn and
// its commit: the window in which a wake-up sent from inside the transaction
// reaches a pass that cannot see the write yet.
type slowCommitStore struct {
	kv.Store
	beforeCommit atomic.Pointer[func()]
}

func (s *slowCommitStore) Update(ctx context.Context, fn func(kv.Tx) error) error {
	return s.Store.Update(ctx, func(tx kv.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if f := s.beforeCommit.Load(); f != nil {
			(*f)()
		}
		return nil
	})
}

// TestPolicyChangeWakesTheBuilder: replacing a policy starts the background
// re-index at once, not at the purger's next tick (an hour here). The commit
// of the replace is held until the purger has had a chance to run a pass: a
// wake-up sent from inside the transaction would be spent on that pass,
// which cannot see the pending build, and the build would wait an hour. The
// wake-up is sent after the commit.
func TestPolicyChangeWakesTheBuilder(t *testing.T) {
	store := &slowCommitStore{Store: newMemStore(t)}
	te := openTestEngine(t, store, Options{PurgeInterval: time.Hour})
	te.mustDB("db")
	te.mustContainer("c", "")
	te.fill("c", "d", 20, `,"a":1,"b":"x"`)
	hold := func() {
		// Give a pass woken from inside the transaction time to run: its
		// purge part, then its re-index part, which first waits up to
		// userWaitMax for operations in flight (this replace among them).
		// With the wake-up after the commit no pass comes, and this only
		// delays the commit: nothing below depends on how long it waits.
		passes := te.PurgeStats().Passes
		for deadline := time.Now().Add(200 * time.Millisecond); te.PurgeStats().Passes == passes && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(2 * userWaitMax)
	}
	store.beforeCommit.Store(&hold)
	te.setDefaultTTL("c", onlyA)
	store.beforeCommit.Store(nil)
	// The deadline is a safety net: the build needs milliseconds.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if cursor, _ := te.buildState("c"); cursor == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a minute after the policy change, the re-index has not run")
		}
	}
	if got := te.indexEntryCount("c", "b"); got != 0 {
		t.Errorf("/b has %d entries after the re-index", got)
	}
}

// TestReplaceAndDeleteWhileReindexPending: a replace or a delete of a
// version stored under the earlier policy, while the re-index is pending,
// removes that version's entries as its stored manifest lists them (not as
// the new policy would compute them), so none is left behind; once the
// build is done, the manifest is computed from the body and the same holds.
func TestReplaceAndDeleteWhileReindexPending(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)
	for i := range 4 {
		if err := te.create("c", fmt.Sprintf(`{"id":"d%d","pk":"p","a":%d,"b":"x%d"}`, i, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	te.setDefaultTTL("c", `"defaultTtl":-1,"indexingPolicy":{"indexingMode":"consistent","includedPaths":[{"path":"/a/?"}],"excludedPaths":[{"path":"/*"}]}`)
	if _, err := te.ReplaceDocument(ctx, ref("c", "d0", "p"), []byte(`{"id":"d0","pk":"p","a":10,"b":"y0"}`), Conditions{}); err != nil {
		t.Fatal(err)
	}
	te.mustDelete("c", "d1")
	// d2 and d3 keep their /b entries until the build; d0's and d1's are gone.
	if got := te.indexEntryCount("c", "b"); got != 2 {
		t.Errorf("while the build is pending: %d entries for /b, want 2 (d2's and d3's)", got)
	}
	if err := te.Check(ctx); err != nil {
		t.Fatalf("invariants while the build is pending: %v", err)
	}
	if _, err := te.BuildIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := te.ReplaceDocument(ctx, ref("c", "d2", "p"), []byte(`{"id":"d2","pk":"p","a":12,"b":"y2"}`), Conditions{}); err != nil {
		t.Fatal(err)
	}
	te.mustDelete("c", "d3")
	if got, want := te.indexEntryCount("c", "b"), 0; got != want {
		t.Errorf("after the build: %d entries for /b, want %d", got, want)
	}
	if got := te.indexEntryCount("c", "a"); got != 2 {
		t.Errorf("after the build: %d entries for /a, want 2 (d0's and d2's)", got)
	}
}
