package engine

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/lethe-db/lethe"
)

// TestRangesAtCreation: one range per 10,000 RU/s of a container's own
// throughput, fixed at creation; one without throughput, and one under
// partition key definition version 1.
func TestRangesAtCreation(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	cases := []struct {
		id, body     string
		manual, auto string
		want         int
	}{
		{"none", `{"id":"none","partitionKey":{"paths":["/pk"]}}`, "", "", 1},
		{"small", `{"id":"small","partitionKey":{"paths":["/pk"]}}`, "400", "", 1},
		{"edge", `{"id":"edge","partitionKey":{"paths":["/pk"]}}`, "10000", "", 1},
		{"three", `{"id":"three","partitionKey":{"paths":["/pk"]}}`, "30000", "", 3},
		{"auto", `{"id":"auto","partitionKey":{"paths":["/pk"]}}`, "", `{"maxThroughput":20000}`, 2},
		{"hier", `{"id":"hier","partitionKey":{"paths":["/a","/b"],"kind":"MultiHash","version":2}}`, "40000", "", 4},
		{"v1", `{"id":"v1","partitionKey":{"paths":["/pk"],"version":1}}`, "30000", "", 1},
	}
	for _, c := range cases {
		var tp *Throughput
		if c.manual != "" || c.auto != "" {
			tp = mustThroughput(t, c.manual, c.auto)
		}
		if _, err := te.CreateContainerWithThroughput(ctx, "db", []byte(c.body), tp); err != nil {
			t.Fatalf("%s: %v", c.id, err)
		}
		_, info, err := te.ReadContainer(ctx, "db", c.id)
		if err != nil || len(info.Ranges) != c.want {
			t.Errorf("%s: %d ranges (%v), want %d", c.id, len(info.Ranges), err, c.want)
		}
	}
	// A replace keeps the ranges.
	if _, err := te.ReplaceContainer(ctx, "db", "three", []byte(`{"id":"three","partitionKey":{"paths":["/pk"]},"defaultTtl":60}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, info, _ := te.ReadContainer(ctx, "db", "three"); len(info.Ranges) != 3 {
		t.Errorf("after a replace: %d ranges, want 3", len(info.Ranges))
	}
	// The definition's version is 1 or 2, and cannot change.
	for _, v := range []string{`3`, `"1"`, `0`, `1.5`, `[2]`} {
		_, err := te.CreateContainer(ctx, "db", []byte(`{"id":"bad","partitionKey":{"paths":["/pk"],"version":`+v+`}}`))
		if codeOf(err) != lethe.CodeBadRequest {
			t.Errorf("version %s: %v, want BadRequest", v, err)
		}
	}
	if _, err := te.ReplaceContainer(ctx, "db", "v1", []byte(`{"id":"v1","partitionKey":{"paths":["/pk"],"version":2}}`), ""); codeOf(err) != lethe.CodeBadRequest {
		t.Errorf("changing the version: %v, want BadRequest", err)
	}
}

// TestRangeScopes: every document is in exactly one range, the range its
// writes report (for session tokens), and range-scoped queries and feeds see
// exactly it; -0 and 0 are one key, in one range.
func TestRangeScopes(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	if _, err := te.CreateContainerWithThroughput(ctx, "db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]}}`), mustThroughput(t, "30000", "")); err != nil {
		t.Fatal(err)
	}
	keys := []any{"a", "b", "c", "d", "e", 1.0, 2.5, math.Copysign(0, -1), true, false, nil}
	rangeOf := map[string]string{}
	for i, k := range keys {
		id := fmt.Sprintf("d%d", i)
		res, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: lethe.PartitionKey{k}}, []byte(fmt.Sprintf(`{"id":%q,"pk":%s}`, id, jsonOf(k))))
		if err != nil {
			t.Fatalf("create %v: %v", k, err)
		}
		rangeOf[id] = res.RangeID
	}
	seen := map[string]string{}
	for _, rg := range []string{"0", "1", "2"} {
		page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT VALUE c.id FROM c", Scope: Scope{RangeID: rg}})
		if err != nil {
			t.Fatal(err)
		}
		feed, err := te.ReadFeed(ctx, "db", "c", FeedOptions{Scope: Scope{RangeID: rg}})
		if err != nil || len(feed.Docs) != len(page.Rows) || !slices.Equal(page.RangeIDs, []string{rg}) {
			t.Errorf("range %s: feed %d docs (%v), query %d rows, query ranges %v", rg, len(feed.Docs), err, len(page.Rows), page.RangeIDs)
		}
		for _, row := range page.Rows {
			id := string(row[1 : len(row)-1])
			if rangeOf[id] != rg {
				t.Errorf("range %s holds %s, whose create reported range %s", rg, id, rangeOf[id])
			}
			seen[id] = rg
		}
	}
	if len(seen) != len(keys) {
		t.Errorf("the ranges hold %d of %d documents", len(seen), len(keys))
	}
	for _, sc := range []Scope{{RangeID: "x"}, {RangeID: "0", EPKMin: "zz"}, {EPKMin: "20", EPKMax: "10"}} {
		if _, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT * FROM c", Scope: sc}); codeOf(err) != lethe.CodeBadRequest {
			t.Errorf("scope %+v: %v, want BadRequest", sc, err)
		}
	}
	var e *lethe.Error
	_, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT * FROM c", Scope: Scope{RangeID: "3"}})
	if !asError(err, &e) || e.Code != lethe.CodeGone || e.SubStatus != 1002 {
		t.Errorf("range 3 of 3: %v, want Gone/1002", err)
	}
}

func jsonOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("%q", x)
	case float64:
		if x == 0 && math.Signbit(x) {
			return "-0"
		}
	}
	return fmt.Sprint(v)
}
