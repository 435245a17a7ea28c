package e2e

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// The query tests' dataset and the table of queries run over it. Every
// expectation is computed here from the documents, with Cosmos DB's semantics,
// so the same table serves a cross-partition query, each page size, a single
// partition (the documents of that partition), and a container with one
// partition key value.

// queryNames are the documents' names: mixed case (code point order puts
// upper case first), and LIKE metacharacters in a_c and a%c.
var queryNames = []string{
	"alpha", "Beta", "gamma", "a_c", "abc", "a%c", "delta", "Epsilon",
	"zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu",
	"xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi",
}

const queryDocCount = 24

// queryDataset returns the documents to insert, in insertion order (ids d00,
// d01, ... so that insertion order is also id order). Partition key /pk takes
// four values; /kind is the same for every document (for the single-partition
// container). Properties vary in type and presence on purpose:
//   - n: mostly i%7 (ties), but "5" (a string) in d05, missing in d11, null in
//     d17, 2.5 in d20;
//   - tags: ["red","blue"], ["green"] or [] by i%3, missing in d22;
//   - nested.a.b only in even documents; "odd-key x" only when i%5 == 0;
//   - flag: true, false, null or missing by (i/2)%4;
//   - g: "x", "y", "z" by i%3, missing when i%8 == 7.
func queryDataset() []qdoc {
	var out []qdoc
	for i := range queryDocCount {
		d := qdoc{
			"id":    fmt.Sprintf("d%02d", i),
			"pk":    fmt.Sprintf("p%d", i%4),
			"kind":  "doc",
			"bits":  i,
			"name":  queryNames[i],
			"price": float64(i) * 1.25,
			"date":  fmt.Sprintf("2024-01-%02dT10:00:00.0000000Z", i+1),
		}
		switch i {
		case 5:
			d["n"] = "5"
		case 11:
		case 17:
			d["n"] = nil
		case 20:
			d["n"] = 2.5
		default:
			d["n"] = i % 7
		}
		if i != 22 {
			d["tags"] = [][]string{{"red", "blue"}, {"green"}, {}}[i%3]
		}
		if i%2 == 0 {
			d["nested"] = map[string]any{"a": map[string]any{"b": i * 10}}
		}
		if i%5 == 0 {
			d["odd-key x"] = i
		}
		switch (i / 2) % 4 {
		case 0:
			d["flag"] = true
		case 1:
			d["flag"] = false
		case 2:
			d["flag"] = nil
		}
		if i%8 != 7 {
			d["g"] = []string{"x", "y", "z"}[i%3]
		}
		out = append(out, normalize(d).(qdoc))
	}
	return out
}

// queryCase is one query and its expected rows as a function of the documents
// it runs over.
type queryCase struct {
	name   string
	query  string
	params []azcosmos.QueryParameter
	want   func(docs []qdoc) []any
	// unordered: Cosmos DB leaves the order unspecified (DISTINCT and GROUP
	// BY without ORDER BY): compare as multisets. Paging must still give
	// exactly the unpaged order.
	unordered bool
	// star: rows are whole documents; system properties are checked and
	// stripped before comparing.
	star bool
	// shape marks the cases the paging tests run with every page size.
	shape bool
}

// and3, or3 and not3 are Cosmos DB's three-valued logic over any values: only
// booleans take part; anything else is undefined.
func and3(a, b any) any {
	x, xok := a.(bool)
	y, yok := b.(bool)
	switch {
	case xok && !x || yok && !y:
		return false
	case xok && yok:
		return true
	}
	return undef
}

func or3(a, b any) any {
	x, xok := a.(bool)
	y, yok := b.(bool)
	switch {
	case xok && x || yok && y:
		return true
	case xok && yok:
		return false
	}
	return undef
}

func not3(a any) any {
	if x, ok := a.(bool); ok {
		return !x
	}
	return undef
}

// cmpSame compares two values of the same scalar type with op, or returns
// undef when their types differ or are not comparable (Cosmos DB).
func cmpSame(a, b any, op string) any {
	if typeRank(a) != typeRank(b) || typeRank(a) == 0 || typeRank(a) > 4 {
		return undef
	}
	c := cosmosCompare(a, b)
	switch op {
	case "=":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0
}

func isTrue(v any) bool { b, ok := v.(bool); return ok && b }

// likeMatch is SQL LIKE with % and _ and an optional escape character.
func likeMatch(s, pattern string, escape rune) bool {
	p := []rune(pattern)
	r := []rune(s)
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if j == len(p) {
			return i == len(r)
		}
		switch {
		case escape != 0 && p[j] == escape && j+1 < len(p):
			return i < len(r) && r[i] == p[j+1] && match(i+1, j+2)
		case p[j] == '%':
			for k := i; k <= len(r); k++ {
				if match(k, j+1) {
					return true
				}
			}
			return false
		case p[j] == '_':
			return i < len(r) && match(i+1, j+1)
		}
		return i < len(r) && r[i] == p[j] && match(i+1, j+1)
	}
	return match(0, 0)
}

// tagsOf returns a document's tags ([] when missing).
func tagsOf(d qdoc) []any {
	t, _ := get(d, "tags").([]any)
	return t
}

// groupRows groups documents by a key (undefined is a key of its own) in first
// appearance order.
func groupRows(docs []qdoc, key func(qdoc) any) (keys []any, groups [][]qdoc) {
	idx := map[string]int{}
	for _, d := range docs {
		k := key(d)
		ks := "undefined"
		if k != undef {
			ks = canonJSON(k)
		}
		i, ok := idx[ks]
		if !ok {
			i = len(keys)
			idx[ks] = i
			keys = append(keys, k)
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], d)
	}
	return keys, groups
}

// aggregates over a property: COUNT of defined values, SUM/AVG of numbers
// (undefined as soon as a defined value is not a number), MIN/MAX in the
// ORDER BY order of scalars.
func countDefined(docs []qdoc, path ...string) float64 {
	n := 0.0
	for _, d := range docs {
		if get(d, path...) != undef {
			n++
		}
	}
	return n
}

func sumOf(docs []qdoc, path ...string) any {
	s := 0.0
	for _, d := range docs {
		switch v := get(d, path...).(type) {
		case undefinedT:
		case float64:
			s += v
		default:
			return undef
		}
	}
	return s
}

func avgOf(docs []qdoc, path ...string) any {
	s, n := 0.0, 0
	for _, d := range docs {
		switch v := get(d, path...).(type) {
		case undefinedT:
		case float64:
			s += v
			n++
		default:
			return undef
		}
	}
	if n == 0 {
		return undef
	}
	return s / float64(n)
}

func extremeOf(docs []qdoc, max bool, path ...string) any {
	var best any = undef
	for _, d := range docs {
		v := get(d, path...)
		if v == undef {
			continue
		}
		if best == undef {
			best = v
			continue
		}
		c := cosmosCompare(v, best)
		if max && c > 0 || !max && c < 0 {
			best = v
		}
	}
	return best
}

// documentIDOf decodes the document part of a _rid: 16 bytes in base64 ('/'
// written '-'), the last 8 little-endian.
func documentIDOf(rid string) any {
	b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(rid, "-", "/"))
	if err != nil || len(b) != 16 {
		return undef
	}
	return float64(binary.LittleEndian.Uint64(b[8:]))
}

const cosmosDateTime = "2006-01-02T15:04:05.0000000Z"

func parseDate(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// queryCases is the table of queries. Their rows are computed from docs.
func queryCases() []queryCase {
	return []queryCase{
		// --- SELECT forms ---
		{name: "select star", query: "SELECT * FROM c", star: true, shape: true,
			want: func(docs []qdoc) []any { return mapRows(docs, func(d qdoc) any { return d }) }},
		{name: "projection with aliases", query: `SELECT c.id, c.n AS num, c.nested.a.b AS deep, c["odd-key x"] AS odd FROM c`,
			want: func(docs []qdoc) []any {
				return mapRows(docs, func(d qdoc) any {
					return obj("id", d["id"], "num", get(d, "n"), "deep", get(d, "nested", "a", "b"), "odd", get(d, "odd-key x"))
				})
			}},
		{name: "value", query: "SELECT VALUE c.name FROM c",
			want: func(docs []qdoc) []any { return mapRows(docs, func(d qdoc) any { return d["name"] }) }},
		{name: "value of an undefined is no row", query: "SELECT VALUE c.nested.a.b FROM c",
			want: func(docs []qdoc) []any { return mapRows(docs, func(d qdoc) any { return get(d, "nested", "a", "b") }) }},
		{name: "top", query: "SELECT TOP 4 c.id, c.bits FROM c", shape: true,
			want: func(docs []qdoc) []any {
				return mapRows(docs[:min(4, len(docs))], func(d qdoc) any { return obj("id", d["id"], "bits", d["bits"]) })
			}},
		{name: "top with order by", query: "SELECT TOP 5 VALUE c.id FROM c ORDER BY c.name DESC", shape: true,
			want: func(docs []qdoc) []any {
				s := orderBy(docs, desc("name"))
				return idsOf(s[:min(5, len(s))])
			}},
		{name: "distinct value", query: "SELECT DISTINCT VALUE c.g FROM c", unordered: true, shape: true,
			want: func(docs []qdoc) []any { return distinct(mapRows(docs, func(d qdoc) any { return get(d, "g") })) }},
		{name: "distinct objects", query: "SELECT DISTINCT c.g, c.flag FROM c", unordered: true, shape: true,
			want: func(docs []qdoc) []any {
				return distinct(mapRows(docs, func(d qdoc) any { return obj("g", get(d, "g"), "flag", get(d, "flag")) }))
			}},
		{name: "distinct with order by", query: "SELECT DISTINCT VALUE c.n FROM c ORDER BY c.n DESC", shape: true,
			want: func(docs []qdoc) []any {
				return distinct(mapRows(orderBy(docs, desc("n")), func(d qdoc) any { return get(d, "n") }))
			}},
		{name: "object and array construction", query: `SELECT VALUE {"id": c.id, "pair": [c.pk, c.bits], "sub": {"deep": c.nested.a.b, "k": "const"}} FROM c WHERE c.bits < 6`,
			want: func(docs []qdoc) []any {
				return mapRows(where(docs, func(d qdoc) bool { return num(d, "bits") < 6 }), func(d qdoc) any {
					return obj("id", d["id"], "pair", []any{d["pk"], d["bits"]}, "sub", obj("deep", get(d, "nested", "a", "b"), "k", "const"))
				})
			}},
		{name: "from alias", query: "SELECT VALUE r.id FROM root r WHERE r.bits >= 20",
			want: func(docs []qdoc) []any { return idsOf(where(docs, func(d qdoc) bool { return num(d, "bits") >= 20 })) }},
		{name: "from a path", query: "SELECT VALUE x.b FROM c.nested.a x",
			want: func(docs []qdoc) []any { return mapRows(docs, func(d qdoc) any { return get(d, "nested", "a", "b") }) }},
		{name: "in iteration", query: "SELECT VALUE t FROM t IN c.tags",
			want: func(docs []qdoc) []any {
				out := []any{}
				for _, d := range docs {
					out = append(out, tagsOf(d)...)
				}
				return out
			}},
		{name: "join", query: "SELECT c.id, t AS tag FROM c JOIN t IN c.tags WHERE t != 'blue'", shape: true,
			want: func(docs []qdoc) []any {
				out := []any{}
				for _, d := range docs {
					for _, t := range tagsOf(d) {
						if t != "blue" {
							out = append(out, obj("id", d["id"], "tag", t))
						}
					}
				}
				return out
			}},
		{name: "join with order by", query: "SELECT VALUE [c.id, t] FROM c JOIN t IN c.tags ORDER BY c.bits DESC", shape: true,
			want: func(docs []qdoc) []any {
				out := []any{}
				for _, d := range orderBy(docs, desc("bits")) {
					for _, t := range tagsOf(d) {
						out = append(out, []any{d["id"], t})
					}
				}
				return out
			}},

		// --- WHERE: every operator family ---
		{name: "arithmetic in where", query: "SELECT VALUE c.id FROM c WHERE c.bits * 2 + 1 = 15 OR c.bits % 5 = 4 OR c.bits / 4 = 5 OR c.bits - 1 = -1",
			want: func(docs []qdoc) []any {
				return idsOf(where(docs, func(d qdoc) bool {
					b := num(d, "bits")
					return b*2+1 == 15 || math.Mod(b, 5) == 4 || b/4 == 5 || b-1 == -1
				}))
			}},
		{name: "arithmetic in projection", query: "SELECT VALUE [c.bits * 3, c.bits / 2, c.bits % 4, -c.bits, c.price - 0.5, +c.bits] FROM c WHERE c.bits < 6",
			want: func(docs []qdoc) []any {
				return mapRows(where(docs, func(d qdoc) bool { return num(d, "bits") < 6 }), func(d qdoc) any {
					b := num(d, "bits")
					return []any{b * 3, b / 2, math.Mod(b, 4), 0 - b, num(d, "price") - 0.5, b}
				})
			}},
		{name: "comparison skips other types", query: "SELECT VALUE c.id FROM c WHERE c.n > 3",
			want: func(docs []qdoc) []any {
				return idsOf(where(docs, func(d qdoc) bool { return isTrue(cmpSame(get(d, "n"), 3.0, ">")) }))
			}},
		{name: "inequality skips other types", query: "SELECT VALUE c.id FROM c WHERE c.n != 3",
			want: func(docs []qdoc) []any {
				return idsOf(where(docs, func(d qdoc) bool { return isTrue(cmpSame(get(d, "n"), 3.0, "!=")) }))
			}},
		{name: "comparisons across types are undefined", query: "SELECT c.id, c.n < 3 AS lt, c.n = null AS isnull, c.n >= '0' AS strcmp, c.name >= 'm' AS late FROM c",
			want: func(docs []qdoc) []any {
				return mapRows(docs, func(d qdoc) any {
					n := get(d, "n")
					return obj("id", d["id"], "lt", cmpSame(n, 3.0, "<"), "isnull", cmpSame(n, nil, "="), "strcmp", cmpSame(n, "0", ">="), "late", cmpSame(d["name"], "m", ">="))
				})
			}},
		{name: "not of undefined is undefined", query: "SELECT VALUE c.id FROM c WHERE NOT (c.n > 3)",
			want: func(docs []qdoc) []any {
				return idsOf(where(docs, func(d qdoc) bool { return isTrue(not3(cmpSame(get(d, "n"), 3.0, ">"))) }))
			}},
		{name: "three-valued logic", query: "SELECT c.id, (c.flag AND true) AS a, (c.flag OR false) AS o, (NOT c.flag) AS n, (c.flag AND false) AS af, (c.flag OR true) AS ot FROM c WHERE c.bits < 8",
			want: func(docs []qdoc) []any {
				return mapRows(where(docs, func(d qdoc) bool { return num(d, "bits") < 8 }), func(d qdoc) any {
					f := get(d, "flag")
					return obj("id", d["id"], "a", and3(f, true), "o", or3(f, false), "n", not3(f), "af", and3(f, false), "ot", or3(f, true))
				})
			}},
		{name: "logic in where", query: "SELECT VALUE c.id FROM c WHERE c.flag OR c.bits = 1 AND NOT c.flag",
			want: func(docs []qdoc) []any {
				return idsOf(where(docs, func(d qdoc) bool {
					f := get(d, "flag")
					return isTrue(or3(f, and3(num(d, "bits") == 1, not3(f))))
				}))
			}},
		{name: "in", query: "SELECT VALUE c.id FROM c WHERE c.name IN ('alpha', 'zeta', 'nope') OR c.bits IN (3, 30)",
			want: func(docs []qdoc) []any {
				return idsOf(where(docs, func(d qdoc) bool {
					n := d["name"]
					return n == "alpha" || n == "zeta" || num(d, "bits") == 3
				}))
			}},
		{name: "not in", query: "SELECT VALUE c.id FROM c WHERE c.bits NOT IN (1, 2, 3) AND c.bits < 6",
			want: func(docs []qdoc) []any {
				return idsOf(where(docs, func(d qdoc) bool { b := num(d, "bits"); return b < 6 && (b < 1 || b > 3) }))
			}},
		{name: "between", query: "SELECT VALUE c.id FROM c WHERE c.bits BETWEEN 5 AND 8 OR c.n BETWEEN 2.5 AND 3",
			want: func(docs []qdoc) []any {
				return idsOf(where(docs, func(d qdoc) bool {
					b := num(d, "bits")
					n, ok := get(d, "n").(float64)
					return b >= 5 && b <= 8 || ok && n >= 2.5 && n <= 3
				}))
			}},
		{name: "like", query: "SELECT VALUE c.name FROM c WHERE c.name LIKE 'a_c' OR c.name LIKE '%ta' OR c.name LIKE 'E%'",
			want: func(docs []qdoc) []any {
				return mapRows(where(docs, func(d qdoc) bool {
					s := str(d, "name")
					return likeMatch(s, "a_c", 0) || strings.HasSuffix(s, "ta") || strings.HasPrefix(s, "E")
				}), func(d qdoc) any { return d["name"] })
			}},
		{name: "like with escape", query: `SELECT VALUE c.name FROM c WHERE c.name LIKE 'a!_c' ESCAPE '!' OR c.name LIKE '%!%%' ESCAPE '!'`,
			want: func(docs []qdoc) []any {
				return mapRows(where(docs, func(d qdoc) bool { s := str(d, "name"); return s == "a_c" || strings.Contains(s, "%") }),
					func(d qdoc) any { return d["name"] })
			}},
		{name: "not like", query: "SELECT VALUE c.name FROM c WHERE c.name NOT LIKE '%a%'",
			want: func(docs []qdoc) []any {
				return mapRows(where(docs, func(d qdoc) bool { return !strings.Contains(str(d, "name"), "a") }), func(d qdoc) any { return d["name"] })
			}},
		{name: "coalesce", query: "SELECT VALUE c.n ?? 'none' FROM c",
			want: func(docs []qdoc) []any {
				return mapRows(docs, func(d qdoc) any {
					if v := get(d, "n"); v != undef {
						return v
					}
					return "none"
				})
			}},
		{name: "ternary", query: "SELECT VALUE (c.bits > 10 ? 'big' : (c.bits > 5 ? 'mid' : 'small')) FROM c",
			want: func(docs []qdoc) []any {
				return mapRows(docs, func(d qdoc) any {
					switch b := num(d, "bits"); {
					case b > 10:
						return "big"
					case b > 5:
						return "mid"
					}
					return "small"
				})
			}},
		{name: "string concatenation", query: "SELECT c.id, c.id || '-' || c.pk AS joined, c.id || c.bits AS bad FROM c",
			want: func(docs []qdoc) []any {
				return mapRows(docs, func(d qdoc) any { return obj("id", d["id"], "joined", str(d, "id")+"-"+str(d, "pk")) })
			}},
		{name: "bitwise", query: "SELECT VALUE [c.bits & 6, c.bits | 8, c.bits ^ 5, ~c.bits, c.bits << 2, c.bits >> 1, c.bits >>> 1] FROM c WHERE (c.bits & 1) = 1",
			want: func(docs []qdoc) []any {
				return mapRows(where(docs, func(d qdoc) bool { return int(num(d, "bits"))&1 == 1 }), func(d qdoc) any {
					b := int32(num(d, "bits"))
					return []any{b & 6, b | 8, b ^ 5, ^b, b << 2, b >> 1, int32(uint32(b) >> 1)}
				})
			}},
		{name: "quoted and nested paths in where", query: `SELECT VALUE c.id FROM c WHERE c["odd-key x"] = 10 OR c.nested.a.b = 40 OR c.nested["a"]["b"] = 160`,
			want: func(docs []qdoc) []any {
				return idsOf(where(docs, func(d qdoc) bool {
					b := get(d, "nested", "a", "b")
					return get(d, "odd-key x") == 10.0 || b == 40.0 || b == 160.0
				}))
			}},
		{name: "property access", query: `SELECT c["id"] AS id, c.nested["a"]["b"] AS deep, c.tags[0] AS first, c["odd-key x"] AS odd FROM c`,
			want: func(docs []qdoc) []any {
				return mapRows(docs, func(d qdoc) any {
					var first any = undef
					if t := tagsOf(d); len(t) > 0 {
						first = t[0]
					}
					return obj("id", d["id"], "deep", get(d, "nested", "a", "b"), "first", first, "odd", get(d, "odd-key x"))
				})
			}},

		// --- ORDER BY ---
		{name: "order by one key", query: "SELECT VALUE c.id FROM c ORDER BY c.bits DESC", shape: true,
			want: func(docs []qdoc) []any { return idsOf(orderBy(docs, desc("bits"))) }},
		{name: "order by several keys with ties", query: "SELECT c.id, c.flag, c.pk FROM c ORDER BY c.flag DESC, c.pk ASC", shape: true,
			want: func(docs []qdoc) []any {
				return mapRows(orderBy(docs, desc("flag"), asc("pk")), func(d qdoc) any {
					return obj("id", d["id"], "flag", get(d, "flag"), "pk", d["pk"])
				})
			}},
		{name: "order by mixed types ascending", query: "SELECT c.id, c.n FROM c ORDER BY c.n", shape: true,
			want: func(docs []qdoc) []any {
				return mapRows(orderBy(docs, asc("n")), func(d qdoc) any { return obj("id", d["id"], "n", get(d, "n")) })
			}},
		{name: "order by mixed types descending", query: "SELECT VALUE c.id FROM c ORDER BY c.n DESC",
			want: func(docs []qdoc) []any { return idsOf(orderBy(docs, desc("n"))) }},
		{name: "order by strings", query: "SELECT VALUE c.name FROM c ORDER BY c.name",
			want: func(docs []qdoc) []any {
				return mapRows(orderBy(docs, asc("name")), func(d qdoc) any { return d["name"] })
			}},
		{name: "order by with where and alias", query: "SELECT VALUE r.id FROM root r WHERE r.g = 'x' ORDER BY r.price DESC",
			want: func(docs []qdoc) []any {
				return idsOf(orderBy(where(docs, func(d qdoc) bool { return get(d, "g") == "x" }), desc("price")))
			}},

		// --- GROUP BY and aggregates ---
		{name: "group by with aggregates", query: "SELECT c.g, COUNT(1) AS cnt, SUM(c.bits) AS total, AVG(c.bits) AS mean, MIN(c.bits) AS lo, MAX(c.name) AS hi, SUM(c.n) AS sn FROM c GROUP BY c.g",
			unordered: true, shape: true,
			want: func(docs []qdoc) []any {
				keys, groups := groupRows(docs, func(d qdoc) any { return get(d, "g") })
				out := []any{}
				for i, k := range keys {
					g := groups[i]
					out = append(out, obj("g", k, "cnt", len(g), "total", sumOf(g, "bits"), "mean", avgOf(g, "bits"),
						"lo", extremeOf(g, false, "bits"), "hi", extremeOf(g, true, "name"), "sn", sumOf(g, "n")))
				}
				return out
			}},
		{name: "group by value count", query: "SELECT VALUE COUNT(1) FROM c GROUP BY c.flag", unordered: true,
			want: func(docs []qdoc) []any {
				_, groups := groupRows(docs, func(d qdoc) any { return get(d, "flag") })
				out := []any{}
				for _, g := range groups {
					out = append(out, float64(len(g)))
				}
				return out
			}},
		{name: "group by two keys with where", query: "SELECT c.pk, c.g, COUNT(1) AS n FROM c WHERE c.bits > 3 GROUP BY c.pk, c.g", unordered: true, shape: true,
			want: func(docs []qdoc) []any {
				keys, groups := groupRows(where(docs, func(d qdoc) bool { return num(d, "bits") > 3 }), func(d qdoc) any {
					return []any{d["pk"], get(d, "g")}
				})
				out := []any{}
				for i, k := range keys {
					kk := k.([]any)
					out = append(out, obj("pk", kk[0], "g", kk[1], "n", len(groups[i])))
				}
				return out
			}},
		{name: "value count", query: "SELECT VALUE COUNT(1) FROM c", shape: true,
			want: func(docs []qdoc) []any { return []any{len(docs)} }},
		{name: "aggregates", query: "SELECT COUNT(1) AS c1, COUNT(c.n) AS cn, SUM(c.bits) AS s, AVG(c.price) AS a, MIN(c.name) AS mn, MAX(c.bits) AS mx, SUM(c.n) AS sn, MIN(c.n) AS nmin, MAX(c.n) AS nmax FROM c",
			shape: true,
			want: func(docs []qdoc) []any {
				return []any{obj("c1", len(docs), "cn", countDefined(docs, "n"), "s", sumOf(docs, "bits"), "a", avgOf(docs, "price"),
					"mn", extremeOf(docs, false, "name"), "mx", extremeOf(docs, true, "bits"), "sn", sumOf(docs, "n"),
					"nmin", extremeOf(docs, false, "n"), "nmax", extremeOf(docs, true, "n"))}
			}},
		{name: "aggregates with where", query: "SELECT COUNT(1) AS n, SUM(c.price) AS s, MAX(c.id) AS m FROM c WHERE c.flag = true",
			want: func(docs []qdoc) []any {
				f := where(docs, func(d qdoc) bool { return get(d, "flag") == true })
				return []any{obj("n", len(f), "s", sumOf(f, "price"), "m", extremeOf(f, true, "id"))}
			}},
		{name: "value max", query: "SELECT VALUE MAX(c.price) FROM c WHERE c.g = 'y'",
			want: func(docs []qdoc) []any {
				if m := extremeOf(where(docs, func(d qdoc) bool { return get(d, "g") == "y" }), true, "price"); m != undef {
					return []any{m}
				}
				return []any{}
			}},
		{name: "aggregate over join", query: "SELECT VALUE COUNT(1) FROM c JOIN t IN c.tags WHERE t = 'red'",
			want: func(docs []qdoc) []any {
				return []any{len(where(docs, func(d qdoc) bool { return slices.Contains(tagsOf(d), any("red")) }))}
			}},

		// --- OFFSET LIMIT ---
		{name: "offset limit with order by", query: "SELECT VALUE c.id FROM c ORDER BY c.bits DESC OFFSET 5 LIMIT 7", shape: true,
			want: func(docs []qdoc) []any {
				s := idsOf(orderBy(docs, desc("bits")))
				return s[min(5, len(s)):min(12, len(s))]
			}},
		{name: "offset limit past the end", query: "SELECT c.id FROM c OFFSET 20 LIMIT 10", shape: true,
			want: func(docs []qdoc) []any {
				return mapRows(docs[min(20, len(docs)):], func(d qdoc) any { return obj("id", d["id"]) })
			}},

		// --- subqueries ---
		{name: "exists", query: "SELECT VALUE c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'green')",
			want: func(docs []qdoc) []any {
				return idsOf(where(docs, func(d qdoc) bool { return slices.Contains(tagsOf(d), any("green")) }))
			}},
		{name: "array subquery", query: "SELECT c.id, ARRAY(SELECT VALUE UPPER(t) FROM t IN c.tags) AS up FROM c WHERE c.bits < 6",
			want: func(docs []qdoc) []any {
				return mapRows(where(docs, func(d qdoc) bool { return num(d, "bits") < 6 }), func(d qdoc) any {
					up := []any{}
					for _, t := range tagsOf(d) {
						up = append(up, strings.ToUpper(t.(string)))
					}
					return obj("id", d["id"], "up", up)
				})
			}},
		{name: "scalar subquery", query: "SELECT c.id, (SELECT VALUE COUNT(1) FROM t IN c.tags) AS nt FROM c WHERE (SELECT VALUE COUNT(1) FROM t IN c.tags) != 1",
			want: func(docs []qdoc) []any {
				return mapRows(where(docs, func(d qdoc) bool { return len(tagsOf(d)) != 1 }), func(d qdoc) any {
					return obj("id", d["id"], "nt", len(tagsOf(d)))
				})
			}},

		// --- parameters ---
		{name: "string number and array parameters", query: "SELECT VALUE c.id FROM c WHERE c.name = @name OR c.bits > @min OR ARRAY_CONTAINS(@ids, c.id)",
			params: qparams("@name", "gamma", "@min", 21, "@ids", []string{"d01", "d04"}),
			want: func(docs []qdoc) []any {
				return idsOf(where(docs, func(d qdoc) bool {
					return d["name"] == "gamma" || num(d, "bits") > 21 || d["id"] == "d01" || d["id"] == "d04"
				}))
			}},
		{name: "top and offset limit parameters", query: "SELECT VALUE c.id FROM c ORDER BY c.bits DESC OFFSET @o LIMIT @l",
			params: qparams("@o", 2, "@l", 3),
			want: func(docs []qdoc) []any {
				s := idsOf(orderBy(docs, desc("bits")))
				return s[min(2, len(s)):min(5, len(s))]
			}},
		{name: "top parameter", query: "SELECT TOP @n VALUE c.name FROM c WHERE c.bits >= @min",
			params: qparams("@n", 3, "@min", 5),
			want: func(docs []qdoc) []any {
				s := mapRows(where(docs, func(d qdoc) bool { return num(d, "bits") >= 5 }), func(d qdoc) any { return d["name"] })
				return s[:min(3, len(s))]
			}},
		{name: "null parameter", query: "SELECT VALUE c.id FROM c WHERE c.n = @v OR c.flag = @v", params: qparams("@v", nil),
			want: func(docs []qdoc) []any {
				return idsOf(where(docs, func(d qdoc) bool { return get(d, "n") == nil || get(d, "flag") == nil }))
			}},
		{name: "object parameter", query: `SELECT VALUE {"id": c.id, "label": @obj.label, "hit": c.bits = @obj.bits, "all": @obj} FROM c WHERE c.bits IN (@obj.bits, 1)`,
			params: qparams("@obj", map[string]any{"label": "L", "bits": 3, "list": []int{1, 2}}),
			want: func(docs []qdoc) []any {
				p := normalize(map[string]any{"label": "L", "bits": 3, "list": []int{1, 2}})
				return mapRows(where(docs, func(d qdoc) bool { b := num(d, "bits"); return b == 3 || b == 1 }), func(d qdoc) any {
					return obj("id", d["id"], "label", "L", "hit", num(d, "bits") == 3, "all", p)
				})
			}},

		// --- built-in functions, a sample of each family ---
		{name: "string functions", query: `SELECT VALUE [UPPER(c.name), LOWER(c.name), LENGTH(c.name), SUBSTRING(c.name, 1, 2), CONTAINS(c.name, 'a'),
 STARTSWITH(c.name, 'a'), ENDSWITH(c.name, 'a'), CONCAT(c.id, '/', c.pk), REPLACE(c.name, 'a', 'A'), INDEX_OF(c.name, 'a'),
 LEFT(c.name, 2), RIGHT(c.name, 2), LTRIM('  x'), RTRIM('x  '), TRIM('  y  '), REVERSE(c.name), StringEquals(c.name, 'BETA', true), REPLICATE('ab', 2)]
FROM c WHERE c.bits < 6 OR c.bits > 20`,
			want: func(docs []qdoc) []any {
				return mapRows(where(docs, func(d qdoc) bool { return num(d, "bits") < 6 || num(d, "bits") > 20 }), func(d qdoc) any {
					s := str(d, "name")
					r := []rune(s)
					rev := slices.Clone(r)
					slices.Reverse(rev)
					return []any{strings.ToUpper(s), strings.ToLower(s), len(s), s[1:min(3, len(s))], strings.Contains(s, "a"),
						strings.HasPrefix(s, "a"), strings.HasSuffix(s, "a"), str(d, "id") + "/" + str(d, "pk"), strings.ReplaceAll(s, "a", "A"),
						strings.Index(s, "a"), s[:2], s[len(s)-2:], "x", "x", "y", string(rev), strings.EqualFold(s, "BETA"), "abab"}
				})
			}},
		{name: "math functions", query: "SELECT VALUE [ABS(-c.bits), CEILING(c.price), FLOOR(c.price), ROUND(c.price), TRUNC(c.price), SQRT(c.bits), POWER(c.bits, 2), SIGN(c.bits - 5), LOG10(100), PI()] FROM c WHERE c.bits < 9",
			want: func(docs []qdoc) []any {
				return mapRows(where(docs, func(d qdoc) bool { return num(d, "bits") < 9 }), func(d qdoc) any {
					b, p := num(d, "bits"), num(d, "price")
					sign := 0.0
					if b-5 > 0 {
						sign = 1
					} else if b-5 < 0 {
						sign = -1
					}
					return []any{b, math.Ceil(p), math.Floor(p), round(p), math.Trunc(p), math.Sqrt(b), b * b, sign, 2, math.Pi}
				})
			}},
		{name: "type checking functions", query: "SELECT c.id, IS_NUMBER(c.n) AS isn, IS_STRING(c.n) AS iss, IS_NULL(c.n) AS isnull, IS_DEFINED(c.n) AS isdef, IS_BOOL(c.flag) AS isb, IS_ARRAY(c.tags) AS isa, IS_OBJECT(c.nested) AS iso, IS_PRIMITIVE(c.n) AS isp, IS_INTEGER(c.n) AS isi FROM c",
			want: func(docs []qdoc) []any {
				return mapRows(docs, func(d qdoc) any {
					n := get(d, "n")
					_, isb := get(d, "flag").(bool)
					_, isa := get(d, "tags").([]any)
					_, iso := get(d, "nested").(map[string]any)
					f, isn := n.(float64)
					r := typeRank(n)
					return obj("id", d["id"], "isn", isn, "iss", r == 4, "isnull", r == 1, "isdef", r != 0, "isb", isb, "isa", isa,
						"iso", iso, "isp", r >= 1 && r <= 4, "isi", isn && f == math.Trunc(f))
				})
			}},
		{name: "array functions", query: `SELECT VALUE {"len": ARRAY_LENGTH(c.tags), "red": ARRAY_CONTAINS(c.tags, 'red'), "tail": ARRAY_SLICE(c.tags, 1), "cat": ARRAY_CONCAT(c.tags, ['z']),
 "partial": ARRAY_CONTAINS([{"a": c.bits, "b": 2}], {"a": c.bits}, true), "whole": ARRAY_CONTAINS([{"a": c.bits, "b": 2}], {"a": c.bits})} FROM c WHERE IS_ARRAY(c.tags)`,
			want: func(docs []qdoc) []any {
				return mapRows(where(docs, func(d qdoc) bool { _, ok := get(d, "tags").([]any); return ok }), func(d qdoc) any {
					t := tagsOf(d)
					tail := []any{}
					if len(t) > 1 {
						tail = t[1:]
					}
					return obj("len", len(t), "red", slices.Contains(t, any("red")), "tail", tail, "cat", append(slices.Clone(t), "z"),
						"partial", true, "whole", false)
				})
			}},
		{name: "date and time functions", query: `SELECT VALUE [DateTimeAdd('dd', 1, c.date), DateTimePart('dd', c.date), DateTimeToTimestamp(c.date),
 DateTimeDiff('hh', c.date, DateTimeAdd('dd', 1, c.date)), DateTimeFromParts(2024, 1, c.bits + 1), TimestampToDateTime(DateTimeToTimestamp(c.date) + 1000)] FROM c WHERE c.bits < 5`,
			want: func(docs []qdoc) []any {
				return mapRows(where(docs, func(d qdoc) bool { return num(d, "bits") < 5 }), func(d qdoc) any {
					dt := parseDate(str(d, "date"))
					return []any{dt.AddDate(0, 0, 1).Format(cosmosDateTime), dt.Day(), dt.UnixMilli(), 24,
						time.Date(2024, 1, int(num(d, "bits"))+1, 0, 0, 0, 0, time.UTC).Format(cosmosDateTime),
						dt.Add(time.Second).Format(cosmosDateTime)}
				})
			}},
		{name: "conversion functions", query: `SELECT c.id, StringToNumber(c.n) AS sn, ToString(c.bits) AS s, StringToNumber("1.5e1") AS k, StringToNumber("abc") AS bad, StringToBoolean("true") AS b FROM c WHERE c.bits < 8`,
			want: func(docs []qdoc) []any {
				return mapRows(where(docs, func(d qdoc) bool { return num(d, "bits") < 8 }), func(d qdoc) any {
					var sn any = undef
					if s, ok := get(d, "n").(string); ok {
						var f float64
						fmt.Sscan(s, &f)
						sn = f
					}
					return obj("id", d["id"], "sn", sn, "s", fmt.Sprint(num(d, "bits")), "k", 15, "b", true)
				})
			}},
	}
}

// documentIDCase needs each document's _rid, known only after insertion.
func documentIDCase(ridByID map[string]string) queryCase {
	return queryCase{name: "DocumentId", query: "SELECT c.id, DocumentId(c) AS did FROM c",
		want: func(docs []qdoc) []any {
			return mapRows(docs, func(d qdoc) any { return obj("id", d["id"], "did", documentIDOf(ridByID[str(d, "id")])) })
		}}
}
