package e2e

import (
	"net/http"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestConditional proves optimistic concurrency through the Go SDK: IfMatchEtag
// on replace, upsert, delete and patch succeeds with the current etag and gets
// 412 (changing nothing) with a stale one; concurrent writers holding the same
// etag have exactly one winner; and If-None-Match on a read gives 304 with no
// body (the SDK reports it as a success with status 304 and an empty Value).
func TestConditional(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	c := s.client(t)
	db := mustDatabase(t, c, "cond")
	cc := mustContainer(t, db, pkContainer("c", nil))
	pk := azcosmos.NewPartitionKeyString("p")
	doc := func(id string, v int) []byte { return mustMarshal(t, map[string]any{"id": id, "pk": "p", "v": v}) }
	etagOf := func(t *testing.T, id string) azcore.ETag {
		t.Helper()
		r, err := cc.ReadItem(ctx, pk, id, nil)
		if err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		return r.ETag
	}
	valueOf := func(t *testing.T, id string) any {
		t.Helper()
		r, err := cc.ReadItem(ctx, pk, id, nil)
		if err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		return decodeObject(t, r.Value)["v"]
	}
	stale := azcore.ETag(`"00000000-0000-0000-0000-000000000000"`)

	type op func(id string, etag *azcore.ETag) (azcosmos.ItemResponse, error)
	ops := map[string]op{
		"replace": func(id string, etag *azcore.ETag) (azcosmos.ItemResponse, error) {
			return cc.ReplaceItem(ctx, pk, id, doc(id, 1), &azcosmos.ItemOptions{IfMatchEtag: etag})
		},
		"upsert": func(id string, etag *azcore.ETag) (azcosmos.ItemResponse, error) {
			return cc.UpsertItem(ctx, pk, doc(id, 1), &azcosmos.ItemOptions{IfMatchEtag: etag})
		},
		"patch": func(id string, etag *azcore.ETag) (azcosmos.ItemResponse, error) {
			var p azcosmos.PatchOperations
			p.AppendSet("/v", 1)
			return cc.PatchItem(ctx, pk, id, p, &azcosmos.ItemOptions{IfMatchEtag: etag})
		},
		"delete": func(id string, etag *azcore.ETag) (azcosmos.ItemResponse, error) {
			return cc.DeleteItem(ctx, pk, id, &azcosmos.ItemOptions{IfMatchEtag: etag})
		},
	}
	for name, run := range ops {
		t.Run(name, func(t *testing.T) {
			id := "if-match-" + name
			if _, err := cc.CreateItem(ctx, pk, doc(id, 0), nil); err != nil {
				t.Fatal(err)
			}
			// Stale: 412 and nothing changes.
			_, err := run(id, &stale)
			wantStatus(t, name+" with a stale etag", err, http.StatusPreconditionFailed)
			checkErrorHeaders(t, name+" 412", err)
			if v := valueOf(t, id); v != float64(0) {
				t.Errorf("%s with a stale etag changed v to %v", name, v)
			}
			// Current: succeeds.
			cur := etagOf(t, id)
			r, err := run(id, &cur)
			if err != nil {
				t.Fatalf("%s with the current etag: %v", name, err)
			}
			if name == "delete" {
				if st := readStatus(t, cc, pk, id); st != http.StatusNotFound {
					t.Errorf("after a conditional delete: read %d", st)
				}
				// If-Match against a document that is gone: 404, not 412.
				_, err = ops["replace"](id, &cur)
				wantStatus(t, "replace a deleted document with If-Match", err, http.StatusNotFound)
				return
			}
			if r.ETag == "" || r.ETag == cur {
				t.Errorf("%s: new etag %q, old %q", name, r.ETag, cur)
			}
			if v := valueOf(t, id); v != float64(1) {
				t.Errorf("%s with the current etag: v = %v; want 1", name, v)
			}
			// The etag it consumed is now stale.
			_, err = run(id, &cur)
			wantStatus(t, name+" with the previous etag", err, http.StatusPreconditionFailed)
			// The etag it returned is current.
			if _, err := run(id, &r.ETag); err != nil {
				t.Errorf("%s with the etag of its own previous write: %v", name, err)
			}
		})
	}

	t.Run("one winner among concurrent writers", func(t *testing.T) {
		if _, err := cc.CreateItem(ctx, pk, doc("race", 0), nil); err != nil {
			t.Fatal(err)
		}
		etag := etagOf(t, "race")
		wins := raceWriters(t, 8, http.StatusPreconditionFailed, func(i int) error {
			_, err := cc.ReplaceItem(ctx, pk, "race", doc("race", i+1), &azcosmos.ItemOptions{IfMatchEtag: &etag})
			return err
		})
		if wins != 1 {
			t.Errorf("%d writers won with the same etag; want exactly 1", wins)
		}
	})

	t.Run("one winner among concurrent creates", func(t *testing.T) {
		wins := raceWriters(t, 8, http.StatusConflict, func(i int) error {
			_, err := cc.CreateItem(ctx, pk, doc("create-race", i), nil)
			return err
		})
		if wins != 1 {
			t.Errorf("%d concurrent creates of one id succeeded; want exactly 1", wins)
		}
	})

	t.Run("if-none-match read", func(t *testing.T) {
		if _, err := cc.CreateItem(ctx, pk, doc("inm", 0), nil); err != nil {
			t.Fatal(err)
		}
		etag := etagOf(t, "inm")
		// Through the SDK (it has no option for the header: add it to the request).
		r, err := cc.ReadItem(withHeader(ctx, "If-None-Match", string(etag)), pk, "inm", nil)
		if err != nil {
			t.Fatalf("read with a matching If-None-Match: %v (the SDK treats 304 as success)", err)
		}
		if r.RawResponse.StatusCode != http.StatusNotModified || len(r.Value) != 0 || r.ETag != etag {
			t.Errorf("read with a matching If-None-Match: status %d, body %q, etag %q; want 304, empty, %q", r.RawResponse.StatusCode, r.Value, r.ETag, etag)
		}
		if r.RequestCharge <= 0 {
			t.Errorf("304 charge %v; want > 0", r.RequestCharge)
		}
		r, err = cc.ReadItem(withHeader(ctx, "If-None-Match", string(stale)), pk, "inm", nil)
		if err != nil || r.RawResponse.StatusCode != http.StatusOK || len(r.Value) == 0 {
			t.Errorf("read with a stale If-None-Match: %v status %d; want 200 with the body", err, r.RawResponse.StatusCode)
		}
		// Raw, after a write: the old etag no longer matches.
		if _, err := cc.UpsertItem(ctx, pk, doc("inm", 1), nil); err != nil {
			t.Fatal(err)
		}
		raw := s.do(t, "GET", docPath("cond", "c", "inm"), hdr("x-ms-documentdb-partitionkey", `["p"]`, "If-None-Match", string(etag)), nil)
		raw.wantStatus(t, "read with the etag before a write", http.StatusOK)
		newTag := raw.Header.Get("etag")
		raw = s.do(t, "GET", docPath("cond", "c", "inm"), hdr("x-ms-documentdb-partitionkey", `["p"]`, "If-None-Match", newTag), nil)
		if raw.Status != http.StatusNotModified || len(raw.Body) != 0 || raw.Header.Get("etag") != newTag {
			t.Errorf("raw 304: status %d body %q etag %q", raw.Status, raw.Body, raw.Header.Get("etag"))
		}
		// If-None-Match on a missing document is still 404.
		raw = s.do(t, "GET", docPath("cond", "c", "nope"), hdr("x-ms-documentdb-partitionkey", `["p"]`, "If-None-Match", newTag), nil)
		raw.wantError(t, "If-None-Match on a missing document", http.StatusNotFound)
	})
}

// raceWriters runs write(0..n-1) at once and returns how many succeeded; every
// other writer must have failed with loserStatus.
func raceWriters(t *testing.T, n, loserStatus int, write func(i int) error) (wins int) {
	t.Helper()
	var wg sync.WaitGroup
	results := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = write(i)
		}()
	}
	wg.Wait()
	for i, err := range results {
		switch {
		case err == nil:
			wins++
		case statusOf(err) != loserStatus:
			t.Errorf("writer %d: %v; want success or %d", i, err, loserStatus)
		}
	}
	return wins
}
