package query

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lethe-db/lethe/jsonv"
)

func TestOnlyPath(t *testing.T) {
	params := map[string]jsonv.Value{"name": "status", "n": jsonv.Number("3")}
	for _, c := range []struct {
		text        string
		path        []string // nil: not ok
		spelling    Spelling
		onePerValue bool
	}{
		{"SELECT DISTINCT VALUE c.status FROM c", []string{"status"}, SpellingFirst, true},
		{"SELECT c.status, COUNT(1) AS n FROM c GROUP BY c.status", []string{"status"}, SpellingFirst, false},
		{"SELECT VALUE COUNT(1) FROM c GROUP BY c.status", []string{"status"}, SpellingFirst, false},
		{"SELECT VALUE SUM(c.a.b) FROM c", []string{"a", "b"}, SpellingIgnored, false},
		{"SELECT VALUE AVG(c['score']) FROM c WHERE c.score > @n", []string{"score"}, SpellingIgnored, false},
		{"SELECT VALUE COUNT(1) FROM r WHERE r[@name] IN ('a', 'b') OR NOT IS_DEFINED(r[@name])", []string{"status"}, SpellingIgnored, false},
		{"SELECT VALUE COUNT(c.n) FROM c WHERE c.n BETWEEN 1 AND 2 AND c.n LIKE '1%'", []string{"n"}, SpellingIgnored, false},
		{"SELECT VALUE MAX(c.n) FROM c WHERE c.n - 1 > 0", []string{"n"}, SpellingFirst, false},
		{"SELECT VALUE SUM(c.n) FROM c WHERE ToString(c.n) = '5.0'", []string{"n"}, SpellingEach, false},
		{"SELECT VALUE SUM(ABS(c.n)) FROM c", []string{"n"}, SpellingEach, false},
		{"SELECT DISTINCT VALUE c.n > 2 ? 'big' : 'small' FROM c", []string{"n"}, SpellingIgnored, true},
		{"SELECT DISTINCT VALUE c.n > 2 ? c.n : 0 FROM c", []string{"n"}, SpellingFirst, true},
		{"SELECT DISTINCT VALUE -c.n FROM c", []string{"n"}, SpellingIgnored, true},
		{"SELECT DISTINCT VALUE +c.n FROM c", []string{"n"}, SpellingFirst, true},
		{"SELECT DISTINCT VALUE c.n ?? 0 FROM c", []string{"n"}, SpellingFirst, true},
		{"SELECT DISTINCT VALUE (c.n ?? 0) + 1 FROM c", []string{"n"}, SpellingIgnored, true},
		{"SELECT DISTINCT c.status FROM c ORDER BY c.status", []string{"status"}, SpellingFirst, true},
		{"SELECT c.status FROM c GROUP BY c.status", []string{"status"}, SpellingFirst, true},
		{"SELECT DISTINCT VALUE COUNT(1) FROM c GROUP BY c.status", []string{"status"}, SpellingFirst, false},
		// Not one path: the whole document, two paths, a subquery, a JOIN,
		// rows streamed in document order, or no path at all.
		{"SELECT DISTINCT VALUE c FROM c", nil, SpellingIgnored, true},
		{"SELECT c.status, COUNT(1) FROM c WHERE c.n > 1 GROUP BY c.status", nil, SpellingIgnored, false},
		{"SELECT DISTINCT VALUE c.a FROM c WHERE c.a.b = 1", nil, SpellingIgnored, true},
		{"SELECT VALUE COUNT(1) FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags)", nil, SpellingIgnored, false},
		{"SELECT VALUE COUNT(1) FROM c JOIN t IN c.tags WHERE c.status = 'a'", nil, SpellingIgnored, false},
		{"SELECT VALUE COUNT(1) FROM t IN c.tags", nil, SpellingIgnored, false},
		{"SELECT VALUE COUNT(1) FROM c.children ch WHERE ch.status = 'a'", nil, SpellingIgnored, false},
		{"SELECT c.status FROM c", nil, SpellingIgnored, false},
		{"SELECT c.status FROM c ORDER BY c.status", nil, SpellingIgnored, false},
		{"SELECT VALUE COUNT(1) FROM c", nil, SpellingIgnored, false},
		{"SELECT DISTINCT * FROM c", nil, SpellingIgnored, true},
	} {
		q, err := Parse(c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		if !c.onePerValue != !q.OnePerValue() {
			t.Errorf("%s: OnePerValue = %v", c.text, q.OnePerValue())
		}
		path, spelling, ok := q.OnlyPath(params)
		if ok != (c.path != nil) || !slices.Equal(path, c.path) || ok && spelling != c.spelling {
			t.Errorf("%s: OnlyPath = %q, spelling %v, %v; want %q, spelling %v", c.text, path, spelling, ok, c.path, c.spelling)
		}
	}
}

func TestReadPaths(t *testing.T) {
	for _, c := range []struct {
		text  string
		paths string // "" when not ok
	}{
		{"SELECT c.id, c.a.b FROM c WHERE c.a.c > 1 ORDER BY c.x", `[[a b] [a c] [id] [x]]`},
		{"SELECT c.a, c.a.b FROM c WHERE c['a'].c > 1", `[[a]]`},
		{"SELECT c.s, SUM(c.n) FROM c GROUP BY c.s", `[[n] [s]]`},
		{"SELECT c.id, t FROM c JOIN t IN c.tags WHERE t.k = 1", `[[id] [tags]]`},
		{"SELECT VALUE COUNT(1) FROM c", `[]`},
		{"SELECT a, a2 FROM (SELECT VALUE c) x", ""},
		{"SELECT * FROM c WHERE c.a = 1 ORDER BY c.b.x", `raw [[a] [b x]]`},
		{"SELECT TOP 3 * FROM c", `raw []`},
		{"SELECT DISTINCT * FROM c WHERE c.a = 1", ""},
		{"SELECT * FROM c JOIN t IN c.tags", ""},
		{"SELECT VALUE c FROM c", ""},
		{"SELECT c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags)", ""},
		{"SELECT t FROM t IN c.tags", ""},
		{"SELECT c.id FROM c WHERE IS_DEFINED(c[c.k])", ""},
	} {
		q, err := Parse(c.text)
		if err != nil {
			if c.paths == "" {
				continue
			}
			t.Fatalf("%s: %v", c.text, err)
		}
		paths, raw, ok := q.ReadPaths(nil)
		got := ""
		if ok {
			got = fmt.Sprint(paths)
			if len(paths) == 0 {
				got = "[]"
			}
			if raw {
				got = "raw " + got
			}
		}
		if got != c.paths {
			t.Errorf("%s: ReadPaths = %s, want %s", c.text, got, c.paths)
		}
	}
}
