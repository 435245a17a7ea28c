package engine

import (
	"fmt"
	"strings"
	"testing"
)

// progressOf returns the IndexProgress a container read reports.
func (te *testEngine) progressOf(coll string) int {
	te.t.Helper()
	_, info, err := te.ReadContainer(ctx, "db", coll)
	if err != nil {
		te.t.Fatal(err)
	}
	return info.IndexProgress
}

// TestIndexProgress: a container read reports 100 when no re-index is
// pending, a share below 100 that grows batch by batch while one is, and 100
// again exactly when the build is done, which is when queries use the index.
func TestIndexProgress(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	if p := te.progressOf("c"); p != 100 {
		t.Fatalf("empty container: progress %d; want 100", p)
	}
	for i := range 1200 { // three build batches of 512
		if err := te.create("c", fmt.Sprintf(`{"id":"d%d","pk":"p","a":%d}`, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	if p := te.progressOf("c"); p != 100 {
		t.Fatalf("no policy change: progress %d; want 100", p)
	}
	te.setDefaultTTL("c", `"indexingPolicy":{"includedPaths":[{"path":"/a/?"}],"excludedPaths":[{"path":"/*"}]}`)
	if p := te.progressOf("c"); p != 0 {
		t.Fatalf("re-index pending, nothing done: progress %d; want 0", p)
	}
	var seen []int
	for {
		_, pending, err := te.buildIndexBatch(ctx, 512)
		if err != nil {
			t.Fatal(err)
		}
		if !pending {
			break
		}
		seen = append(seen, te.progressOf("c"))
	}
	// After each of the three batches: 512, 1024, then done.
	if len(seen) != 3 || seen[0] != 512*100/1201 || seen[1] != 1024*100/1201 || seen[2] != 100 {
		t.Errorf("progress after each batch %v; want [%d %d 100]", seen, 512*100/1201, 1024*100/1201)
	}
	page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT VALUE c.id FROM c WHERE c.a = 7", IndexMetrics: true})
	if err != nil || len(page.Rows) != 1 {
		t.Fatalf("query after the build: %q %v", page.Rows, err)
	}
	if m, _ := base64Decode(page.IndexMetrics); !containsSpec(m, "/a/?") {
		t.Errorf("at progress 100 the query does not use the new index: %s", m)
	}
}

func containsSpec(metrics []byte, spec string) bool {
	return strings.Contains(string(metrics), `"IndexSpec":"`+spec+`"`)
}
