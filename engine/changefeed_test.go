package engine

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/changefeed"
	"github.com/lethe-db/lethe/kv"
)

// feedIDs reads one change feed page and returns its documents' ids, after
// checking that each carries its _lsn, and the page's continuation.
func (te *testEngine) feedIDs(coll string, opts ChangeFeedOptions) ([]string, string) {
	te.t.Helper()
	page, err := te.ReadChangeFeed(ctx, "db", coll, opts)
	if err != nil {
		te.t.Fatalf("change feed %+v: %v", opts, err)
	}
	var ids []string
	for _, d := range page.Docs {
		var doc struct {
			ID  string  `json:"id"`
			LSN *uint64 `json:"_lsn"`
		}
		if err := json.Unmarshal(d, &doc); err != nil || doc.LSN == nil {
			te.t.Fatalf("change feed document %s: %v, _lsn %v", d, err, doc.LSN)
		}
		ids = append(ids, doc.ID)
	}
	if page.ETag == "" {
		te.t.Fatal("a change feed page without an etag")
	}
	return ids, page.ETag
}

// TestChangeFeedLatestVersion: each document once, at its last write, as it
// is now; deletes and expired documents never; a continuation resumes after
// the last page, also across a restart.
func TestChangeFeedLatestVersion(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)
	for _, body := range []string{`{"id":"a","pk":"p"}`, `{"id":"b","pk":"p"}`, `{"id":"c","pk":"q"}`, `{"id":"e","pk":"p","ttl":5}`} {
		var doc struct{ PK string }
		_ = json.Unmarshal([]byte(body), &doc)
		if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(doc.PK)}, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	ids, tok := te.feedIDs("c", ChangeFeedOptions{})
	if want := []string{"a", "b", "c", "e"}; !slices.Equal(ids, want) {
		t.Fatalf("from the beginning: %v, want %v", ids, want)
	}
	if ids, again := te.feedIDs("c", ChangeFeedOptions{Continuation: tok}); len(ids) != 0 || again != tok {
		t.Fatalf("caught up: %v and etag %s, want nothing and the same etag %s", ids, again, tok)
	}

	// A replace moves a to the end; a delete removes b; e expires.
	if _, err := te.ReplaceDocument(ctx, ref("c", "a", "p"), []byte(`{"id":"a","pk":"p","v":2}`), Conditions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := te.DeleteDocument(ctx, ref("c", "b", "p"), Conditions{}); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(5 * time.Second)
	ids, tok2 := te.feedIDs("c", ChangeFeedOptions{Continuation: tok})
	if want := []string{"a"}; !slices.Equal(ids, want) {
		t.Fatalf("after a replace and a delete: %v, want %v", ids, want)
	}
	if ids, _ := te.feedIDs("c", ChangeFeedOptions{}); !slices.Equal(ids, []string{"c", "a"}) {
		t.Fatalf("from the beginning: %v, want [c a] (b deleted, e expired, a last written)", ids)
	}

	// Paging, scoping by partition key, from now, from a time.
	var paged []string
	for cont := ""; ; {
		ids, next := te.feedIDs("c", ChangeFeedOptions{Continuation: cont, MaxItems: 1})
		if len(ids) == 0 {
			break
		}
		paged, cont = append(paged, ids...), next
	}
	if !slices.Equal(paged, []string{"c", "a"}) {
		t.Errorf("one by one: %v", paged)
	}
	if ids, _ := te.feedIDs("c", ChangeFeedOptions{PK: lethe.PartitionKey{"q"}}); !slices.Equal(ids, []string{"c"}) {
		t.Errorf("partition key q: %v", ids)
	}
	_, now := te.feedIDs("c", ChangeFeedOptions{Start: FromNow})
	te.clock.Advance(10 * time.Second)
	since := te.clock.Now()
	if err := te.create("c", `{"id":"f","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	if ids, _ := te.feedIDs("c", ChangeFeedOptions{Continuation: now}); !slices.Equal(ids, []string{"f"}) {
		t.Errorf("from now: %v", ids)
	}
	if ids, _ := te.feedIDs("c", ChangeFeedOptions{Start: FromTime, Since: since}); !slices.Equal(ids, []string{"f"}) {
		t.Errorf("from %v: %v", since, ids)
	}

	// Across a restart: the continuation holds, and later writes come after.
	te.reopen()
	if err := te.create("c", `{"id":"g","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	if ids, _ := te.feedIDs("c", ChangeFeedOptions{Continuation: tok2}); !slices.Equal(ids, []string{"f", "g"}) {
		t.Errorf("after a restart: %v, want [f g]", ids)
	}
	if _, err := te.ReadChangeFeed(ctx, "db", "c", ChangeFeedOptions{Continuation: `"nonsense"`}); !lethe.IsCode(err, lethe.CodeBadRequest) {
		t.Errorf("a continuation this server never issued: %v", err)
	}
}

// TestChangeFeedAfterPurge: purging expired documents removes their feed
// entries with the rest (Check verifies every entry), and the feed is
// unchanged by it.
func TestChangeFeedAfterPurge(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":10`)
	te.fill("c", "d", 20, "")
	if err := te.create("c", `{"id":"keep","pk":"p","ttl":-1}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(10 * time.Second)
	before, _ := te.feedIDs("c", ChangeFeedOptions{})
	if n, err := te.Purge(ctx); err != nil || n != 20 {
		t.Fatalf("purged %d, %v", n, err)
	}
	after, _ := te.feedIDs("c", ChangeFeedOptions{})
	if !slices.Equal(before, []string{"keep"}) || !slices.Equal(after, before) {
		t.Errorf("feed before the purge %v, after %v; want [keep] both times", before, after)
	}
}

// downgradeToV1 rewrites every document of container coll as the engine
// wrote them before the change feed existed (format 1, no feed entry) and
// forgets the migration, as a store from that time would be.
func (te *testEngine) downgradeToV1(coll string) {
	te.t.Helper()
	err := te.store.Update(ctx, func(tx kv.Tx) error {
		var l *layout
		r := tx.(kv.Reader)
		_, c, err := getContainer(r, "db", coll)
		if err != nil {
			return err
		}
		l = c.layout()
		p := collKey(pfxDoc, l.rid)
		it := tx.Scan(p, kv.PrefixEnd(p), false)
		type doc struct {
			key []byte
			rec docRecord
		}
		var docs []doc
		for it.Next() {
			rec, err := decodeDoc(it.Value())
			if err != nil {
				return err
			}
			rec.json = append([]byte(nil), rec.json...)
			docs = append(docs, doc{append([]byte(nil), it.Key()...), rec})
		}
		if err := it.Close(); err != nil {
			return err
		}
		for _, d := range docs {
			holder := manifestHolder(fixedKeys(l, &d.rec))
			v, err := tx.Get(holder)
			if err != nil {
				return err
			}
			s, size, manifest, err := decodeOrderValue(v, &l.rid)
			if err != nil {
				return err
			}
			fk := feedKey(l.rid, d.rec.feed)
			manifest = slices.DeleteFunc(manifest, func(k []byte) bool { return string(k) == string(fk) })
			if err := tx.Put(holder, encodeOrderValue(s, size, manifest)); err != nil {
				return err
			}
			if err := tx.Delete(fk); err != nil {
				return err
			}
			d.rec.feed = changefeed.Key{}
			if err := tx.Put(d.key, d.rec.encode()); err != nil {
				return err
			}
		}
		return tx.Delete(keyFeedMigrated)
	})
	if err != nil {
		te.t.Fatal(err)
	}
}

// TestChangeFeedMigratesOlderDocuments: documents written before the change
// feed existed get their place in it at the next Open, in the order of their
// last writes, and later writes come after them.
func TestChangeFeedMigratesOlderDocuments(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	te.fill("c", "old", 5, "")
	te.downgradeToV1("c")
	if ids, _ := te.feedIDs("c", ChangeFeedOptions{}); len(ids) != 0 {
		t.Fatalf("format-1 documents in the feed before the migration: %v (the downgrade did nothing)", ids)
	}
	te.reopen()
	if err := te.create("c", `{"id":"new","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	ids, _ := te.feedIDs("c", ChangeFeedOptions{})
	if want := []string{"old0", "old1", "old2", "old3", "old4", "new"}; !slices.Equal(ids, want) {
		t.Fatalf("after the migration: %v, want %v", ids, want)
	}
	if err := te.Check(ctx); err != nil {
		t.Fatal(err)
	}
}
