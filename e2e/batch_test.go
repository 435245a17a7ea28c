package e2e

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestBatch proves transactional batches through the Go SDK: every operation
// kind with its status, etag and body; the SDK default (no bodies for writes)
// versus content response on; a failing batch reports Success=false, 207, the
// failing operation's own status and 424 for the others, and applies nothing;
// If-Match inside a batch; and the 100-operation limit.
func TestBatch(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	c := s.client(t)
	db := mustDatabase(t, c, "batch")
	cc := mustContainer(t, db, pkContainer("c", nil))
	pk := azcosmos.NewPartitionKeyString("b")
	item := func(id string, extra ...any) []byte {
		m := map[string]any{"id": id, "pk": "b"}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return mustMarshal(t, m)
	}
	mustCreate := func(t *testing.T, id string) {
		t.Helper()
		if _, err := cc.CreateItem(ctx, pk, item(id, "v", 0), nil); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	readDoc := func(t *testing.T, id string) (map[string]any, int) {
		t.Helper()
		r, err := cc.ReadItem(ctx, pk, id, nil)
		if err != nil {
			return nil, statusOf(err)
		}
		return decodeObject(t, r.Value), http.StatusOK
	}

	t.Run("all operation kinds", func(t *testing.T) {
		for _, id := range []string{"k-read", "k-replace", "k-delete", "k-patch", "k-upsert-old"} {
			mustCreate(t, id)
		}
		b := cc.NewTransactionalBatch(pk)
		b.CreateItem(item("k-new", "v", 1), nil)
		b.UpsertItem(item("k-upsert-new", "v", 1), nil)
		b.UpsertItem(item("k-upsert-old", "v", 1), nil)
		b.ReadItem("k-read", nil)
		b.ReplaceItem("k-replace", item("k-replace", "v", 1), nil)
		b.DeleteItem("k-delete", nil)
		var p azcosmos.PatchOperations
		p.AppendIncrement("/v", 5)
		b.PatchItem("k-patch", p, nil)
		r, err := cc.ExecuteTransactionalBatch(ctx, b, nil)
		if err != nil {
			t.Fatalf("execute: %v", err)
		}
		if !r.Success || r.RawResponse.StatusCode != http.StatusOK || len(r.OperationResults) != 7 {
			t.Fatalf("batch: success %v status %d results %d", r.Success, r.RawResponse.StatusCode, len(r.OperationResults))
		}
		if r.RequestCharge <= 0 || r.SessionToken == "" {
			t.Errorf("batch charge %v session token %v", r.RequestCharge, r.SessionToken)
		}
		want := []int32{201, 201, 200, 200, 200, 204, 200}
		for i, res := range r.OperationResults {
			if res.StatusCode != want[i] {
				t.Errorf("op %d: status %d; want %d", i, res.StatusCode, want[i])
			}
			if res.RequestCharge <= 0 {
				t.Errorf("op %d: charge %v", i, res.RequestCharge)
			}
			if i == 5 { // delete
				if res.ResourceBody != nil {
					t.Errorf("delete op has a body: %s", res.ResourceBody)
				}
				continue
			}
			if res.ETag == "" {
				t.Errorf("op %d: no etag", i)
			}
			// A read in the batch makes the SDK ask for content on every operation.
			if res.ResourceBody == nil {
				t.Errorf("op %d: no body", i)
				continue
			}
			if body := decodeObject(t, res.ResourceBody); body["_etag"] != string(res.ETag) {
				t.Errorf("op %d: body _etag %v, result etag %q", i, body["_etag"], res.ETag)
			}
		}
		if body := decodeObject(t, r.OperationResults[3].ResourceBody); body["id"] != "k-read" {
			t.Errorf("read op body = %s", r.OperationResults[3].ResourceBody)
		}
		// Effects.
		for id, v := range map[string]float64{"k-new": 1, "k-upsert-new": 1, "k-upsert-old": 1, "k-replace": 1, "k-patch": 5, "k-read": 0} {
			d, st := readDoc(t, id)
			if st != 200 || d["v"] != v {
				t.Errorf("after batch %s: status %d v %v; want 200, %v", id, st, d["v"], v)
			}
		}
		if _, st := readDoc(t, "k-delete"); st != http.StatusNotFound {
			t.Errorf("deleted by the batch, k-delete reads %d", st)
		}
	})

	t.Run("default has no bodies for writes", func(t *testing.T) {
		b := cc.NewTransactionalBatch(pk)
		b.CreateItem(item("nb-1"), nil)
		b.CreateItem(item("nb-2"), nil)
		b.UpsertItem(item("nb-3"), nil)
		r, err := cc.ExecuteTransactionalBatch(ctx, b, nil)
		if err != nil || !r.Success {
			t.Fatalf("execute: %v %v", err, r.Success)
		}
		for i, res := range r.OperationResults {
			if res.StatusCode != http.StatusCreated || res.ETag == "" || res.RequestCharge <= 0 {
				t.Errorf("op %d: %d etag %q charge %v", i, res.StatusCode, res.ETag, res.RequestCharge)
			}
			if res.ResourceBody != nil {
				t.Errorf("op %d: body %s with the SDK's default Prefer: return=minimal; want none", i, res.ResourceBody)
			}
		}
		b = cc.NewTransactionalBatch(pk)
		b.UpsertItem(item("nb-4"), nil)
		r, err = cc.ExecuteTransactionalBatch(ctx, b, &azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: true})
		if err != nil || !r.Success || r.OperationResults[0].ResourceBody == nil {
			t.Errorf("with EnableContentResponseOnWrite: %v, %+v", err, r.OperationResults)
		}
	})

	t.Run("failure is atomic", func(t *testing.T) {
		mustCreate(t, "f-dup")
		mustCreate(t, "f-rep")
		mustCreate(t, "f-del")
		before, _ := readDoc(t, "f-rep")
		b := cc.NewTransactionalBatch(pk)
		b.CreateItem(item("f-1"), nil)
		b.ReplaceItem("f-rep", item("f-rep", "v", 99), nil)
		b.DeleteItem("f-del", nil)
		b.CreateItem(item("f-dup"), nil) // 409
		b.CreateItem(item("f-2"), nil)
		r, err := cc.ExecuteTransactionalBatch(ctx, b, &azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: true})
		if err != nil {
			t.Fatalf("execute: %v", err)
		}
		if r.Success || r.RawResponse.StatusCode != http.StatusMultiStatus {
			t.Errorf("success %v status %d; want false, 207", r.Success, r.RawResponse.StatusCode)
		}
		want := []int32{424, 424, 424, 409, 424}
		if len(r.OperationResults) != len(want) {
			t.Fatalf("%d results; want %d", len(r.OperationResults), len(want))
		}
		for i, res := range r.OperationResults {
			if res.StatusCode != want[i] {
				t.Errorf("op %d: status %d; want %d", i, res.StatusCode, want[i])
			}
		}
		for _, id := range []string{"f-1", "f-2"} {
			if _, st := readDoc(t, id); st != http.StatusNotFound {
				t.Errorf("%s exists after a failed batch (status %d)", id, st)
			}
		}
		if after, _ := readDoc(t, "f-rep"); !reflect.DeepEqual(before, after) {
			t.Errorf("f-rep changed by a failed batch: %v -> %v", before, after)
		}
		if _, st := readDoc(t, "f-del"); st != http.StatusOK {
			t.Errorf("f-del deleted by a failed batch (status %d)", st)
		}
	})

	t.Run("failing operation statuses", func(t *testing.T) {
		mustCreate(t, "s-1")
		stale := azcore.ETag(`"stale"`)
		cases := []struct {
			name   string
			add    func(b *azcosmos.TransactionalBatch)
			status int32
		}{
			{"read missing", func(b *azcosmos.TransactionalBatch) { b.ReadItem("s-missing", nil) }, 404},
			{"replace missing", func(b *azcosmos.TransactionalBatch) { b.ReplaceItem("s-missing", item("s-missing"), nil) }, 404},
			{"delete missing", func(b *azcosmos.TransactionalBatch) { b.DeleteItem("s-missing", nil) }, 404},
			{"patch missing", func(b *azcosmos.TransactionalBatch) {
				var p azcosmos.PatchOperations
				p.AppendSet("/x", 1)
				b.PatchItem("s-missing", p, nil)
			}, 404},
			{"replace stale etag", func(b *azcosmos.TransactionalBatch) {
				b.ReplaceItem("s-1", item("s-1"), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &stale})
			}, 412},
			{"delete stale etag", func(b *azcosmos.TransactionalBatch) {
				b.DeleteItem("s-1", &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &stale})
			}, 412},
			{"patch false condition", func(b *azcosmos.TransactionalBatch) {
				var p azcosmos.PatchOperations
				p.SetCondition("FROM c WHERE c.v = 12345")
				p.AppendSet("/x", 1)
				b.PatchItem("s-1", p, nil)
			}, 412},
			{"create in another partition", func(b *azcosmos.TransactionalBatch) { b.CreateItem([]byte(`{"id":"s-x","pk":"other"}`), nil) }, 400},
		}
		for _, tc := range cases {
			b := cc.NewTransactionalBatch(pk)
			b.CreateItem(item("s-before-"+tc.name), nil)
			tc.add(&b)
			r, err := cc.ExecuteTransactionalBatch(ctx, b, nil)
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			if r.Success || len(r.OperationResults) != 2 || r.OperationResults[0].StatusCode != 424 || r.OperationResults[1].StatusCode != tc.status {
				t.Errorf("%s: success %v results %+v; want [424 %d]", tc.name, r.Success, r.OperationResults, tc.status)
			}
			if _, st := readDoc(t, "s-before-"+tc.name); st != http.StatusNotFound {
				t.Errorf("%s: the create before the failure was applied", tc.name)
			}
		}
	})

	t.Run("if-match", func(t *testing.T) {
		mustCreate(t, "m-1")
		d, _ := readDoc(t, "m-1")
		etag := azcore.ETag(d["_etag"].(string))
		b := cc.NewTransactionalBatch(pk)
		b.ReplaceItem("m-1", item("m-1", "v", 1), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &etag})
		b.UpsertItem(item("m-1", "v", 2), nil)
		r, err := cc.ExecuteTransactionalBatch(ctx, b, nil)
		if err != nil || !r.Success {
			t.Fatalf("batch with the current etag: %v %+v", err, r.OperationResults)
		}
		// Operations see the batch's own earlier writes: the etag is stale now.
		b = cc.NewTransactionalBatch(pk)
		b.DeleteItem("m-1", &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &etag})
		r, err = cc.ExecuteTransactionalBatch(ctx, b, nil)
		if err != nil || r.Success || r.OperationResults[0].StatusCode != 412 {
			t.Errorf("delete with a stale etag: %v %+v", err, r.OperationResults)
		}
		d, _ = readDoc(t, "m-1")
		if d["v"] != float64(2) {
			t.Errorf("v = %v; want 2", d["v"])
		}
		now := azcore.ETag(d["_etag"].(string))
		b = cc.NewTransactionalBatch(pk)
		b.DeleteItem("m-1", &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &now})
		if r, err := cc.ExecuteTransactionalBatch(ctx, b, nil); err != nil || !r.Success {
			t.Errorf("delete with the current etag: %v", err)
		}
	})

	t.Run("operations see earlier operations", func(t *testing.T) {
		b := cc.NewTransactionalBatch(pk)
		b.CreateItem(item("seq-1", "v", 1), nil)
		var p azcosmos.PatchOperations
		p.AppendIncrement("/v", 1)
		b.PatchItem("seq-1", p, nil)
		b.ReadItem("seq-1", nil)
		b.DeleteItem("seq-1", nil)
		b.CreateItem(item("seq-1", "v", 10), nil)
		r, err := cc.ExecuteTransactionalBatch(ctx, b, nil)
		if err != nil || !r.Success {
			t.Fatalf("execute: %v %+v", err, r.OperationResults)
		}
		if body := decodeObject(t, r.OperationResults[2].ResourceBody); body["v"] != float64(2) {
			t.Errorf("read inside the batch saw v=%v; want 2", body["v"])
		}
		if d, _ := readDoc(t, "seq-1"); d["v"] != float64(10) {
			t.Errorf("final v = %v; want 10", d["v"])
		}
	})

	t.Run("100 operations", func(t *testing.T) {
		b := cc.NewTransactionalBatch(pk)
		for i := range 100 {
			b.CreateItem(item(fmt.Sprintf("h-%03d", i)), nil)
		}
		r, err := cc.ExecuteTransactionalBatch(ctx, b, nil)
		if err != nil || !r.Success || len(r.OperationResults) != 100 {
			t.Fatalf("100 operations: %v success %v results %d", err, r.Success, len(r.OperationResults))
		}
		if _, st := readDoc(t, "h-099"); st != 200 {
			t.Errorf("h-099: %d", st)
		}
		b = cc.NewTransactionalBatch(pk)
		for i := range 101 {
			b.CreateItem(item(fmt.Sprintf("o-%03d", i)), nil)
		}
		_, err = cc.ExecuteTransactionalBatch(ctx, b, nil)
		wantStatus(t, "101 operations", err, http.StatusBadRequest)
		if _, st := readDoc(t, "o-000"); st != http.StatusNotFound {
			t.Errorf("a rejected 101-operation batch applied its first create (status %d)", st)
		}
	})

	t.Run("raw errors", func(t *testing.T) {
		path := docsPath("batch", "c")
		batchHeaders := func(pk string) map[string]string {
			h := hdr("x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True", "Content-Type", "application/json")
			if pk != "" {
				h["x-ms-documentdb-partitionkey"] = pk
			}
			return h
		}
		s.do(t, "POST", path, batchHeaders(""), []byte(`[{"operationType":"Read","id":"x"}]`)).wantError(t, "batch without a partition key", http.StatusBadRequest)
		s.do(t, "POST", path, batchHeaders(`["b"]`), []byte(`{"not":"an array"}`)).wantError(t, "batch body not an array", http.StatusBadRequest)
		s.do(t, "POST", path, batchHeaders(`["b"]`), []byte(`[]`)).wantError(t, "empty batch", http.StatusBadRequest)
		s.do(t, "POST", path, batchHeaders(`["b"]`), []byte(`[{"operationType":"Explode","id":"x"}]`)).wantError(t, "unknown operation type", http.StatusBadRequest)
		s.do(t, "POST", path, batchHeaders(`["b"]`), []byte(`[{"operationType":"Create"}]`)).wantError(t, "create without a body", http.StatusBadRequest)
	})
}
