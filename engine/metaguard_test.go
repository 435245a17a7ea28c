package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newCountingEngine(t *testing.T, exclusive bool) (*testEngine, *countingStore) {
	t.Helper()
	cs := &countingStore{Store: newMemStore(t), exclusive: exclusive}
	te := openTestEngine(t, cs, Options{DisableBackground: true})
	te.mustDB("db")
	te.mustContainer("c", "")
	if err := te.create("c", `{"id":"a","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	return te, cs
}

// metaGetsOf returns how many records op read.
func metaGetsOf(t *testing.T, cs *countingStore, op func() error) int64 {
	t.Helper()
	before := cs.metaGets.Load()
	if err := op(); err != nil {
		t.Fatal(err)
	}
	return cs.metaGets.Load() - before
}

func TestMetaGuardSkipsRecordReadsUntilTheyChange(t *testing.T) {
	te, cs := newCountingEngine(t, true)
	read := func() error { return te.read("c", "a") }
	metaGetsOf(t, cs, read) // fills the cache
	if n := metaGetsOf(t, cs, read); n != 0 {
		t.Fatalf("a read with cached records read %d records, want 0", n)
	}
	if n := metaGetsOf(t, cs, func() error { return te.create("c", `{"id":"b","pk":"p"}`) }); n != 0 {
		t.Fatalf("a create with cached records read %d records, want 0", n)
	}
	// Any write to a record (here a policy change) retires the cache at once.
	if _, err := te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":5}`), ""); err != nil {
		t.Fatal(err)
	}
	if n := metaGetsOf(t, cs, read); n == 0 {
		t.Fatal("the first read after a container change used the cache")
	}
	if n := metaGetsOf(t, cs, read); n != 0 {
		t.Fatalf("the cache was not refilled: a read read %d records", n)
	}
}

func TestMetaGuardPolicyChangeSeenAtOnce(t *testing.T) {
	te, _ := newCountingEngine(t, true)
	te.clock.Advance(100e9)
	if err := te.read("c", "a"); err != nil { // cached: no TTL, live
		t.Fatal(err)
	}
	if _, err := te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":10}`), ""); err != nil {
		t.Fatal(err)
	}
	if got := codeOf(te.read("c", "a")); got != "NotFound" {
		t.Fatalf("read after defaultTtl 10 on a 100 s old document: %s, want NotFound", got)
	}
	// Recreating the container under the same id gives a new, empty one.
	if err := te.DeleteContainer(ctx, "db", "c"); err != nil {
		t.Fatal(err)
	}
	te.mustContainer("c", "")
	if got := codeOf(te.read("c", "a")); got != "NotFound" {
		t.Fatalf("read in a recreated container: %s, want NotFound", got)
	}
}

func TestMetaGuardOffForSharedStores(t *testing.T) {
	te, cs := newCountingEngine(t, false)
	read := func() error { return te.read("c", "a") }
	metaGetsOf(t, cs, read)
	if n := metaGetsOf(t, cs, read); n == 0 {
		t.Fatal("a store that is not exclusive had its records cached")
	}
}

// TestMetaGuardLinearizable recreates a container over and over while readers
// read a document in it. A read that starts and ends while the container is
// settled must find the document of that container's generation; a stale
// cached container would look in the deleted one and miss it.
func TestMetaGuardLinearizable(t *testing.T) {
	te, _ := newCountingEngine(t, true)
	var phase atomic.Int64 // even: settled with rids[phase/2]; odd: changing
	var rids sync.Map      // phase -> container rid
	res, err := te.ReadDocument(ctx, ref("c", "a", "p"), Conditions{})
	if err != nil {
		t.Fatal(err)
	}
	rids.Store(int64(0), res.ContainerRID)

	const rounds = 300
	done := make(chan struct{})
	var wg sync.WaitGroup
	var checked, failures atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				p1 := phase.Load()
				res, err := te.ReadDocument(ctx, ref("c", "a", "p"), Conditions{})
				p2 := phase.Load()
				if p1 != p2 || p1%2 == 1 {
					continue
				}
				checked.Add(1)
				want, _ := rids.Load(p1)
				if err != nil || res.ContainerRID != want {
					if failures.Add(1) <= 5 {
						t.Errorf("settled phase %d: read gave rid %q, err %v; want rid %v", p1, res.ContainerRID, err, want)
					}
				}
			}
		}()
	}
	for i := range rounds {
		phase.Store(int64(2*i + 1))
		if err := te.DeleteContainer(ctx, "db", "c"); err != nil {
			t.Fatal(err)
		}
		te.mustContainer("c", "")
		if err := te.create("c", `{"id":"a","pk":"p"}`); err != nil {
			t.Fatal(err)
		}
		c, _, err := te.ReadContainer(ctx, "db", "c")
		if err != nil {
			t.Fatal(err)
		}
		rids.Store(int64(2*i+2), c.RID)
		before := checked.Load()
		phase.Store(int64(2*i + 2))
		// Let the readers see this container before it is replaced.
		for deadline := time.Now().Add(time.Second); checked.Load() < before+2 && time.Now().Before(deadline); {
			runtime.Gosched()
		}
	}
	close(done)
	wg.Wait()
	if checked.Load() == 0 {
		t.Fatal("no read ran while the container was settled")
	}
	t.Logf("%d settled reads checked", checked.Load())
}
