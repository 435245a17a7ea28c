package engine

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
)

// isStorageRefusal reports whether err is the 403 of an exhausted storage
// quota.
func isStorageRefusal(err error) bool {
	return lethe.IsCode(err, lethe.CodeForbidden) && strings.HasPrefix(lethe.ErrorMessage(err), "Storage quota for 'Document' exceeded.")
}

// fillUntilRefused creates up to max documents of about 1 KB in container
// coll, with ttl (0: none), until one is refused; it returns how many were
// created and the refusal. Their ids are coll-0, coll-1... on the first call
// for coll, and go on from there on the next.
func (te *testEngine) fillUntilRefused(coll string, ttlSeconds, max int) (int, error) {
	te.t.Helper()
	pad := strings.Repeat("x", 1000)
	if te.filled == nil {
		te.filled = map[string]int{}
	}
	for i := range max {
		body := fmt.Sprintf(`{"id":"%s-%d","pk":"p","pad":%q`, coll, te.filled[coll], pad)
		if ttlSeconds > 0 {
			body += fmt.Sprintf(`,"ttl":%d`, ttlSeconds)
		}
		if _, err := te.CreateDocument(ctx, ref(coll, "", "p"), []byte(body+"}")); err != nil {
			return i, err
		}
		te.filled[coll]++
	}
	return max, nil
}

// TestStorageQuota: with MaxStorage, writes that add documents are refused
// with the 403 of an exhausted quota once the live documents reach it;
// deletes, reads and metadata writes go on; deleting documents, or letting
// them expire, lets writes in again at once; expired documents never count.
func TestStorageQuota(t *testing.T) {
	const quota = 20 << 10 // about 17 documents of 1.2 KB
	te := openTestEngine(t, newMemStore(t), Options{DisableBackground: true, MaxStorage: quota})
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)

	n, err := te.fillUntilRefused("c", 10, 100)
	if !isStorageRefusal(err) {
		t.Fatalf("after %d documents: %v, want the 403 of an exhausted storage quota", n, err)
	}
	if n < 10 || n > 20 {
		t.Fatalf("%d documents of about 1.2 KB fitted a 20 KiB quota", n)
	}
	if used := te.StorageStatus(ctx).UsedBytes; used < quota {
		t.Fatalf("refused at %d bytes used, under the %d-byte quota", used, quota)
	}
	// Every kind of write that adds data is refused, none that removes it.
	if _, err := te.UpsertDocument(ctx, ref("c", "", "p"), []byte(`{"id":"c-0","pk":"p"}`), Conditions{}); !isStorageRefusal(err) {
		t.Errorf("upsert over the quota: %v", err)
	}
	if _, _, err := te.ExecuteBatch(ctx, "db", "c", pk("p"), []BatchOp{{Type: "Create", Body: []byte(`{"id":"b","pk":"p"}`)}}); !isStorageRefusal(err) {
		t.Errorf("batch create over the quota: %v", err)
	}
	if _, err := te.ReadDocument(ctx, ref("c", "c-1", "p"), Conditions{}); err != nil {
		t.Errorf("read over the quota: %v", err)
	}
	if _, _, err := te.ExecuteBatch(ctx, "db", "c", pk("p"), []BatchOp{{Type: "Delete", ID: "c-1"}}); err != nil {
		t.Errorf("batch delete over the quota: %v", err)
	}
	if _, err := te.DeleteDocument(ctx, ref("c", "c-2", "p"), Conditions{}); err != nil {
		t.Errorf("delete over the quota: %v", err)
	}
	// Two documents deleted: room again, at once.
	te.mustContainer("after-delete", "")
	if _, err := te.fillUntilRefused("after-delete", 0, 1); err != nil {
		t.Fatalf("a create after deletes freed space: %v", err)
	}
	if st := te.StorageStatus(ctx); st.RefusedQuota < 3 || st.QuotaBytes != quota {
		t.Errorf("status %+v: want the quota and at least 3 refusals", st)
	}

	// Refuse again, then let the documents expire: they stop counting at the
	// instant they expire, without any purge (none runs in this test).
	if _, err := te.fillUntilRefused("after-delete", 0, 100); !isStorageRefusal(err) {
		t.Fatalf("filling again: %v", err)
	}
	te.mustContainer("c2", "")
	te.clock.Advance(10 * time.Second)
	if n, err = te.fillUntilRefused("c2", 0, 100); !isStorageRefusal(err) || n < 10 {
		t.Fatalf("after the ttl documents expired, %d documents fitted before %v", n, err)
	}
}

// TestStorageQuotaFollowsMetadata: a new defaultTtl that expires documents
// frees the quota at once, though the server second did not change.
func TestStorageQuotaFollowsMetadata(t *testing.T) {
	te := openTestEngine(t, newMemStore(t), Options{DisableBackground: true, MaxStorage: 20 << 10})
	te.mustDB("db")
	te.mustContainer("c", "")
	if _, err := te.fillUntilRefused("c", 0, 100); !isStorageRefusal(err) {
		t.Fatalf("filling: %v", err)
	}
	te.clock.Advance(5 * time.Second)
	if _, err := te.fillUntilRefused("c", 0, 1); !isStorageRefusal(err) {
		t.Fatalf("still full: %v", err)
	}
	// defaultTtl 1: every document, written 5 s ago, expired.
	if _, err := te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":1}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := te.CreateDocument(ctx, ref("c", "", "p"), []byte(`{"id":"new","pk":"p","ttl":-1}`)); err != nil {
		t.Fatalf("a create once the container's documents expired: %v", err)
	}
}

// TestSpaceLowRefusesGrowth: while the store reports its disk nearly full,
// creates, upserts, replaces, patches and batches that add data are refused
// with the 403; deletes, reads and container changes go on.
func TestSpaceLowRefusesGrowth(t *testing.T) {
	var low atomic.Bool
	te := openTestEngine(t, newMemStore(t), Options{DisableBackground: true, SpaceLow: low.Load})
	te.mustDB("db")
	te.mustContainer("c", "")
	if _, err := te.fillUntilRefused("c", 0, 3); err != nil {
		t.Fatal(err)
	}
	low.Store(true)
	if _, err := te.fillUntilRefused("c", 0, 1); !isStorageRefusal(err) {
		t.Errorf("create on a full disk: %v", err)
	}
	if _, err := te.ReplaceDocument(ctx, ref("c", "c-0", "p"), []byte(`{"id":"c-0","pk":"p"}`), Conditions{}); !isStorageRefusal(err) {
		t.Errorf("replace on a full disk: %v", err)
	}
	p, err := ParsePatch([]byte(`{"operations":[{"op":"set","path":"/a","value":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := te.PatchDocument(ctx, ref("c", "c-0", "p"), p, Conditions{}); !isStorageRefusal(err) {
		t.Errorf("patch on a full disk: %v", err)
	}
	if _, err := te.ExecuteBulk(ctx, "db", "c", Scope{}, []BulkOp{{BatchOp: BatchOp{Type: "Upsert", Body: []byte(`{"id":"u","pk":"p"}`)}, PK: pk("p")}}, true); !isStorageRefusal(err) {
		t.Errorf("bulk upsert on a full disk: %v", err)
	}
	if _, err := te.ReadDocument(ctx, ref("c", "c-1", "p"), Conditions{}); err != nil {
		t.Errorf("read on a full disk: %v", err)
	}
	if _, err := te.DeleteDocument(ctx, ref("c", "c-1", "p"), Conditions{}); err != nil {
		t.Errorf("delete on a full disk: %v", err)
	}
	if _, err := te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":60}`), ""); err != nil {
		t.Errorf("setting a defaultTtl on a full disk: %v", err)
	}
	if n := te.StorageStatus(ctx).RefusedDisk; n != 4 {
		t.Errorf("%d refusals counted, want 4", n)
	}
	low.Store(false)
	if _, err := te.fillUntilRefused("c", 0, 1); err != nil {
		t.Errorf("create once space returned: %v", err)
	}
}

// TestTranslateStoreRefusals: the store's own refusals reach clients as
// domain errors: a full disk as the quota's 403, a failed read as a 503.
func TestTranslateStoreRefusals(t *testing.T) {
	full := Translate(fmt.Errorf("pebblekv: write: %w", kv.ErrNoSpace))
	if !isStorageRefusal(full) {
		t.Errorf("kv.ErrNoSpace became %v", full)
	}
	io := Translate(fmt.Errorf("pebblekv: get: %w: %w", kv.ErrIO, errors.New("input/output error")))
	if !lethe.IsCode(io, lethe.CodeServiceUnavailable) || strings.Contains(lethe.ErrorMessage(io), "input/output") {
		t.Errorf("kv.ErrIO became %v", io)
	}
	other := errors.New("other")
	if Translate(other) != other || Translate(nil) != nil {
		t.Error("Translate changed an error it does not know")
	}
}
