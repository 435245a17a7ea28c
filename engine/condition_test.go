package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestConditionsJudgedOnTheEntries: a WHERE conjunct on one path that no
// index range serves is judged on the path's index entries, and only the
// documents whose value passes are looked up; every page is what a
// container without an index gives, across strings longer than the indexed
// prefix, numbers spelled apart, objects and arrays at the path, documents
// without it and expiry. Judging a cut string by its prefix, an integer's
// text by its float64 value, or an object by its marker fails it.
func TestConditionsJudgedOnTheEntries(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("idx", `"defaultTtl":-1`)
	te.mustContainer("scan", `"defaultTtl":-1,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/name/*"},{"path":"/name/?"},{"path":"/n/?"}]}`)
	long := strings.Repeat("a", 130)
	names := []string{`"abc"`, `"ABC"`, `"xabx"`, `"a.c"`, `"zzz"`, `""`, `"` + long + `"`, `"` + long + `bx"`, `"` + long + `AB"`,
		`5`, `["abc"]`, `{"abc":1}`, `null`, `true`}
	numbers := []string{`5`, `5.0`, `5e0`, `-0`, `0`, `9007199254740993`, `"5"`, `9007199254740992`}
	for i := range 240 {
		body := fmt.Sprintf(`{"id":"d%d","pk":"p"`, i)
		if i%7 != 0 {
			body += `,"name":` + names[i%len(names)]
		}
		body += `,"n":` + numbers[i%len(numbers)]
		if i%5 == 0 {
			body += `,"ttl":10`
		}
		for _, coll := range []string{"idx", "scan"} {
			if err := te.create(coll, body+"}"); err != nil {
				t.Fatal(err)
			}
		}
	}
	queries := []struct {
		text   string
		judged bool
	}{
		{"SELECT c.id FROM c WHERE CONTAINS(c.name, 'ab')", true},
		{"SELECT c.id FROM c WHERE CONTAINS(c.name, 'AB', true)", true},
		{"SELECT c.id FROM c WHERE ENDSWITH(c.name, 'x')", true},
		{"SELECT c.id, c.name FROM c WHERE LOWER(c.name) = 'abc'", true},
		{"SELECT c.id FROM c WHERE RegexMatch(c.name, '^a.c$')", true},
		{"SELECT c.id FROM c WHERE NOT CONTAINS(c.name, 'a')", true},
		{"SELECT c.id FROM c WHERE IS_ARRAY(c.name) OR IS_OBJECT(c.name)", true},
		{"SELECT c.id FROM c WHERE ARRAY_LENGTH(c.name) > 0", true},
		{"SELECT c.id, c.n FROM c WHERE IntMod(c.n, 2) = 1", true}, // the exact integer's text, not its float64
		{"SELECT c.id FROM c WHERE c.n + 0 = 5 AND c.id != 'd3'", true},
		{"SELECT VALUE COUNT(1) FROM c WHERE CONTAINS(c.name, 'b')", false}, // looks at the path only (pathOnlySource)
		{"SELECT c.id FROM c WHERE NOT IS_DEFINED(c.name)", false},
		{"SELECT c.id FROM c WHERE CONTAINS(c.name, 'b') OR c.n = 0", false},
		{"SELECT c.id FROM c WHERE c.name = 'ABC' AND CONTAINS(c.name, 'B')", false}, // the equality's list
	}
	check := func(stage string) {
		t.Helper()
		for _, q := range queries {
			te.withPlan("idx", q.text, nil, nil, func(src querySource, _ sourcePlan) {
				x, ok := src.(*indexSource)
				if judged := ok && x.keep != nil; judged != q.judged {
					t.Errorf("%s: %s judged on the entries: %v, want %v", stage, q.text, judged, q.judged)
				}
			})
			for _, size := range []int{3, 100} {
				te.samePages([]string{"idx", "scan"}, QueryOptions{Text: q.text, MaxItems: size})
			}
		}
	}
	check("fresh")
	te.clock.Advance(10 * time.Second)
	check("a fifth expired")
}
