package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
)

// TestCrossPartitionRefusal: without ServeAllCrossPartitionQueries, a query
// that needs a plan is refused unless a partition key, a range or its own
// WHERE confines it to one logical partition; the refusal carries the plan.
func TestCrossPartitionRefusal(t *testing.T) {
	te := newTestEngine(t)
	te.reopenWith(func(o *Options) { o.ServeAllCrossPartitionQueries = false })
	te.mustDB("db")
	te.mustContainer("c", "")
	for _, p := range []string{"a", "b"} {
		for _, id := range []string{"1", "2"} {
			if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(p)}, []byte(`{"id":"`+id+`","pk":"`+p+`","n":`+id+`}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	refused := []string{
		"SELECT * FROM c ORDER BY c.id",
		"SELECT VALUE COUNT(1) FROM c",
		"SELECT c.pk, COUNT(1) AS n FROM c GROUP BY c.pk",
		"SELECT DISTINCT VALUE c.pk FROM c",
		"SELECT TOP 1 * FROM c",
		"SELECT * FROM c OFFSET 1 LIMIT 1",
		"SELECT * FROM c WHERE c.pk IN ('a', 'b') ORDER BY c.id",
		"SELECT * FROM c WHERE c.pk = 'a' OR c.n = 1 ORDER BY c.id",
		"SELECT * FROM c WHERE c.pk = @missing ORDER BY c.id",
	}
	for _, q := range refused {
		_, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: q})
		var e *lethe.Error
		if !errors.As(err, &e) || e.Code != lethe.CodeBadRequest || e.SubStatus != 1004 {
			t.Errorf("%s: %v, want BadRequest/1004", q, err)
			continue
		}
		var plan struct {
			Version   int             `json:"partitionedQueryExecutionInfoVersion"`
			QueryInfo json.RawMessage `json:"queryInfo"`
		}
		if err := json.Unmarshal([]byte(e.AdditionalInfo), &plan); err != nil || plan.Version != 2 || len(plan.QueryInfo) == 0 {
			t.Errorf("%s: additional info %q is not a query plan (%v)", q, e.AdditionalInfo, err)
		}
	}
	served := []struct {
		q    string
		opts QueryOptions
		rows int
	}{
		{"SELECT * FROM c", QueryOptions{}, 4},
		{"SELECT VALUE c.id FROM c WHERE c.n > 1", QueryOptions{}, 2},
		{"SELECT * FROM c ORDER BY c.id", QueryOptions{PK: pk("a")}, 2},
		{"SELECT VALUE COUNT(1) FROM c", QueryOptions{Scope: Scope{RangeID: "0"}}, 1},
		{"SELECT * FROM c WHERE c.pk = 'a' ORDER BY c.id", QueryOptions{}, 2},
		{"SELECT * FROM c WHERE c.n >= 1 AND c.pk = @p ORDER BY c.id DESC", QueryOptions{Params: map[string]jsonv.Value{"p": "b"}}, 2},
		{"SELECT * FROM c WHERE c.pk IN ('b') ORDER BY c.id", QueryOptions{}, 2},
	}
	for _, c := range served {
		c.opts.Text = c.q
		page, err := te.QueryDocuments(ctx, "db", "c", c.opts)
		if err != nil || len(page.Rows) != c.rows {
			t.Errorf("%s %+v: %d rows, %v; want %d rows", c.q, c.opts, len(page.Rows), err, c.rows)
		}
	}
}

// TestQueryPlanRequests: a plan request answers the query's plan, the same
// the refusal carries; a shape no client pipeline can combine is a plain 400
// naming the problem, for the plan request and the query alike; the
// rewritten query is served on one range.
func TestQueryPlanRequests(t *testing.T) {
	te := newTestEngine(t)
	te.reopenWith(func(o *Options) { o.ServeAllCrossPartitionQueries = false })
	te.mustDB("db")
	te.mustContainer("c", "")
	for i, p := range []string{"a", "b", "a"} {
		if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(p)}, []byte(`{"id":"`+string(rune('1'+i))+`","pk":"`+p+`","n":`+string(rune('1'+i))+`}`)); err != nil {
			t.Fatal(err)
		}
	}
	const q = "SELECT c.pk, SUM(c.n) AS s FROM c GROUP BY c.pk"
	raw, err := te.QueryPlan(ctx, "db", "c", QueryOptions{Text: q})
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Version   int `json:"partitionedQueryExecutionInfoVersion"`
		QueryInfo struct {
			GroupByExpressions []string `json:"groupByExpressions"`
			RewrittenQuery     string   `json:"rewrittenQuery"`
		} `json:"queryInfo"`
		QueryRanges []map[string]any `json:"queryRanges"`
	}
	if err := json.Unmarshal(raw, &plan); err != nil || plan.Version != 2 || len(plan.QueryInfo.GroupByExpressions) != 1 || len(plan.QueryRanges) != 1 {
		t.Fatalf("plan %s (%v)", raw, err)
	}
	_, err = te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: q})
	var e *lethe.Error
	if !errors.As(err, &e) || e.SubStatus != 1004 || e.AdditionalInfo != string(raw) {
		t.Errorf("refusal %v does not carry the plan %s", err, raw)
	}
	page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: plan.QueryInfo.RewrittenQuery, Scope: Scope{RangeID: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"groupByItems":[{"item":"a"}],"payload":{"pk":"a","s":{"item":4,"kind":"sum"}}}`,
		`{"groupByItems":[{"item":"b"}],"payload":{"pk":"b","s":{"item":2,"kind":"sum"}}}`,
	}
	if len(page.Rows) != len(want) || string(page.Rows[0]) != want[0] || string(page.Rows[1]) != want[1] {
		t.Errorf("rewritten query rows %s, want %s", page.Rows, want)
	}

	for _, bad := range []string{"SELECT VALUE COUNT(1) + 1 FROM c", "SELECT c.pk, ABS(SUM(c.n)) AS s FROM c GROUP BY c.pk"} {
		_, err := te.QueryPlan(ctx, "db", "c", QueryOptions{Text: bad})
		if !errors.As(err, &e) || e.Code != lethe.CodeBadRequest || e.SubStatus != 0 || !strings.Contains(e.Message, "cannot be combined across partition key ranges") {
			t.Errorf("plan of %s: %v, want a BadRequest saying why", bad, err)
		}
		_, err = te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: bad})
		if !errors.As(err, &e) || e.Code != lethe.CodeBadRequest || e.SubStatus != 0 || e.AdditionalInfo != "" {
			t.Errorf("%s: %v, want the plan request's BadRequest", bad, err)
		}
		if _, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: bad, PK: pk("a")}); err != nil {
			t.Errorf("%s in one partition: %v", bad, err)
		}
	}
	if _, err := te.QueryPlan(ctx, "db", "c", QueryOptions{Text: "SELECT TOP @n * FROM c"}); lethe.ErrorCode(err) != lethe.CodeBadRequest {
		t.Errorf("plan with a missing TOP parameter: %v", err)
	}
	if _, err := te.QueryPlan(ctx, "db", "missing", QueryOptions{Text: q}); lethe.ErrorCode(err) != lethe.CodeNotFound {
		t.Errorf("plan of a missing container: %v", err)
	}
}
