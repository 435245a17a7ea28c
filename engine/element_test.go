package engine

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestArrayContainsUsesTheIndex: ARRAY_CONTAINS, ARRAY_CONTAINS_ANY and
// ARRAY_CONTAINS_ALL on a document path, and conditions on a JOIN's
// variable or in an EXISTS over the array, read the index entries of the array's elements, so a rare element costs its documents, not a scan; and
// every page is what a container whose policy leaves the array out gives,
// across duplicates, nested arrays, an object with a member named "[]"
// (whose entries are an array's), a scalar where an array is expected,
// numbers spelled apart, null and expiry.
func TestArrayContainsUsesTheIndex(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("idx", `"defaultTtl":-1`)
	te.mustContainer("scan", `"defaultTtl":-1,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/tags/*"}]}`)
	tags := []string{`["a","b"]`, `["b"]`, `["rare"]`, `["rare","rare","a"]`, `[["rare"]]`, `{"[]":"rare"}`, `"rare"`,
		`[5]`, `[5.0,"a"]`, `[null]`, `[]`, `[{"k":"rare"}]`}
	for i := range 600 {
		body := fmt.Sprintf(`{"id":"d%d","pk":"p"`, i)
		switch {
		case i%50 < len(tags):
			body += `,"tags":` + tags[i%50]
		case i%3 != 0:
			body += `,"tags":["common","a"]`
		}
		if i%4 == 0 {
			body += `,"ttl":10`
		}
		for _, coll := range []string{"idx", "scan"} {
			if err := te.create(coll, body+"}"); err != nil {
				t.Fatal(err)
			}
		}
	}
	queries := []string{
		"SELECT c.id FROM c WHERE ARRAY_CONTAINS(c.tags, 'rare')",
		"SELECT c.id FROM c WHERE ARRAY_CONTAINS(c.tags, 'rare', true)",
		"SELECT c.id FROM c WHERE ARRAY_CONTAINS(c.tags, 5)",
		"SELECT c.id FROM c WHERE ARRAY_CONTAINS(c.tags, null)",
		"SELECT c.id FROM c WHERE ARRAY_CONTAINS_ANY(c.tags, 'rare', 5)",
		"SELECT c.id FROM c WHERE ARRAY_CONTAINS_ALL(c.tags, 'a', 'b')",
		"SELECT c.id FROM c WHERE ARRAY_CONTAINS(c.tags, 'rare') OR ARRAY_CONTAINS(c.tags, 'b')",
		"SELECT VALUE COUNT(1) FROM c WHERE ARRAY_CONTAINS(c.tags, 'rare')",
		"SELECT c.id FROM c WHERE ARRAY_CONTAINS(c.tags, 'a') ORDER BY c.id DESC",
		"SELECT c.id, t FROM c JOIN t IN c.tags WHERE t = 'rare'",
		"SELECT VALUE COUNT(1) FROM c JOIN t IN c.tags WHERE t = 'rare'",
		"SELECT DISTINCT VALUE c.id FROM c JOIN t IN c.tags WHERE t IN ('rare', 5)",
		"SELECT c.id, t FROM c JOIN t IN c.tags WHERE STARTSWITH(t, 'ra')",
		"SELECT c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'rare')",
		"SELECT VALUE COUNT(1) FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t IN (5, null))",
	}
	check := func(stage string) {
		t.Helper()
		for _, text := range queries {
			te.withPlan("idx", text, nil, nil, func(_ querySource, sp sourcePlan) {
				if !slices.Equal(sp.path, []string{"tags", arrayElem}) && !slices.Equal(sp.path, []string{"id"}) {
					t.Errorf("%s: %s reads the index of %q, want the array's elements", stage, text, sp.path)
				}
			})
			for _, size := range []int{2, 100} {
				te.samePages([]string{"idx", "scan"}, QueryOptions{Text: text, MaxItems: size})
			}
		}
		// A rare element costs its documents.
		page, err := te.QueryDocuments(ctx, "db", "idx", QueryOptions{Text: queries[0], MaxItems: 100})
		if err != nil || page.Examined > 40 {
			t.Errorf("%s: a rare element examined %d documents (%v), want about its 36", stage, page.Examined, err)
		}
	}
	check("fresh")
	te.clock.Advance(10 * time.Second)
	check("a quarter expired")
}
