package query

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/lethe-db/lethe/jsonv"
)

// pagingShapes covers every plan, with JOINs, undefined values, ties,
// OFFSET, LIMIT, TOP and subqueries.
var pagingShapes = []string{
	"SELECT * FROM c",
	"SELECT VALUE c.id FROM c WHERE c.n > 2",
	"SELECT c.id, t FROM c JOIN t IN c.t",
	"SELECT VALUE [c.id, t, u] FROM c JOIN t IN c.t JOIN u IN c.t WHERE t <= u",
	"SELECT VALUE c.n FROM c",
	"SELECT VALUE c.id FROM c ORDER BY c.g, c.n DESC",
	"SELECT c.id, c.g FROM c ORDER BY c.g DESC",
	"SELECT VALUE c.g FROM c ORDER BY c.n",
	"SELECT VALUE [c.id, t] FROM c JOIN t IN c.t ORDER BY t DESC, c.g",
	"SELECT DISTINCT VALUE c.g FROM c",
	"SELECT DISTINCT c.g, c.n FROM c",
	"SELECT DISTINCT VALUE t FROM c JOIN t IN c.t ORDER BY t DESC",
	"SELECT DISTINCT VALUE c.g FROM c ORDER BY c.id DESC",
	"SELECT DISTINCT VALUE c.n FROM c ORDER BY c.g",
	"SELECT c.g, COUNT(1) AS n, SUM(c.n) AS s, MIN(c.n) AS lo FROM c GROUP BY c.g",
	"SELECT VALUE COUNT(1) FROM c GROUP BY c.g, c.n",
	"SELECT DISTINCT VALUE COUNT(1) FROM c GROUP BY c.g",
	"SELECT VALUE {\"n\": COUNT(1), \"m\": MAX(c.n), \"a\": AVG(c.n)} FROM c",
	"SELECT t, COUNT(1) AS n FROM c JOIN t IN c.t GROUP BY t",
	"SELECT TOP 3 VALUE c.id FROM c",
	"SELECT TOP 2 VALUE c.id FROM c ORDER BY c.n",
	"SELECT VALUE c.id FROM c OFFSET 2 LIMIT 3",
	"SELECT VALUE [c.id, t] FROM c JOIN t IN c.t OFFSET 1 LIMIT 4",
	"SELECT VALUE c.id FROM c ORDER BY c.g OFFSET 1 LIMIT 4",
	"SELECT DISTINCT VALUE c.g FROM c OFFSET 1 LIMIT 2",
	"SELECT VALUE c.n FROM c OFFSET 1 LIMIT 3",
	"SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g OFFSET 1 LIMIT 2",
	"SELECT c.id, ARRAY(SELECT VALUE t FROM t IN c.t WHERE t > 1) AS big FROM c",
	"SELECT VALUE c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.t WHERE t = 2)",
	"SELECT VALUE c.id FROM c ORDER BY (SELECT VALUE COUNT(1) FROM t IN c.t) DESC",
}

// randDocs returns up to max documents with colliding values of mixed
// types, some missing.
func randDocs(rng *rand.Rand, max int) []*jsonv.Object {
	docs := make([]*jsonv.Object, rng.Intn(max+1))
	for i := range docs {
		o := jsonv.NewObject(4)
		o.Set("id", jsonv.NumberFromFloat(float64(i)))
		pick := func(key string, vals ...jsonv.Value) {
			if v := vals[rng.Intn(len(vals))]; !isUndefined(v) {
				o.Set(key, v)
			}
		}
		pick("g", "a", "b", "b", jsonv.Number("1"), nil, undefined, true)
		pick("n", jsonv.Number("1"), jsonv.Number("2"), jsonv.Number("3"), jsonv.Number("2.0"), "2", undefined)
		t := make([]jsonv.Value, rng.Intn(4))
		for j := range t {
			t[j] = jsonv.NumberFromFloat(float64(rng.Intn(4)))
		}
		pick("t", t, t, "x", undefined)
		docs[i] = o
	}
	return docs
}

// TestPagingProperty checks, for random documents and every query shape,
// that any page size, with or without seeking, and an unordered source
// give exactly the unpaged rows.
func TestPagingProperty(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	iters := 150
	if testing.Short() {
		iters = 20
	}
	for _, shape := range pagingShapes {
		q := mustParse(t, shape)
		for it := range iters {
			docs := randDocs(rng, 10)
			want, err := runAll(q, newSliceSource(docs), nil, 1000, false)
			if err != nil {
				t.Fatalf("%s: %v", shape, err)
			}
			size := 1 + rng.Intn(5)
			src := newSliceSource(docs)
			src.seek, src.raw = rng.Intn(2) == 0, rng.Intn(2) == 0
			got, err := runAll(q, src, nil, size, false)
			if err != nil || !equalRows(got, want) {
				t.Fatalf("%s, iteration %d, page size %d, seek %v:\n got %s (%v)\nwant %s\ndocs %s",
					shape, it, size, src.seek, strings.Join(got, " "), err, strings.Join(want, " "), docsText(docs))
			}
			src = newSliceSource(docs)
			rng.Shuffle(len(src.docs), func(i, j int) {
				src.docs[i], src.docs[j] = src.docs[j], src.docs[i]
				src.seqs[i], src.seqs[j] = src.seqs[j], src.seqs[i]
			})
			got, err = runAll(q, src, nil, size, true)
			if err != nil || !equalRows(got, want) {
				t.Fatalf("%s, iteration %d, unordered, page size %d:\n got %s (%v)\nwant %s\ndocs %s",
					shape, it, size, strings.Join(got, " "), err, strings.Join(want, " "), docsText(docs))
			}
		}
	}
}

func docsText(docs []*jsonv.Object) string {
	var b strings.Builder
	for _, d := range docs {
		b.Write(jsonv.Marshal(d))
		b.WriteByte(' ')
	}
	return b.String()
}

// positioned is a result row with its cursor.
type positioned struct {
	row string
	cur Cursor
}

// positions returns every row of q over src with its cursor, by paging one
// row at a time.
func positions(t *testing.T, q *Query, src *sliceSource) []positioned {
	t.Helper()
	var out []positioned
	var after Cursor
	for range 10000 {
		src.reset(q, after)
		page, err := q.Execute(src, ExecOptions{PageSize: 1, After: after, Emitted: len(out)})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Rows {
			out = append(out, positioned{string(r), page.Last})
		}
		if !page.More {
			return out
		}
		after = page.Last
	}
	t.Fatal("too many pages")
	return nil
}

// TestPagingKeyset checks the keyset guarantee: when documents are deleted,
// inserted and rewritten (a new seq) between pages, the next page holds
// exactly the rows of the changed data that are ordered after the last row
// returned.
func TestPagingKeyset(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for _, shape := range pagingShapes {
		if strings.Contains(shape, "TOP") || strings.Contains(shape, "OFFSET") {
			continue // counts of earlier pages mean nothing once data changes
		}
		q := mustParse(t, shape)
		for it := range 60 {
			src := newSliceSource(randDocs(rng, 8))
			nextSeq := uint64(len(src.docs) + 1)
			size := 1 + rng.Intn(3)
			var after Cursor
			for range 50 {
				src.reset(q, after)
				page, err := q.Execute(src, ExecOptions{PageSize: size, After: after})
				if err != nil {
					t.Fatal(err)
				}
				if after != nil {
					// Compare with the rows after `after` in the current data.
					var want []string
					for _, p := range positions(t, q, src) {
						if bytes.Compare(p.cur, after) > 0 && len(want) < size {
							want = append(want, p.row)
						}
					}
					var got []string
					for _, r := range page.Rows {
						got = append(got, string(r))
					}
					if !equalRows(got, want) {
						t.Fatalf("%s, iteration %d, after %x:\n got %s\nwant %s\ndocs %s", shape, it, after,
							strings.Join(got, " "), strings.Join(want, " "), docsText(src.docs))
					}
				}
				if !page.More {
					break
				}
				after = page.Last
				mutate(rng, src, &nextSeq)
			}
		}
	}
}

// mutate deletes, inserts or rewrites a random document.
func mutate(rng *rand.Rand, src *sliceSource, nextSeq *uint64) {
	switch op := rng.Intn(3); {
	case op == 0 && len(src.docs) > 0: // delete
		i := rng.Intn(len(src.docs))
		src.docs = append(src.docs[:i], src.docs[i+1:]...)
		src.seqs = append(src.seqs[:i], src.seqs[i+1:]...)
	case op == 1 && len(src.docs) > 0: // rewrite: a new version, a new seq
		i := rng.Intn(len(src.docs))
		doc := randDocs(rng, 1)
		if len(doc) == 0 {
			return
		}
		doc[0].Set("id", src.docs[i].Val(0))
		src.docs = append(append(src.docs[:i:i], src.docs[i+1:]...), doc[0])
		src.seqs = append(append(src.seqs[:i:i], src.seqs[i+1:]...), *nextSeq)
		*nextSeq++
	default: // insert
		for _, d := range randDocs(rng, 2) {
			d.Set("id", jsonv.Number(fmt.Sprint(*nextSeq+100)))
			src.docs = append(src.docs, d)
			src.seqs = append(src.seqs, *nextSeq)
			*nextSeq++
		}
	}
}
