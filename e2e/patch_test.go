package e2e

import (
	"net/http"
	"reflect"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestPatch proves every patch operation through the Go SDK (move, which the SDK
// does not expose, through a raw request): object and array targets, array
// indices and '-', nested paths, the 400s for paths that do not exist or values
// of the wrong type, conditional patch (true applies, false 412), If-Match, and
// that a failed patch changes nothing.
func TestPatch(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	c := s.client(t)
	db := mustDatabase(t, c, "patch")
	cc := mustContainer(t, db, pkContainer("c", nil))
	pk := azcosmos.NewPartitionKeyString("p")

	base := func() map[string]any {
		return map[string]any{
			"id": "", "pk": "p",
			"name":   "n",
			"count":  1,
			"ratio":  1.5,
			"arr":    []any{"a", "b", "c"},
			"nested": map[string]any{"x": 1, "list": []any{map[string]any{"k": 1}}},
			"text":   "str",
		}
	}
	// reset recreates the document id from base and returns its etag.
	reset := func(t *testing.T, id string) {
		t.Helper()
		d := base()
		d["id"] = id
		if _, err := cc.UpsertItem(ctx, pk, mustMarshal(t, d), nil); err != nil {
			t.Fatalf("upsert %s: %v", id, err)
		}
	}
	read := func(t *testing.T, id string) map[string]any {
		t.Helper()
		r, err := cc.ReadItem(ctx, pk, id, nil)
		if err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		return decodeObject(t, r.Value)
	}
	// userFields drops system properties.
	userFields := func(m map[string]any) map[string]any {
		for _, k := range []string{"_rid", "_self", "_etag", "_ts", "_attachments"} {
			delete(m, k)
		}
		return m
	}
	// canonical round-trips v through JSON so numbers compare as float64.
	canonical := func(t *testing.T, v map[string]any) map[string]any {
		return decodeObject(t, mustMarshal(t, v))
	}

	ok := []struct {
		name  string
		ops   func(p *azcosmos.PatchOperations)
		apply func(d map[string]any) // the expected effect on base()
	}{
		{"add new property", func(p *azcosmos.PatchOperations) { p.AppendAdd("/added", "v") }, func(d map[string]any) { d["added"] = "v" }},
		{"add existing property replaces it", func(p *azcosmos.PatchOperations) { p.AppendAdd("/name", map[string]any{"o": 1}) }, func(d map[string]any) { d["name"] = map[string]any{"o": 1} }},
		{"add inserts into an array", func(p *azcosmos.PatchOperations) { p.AppendAdd("/arr/1", "X") }, func(d map[string]any) { d["arr"] = []any{"a", "X", "b", "c"} }},
		{"add at index 0", func(p *azcosmos.PatchOperations) { p.AppendAdd("/arr/0", "X") }, func(d map[string]any) { d["arr"] = []any{"X", "a", "b", "c"} }},
		{"add at the length appends", func(p *azcosmos.PatchOperations) { p.AppendAdd("/arr/3", "X") }, func(d map[string]any) { d["arr"] = []any{"a", "b", "c", "X"} }},
		{"add with - appends", func(p *azcosmos.PatchOperations) { p.AppendAdd("/arr/-", "X") }, func(d map[string]any) { d["arr"] = []any{"a", "b", "c", "X"} }},
		{"add nested", func(p *azcosmos.PatchOperations) { p.AppendAdd("/nested/y", 2) }, func(d map[string]any) { d["nested"].(map[string]any)["y"] = 2 }},
		{"add into an object inside an array", func(p *azcosmos.PatchOperations) { p.AppendAdd("/nested/list/0/j", true) }, func(d map[string]any) {
			d["nested"].(map[string]any)["list"] = []any{map[string]any{"k": 1, "j": true}}
		}},
		{"set new property", func(p *azcosmos.PatchOperations) { p.AppendSet("/fresh", []int{1, 2}) }, func(d map[string]any) { d["fresh"] = []any{1, 2} }},
		{"set overwrites an array element", func(p *azcosmos.PatchOperations) { p.AppendSet("/arr/1", "X") }, func(d map[string]any) { d["arr"] = []any{"a", "X", "c"} }},
		{"set nested", func(p *azcosmos.PatchOperations) { p.AppendSet("/nested/x", "changed") }, func(d map[string]any) { d["nested"].(map[string]any)["x"] = "changed" }},
		{"set null", func(p *azcosmos.PatchOperations) { p.AppendSet("/name", []any(nil)) }, func(d map[string]any) { d["name"] = nil }},
		{"replace property", func(p *azcosmos.PatchOperations) { p.AppendReplace("/name", 42) }, func(d map[string]any) { d["name"] = 42 }},
		{"replace array element", func(p *azcosmos.PatchOperations) { p.AppendReplace("/arr/2", "Z") }, func(d map[string]any) { d["arr"] = []any{"a", "b", "Z"} }},
		{"remove property", func(p *azcosmos.PatchOperations) { p.AppendRemove("/text") }, func(d map[string]any) { delete(d, "text") }},
		{"remove array element", func(p *azcosmos.PatchOperations) { p.AppendRemove("/arr/0") }, func(d map[string]any) { d["arr"] = []any{"b", "c"} }},
		{"remove nested", func(p *azcosmos.PatchOperations) { p.AppendRemove("/nested/x") }, func(d map[string]any) { delete(d["nested"].(map[string]any), "x") }},
		{"incr integer", func(p *azcosmos.PatchOperations) { p.AppendIncrement("/count", 41) }, func(d map[string]any) { d["count"] = 42 }},
		{"incr negative", func(p *azcosmos.PatchOperations) { p.AppendIncrement("/count", -3) }, func(d map[string]any) { d["count"] = -2 }},
		{"incr float", func(p *azcosmos.PatchOperations) { p.AppendIncrement("/ratio", 1) }, func(d map[string]any) { d["ratio"] = 2.5 }},
		{"incr missing creates", func(p *azcosmos.PatchOperations) { p.AppendIncrement("/newCounter", 7) }, func(d map[string]any) { d["newCounter"] = 7 }},
		{"incr nested in array", func(p *azcosmos.PatchOperations) { p.AppendIncrement("/nested/list/0/k", 1) }, func(d map[string]any) {
			d["nested"].(map[string]any)["list"] = []any{map[string]any{"k": 2}}
		}},
		{"operations apply in order", func(p *azcosmos.PatchOperations) {
			p.AppendSet("/seq", 1)
			p.AppendIncrement("/seq", 1)
			p.AppendReplace("/seq", "done")
			p.AppendRemove("/name")
			p.AppendAdd("/name", "again")
		}, func(d map[string]any) { d["seq"] = "done"; d["name"] = "again" }},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			id := "ok-" + tc.name
			reset(t, id)
			before := read(t, id)
			var ops azcosmos.PatchOperations
			tc.ops(&ops)
			r, err := cc.PatchItem(ctx, pk, id, ops, &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
			if err != nil {
				t.Fatalf("patch: %v", err)
			}
			if r.RawResponse.StatusCode != http.StatusOK {
				t.Errorf("status %d; want 200", r.RawResponse.StatusCode)
			}
			want := base()
			want["id"] = id
			tc.apply(want)
			got := decodeObject(t, r.Value)
			if got["_etag"] == before["_etag"] || got["_etag"] != string(r.ETag) || got["_rid"] != before["_rid"] {
				t.Errorf("system properties after patch: %v; before %v", got, before)
			}
			if tsOf(t, got) < tsOf(t, before) {
				t.Errorf("_ts went back")
			}
			if g, w := userFields(got), canonical(t, want); !reflect.DeepEqual(g, w) {
				t.Errorf("patched body\n got %v\nwant %v", g, w)
			}
			if g, w := userFields(read(t, id)), canonical(t, want); !reflect.DeepEqual(g, w) {
				t.Errorf("read after patch\n got %v\nwant %v", g, w)
			}
		})
	}

	bad := []struct {
		name string
		ops  func(p *azcosmos.PatchOperations)
	}{
		{"replace missing property", func(p *azcosmos.PatchOperations) { p.AppendReplace("/missing", 1) }},
		{"replace index at the length", func(p *azcosmos.PatchOperations) { p.AppendReplace("/arr/3", 1) }},
		{"remove missing property", func(p *azcosmos.PatchOperations) { p.AppendRemove("/missing") }},
		{"remove missing index", func(p *azcosmos.PatchOperations) { p.AppendRemove("/arr/9") }},
		{"add beyond the array length", func(p *azcosmos.PatchOperations) { p.AppendAdd("/arr/5", 1) }},
		{"add with a missing parent", func(p *azcosmos.PatchOperations) { p.AppendAdd("/no/such/parent", 1) }},
		{"set with a missing parent", func(p *azcosmos.PatchOperations) { p.AppendSet("/no/child", 1) }},
		{"set through a scalar", func(p *azcosmos.PatchOperations) { p.AppendSet("/text/child", 1) }},
		{"incr a string", func(p *azcosmos.PatchOperations) { p.AppendIncrement("/text", 1) }},
		{"incr with a missing parent", func(p *azcosmos.PatchOperations) { p.AppendIncrement("/no/n", 1) }},
		{"array index that is not a number", func(p *azcosmos.PatchOperations) { p.AppendSet("/arr/x", 1) }},
		{"change the id", func(p *azcosmos.PatchOperations) { p.AppendSet("/id", "other") }},
		{"change the partition key", func(p *azcosmos.PatchOperations) { p.AppendSet("/pk", "other") }},
		{"system property", func(p *azcosmos.PatchOperations) { p.AppendSet("/_ts", 1) }},
		{"path without a slash", func(p *azcosmos.PatchOperations) { p.AppendSet("name", 1) }},
		{"good then bad: nothing applies", func(p *azcosmos.PatchOperations) {
			p.AppendSet("/name", "changed")
			p.AppendRemove("/missing")
		}},
		{"more than 10 operations", func(p *azcosmos.PatchOperations) {
			for range 11 {
				p.AppendIncrement("/count", 1)
			}
		}},
	}
	for _, tc := range bad {
		t.Run("error/"+tc.name, func(t *testing.T) {
			id := "bad-" + tc.name
			reset(t, id)
			before := read(t, id)
			var ops azcosmos.PatchOperations
			tc.ops(&ops)
			_, err := cc.PatchItem(ctx, pk, id, ops, nil)
			wantStatus(t, "patch", err, http.StatusBadRequest)
			if after := read(t, id); !reflect.DeepEqual(after, before) {
				t.Errorf("a failed patch changed the document:\nbefore %v\n after %v", before, after)
			}
		})
	}

	t.Run("move", func(t *testing.T) {
		// The Go SDK has no AppendMove: send the operation raw.
		cases := []struct {
			name, body string
			status     int
			apply      func(d map[string]any)
		}{
			{"rename", `{"operations":[{"op":"move","from":"/text","path":"/moved"}]}`, 200, func(d map[string]any) { d["moved"] = "str"; delete(d, "text") }},
			{"onto an existing property", `{"operations":[{"op":"move","from":"/text","path":"/name"}]}`, 200, func(d map[string]any) { d["name"] = "str"; delete(d, "text") }},
			{"into a nested object", `{"operations":[{"op":"move","from":"/count","path":"/nested/count"}]}`, 200, func(d map[string]any) {
				d["nested"].(map[string]any)["count"] = 1
				delete(d, "count")
			}},
			{"out of an array", `{"operations":[{"op":"move","from":"/arr/0","path":"/first"}]}`, 200, func(d map[string]any) { d["first"] = "a"; d["arr"] = []any{"b", "c"} }},
			{"missing from", `{"operations":[{"op":"move","from":"/missing","path":"/x"}]}`, 400, nil},
			{"into itself", `{"operations":[{"op":"move","from":"/nested","path":"/nested/inner"}]}`, 400, nil},
			{"bare array body (JavaScript SDK form)", `[{"op":"move","from":"/text","path":"/moved"}]`, 200, func(d map[string]any) { d["moved"] = "str"; delete(d, "text") }},
		}
		for _, tc := range cases {
			id := "move-" + tc.name
			reset(t, id)
			before := read(t, id)
			r := s.do(t, "PATCH", docPath("patch", "c", id), hdr("x-ms-documentdb-partitionkey", `["p"]`, "Content-Type", "application/json"), []byte(tc.body))
			if tc.status != 200 {
				r.wantError(t, "move "+tc.name, tc.status)
				if after := read(t, id); !reflect.DeepEqual(after, before) {
					t.Errorf("move %s: failed move changed the document", tc.name)
				}
				continue
			}
			r.wantStatus(t, "move "+tc.name, http.StatusOK)
			want := base()
			want["id"] = id
			tc.apply(want)
			if g, w := userFields(read(t, id)), canonical(t, want); !reflect.DeepEqual(g, w) {
				t.Errorf("move %s:\n got %v\nwant %v", tc.name, g, w)
			}
		}
	})

	t.Run("minimal response", func(t *testing.T) {
		reset(t, "minimal")
		var ops azcosmos.PatchOperations
		ops.AppendSet("/x", 1)
		r, err := cc.PatchItem(ctx, pk, "minimal", ops, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Value) != 0 || r.ETag == "" || r.RequestCharge <= 0 {
			t.Errorf("patch with the SDK default: body %q etag %q charge %v; want no body, an etag and a charge", r.Value, r.ETag, r.RequestCharge)
		}
	})

	t.Run("condition", func(t *testing.T) {
		reset(t, "cond")
		// true: applies.
		var ops azcosmos.PatchOperations
		ops.SetCondition("FROM c WHERE c.count = 1")
		ops.AppendIncrement("/count", 1)
		if _, err := cc.PatchItem(ctx, pk, "cond", ops, nil); err != nil {
			t.Fatalf("patch with a true condition: %v", err)
		}
		if got := read(t, "cond")["count"]; got != float64(2) {
			t.Errorf("count = %v after a true condition; want 2", got)
		}
		// Now false (count is 2): 412 and nothing changes.
		before := read(t, "cond")
		_, err := cc.PatchItem(ctx, pk, "cond", ops, nil)
		wantStatus(t, "patch with a false condition", err, http.StatusPreconditionFailed)
		if after := read(t, "cond"); !reflect.DeepEqual(after, before) {
			t.Errorf("a false condition changed the document")
		}
		// A richer condition.
		var ops2 azcosmos.PatchOperations
		ops2.SetCondition("FROM c WHERE c.count > 1 AND c.name = 'n' AND ARRAY_LENGTH(c.arr) = 3")
		ops2.AppendSet("/flag", true)
		if _, err := cc.PatchItem(ctx, pk, "cond", ops2, nil); err != nil {
			t.Errorf("patch with a compound true condition: %v", err)
		}
		// A condition that does not parse is a 400.
		var ops3 azcosmos.PatchOperations
		ops3.SetCondition("FROM c WHERE c.count = ")
		ops3.AppendSet("/flag", false)
		_, err = cc.PatchItem(ctx, pk, "cond", ops3, nil)
		wantStatus(t, "patch with an unparseable condition", err, http.StatusBadRequest)
	})

	t.Run("if-match", func(t *testing.T) {
		reset(t, "ifm")
		etag := azcosmosETag(read(t, "ifm")["_etag"])
		var ops azcosmos.PatchOperations
		ops.AppendIncrement("/count", 1)
		r, err := cc.PatchItem(ctx, pk, "ifm", ops, &azcosmos.ItemOptions{IfMatchEtag: &etag})
		if err != nil {
			t.Fatalf("patch with the current etag: %v", err)
		}
		// The old etag is now stale.
		_, err = cc.PatchItem(ctx, pk, "ifm", ops, &azcosmos.ItemOptions{IfMatchEtag: &etag})
		wantStatus(t, "patch with a stale etag", err, http.StatusPreconditionFailed)
		if got := read(t, "ifm")["count"]; got != float64(2) {
			t.Errorf("count = %v; want 2 (one patch applied)", got)
		}
		if _, err := cc.PatchItem(ctx, pk, "ifm", ops, &azcosmos.ItemOptions{IfMatchEtag: &r.ETag}); err != nil {
			t.Errorf("patch with the etag of the previous patch: %v", err)
		}
	})

	t.Run("concurrent increments are atomic", func(t *testing.T) {
		reset(t, "counter")
		const workers, each = 8, 10
		var wg sync.WaitGroup
		errs := make(chan error, workers*each)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					var ops azcosmos.PatchOperations
					ops.AppendIncrement("/count", 1)
					if _, err := cc.PatchItem(ctx, pk, "counter", ops, nil); err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("concurrent incr: %v", err)
		}
		if got := read(t, "counter")["count"]; got != float64(1+workers*each) {
			t.Errorf("count = %v after %d concurrent increments from 1; want %d", got, workers*each, 1+workers*each)
		}
	})

	t.Run("malformed bodies", func(t *testing.T) {
		reset(t, "raw")
		before := read(t, "raw")
		for _, body := range []string{
			`{"operations":[]}`, `{}`, `{"operations":{}}`, `[{"op":"explode","path":"/x"}]`, `[{"op":"set","path":"/x"}]`,
			`[{"op":"incr","path":"/count","value":"1"}]`, `{"operations":[{"op":"set","path":"/x","value":1}],"condition":5}`, `not json`, `[1]`,
		} {
			r := s.do(t, "PATCH", docPath("patch", "c", "raw"), hdr("x-ms-documentdb-partitionkey", `["p"]`), []byte(body))
			r.wantError(t, "patch body "+body, http.StatusBadRequest)
		}
		if after := read(t, "raw"); !reflect.DeepEqual(after, before) {
			t.Errorf("malformed patches changed the document")
		}
	})
}

// azcosmosETag converts a decoded _etag into the SDK's ETag type.
func azcosmosETag(v any) azcore.ETag {
	s, _ := v.(string)
	return azcore.ETag(s)
}
