package engine

import (
	"fmt"
	"testing"

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
	// Writes during the build index under the new policy.
	if err := te.create("c", `{"id":"new","pk":"p","a":-1,"b":"y"}`); err != nil {
		t.Fatal(err)
	}
	n, err := te.BuildIndexes(ctx)
	if err != nil || n != 1201 {
		t.Fatalf("BuildIndexes = %d, %v; want 1201", n, err)
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
