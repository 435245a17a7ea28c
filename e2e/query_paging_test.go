package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestQueryPaging proves that query continuation tokens are stateless and
// robust:
//   - tokens taken before a server restart (on disk) resume every query shape
//     afterwards, giving exactly the expected rows;
//   - documents written between pages of a plain or ORDER BY query cause no
//     duplicates and no misses of the documents that existed throughout;
//   - page size edge cases (-1, large, invalid).
func TestQueryPaging(t *testing.T) {
	t.Parallel()
	t.Run("tokens survive a restart", testQueryPagingRestart)
	t.Run("writes between pages", testQueryPagingWrites)
	t.Run("page sizes", testQueryPageSizes)
}

func testQueryPagingRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, serverOpts{DataDir: dir, Args: allQueries})
	c := s.client(t)
	db := mustDatabase(t, c, "qr")
	cc := mustContainer(t, db, pkContainer("c", nil))
	docs := queryDataset()
	for _, d := range docs {
		createDoc(t, cc, azcosmos.NewPartitionKeyString(str(d, "pk")), d)
	}
	all := azcosmos.NewPartitionKey()
	type started struct {
		qc    queryCase
		rows  []any
		token *string
	}
	var pending []started
	for _, qc := range queryCases() {
		if !qc.shape {
			continue
		}
		resp, err := cc.NewQueryItemsPager(qc.query, all, &azcosmos.QueryOptions{QueryParameters: qc.params, PageSizeHint: 2}).NextPage(ctx)
		if err != nil {
			t.Fatalf("%s: %v", qc.query, err)
		}
		if resp.ContinuationToken == nil {
			continue // one page: nothing to resume
		}
		st := started{qc: qc, token: resp.ContinuationToken}
		for _, it := range resp.Items {
			var v any
			_ = json.Unmarshal(it, &v)
			st.rows = append(st.rows, v)
		}
		pending = append(pending, st)
	}
	if len(pending) < 6 {
		t.Fatalf("only %d query shapes have a second page", len(pending))
	}
	s.stop(t)

	s2 := startServer(t, serverOpts{DataDir: dir, Args: allQueries})
	c2 := s2.client(t)
	db2, _ := c2.NewDatabase("qr")
	cc2, _ := db2.NewContainer("c")
	for _, p := range pending {
		rest, err := runQuery(t, cc2, p.qc.query, all, &azcosmos.QueryOptions{QueryParameters: p.qc.params, PageSizeHint: 2, ContinuationToken: p.token})
		if err != nil {
			t.Errorf("%s: resuming after a restart: %v", p.qc.query, err)
			continue
		}
		got := append(p.rows, rest.rows...)
		if p.qc.star {
			got = stripSystem(t, got)
		}
		if want := p.qc.want(docs); !sameRows(got, want, p.qc.unordered) {
			t.Errorf("%s: resumed after a restart\ngot  %s\nwant %s", p.qc.query, showRows(got), showRows(want))
		}
	}
}

// testQueryPagingWrites inserts and deletes documents between the pages of
// plain and ORDER BY queries. Continuations are keyset cursors (the last row's
// sort key and document), so rows already served never come again, and rows
// not yet reached are served once. What the test observes and asserts:
//   - plain query (insertion order): documents created after the first page
//     come at the end; a deleted document not yet served is not returned;
//   - ORDER BY: a new document whose key sorts after the last served row
//     (including an equal key: ties go by insertion order) is returned, one
//     that sorts before it is not; nothing pre-existing is missed or repeated.
func testQueryPagingWrites(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true, Args: allQueries})
	c := s.client(t)
	db := mustDatabase(t, c, "qw")
	all := azcosmos.NewPartitionKey()
	mk := func(cc *azcosmos.ContainerClient, id string, k int) {
		pk := fmt.Sprintf("p%d", len(id)%3)
		createDoc(t, cc, azcosmos.NewPartitionKeyString(pk), qdoc{"id": id, "pk": pk, "k": k})
	}
	firstPage := func(cc *azcosmos.ContainerClient, query string, size int32) ([]string, *string) {
		resp, err := cc.NewQueryItemsPager(query, all, &azcosmos.QueryOptions{PageSizeHint: size}).NextPage(ctx)
		if err != nil || resp.ContinuationToken == nil {
			t.Fatalf("%s: first page: %v (continuation %v)", query, err, resp.ContinuationToken)
		}
		var ids []string
		for _, it := range resp.Items {
			var id string
			if err := json.Unmarshal(it, &id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids, resp.ContinuationToken
	}
	rest := func(cc *azcosmos.ContainerClient, query string, size int32, tok *string) []string {
		return queryIDs(t, cc, query, all, &azcosmos.QueryOptions{PageSizeHint: size, ContinuationToken: tok})
	}

	t.Run("plain", func(t *testing.T) {
		cc := mustContainer(t, db, pkContainer("plain", nil))
		var orig []string
		for i := range 12 {
			id := fmt.Sprintf("w%02d", i)
			mk(cc, id, i)
			orig = append(orig, id)
		}
		const q = "SELECT VALUE c.id FROM c"
		seen, tok := firstPage(cc, q, 4)
		if !slices.Equal(seen, orig[:4]) {
			t.Fatalf("first page %v; want %v", seen, orig[:4])
		}
		mk(cc, "new1", 100)
		if _, err := cc.DeleteItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprintf("p%d", len("w09")%3)), "w09", nil); err != nil {
			t.Fatal(err)
		}
		mk(cc, "new2", 101)
		seen = append(seen, rest(cc, q, 4, tok)...)
		want := append(slices.Concat(slices.Clone(orig[:9]), orig[10:]), "new1", "new2")
		if !slices.Equal(seen, want) {
			t.Errorf("plain query across writes = %v; want %v", seen, want)
		}
	})

	for _, dir := range []string{"ASC", "DESC"} {
		t.Run("order by "+dir, func(t *testing.T) {
			cc := mustContainer(t, db, pkContainer("ob"+dir, nil))
			keys := map[string]int{}
			for i := range 20 {
				id := fmt.Sprintf("o%02d", i)
				k := (i * 7 % 20) * 10 // 0..190, not in insertion order
				mk(cc, id, k)
				keys[id] = k
			}
			q := "SELECT VALUE c.id FROM c ORDER BY c.k " + dir
			seen, tok := firstPage(cc, q, 5)
			last := keys[seen[len(seen)-1]]
			after := func(k int) bool { // sorts after the last served row
				if dir == "ASC" {
					return k >= last
				}
				return k <= last
			}
			// New documents: before the cursor, equal to it (a tie, later in
			// insertion order), just after it, and at the far end.
			var step int
			if dir == "ASC" {
				step = 10
			} else {
				step = -10
			}
			news := map[string]int{"n-before": last - step/2, "n-tie": last, "n-after": last + step/2, "n-end": last + 100*step}
			for _, id := range []string{"n-before", "n-tie", "n-after", "n-end"} {
				mk(cc, id, news[id])
				keys[id] = news[id]
			}
			seen = append(seen, rest(cc, q, 5, tok)...)
			count := map[string]int{}
			for _, id := range seen {
				count[id]++
			}
			for id, n := range count {
				if n > 1 {
					t.Errorf("%s served %d times", id, n)
				}
			}
			for i := range 20 {
				if id := fmt.Sprintf("o%02d", i); count[id] != 1 {
					t.Errorf("pre-existing %s (k=%d) served %d times", id, keys[id], count[id])
				}
			}
			for id, k := range news {
				if want := after(k); (count[id] == 1) != want {
					t.Errorf("new %s (k=%d, last served k=%d): served %v; want %v", id, k, last, count[id] == 1, want)
				}
			}
			// The order of everything served is the ORDER BY order.
			for i := 1; i < len(seen); i++ {
				a, b := keys[seen[i-1]], keys[seen[i]]
				if dir == "ASC" && a > b || dir == "DESC" && a < b {
					t.Errorf("rows out of order: %s (k=%d) before %s (k=%d)", seen[i-1], a, seen[i], b)
				}
			}
		})
	}
}

func testQueryPageSizes(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true, Args: allQueries})
	c := s.client(t)
	db := mustDatabase(t, c, "qs")
	cc := mustContainer(t, db, pkContainer("c", nil))
	var want []string
	for i := range 150 {
		id := fmt.Sprintf("s%03d", i)
		pk := fmt.Sprintf("p%d", i%5)
		if _, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), mustMarshal(t, qdoc{"id": id, "pk": pk}), nil); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	all := azcosmos.NewPartitionKey()
	for _, size := range []int32{-1, 0, 7, 150, 1000} {
		run := mustQuery(t, cc, "SELECT VALUE c.id FROM c", all, &azcosmos.QueryOptions{PageSizeHint: size})
		var got []string
		for _, r := range run.rows {
			got = append(got, r.(string))
		}
		if !slices.Equal(got, want) {
			t.Errorf("page size %d: %d ids, first %v", size, len(got), got[:min(3, len(got))])
		}
		if size >= 150 && run.pages[0].n != 150 {
			t.Errorf("page size %d: first page has %d rows; want all 150", size, run.pages[0].n)
		}
	}
	for _, bad := range []string{"abc", "-2"} {
		r := s.rawQuery(t, "qs", "c", "SELECT * FROM c", hdr("x-ms-documentdb-query-enablecrosspartition", "true", "x-ms-max-item-count", bad))
		r.wantError(t, "x-ms-max-item-count "+bad, http.StatusBadRequest)
	}
}
