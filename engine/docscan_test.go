package engine

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/query"
)

// TestKeyOrderScan: a query that reads every document in any order gives,
// from the documents in key order, the rows it gives from them in insertion
// order, across the container and in one partition, through replaces,
// deletes and expiry; and the planner reads a container without an index
// that way for such queries only.
func TestKeyOrderScan(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/n/?"},{"path":"/s/?"},{"path":"/o/*"}]}`)
	write := func(i int, extra string) {
		t.Helper()
		p := fmt.Sprintf("p%d", i%5)
		body := fmt.Sprintf(`{"id":"d%03d","pk":%q,"n":%d,"s":"%c","o":{"k":%d}%s}`, (i*37)%400, p, i%9, 'a'+rune(i%4), i%3, extra)
		if _, err := te.UpsertDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(p)}, []byte(body), Conditions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 400 {
		extra := ""
		if i%6 == 0 {
			extra = `,"ttl":10`
		}
		write(i, extra)
	}
	queries := []struct {
		text     string
		keyOrder bool
	}{
		{"SELECT c.s, SUM(c.n) AS total, COUNT(1) AS k FROM c GROUP BY c.s", true},
		{"SELECT DISTINCT VALUE c.o FROM c", true},
		{"SELECT VALUE AVG(c.n) FROM c WHERE c.n + 0 > 2 AND c.s != 'a'", true},
		{"SELECT * FROM c ORDER BY c.n DESC, c.s", true},
		{"SELECT TOP 7 c.id, c.n FROM c ORDER BY c.n", true},
		{"SELECT c.id FROM c WHERE c.n + 1 > 3", false}, // streaming: insertion order
		{"SELECT VALUE COUNT(1) FROM c", false},         // counts entries
	}
	check := func(stage string) {
		t.Helper()
		for _, q := range queries {
			for _, p := range []lethe.PartitionKey{nil, pk("p3")} {
				err := te.store.View(ctx, func(r kv.Reader) error {
					s, err := te.scope(r, "db", "c", te.clock.Now().Unix())
					if err != nil {
						return err
					}
					stmt, err := parseStatement(q.text)
					if err != nil {
						return err
					}
					filter, _, err := s.filter(p, true, Scope{})
					if err != nil {
						return err
					}
					part := s.partitionPlan(p)
					planned, _ := s.querySource(r, stmt, nil, part, s.pkEquality(p), filter, 10)
					defer planned.close()
					if _, ok := planned.(*keyOrderScan); ok != q.keyOrder {
						t.Errorf("%s: %s in %v reads the documents in key order: %v, want %v", stage, q.text, p, ok, q.keyOrder)
					}
					keyOrder, ok := s.keyOrderSource(r, stmt.Hints(nil), filter)
					if !ok {
						return nil
					}
					defer keyOrder.close()
					inOrder := s.inOrder(r, part, filter, 10, false)
					defer inOrder.close()
					inOrder.seek(0)
					var rows [2][]string
					for i, src := range []querySource{inOrder, keyOrder} {
						page, err := stmt.Execute(src, query.ExecOptions{PageSize: 1000, Now: te.clock.Now(), Unordered: i == 1})
						if err != nil {
							return err
						}
						for _, row := range page.Rows {
							rows[i] = append(rows[i], string(row))
						}
					}
					if len(rows[0]) == 0 || !slices.Equal(rows[0], rows[1]) {
						t.Errorf("%s: %s in %v: in insertion order %.300v, in key order %.300v", stage, q.text, p, rows[0], rows[1])
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	check("fresh")
	for i := 0; i < 400; i += 7 {
		write(i+1, `,"replaced":true`)
	}
	for i := 0; i < 400; i += 11 {
		id := fmt.Sprintf("d%03d", (i*37)%400)
		if _, err := te.DeleteDocument(ctx, ref("c", id, fmt.Sprintf("p%d", i%5)), Conditions{}); err != nil && codeOf(err) != "NotFound" {
			t.Fatal(err)
		}
	}
	check("replaced and deleted")
	te.clock.Advance(10 * time.Second)
	check("expired")
}

// TestSelectStarReturnsWholeDocuments: a SELECT * whose other clauses read
// a few paths parses only those (query.Query.ReadPaths), and still returns
// every document whole, as a point read returns it, from every kind of
// source: an index range, an ordered read, a judged conjunct, the
// container in insertion order.
func TestSelectStarReturnsWholeDocuments(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/o/*"}]}`)
	for i := range 120 {
		body := fmt.Sprintf(`{"id":"d%d","pk":"p","n":%d,"s":"item %d","o":{"k":%d,"deep":{"a":[1,{"b":"x"}]}},"tags":["t%d"],"f":%d.50}`, i, i%10, i, i%7, i%3, i)
		if err := te.create("c", body); err != nil {
			t.Fatal(err)
		}
	}
	for _, text := range []string{
		"SELECT * FROM c WHERE c.n >= 7",
		"SELECT * FROM c WHERE c.n >= 3 ORDER BY c.n DESC",
		"SELECT * FROM c WHERE CONTAINS(c.s, '1')",
		"SELECT * FROM c WHERE c.n + 0 > 4",
		"SELECT TOP 15 * FROM c WHERE c.o.k > 2 ORDER BY c.o.k",
		"SELECT * FROM c WHERE ARRAY_CONTAINS(c.tags, 't1') AND c.f > 20",
	} {
		rows := te.queryAll("c", text, nil, 7)
		if len(rows) == 0 {
			t.Fatalf("%s: no rows", text)
		}
		for _, row := range rows {
			doc, err := jsonv.Parse([]byte(row))
			if err != nil {
				t.Fatal(err)
			}
			id, _ := doc.(*jsonv.Object).Get("id")
			if _, ok := id.(string); !ok {
				t.Fatalf("%s: a row without an id: %s", text, row)
			}
			res, err := te.ReadDocument(ctx, ref("c", id.(string), "p"), Conditions{})
			if err != nil {
				t.Fatal(err)
			}
			if row != string(res.Body) {
				t.Errorf("%s: row %s, the document %s", text, row, res.Body)
			}
		}
	}
}
