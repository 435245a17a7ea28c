package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
)

// batchCounter is a store whose Views' readers answer kv.GetBatch themselves,
// as a network store's do, and count the document lookups asked of them. It
// is not kv.Exclusive, so the engine hands its readers to the query as they
// are.
type batchCounter struct {
	kv.Store
	docGets, batches, batchKeys atomic.Int64
}

func (b *batchCounter) View(ctx context.Context, fn func(kv.Reader) error) error {
	return b.Store.View(ctx, func(r kv.Reader) error { return fn(&batchCountingReader{Reader: r, c: b}) })
}

type batchCountingReader struct {
	kv.Reader
	c *batchCounter
}

func (r *batchCountingReader) Get(key []byte) ([]byte, error) {
	if key[0] == pfxDoc {
		r.c.docGets.Add(1)
	}
	return r.Reader.Get(key)
}

func (r *batchCountingReader) GetBatch(keys [][]byte) ([][]byte, error) {
	r.c.batches.Add(1)
	r.c.batchKeys.Add(int64(len(keys)))
	return kv.GetBatch(r.Reader, keys)
}

// answersBatches returns r as a reader that answers kv.GetBatch itself, so
// that sources over it look documents up ahead.
func answersBatches(r kv.Reader) kv.Reader {
	return &batchCountingReader{Reader: r, c: &batchCounter{}}
}

// batchCountingEngine returns an engine over a batchCounter, with documents
// d00 to d29 in partition "p" of container "c" of database "db".
func batchCountingEngine(t *testing.T) (*testEngine, *batchCounter) {
	t.Helper()
	store := &batchCounter{Store: newMemStore(t)}
	te := openTestEngine(t, store, Options{DisableBackground: true})
	te.mustDB("db")
	te.mustContainer("c", "")
	for i := range 30 {
		if err := te.create("c", fmt.Sprintf(`{"id":"d%02d","pk":"p"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	return te, store
}

// TestPagesLookUpInOneBatch: on a store that answers batches, a page of an
// indexed query, of a scan and of the read feed looks its documents up in
// one GetBatch, not one Get each.
func TestPagesLookUpInOneBatch(t *testing.T) {
	te, store := batchCountingEngine(t)
	// A query page reads its 10 rows; a resumed one also the previous
	// page's last row again. A full page promises more, so a fourth, empty
	// page reads only d29 again. A read feed page reads one document past
	// its 10 to know whether more follow.
	queryKeys := []int64{10, 11, 11, 1}
	cases := []struct {
		name     string
		wantKeys []int64
		page     func(cont string) ([][]byte, string, error)
	}{
		{"index", queryKeys, func(cont string) ([][]byte, string, error) {
			res, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT * FROM c WHERE c.pk = 'p'", PK: pk("p"), MaxItems: 10, Continuation: cont})
			return res.Rows, res.Continuation, err
		}},
		{"scan", queryKeys, func(cont string) ([][]byte, string, error) {
			res, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT * FROM c", PK: pk("p"), MaxItems: 10, Continuation: cont})
			return res.Rows, res.Continuation, err
		}},
		{"read feed", []int64{11, 11, 10}, func(cont string) ([][]byte, string, error) {
			res, err := te.ReadFeed(ctx, "db", "c", FeedOptions{MaxItems: 10, Continuation: cont})
			return res.Docs, res.Continuation, err
		}},
	}
	for _, c := range cases {
		var ids []string
		cont := ""
		for page := 0; ; page++ {
			store.docGets.Store(0)
			store.batches.Store(0)
			store.batchKeys.Store(0)
			rows, next, err := c.page(cont)
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range rows {
				o, err := jsonv.ParseObject(row)
				if err != nil {
					t.Fatal(err)
				}
				id, _ := o.Get("id")
				ids = append(ids, fmt.Sprint(id))
			}
			if page >= len(c.wantKeys) {
				t.Fatalf("%s: more than %d pages", c.name, len(c.wantKeys))
			}
			want := c.wantKeys[page]
			if store.batches.Load() != 1 || store.batchKeys.Load() != want || store.docGets.Load() != 0 {
				t.Errorf("%s, page %d: %d batches of %d keys in all and %d document Gets; want 1 batch of %d keys and no Get",
					c.name, page, store.batches.Load(), store.batchKeys.Load(), store.docGets.Load(), want)
			}
			if cont = next; cont == "" {
				break
			}
		}
		if len(ids) != 30 || !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != 30 {
			t.Errorf("%s: pages returned %v, want d00..d29 in order", c.name, ids)
		}
	}
}

// TestLookAheadStopsAtTop: a page looks up no more documents ahead than the
// query's TOP, or the LIMIT after the documents its OFFSET passes over,
// lets it return.
func TestLookAheadStopsAtTop(t *testing.T) {
	te, store := batchCountingEngine(t)
	for _, c := range []struct {
		text       string
		rows, keys int64
	}{
		{"SELECT TOP 3 * FROM c", 3, 3},
		{"SELECT * FROM c OFFSET 2 LIMIT 2", 2, 2}, // the OFFSET's counted on the entries
		{"SELECT TOP 50 * FROM c", 10, 10},         // the page is smaller
	} {
		store.docGets.Store(0)
		store.batches.Store(0)
		store.batchKeys.Store(0)
		res, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: c.text, PK: pk("p"), MaxItems: 10})
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(res.Rows)) != c.rows || store.batches.Load() != 1 || store.batchKeys.Load() != c.keys || store.docGets.Load() != 0 {
			t.Errorf("%s: %d rows from %d batches of %d keys in all and %d document Gets; want %d rows from 1 batch of %d keys",
				c.text, len(res.Rows), store.batches.Load(), store.batchKeys.Load(), store.docGets.Load(), c.rows, c.keys)
		}
	}
}

// lookAheadEngine returns an engine holding documents live, expired,
// deleted and replaced, in two partitions, for the look-ahead tests.
func lookAheadEngine(t *testing.T) *testEngine {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)
	for i := range 120 {
		p := fmt.Sprintf("p%d", i%2)
		extra := ""
		if i%7 == 0 {
			extra = `,"ttl":5` // expired when the queries run
		}
		body := fmt.Sprintf(`{"id":"d%03d","pk":%q,"v":%q,"n":%d%s}`, i, p, []string{"a", "b"}[i%3/2], i%17, extra)
		if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(p)}, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 120; i += 11 {
		p := fmt.Sprintf("p%d", i%2)
		id := fmt.Sprintf("d%03d", i)
		if i%22 == 0 {
			if _, err := te.DeleteDocument(ctx, DocRef{DB: "db", Coll: "c", ID: id, PK: pk(p)}, Conditions{}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		body := fmt.Sprintf(`{"id":%q,"pk":%q,"v":"a","n":99}`, id, p)
		if _, err := te.ReplaceDocument(ctx, DocRef{DB: "db", Coll: "c", ID: id, PK: pk(p)}, []byte(body), Conditions{}); err != nil {
			t.Fatal(err)
		}
	}
	te.clock.Advance(10 * time.Second)
	return te
}

// viewContainer runs fn in a View of container "c" of database "db" at the
// engine's instant; batches: over a reader that answers batches.
func viewContainer(te *testEngine, batches bool, fn func(r kv.Reader, s *scope) error) error {
	return te.store.View(ctx, func(r kv.Reader) error {
		s, err := te.scope(r, "db", "c", te.clock.Now().Unix())
		if err != nil {
			return err
		}
		if batches {
			r = answersBatches(r)
		}
		return fn(r, s)
	})
}

// lookAheads are the first lookups compared with looking documents up one
// at a time: 0 is a page's worth.
var lookAheads = []int{0, 1, 2, 5, 100}

// TestLookAheadChangesNoPage: however many documents a query's source looks
// up at a time, every page of every query has the same rows, continuation,
// charge and examined count as when it looks them up one at a time.
func TestLookAheadChangesNoPage(t *testing.T) {
	te := lookAheadEngine(t)
	queries := []struct {
		text string
		pk   string
	}{
		{"SELECT * FROM c WHERE c.pk = 'p0'", "p0"},
		{"SELECT * FROM c WHERE c.v = 'a'", ""},
		{"SELECT * FROM c WHERE c.v IN ('a', 'b')", ""},
		{"SELECT c.id FROM c WHERE c.v = 'a' AND c.n > 5", ""},
		{"SELECT * FROM c WHERE c.n > 10", ""},
		{"SELECT TOP 7 c.id FROM c WHERE c.v = 'b'", ""},
		{"SELECT c.id FROM c WHERE c.v = 'a' OFFSET 3 LIMIT 9", ""},
		{"SELECT c.id, c.n FROM c WHERE c.v = 'a' ORDER BY c.n", ""},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.pk = 'p1'", "p1"},
		{"SELECT c.id FROM c WHERE c.v = 'a'", "p1"}, // the equality races the partition
		// ORDER BY read from the index
		{"SELECT c.id, c.n FROM c ORDER BY c.n DESC", ""},
		{"SELECT c.id FROM c WHERE c.n > 3 ORDER BY c.n", ""},
		{"SELECT TOP 5 c.id FROM c ORDER BY c.v DESC", "p0"},
		// scans
		{"SELECT * FROM c", ""},
		{"SELECT * FROM c", "p1"},
		{"SELECT c.id FROM c WHERE c.n % 5 = 0", ""},
		{"SELECT TOP 3 c.id FROM c WHERE c.n % 4 = 1", "p0"},
	}
	type pageOut struct {
		rows     []string
		cont     string
		charge   float64
		examined int
	}
	// run reads every page; batches: over a reader that answers batches,
	// the first lookup taking lookAhead documents.
	run := func(text, p string, size int, batches bool, lookAhead int) []pageOut {
		var out []pageOut
		q, err := parseStatement(text)
		if err != nil {
			t.Fatal(err)
		}
		opts := QueryOptions{Text: text, MaxItems: size}
		if p != "" {
			opts.PK = pk(p)
		}
		for range 200 {
			var page QueryPage
			err := viewContainer(te, batches, func(r kv.Reader, s *scope) (err error) {
				page, err = s.queryPage(r, q, queryHash(q.ContinuationKey(), nil), opts, te.clock.Now(), lookAhead)
				return err
			})
			if err != nil {
				t.Fatalf("%s, page size %d, look-ahead %d: %v", text, size, lookAhead, err)
			}
			po := pageOut{cont: page.Continuation, charge: page.Charge, examined: page.Examined}
			for _, r := range page.Rows {
				po.rows = append(po.rows, string(r))
			}
			out = append(out, po)
			if opts.Continuation = page.Continuation; opts.Continuation == "" {
				return out
			}
		}
		t.Fatalf("%s: more than 200 pages", text)
		return nil
	}
	for _, q := range queries {
		for _, size := range []int{1, 4, 10} {
			want := run(q.text, q.pk, size, false, 0)
			if len(want) == 0 || len(want[0].rows) == 0 {
				t.Fatalf("%s: no rows; the test's data does not exercise it", q.text)
			}
			for _, la := range lookAheads {
				got := run(q.text, q.pk, size, true, la)
				if !slices.EqualFunc(got, want, func(a, b pageOut) bool {
					return slices.Equal(a.rows, b.rows) && a.cont == b.cont && a.charge == b.charge && a.examined == b.examined
				}) {
					t.Errorf("%s (pk %q), page size %d: look-ahead %d gives pages\n%+v\none at a time gives\n%+v", q.text, q.pk, size, la, got, want)
				}
			}
		}
	}
}

// TestReadFeedLookAheadChangesNoPage: however many documents the read feed
// looks up at a time, every page has the same documents, expiry instants,
// continuation and charge as when it looks them up one at a time.
func TestReadFeedLookAheadChangesNoPage(t *testing.T) {
	te := lookAheadEngine(t)
	run := func(p string, size int, batches bool, lookAhead int) []FeedPage {
		opts := FeedOptions{MaxItems: size}
		if p != "" {
			opts.PK = pk(p)
		}
		var out []FeedPage
		for range 200 {
			var page FeedPage
			err := viewContainer(te, batches, func(r kv.Reader, s *scope) (err error) {
				page, err = s.readFeedPage(r, opts, lookAhead)
				return err
			})
			if err != nil {
				t.Fatalf("pk %q, page size %d, look-ahead %d: %v", p, size, lookAhead, err)
			}
			out = append(out, page)
			if opts.Continuation = page.Continuation; opts.Continuation == "" {
				return out
			}
		}
		t.Fatalf("pk %q: more than 200 pages", p)
		return nil
	}
	same := func(a, b FeedPage) bool {
		return slices.EqualFunc(a.Docs, b.Docs, bytes.Equal) && slices.Equal(a.Expires, b.Expires) &&
			a.Continuation == b.Continuation && a.Charge == b.Charge
	}
	for _, p := range []string{"", "p1"} {
		for _, size := range []int{1, 4, 10} {
			want := run(p, size, false, 0)
			if len(want) < 2 || len(want[0].Docs) == 0 {
				t.Fatalf("pk %q, page size %d: %d pages; the test's data does not exercise the feed", p, size, len(want))
			}
			for _, la := range lookAheads {
				if got := run(p, size, true, la); !slices.EqualFunc(got, want, same) {
					t.Errorf("pk %q, page size %d: look-ahead %d gives %d pages that differ from one at a time's %d", p, size, la, len(got), len(want))
				}
			}
		}
	}
}
