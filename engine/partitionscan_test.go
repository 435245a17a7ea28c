package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
)

// TestPartitionReadsUseTheIndex: a query or read feed scoped to one
// partition key (or a hierarchical prefix) reads the partition through the
// index of the first partition key path. Its pages (rows, continuations, read
// feed documents and expiry instants) are the ones a scan of the container
// gives, over live, expired, deleted and replaced documents, string, number,
// null and boolean keys, and long strings the index cuts alike; its charges
// are lower, because it does not read the other partitions' entries.
func TestPartitionReadsUseTheIndex(t *testing.T) {
	long := strings.Repeat("x", 2*maxIndexedString)
	flatKeys := []any{"p0", "p1", "p2", "p3", "p4", 7.0, nil, true, long + "a", long + "b"}
	hierKeys := [][2]string{{"t0", "u0"}, {"t0", "u1"}, {"t1", "u0"}, {"t1", "u1"}, {"t2", "u0"}}
	// load creates the same history in two containers: "flat" on /pk and
	// "hier" on /t, /u; excluded leaves their first paths out of the index,
	// so that their partitions can only be scanned.
	load := func(excluded bool) *testEngine {
		te := newTestEngine(t)
		te.mustDB("db")
		flatPolicy, hierPolicy := "", ""
		if excluded {
			flatPolicy = `,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/pk/?"}]}`
			hierPolicy = `,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/t/?"}]}`
		}
		for _, body := range []string{
			`{"id":"flat","defaultTtl":-1,"partitionKey":{"paths":["/pk"],"kind":"Hash"}` + flatPolicy + `}`,
			`{"id":"hier","defaultTtl":-1,"partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}` + hierPolicy + `}`,
		} {
			if _, err := te.CreateContainer(ctx, "db", []byte(body)); err != nil {
				t.Fatal(err)
			}
		}
		write := func(op, coll string, key lethe.PartitionKey, body string) {
			t.Helper()
			var err error
			switch op {
			case "create":
				_, err = te.CreateDocument(ctx, DocRef{DB: "db", Coll: coll, PK: key}, []byte(body))
			case "replace":
				var o struct{ ID string }
				if err = json.Unmarshal([]byte(body), &o); err == nil {
					_, err = te.ReplaceDocument(ctx, DocRef{DB: "db", Coll: coll, ID: o.ID, PK: key}, []byte(body), Conditions{})
				}
			case "delete":
				_, err = te.DeleteDocument(ctx, DocRef{DB: "db", Coll: coll, ID: body, PK: key}, Conditions{})
			}
			if err != nil {
				t.Fatalf("%s %s %s: %v", op, coll, body, err)
			}
		}
		for i := range 300 {
			k := flatKeys[i%len(flatKeys)]
			kj, _ := json.Marshal(k)
			extra := ""
			if i%9 == 0 {
				extra = `,"ttl":5` // expired when the reads run
			}
			write("create", "flat", lethe.PartitionKey{k}, fmt.Sprintf(`{"id":"d%03d","pk":%s,"n":%d%s}`, i, kj, i%13, extra))
			h := hierKeys[i%len(hierKeys)]
			write("create", "hier", lethe.PartitionKey{h[0], h[1]}, fmt.Sprintf(`{"id":"d%03d","t":%q,"u":%q,"n":%d%s}`, i, h[0], h[1], i%13, extra))
		}
		for i := 0; i < 300; i += 17 {
			k := flatKeys[i%len(flatKeys)]
			kj, _ := json.Marshal(k)
			h := hierKeys[i%len(hierKeys)]
			if i%34 == 0 {
				write("delete", "flat", lethe.PartitionKey{k}, fmt.Sprintf("d%03d", i))
				write("delete", "hier", lethe.PartitionKey{h[0], h[1]}, fmt.Sprintf("d%03d", i))
				continue
			}
			write("replace", "flat", lethe.PartitionKey{k}, fmt.Sprintf(`{"id":"d%03d","pk":%s,"n":99}`, i, kj))
			write("replace", "hier", lethe.PartitionKey{h[0], h[1]}, fmt.Sprintf(`{"id":"d%03d","t":%q,"u":%q,"n":99}`, i, h[0], h[1]))
		}
		te.clock.Advance(10 * time.Second)
		return te
	}
	indexed, scanned := load(false), load(true)

	type scoped struct {
		coll string
		key  lethe.PartitionKey
	}
	var scopes []scoped
	for _, k := range flatKeys {
		scopes = append(scopes, scoped{"flat", lethe.PartitionKey{k}})
	}
	scopes = append(scopes, scoped{"hier", lethe.PartitionKey{"t1"}}, scoped{"hier", lethe.PartitionKey{"t0", "u1"}})
	queries := []string{
		"SELECT * FROM c",
		"SELECT c.id FROM c WHERE c.n % 3 = 0",
		"SELECT TOP 5 c.id FROM c",
		"SELECT VALUE COUNT(1) FROM c",
		// a range and a prefix: gathered across partitions, or the partition (gatherRace)
		"SELECT c.id FROM c WHERE c.n >= 4",
		"SELECT c.id FROM c WHERE STARTSWITH(c.id, 'd1')",
	}
	for _, sc := range scopes {
		for _, text := range queries {
			for _, size := range []int{1, 3, 10} {
				opts := QueryOptions{Text: text, PK: sc.key, MaxItems: size}
				var chargeIndexed, chargeScanned float64
				rows := 0
				for page := 0; ; page++ {
					a, errA := indexed.QueryDocuments(ctx, "db", sc.coll, opts)
					b, errB := scanned.QueryDocuments(ctx, "db", sc.coll, opts)
					if errA != nil || errB != nil {
						t.Fatalf("%s %v %q: %v; %v", sc.coll, sc.key, text, errA, errB)
					}
					if !slices.EqualFunc(a.Rows, b.Rows, func(x, y []byte) bool { return string(x) == string(y) }) || a.Continuation != b.Continuation {
						t.Fatalf("%s %v %q, page size %d, page %d: through the index %s (continuation %q); by scan %s (%q)",
							sc.coll, sc.key, text, size, page, a.Rows, a.Continuation, b.Rows, b.Continuation)
					}
					rows += len(a.Rows)
					chargeIndexed += a.Charge
					chargeScanned += b.Charge
					if opts.Continuation = a.Continuation; opts.Continuation == "" {
						break
					}
				}
				if rows == 0 {
					t.Fatalf("%s %v %q: no rows; the test's data does not exercise it", sc.coll, sc.key, text)
				}
				// A range or prefix races its gathering against the
				// partition's list (gatherRace): on this little data, a small
				// multiple of gathering alone.
				if ranged := strings.Contains(text, ">=") || strings.Contains(text, "STARTSWITH"); ranged && chargeIndexed > 2*chargeScanned+3 ||
					!ranged && chargeIndexed >= chargeScanned {
					t.Errorf("%s %v %q, page size %d: charged %.2f through the index, %.2f with the partition key path left out",
						sc.coll, sc.key, text, size, chargeIndexed, chargeScanned)
				}
			}
		}
		if sc.coll == "hier" && len(sc.key) < 2 {
			continue // the read feed takes a whole key
		}
		for _, size := range []int{1, 4, 10} {
			opts := FeedOptions{PK: sc.key, MaxItems: size}
			docs := 0
			for page := 0; ; page++ {
				a, errA := indexed.ReadFeed(ctx, "db", sc.coll, opts)
				b, errB := scanned.ReadFeed(ctx, "db", sc.coll, opts)
				if errA != nil || errB != nil {
					t.Fatalf("%s %v read feed: %v; %v", sc.coll, sc.key, errA, errB)
				}
				if !slices.EqualFunc(a.Docs, b.Docs, func(x, y []byte) bool { return string(x) == string(y) }) ||
					!slices.Equal(a.Expires, b.Expires) || a.Continuation != b.Continuation || a.Charge != b.Charge {
					t.Fatalf("%s %v read feed, page size %d, page %d: through the index %s %v %q %v; by scan %s %v %q %v",
						sc.coll, sc.key, size, page, a.Docs, a.Expires, a.Continuation, a.Charge, b.Docs, b.Expires, b.Continuation, b.Charge)
				}
				docs += len(a.Docs)
				if opts.Continuation = a.Continuation; opts.Continuation == "" {
					break
				}
			}
			if docs == 0 {
				t.Fatalf("%s %v read feed: no documents", sc.coll, sc.key)
			}
		}
	}
}
