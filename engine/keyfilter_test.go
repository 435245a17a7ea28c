package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/kv/pebblekv"
)

// fillKinds writes documents of every kind into two containers of te: with
// and without their own ttl, with ttl -1 (whose manifest is in their order
// entry), replaced, upserted, patched, in a batch, deleted, expired and not
// yet purged; and a dropped container's.
func fillKinds(t *testing.T, te *testEngine) {
	t.Helper()
	te.mustDB("db")
	te.mustContainer("a", `"defaultTtl":60`)
	te.mustContainer("b", "")
	te.mustContainer("gone", "")
	for i := range 40 {
		for _, c := range []string{"a", "b", "gone"} {
			body := fmt.Sprintf(`{"id":"d%d","pk":"p","n":%d}`, i, i)
			if i%4 == 1 {
				body = fmt.Sprintf(`{"id":"d%d","pk":"p","ttl":-1}`, i)
			}
			if err := te.create(c, body); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 10 {
		if _, err := te.ReplaceDocument(ctx, ref("a", fmt.Sprintf("d%d", i), "p"), []byte(fmt.Sprintf(`{"id":"d%d","pk":"p","n":"r"}`, i)), Conditions{}); err != nil {
			t.Fatal(err)
		}
		te.mustDelete("b", fmt.Sprintf("d%d", 30+i))
	}
	if _, err := te.UpsertDocument(ctx, DocRef{DB: "db", Coll: "b", PK: pk("q")}, []byte(`{"id":"u","pk":"q"}`), Conditions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := te.ExecuteBatch(ctx, "db", "b", pk("p"), []BatchOp{{Type: "Create", Body: []byte(`{"id":"batched","pk":"p"}`)}}); err != nil || !ok {
		t.Fatalf("batch: %v %v", ok, err)
	}
	if err := te.create("a", `{"id":"short","pk":"p","ttl":1}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(2 * time.Second) // "short" expires; nothing purges it
	if err := te.DeleteContainer(ctx, "db", "gone"); err != nil {
		t.Fatal(err)
	}
}

// DocumentKeys lists exactly the keys of the documents stored, from the
// order index: what a store's filter of document keys is built from.
func TestDocumentKeysListsEveryDocument(t *testing.T) {
	te := newTestEngine(t)
	fillKinds(t, te)
	var listed, stored []string
	err := te.store.View(ctx, func(r kv.Reader) error {
		if err := DocumentKeys(r, func(key []byte) bool { listed = append(listed, string(key)); return true }); err != nil {
			return err
		}
		p := DocumentKeyPrefix()
		it := r.Scan(p, kv.PrefixEnd(p), false)
		defer it.Close()
		for it.Next() {
			stored = append(stored, string(it.Key()))
		}
		return it.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	if len(stored) != 73 || !slices.Equal(listed, stored) { // a: 40 and "short"; b: 40, 10 deleted, "u" and "batched"
		t.Fatalf("DocumentKeys listed %d keys, the store holds %d documents:\n%q\n%q", len(listed), len(stored), listed, stored)
	}
	n := 0
	if err := te.store.View(ctx, func(r kv.Reader) error {
		return DocumentKeys(r, func([]byte) bool { n++; return n < 3 })
	}); err != nil || n != 3 {
		t.Errorf("DocumentKeys went on after add returned false: %d keys, %v", n, err)
	}
}

// A store on disk reopened with the filter builds it from the order index;
// creates of ids that exist still conflict (an expired one is replaced),
// and creates of new ids are answered by the filter.
func TestKeyFilterAfterRestart(t *testing.T) {
	dir := t.TempDir()
	opts := pebblekv.Options{Dir: dir, FilterPrefix: DocumentKeyPrefix(), FilterKeys: DocumentKeys}
	store, err := pebblekv.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	te := openTestEngine(t, store, Options{DisableBackground: true})
	fillKinds(t, te)
	te.Close()
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	store, err = pebblekv.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	for store.KeyFilter().Builds == 0 {
		time.Sleep(time.Millisecond)
	}
	te2 := openTestEngine(t, store, Options{DisableBackground: true})
	te2.clock.Set(te.clock.Now())
	for i := range 30 {
		for _, c := range []string{"a", "b"} {
			if err := te2.create(c, fmt.Sprintf(`{"id":"d%d","pk":"p"}`, i)); codeOf(err) != lethe.CodeConflict {
				t.Errorf("create of existing %s/d%d: %v, want a conflict", c, i, err)
			}
		}
	}
	if err := te2.create("b", `{"id":"batched","pk":"p"}`); codeOf(err) != lethe.CodeConflict {
		t.Errorf("create of the batch's document: %v, want a conflict", err)
	}
	before := store.KeyFilter()
	for i := range 10 {
		if err := te2.create("b", fmt.Sprintf(`{"id":"d%d","pk":"p"}`, 30+i)); err != nil { // deleted before the restart
			t.Fatal(err)
		}
		if err := te2.create("b", fmt.Sprintf(`{"id":"new%d","pk":"p"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := te2.create("a", `{"id":"short","pk":"p"}`); err != nil { // expired: taken over
		t.Fatal(err)
	}
	if after := store.KeyFilter(); after.Absent-before.Absent < 15 {
		t.Errorf("the rebuilt filter answered %d of 20 creates of free ids: %+v", after.Absent-before.Absent, after)
	}
	if err := te2.Check(context.Background()); err != nil {
		t.Error(err)
	}
}
