package engine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lethe-db/lethe"
)

// TestPartitionEqualityRace: a query scoped to one partition whose WHERE is
// an equality on another indexed path races the equality's entries against
// the partition's (equalityRace). Its pages are the ones either list alone
// gives, and what it reads stays within a small multiple of the cheaper
// list, whether that is the partition (a common value, a small partition)
// or the equality (a rare value, a large partition).
func TestPartitionEqualityRace(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	// race: the default policy. equality: the partition key path left out,
	// so the equality's entries are read alone. partition: the equality
	// paths left out, so the partition's entries are read alone.
	policies := map[string]string{
		"race":      "",
		"equality":  `,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/pk/?"}]}`,
		"partition": `,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/type/?"},{"path":"/oid/?"},{"path":"/g/?"}]}`,
	}
	names := []string{"race", "equality", "partition"}
	for _, name := range names {
		if _, err := te.CreateContainer(ctx, "db", []byte(`{"id":"`+name+`","partitionKey":{"paths":["/pk"],"kind":"Hash"}`+policies[name]+`}`)); err != nil {
			t.Fatal(err)
		}
	}
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
	queries := []string{
		"SELECT c.id FROM c WHERE c.type = 'order'",
		"SELECT c.id, c.oid FROM c WHERE c.type = 'user'",
		"SELECT c.id FROM c WHERE c.oid = 2997",
		"SELECT c.id FROM c WHERE c.oid = 2998",
		"SELECT c.id FROM c WHERE c.g = 3 AND c.type = 'user'",
		"SELECT TOP 3 c.id FROM c WHERE c.type = 'user'",
		"SELECT c.id FROM c WHERE c.type = 'order' OFFSET 4 LIMIT 9",
	}
	for _, key := range []string{"big", "p5", "p7"} {
		for _, text := range queries {
			for _, size := range []int{1, 7, 50} {
				var pages [3][][]string
				var charge [3]float64
				for i, name := range names {
					opts := QueryOptions{Text: text, PK: lethe.PartitionKey{key}, MaxItems: size}
					for range 3000 {
						page, err := te.QueryDocuments(ctx, "db", name, opts)
						if err != nil {
							t.Fatalf("%s %s %q: %v", name, key, text, err)
						}
						var rows []string
						for _, r := range page.Rows {
							rows = append(rows, string(r))
						}
						pages[i] = append(pages[i], rows)
						charge[i] += page.Charge
						if opts.Continuation = page.Continuation; opts.Continuation == "" {
							break
						}
					}
				}
				for i := 1; i < 3; i++ {
					if !slices.EqualFunc(pages[0], pages[i], slices.Equal) {
						t.Fatalf("%s %q, page size %d: the race gives pages %.300v, the %s list alone %.300v", key, text, size, pages[0], names[i], pages[i])
					}
				}
				// Charges count entries and documents read.
				if best := min(charge[1], charge[2]); charge[0] > 2*best+3 {
					t.Errorf("%s %q, page size %d: the race charged %.1f, the equality alone %.1f, the partition alone %.1f; want at most twice the cheaper",
						key, text, size, charge[0], charge[1], charge[2])
				}
			}
		}
	}
}
