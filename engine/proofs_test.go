package engine

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
)

// TestDefinedProofs: an ascending ORDER BY, and one of two keys served by a
// composite index, count the index's entries once and then use the proof
// on every page, until a write stores a document without the key; every
// page is a container's without the indexes', whatever writes come
// between: creates and upserts with and without the key, replaces,
// patches, batches, deletes, expiry, and policy changes.
func TestDefinedProofs(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	composite := `"indexingPolicy":{"compositeIndexes":[[{"path":"/name"},{"path":"/n","order":"descending"}],` +
		`[{"path":"/pk"},{"path":"/name"},{"path":"/n","order":"descending"}],[{"path":"/pk"},{"path":"/n"}]]}`
	te.mustContainer("idx", `"defaultTtl":-1,`+composite)
	te.mustContainer("scan", `"defaultTtl":-1,"indexingPolicy":{"includedPaths":[{"path":"/pk/?"}],"excludedPaths":[{"path":"/*"}]}`)
	both := func(do func(coll string) error) {
		t.Helper()
		for _, coll := range []string{"idx", "scan"} {
			if err := do(coll); err != nil {
				t.Fatalf("%s: %v", coll, err)
			}
		}
	}
	upsert := func(body string) {
		t.Helper()
		both(func(coll string) error {
			_, err := te.UpsertDocument(ctx, DocRef{DB: "db", Coll: coll, PK: pk("p")}, []byte(body), Conditions{})
			return err
		})
	}
	for i := range 150 {
		upsert(fmt.Sprintf(`{"id":"d%03d","pk":"p","name":"n%d","n":%d}`, i, i%13, i%7))
	}
	type query struct {
		text string
		pk   lethe.PartitionKey
	}
	queries := []query{
		{"SELECT c.id FROM c ORDER BY c.name", nil},
		{"SELECT c.id FROM c ORDER BY c.name, c.n DESC", nil},
		// The partition's documents (its entries in the index of /pk) are
		// counted against the second composite's entries under p.
		{"SELECT c.id FROM c ORDER BY c.name, c.n DESC", pk("p")},
		// An ascending read of the composite of /pk and /n, the same way.
		{"SELECT c.id FROM c ORDER BY c.n", pk("p")},
	}
	// pagesOf reads every page of each query of qs at page size 7 in both
	// containers, checks that they agree, and returns how many counts the
	// index's pages made.
	pagesOf := func(stage string, qs []query) int64 {
		t.Helper()
		before := definednessCounts.Load()
		for _, q := range qs {
			got, _ := te.allPages("idx", QueryOptions{Text: q.text, PK: q.pk, MaxItems: 7})
			counted := definednessCounts.Load()
			want, _ := te.allPages("scan", QueryOptions{Text: q.text, PK: q.pk, MaxItems: 1000})
			before += definednessCounts.Load() - counted // the scan's plan counts nothing, but be exact
			if g, w := slices.Concat(got...), slices.Concat(want...); !slices.Equal(g, w) {
				t.Errorf("%s: %q in %v:\n index %.300v\n scan  %.300v", stage, q.text, q.pk, g, w)
			}
		}
		return definednessCounts.Load() - before
	}
	pages := func(stage string) int64 { t.Helper(); return pagesOf(stage, queries) }
	sorted := func() bool {
		var ok bool
		for _, q := range queries {
			te.withPlan("idx", q.text, nil, q.pk, func(_ querySource, plan sourcePlan) { ok = plan.sorted > 0 })
			if !ok {
				return false
			}
		}
		return true
	}
	// settled: the pages after a write count a few times (the registration,
	// then the proof) and then not at all. A one-key ascending read counts
	// on its first page only (a page that resumes after a defined key needs
	// no proof), so its proof comes with the second query's first page.
	settled := func(stage string, wantCounts bool) {
		t.Helper()
		if n := pages(stage); wantCounts && n == 0 {
			t.Errorf("%s: the pages counted nothing, where a write broke the proofs", stage)
		}
		pages(stage + ", proving")
		if n := pages(stage + ", again"); n != 0 {
			t.Errorf("%s: the pages counted %d times once proved", stage, n)
		}
	}

	settled("every document has the keys", true)
	if !sorted() {
		t.Fatal("the queries do not read the indexes in order")
	}
	upsert(`{"id":"late","pk":"p","name":"n5","n":99}`)
	settled("a document with the keys created", false)

	breaks := []struct {
		stage string
		write func()
		mend  func()
	}{
		{"an upsert without the name", func() {
			upsert(`{"id":"late","pk":"p","n":99}`)
		}, func() {
			upsert(`{"id":"late","pk":"p","name":"n0","n":99}`)
		}},
		{"a create without the name", func() {
			both(func(coll string) error { return te.create(coll, `{"id":"anon","pk":"p","n":1}`) })
		}, func() {
			both(func(coll string) error { te.mustDelete(coll, "anon"); return nil })
		}},
		{"a replace without n (the composite's second key)", func() {
			both(func(coll string) error {
				_, err := te.ReplaceDocument(ctx, ref(coll, "d007", "p"), []byte(`{"id":"d007","pk":"p","name":"n7"}`), Conditions{})
				return err
			})
		}, func() {
			upsert(`{"id":"d007","pk":"p","name":"n7","n":0}`)
		}},
		{"a patch that removes the name", func() {
			p, err := ParsePatch([]byte(`{"operations":[{"op":"remove","path":"/name"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			both(func(coll string) error {
				_, err := te.PatchDocument(ctx, ref(coll, "d011", "p"), p, Conditions{})
				return err
			})
		}, func() {
			upsert(`{"id":"d011","pk":"p","name":"n11","n":4}`)
		}},
		{"a batch that creates a document without the name", func() {
			both(func(coll string) error {
				_, ok, err := te.ExecuteBatch(ctx, "db", coll, pk("p"), []BatchOp{
					{Type: "Create", Body: []byte(`{"id":"b1","pk":"p","name":"n1","n":1}`)},
					{Type: "Create", Body: []byte(`{"id":"b2","pk":"p","n":2}`)},
				})
				if err == nil && !ok {
					err = fmt.Errorf("the batch failed")
				}
				return err
			})
		}, func() {
			both(func(coll string) error { te.mustDelete(coll, "b2"); return nil })
		}},
	}
	for _, b := range breaks {
		b.write()
		// While a document lacks a key every first page counts (and then
		// sorts every document, which costs more).
		if n := pages(b.stage); n == 0 {
			t.Errorf("%s: the pages counted nothing", b.stage)
		}
		b.mend()
		settled(b.stage+", mended", true)
		if !sorted() {
			t.Fatalf("%s, mended: the queries do not read the indexes in order", b.stage)
		}
	}

	// A document of another partition without the name breaks the proofs
	// about the container, not the one about the partition.
	both(func(coll string) error {
		_, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: coll, PK: pk("q")}, []byte(`{"id":"other","pk":"q","n":1}`))
		return err
	})
	if n := pagesOf("another partition's document without the name", queries[2:]); n != 0 {
		t.Errorf("another partition's document without the name: the partition's pages counted %d times", n)
	}
	if n := pages("another partition's document without the name"); n == 0 {
		t.Error("another partition's document without the name: the container's pages counted nothing")
	}
	both(func(coll string) error {
		_, err := te.DeleteDocument(ctx, ref(coll, "other", "q"), Conditions{})
		return err
	})
	settled("another partition's document deleted", true)
	// Documents that expire, or are deleted, leave the proof standing.
	for i := range 5 {
		upsert(fmt.Sprintf(`{"id":"e%d","pk":"p","name":"n%d","n":%d,"ttl":10}`, i, i, i))
	}
	settled("documents that expire", false)
	te.clock.Advance(20 * time.Second)
	settled("documents expired", false)
	if _, err := te.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	both(func(coll string) error { te.mustDelete(coll, "d001"); return nil })
	settled("expired documents purged, one deleted", false)

	// A policy change forgets what was proved: the index it proved may no
	// longer be the one a prefix names.
	_, err := te.ReplaceContainer(ctx, "db", "idx", []byte(`{"id":"idx","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":-1,`+
		strings.Replace(composite, `"order":"descending"`, `"order":"ascending"`, 1)+`}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := te.BuildIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	settled("after a policy change", true)
}

// TestDefinedProofsUnderConcurrentWrites: a document without the ORDER BY
// key, once its create has returned, is the first row of every ascending
// query that starts after it, while other writers add documents with the
// key and queries prove and use the proof throughout.
func TestDefinedProofsUnderConcurrentWrites(t *testing.T) {
	te := namedDocuments(t, 50)
	const text = "SELECT TOP 1 c.id FROM c ORDER BY c.name"
	first := func() string {
		page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: text})
		if err != nil || len(page.Rows) != 1 {
			t.Errorf("%q: %d rows, %v", text, len(page.Rows), err)
			return ""
		}
		return string(page.Rows[0])
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(stop)
		wg.Wait()
	}()
	wg.Go(func() { // queries that keep registering and proving
		for {
			select {
			case <-stop:
				return
			default:
				first()
			}
		}
	})
	// Each round lets the writer of documents with the key write up to 50,
	// so that the counts stay cheap however the two are scheduled.
	allowance := make(chan struct{}, 50)
	wg.Go(func() { // documents with the key
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-allowance:
				if err := te.create("c", fmt.Sprintf(`{"id":"w%d","pk":"p","name":"w%d"}`, i, i)); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	const rounds = 60
	for i := range rounds {
		for len(allowance) < cap(allowance) {
			allowance <- struct{}{}
		}
		// Let the queries prove the key defined again...
		for range 3 {
			if got := first(); got != `{"id":"d00"}` {
				t.Fatalf("round %d, every document named: first row %s", i, got)
			}
		}
		// ...then store a document without it: from now on it comes first.
		id := fmt.Sprintf("anon%d", i)
		if err := te.create("c", `{"id":"`+id+`","pk":"p"}`); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if got := first(); got != `{"id":"`+id+`"}` {
				t.Fatalf("round %d: first row %s after a document without a name was created, want %s", i, got, id)
			}
		}
		te.mustDelete("c", id)
	}
}

// TestDefinedProofsWhileWritesWait: a query that cannot watch its prefix,
// because a write holds the store's writers up, answers all the same after
// a short wait, and proves the prefix once the writers move again.
func TestDefinedProofsWhileWritesWait(t *testing.T) {
	te := namedDocuments(t, 20)
	const text = "SELECT VALUE c.id FROM c ORDER BY c.name"
	counts := func() int64 {
		t.Helper()
		before := definednessCounts.Load()
		page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: text, MaxItems: 3})
		if err != nil || strings.Join(rowStrings(page.Rows), ",") != `"d00","d01","d02"` {
			t.Fatalf("%q: %s, %v", text, rowStrings(page.Rows), err)
		}
		return definednessCounts.Load() - before
	}
	holding, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- te.store.Update(ctx, func(kv.Tx) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	for range 3 {
		if n := counts(); n != 1 {
			t.Errorf("a query while a write holds the writers up counted %d times, want 1", n)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	counts() // watches
	counts() // proves
	if n := counts(); n != 0 {
		t.Errorf("once the writers moved, a query counted %d times, want 0", n)
	}
}

// namedDocuments returns an engine whose container c of database db holds
// n documents in partition p, d00 named n00 and so on.
func namedDocuments(t *testing.T, n int) *testEngine {
	t.Helper()
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)
	for i := range n {
		if err := te.create("c", fmt.Sprintf(`{"id":"d%02d","pk":"p","name":"n%02d"}`, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	return te
}
