package engine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
)

// TestEqualityRace: a query whose WHERE holds equalities on several indexed
// paths, or one scoped to a partition with an equality on another path,
// reads those index lists in turns (equalityRace). Its pages are the ones a
// single list or a scan gives, and it is charged at most a small multiple of
// the cheapest single list, whether that is the partition (a common value, a
// small partition), a rare value in a large partition, or the rarer of two
// values across partitions.
func TestEqualityRace(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	// race: the default policy. equality: the partition key path left out,
	// so a partition's query reads the equality's list alone. partition: the
	// equality paths left out, so it reads the partition's list alone (or,
	// across partitions, scans). single: only /type indexed, so an equality
	// on type is read alone; oid: likewise for an equality on oid.
	policies := map[string]string{
		"race":      "",
		"equality":  `,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/pk/?"}]}`,
		"partition": `,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/type/?"},{"path":"/oid/?"},{"path":"/g/?"}]}`,
		"single":    `,"indexingPolicy":{"includedPaths":[{"path":"/type/?"}],"excludedPaths":[{"path":"/*"}]}`,
		"oid":       `,"indexingPolicy":{"includedPaths":[{"path":"/oid/?"}],"excludedPaths":[{"path":"/*"}]}`,
	}
	names := []string{"race", "equality", "partition", "single", "oid"}
	createContainers(t, te, names, policies)
	// Partition "big" holds a third of the documents, p0..p39 the rest.
	for i := range 3000 {
		p := fmt.Sprintf("p%d", i%40)
		if i%3 == 0 {
			p = "big"
		}
		typ := "order"
		if i%5 == 0 {
			typ = "user"
		}
		body := fmt.Sprintf(`{"id":"d%04d","pk":%q,"type":%q,"oid":%d,"g":%d}`, i, p, typ, i, i%7)
		for _, name := range names {
			if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: name, PK: lethe.PartitionKey{p}}, []byte(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	rowsSeen := map[string]int{}
	// run reads every page of text in each container: their rows and the
	// sum of their charges.
	run := func(text string, key lethe.PartitionKey, size int) (pages [][][]string, charges []float64) {
		for _, name := range names {
			ps, charge := te.allPages(name, QueryOptions{Text: text, PK: key, MaxItems: size})
			pages, charges = append(pages, ps), append(charges, charge)
		}
		rowsSeen[text] += len(slices.Concat(pages[0]...))
		for i := 1; i < len(names); i++ {
			if !slices.EqualFunc(pages[0], pages[i], slices.Equal) {
				t.Fatalf("%v %q, page size %d: the race gives pages %.300v, %s %.300v", key, text, size, pages[0], names[i], pages[i])
			}
		}
		return pages, charges
	}
	// bounded checks the race's charge against the cheapest of the others.
	bounded := func(text string, key lethe.PartitionKey, size int, charges []float64, others ...int) {
		best := charges[others[0]]
		for _, i := range others[1:] {
			best = min(best, charges[i])
		}
		if charges[0] > 2*best+3 {
			t.Errorf("%v %q, page size %d: the race charged %.1f, the others %v; want at most twice the cheapest", key, text, size, charges[0], charges[1:])
		}
	}
	for _, key := range []string{"big", "p5", "p7"} {
		for _, text := range []string{
			"SELECT c.id FROM c WHERE c.type = 'order'",
			"SELECT c.id, c.oid FROM c WHERE c.type = 'user'",
			"SELECT c.id FROM c WHERE c.oid = 2997",
			"SELECT c.id FROM c WHERE c.oid = 2927",
			"SELECT TOP 3 c.id FROM c WHERE c.type = 'user'",
			"SELECT c.id FROM c WHERE c.type = 'order' OFFSET 4 LIMIT 9",
			"SELECT c.id FROM c WHERE c.g IN (2, 5)",
			"SELECT c.id FROM c WHERE c.oid IN (2997, 2998, 1500)",
		} {
			for _, size := range []int{1, 7, 50} {
				_, charges := run(text, lethe.PartitionKey{key}, size)
				bounded(text, lethe.PartitionKey{key}, size, charges, 1, 2) // the equality's list or the partition's
			}
		}
	}
	for _, text := range []string{
		"SELECT c.id FROM c WHERE c.type = 'user' AND c.g = 3",
		"SELECT c.id FROM c WHERE c.type = 'order' AND c.oid = 2998",
		"SELECT c.id FROM c WHERE c.type = 'user' AND c.g = 3 AND c.oid = 45",
		"SELECT c.id FROM c WHERE c.oid = 1500 AND c.type = 'user'",
		"SELECT c.id FROM c WHERE c.type IN ('user') AND c.oid IN (15, 30, 2998)",
		"SELECT c.id FROM c WHERE c.g IN (1, 4) AND c.type = 'user'",
	} {
		for _, key := range []lethe.PartitionKey{nil, {"big"}} {
			for _, size := range []int{1, 7, 50} {
				_, charges := run(text, key, size)
				bounded(text, key, size, charges, 3, 4, 2) // type's list, oid's, or a scan (the partition's list)
			}
		}
	}
	for text, n := range rowsSeen {
		if n == 0 {
			t.Errorf("%q: no rows in any scope; the test's data does not exercise it", text)
		}
	}
}

// createContainers creates a container on /pk in database "db" for each of
// names, with the extra properties policies give it.
func createContainers(t *testing.T, te *testEngine, names []string, policies map[string]string) {
	t.Helper()
	for _, name := range names {
		if _, err := te.CreateContainer(ctx, "db", []byte(`{"id":"`+name+`","partitionKey":{"paths":["/pk"],"kind":"Hash"}`+policies[name]+`}`)); err != nil {
			t.Fatal(err)
		}
	}
}

// allPages reads every page of opts's query in container coll of database
// "db": each page's rows, and the sum of their charges.
func (te *testEngine) allPages(coll string, opts QueryOptions) ([][]string, float64) {
	te.t.Helper()
	var pages [][]string
	charge := 0.0
	for range 10_000 {
		page, err := te.QueryDocuments(ctx, "db", coll, opts)
		if err != nil {
			te.t.Fatalf("%s %v %q: %v", coll, opts.PK, opts.Text, err)
		}
		var rows []string
		for _, r := range page.Rows {
			rows = append(rows, string(r))
		}
		pages = append(pages, rows)
		charge += page.Charge
		if opts.Continuation = page.Continuation; opts.Continuation == "" {
			return pages, charge
		}
	}
	te.t.Fatalf("%s %v %q does not terminate: more than 10,000 pages", coll, opts.PK, opts.Text)
	return nil, 0
}

// samePages reads every page of opts in each container of names, fails the
// test unless each gives the first's pages (and the first gives some rows),
// and returns the charge each took.
func (te *testEngine) samePages(names []string, opts QueryOptions) []float64 {
	te.t.Helper()
	var first [][]string
	charges := make([]float64, len(names))
	for i, name := range names {
		pages, charge := te.allPages(name, opts)
		charges[i] = charge
		switch {
		case i == 0 && len(slices.Concat(pages...)) == 0:
			te.t.Fatalf("%v %q: no rows", opts.PK, opts.Text)
		case i == 0:
			first = pages
		case !slices.EqualFunc(first, pages, slices.Equal):
			te.t.Fatalf("%v %q, page size %d: %s gives pages %.300v, %s %.300v", opts.PK, opts.Text, opts.MaxItems, names[0], first, name, pages)
		}
	}
	return charges
}

// TestGatherRaceSeeks: a partition-scoped range source (gatherRace) yields
// the partition's matches in sequence order, and after a seek, fresh or once
// drained, the ones from that sequence number on.
func TestGatherRaceSeeks(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	for i := range 600 {
		body := fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d}`, i, i%3, i%50)
		if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(fmt.Sprintf("p%d", i%3))}, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	zero := jsonv.Number("0")
	err := te.store.View(ctx, func(r kv.Reader) error {
		s, err := te.scope(r, "db", "c", te.clock.Now().Unix())
		if err != nil {
			return err
		}
		filter, _, err := s.filter(pk("p1"), true, Scope{})
		if err != nil {
			return err
		}
		plan, ok := s.planIndex([]filterSpec{{path: []string{"n"}, kind: filterRange, lo: zero, hasLo: true, loIncl: true}})
		part := s.partitionPlan(pk("p1"))
		if !ok || part == nil {
			t.Fatal("not planned")
		}
		source := func() *indexSource {
			src := s.indexSource(r, plan, filter, 0)
			src.gr = newGatherRace(r, part.ranges[0])
			return src
		}
		drain := func(src *indexSource) []uint64 {
			var got []uint64
			for {
				_, seq, ok, err := src.Next()
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					return got
				}
				got = append(got, seq)
			}
		}
		all := drain(source())
		if len(all) != 200 || !slices.IsSorted(all) || len(slices.Compact(slices.Clone(all))) != 200 {
			t.Fatalf("%d documents, want the partition's 200 in increasing order: %v", len(all), all)
		}
		fresh := source()
		fresh.seek(all[57])
		if got := drain(fresh); !slices.Equal(got, all[57:]) {
			t.Errorf("a fresh source sought to %d gives %v, want %v", all[57], got, all[57:])
		}
		drained := source()
		drain(drained)
		drained.seek(all[123])
		if got := drain(drained); !slices.Equal(got, all[123:]) {
			t.Errorf("a drained source sought to %d gives %v, want %v", all[123], got, all[123:])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRangeRacesTheScan: a range over a whole container (no partition key
// in the request) races the gathering of its index entries with the
// container's documents in insertion order (newScanRace): a range that
// most documents match yields its first page after a few pages of
// entries, one that few match after about their entries, and either way
// every page is a scan's, across replaces and deletes that move documents
// in and out of the range.
func TestRangeRacesTheScan(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	te.mustContainer("scan", `"indexingPolicy":{"indexingMode":"none","automatic":false}`)
	body := func(i, v int) string {
		opt := ""
		if i%5 == 0 {
			opt = `,"opt":1`
		}
		return fmt.Sprintf(`{"id":"d%d","pk":"p%d","t":%d,"s":"x%d"%s}`, i, i%17, v, v, opt)
	}
	// t is a permutation of 0..5999 that insertion order does not follow
	// (a range of it is spread over the container, as prices or scores
	// are; a creation time's range lies at its end, where the gathering
	// wins the race).
	for i := range 6000 {
		for _, coll := range []string{"c", "scan"} {
			if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: coll, PK: pk(fmt.Sprintf("p%d", i%17))}, []byte(body(i, i*1919%6000))); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		text       string
		maxEntries int
	}{
		{"SELECT * FROM c WHERE c.t >= 100", 2000}, // gathered alone: 5,900 entries
		{"SELECT * FROM c WHERE c.t >= 5990", 100}, // the gathering ends first
		{"SELECT * FROM c WHERE c.t < 5000", 2000},
	} {
		te.withPlan("c", c.text, nil, nil, func(src querySource, _ sourcePlan) {
			x := src.(*indexSource)
			for range 10 {
				if _, ok, err := x.next(); err != nil || !ok {
					t.Fatalf("%q: %v, %v", c.text, ok, err)
				}
			}
			if n := x.entriesRead(); n > c.maxEntries {
				t.Errorf("%q: the first 10 candidates read %d entries, want at most %d", c.text, n, c.maxEntries)
			}
		})
	}
	// Replaces move documents across the ranges' bounds; deletes leave gaps.
	for i := 0; i < 6000; i += 7 {
		for _, coll := range []string{"c", "scan"} {
			r := DocRef{DB: "db", Coll: coll, PK: pk(fmt.Sprintf("p%d", i%17)), ID: fmt.Sprintf("d%d", i)}
			var err error
			if i%2 == 0 {
				_, err = te.ReplaceDocument(ctx, r, []byte(body(i, 6000-i)), Conditions{})
			} else {
				_, err = te.DeleteDocument(ctx, r, Conditions{})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, text := range []string{
		"SELECT c.id, c.t FROM c WHERE c.t >= 100",
		"SELECT c.id FROM c WHERE c.t BETWEEN 1000 AND 1300",
		"SELECT c.id FROM c WHERE c.t < 40",
		"SELECT c.id FROM c WHERE STARTSWITH(c.s, 'x1')",
		"SELECT c.id FROM c WHERE IS_DEFINED(c.opt) AND c.t > 500",
		"SELECT VALUE COUNT(1) FROM c WHERE c.t > 4000",
	} {
		want := te.queryAll("scan", text, nil, 1000)
		for _, size := range []int{7, 100} {
			if got := te.queryAll("c", text, nil, size); !slices.Equal(got, want) {
				t.Errorf("%s, page size %d:\n indexed (%d rows) %.300v\n scan    (%d rows) %.300v", text, size, len(got), got, len(want), want)
			}
		}
	}
}
