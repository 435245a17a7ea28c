package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/lethe-db/lethe/ru"
	"github.com/lethe-db/lethe/throttle"
)

// TestPurgeSpendsOnlySpareThroughput: on a container with provisioned
// throughput the background purge spends only what users left of the last
// second, records it as background spend, and never takes the users' tokens.
func TestPurgeSpendsOnlySpareThroughput(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	if _, err := te.CreateContainerWithThroughput(ctx, "db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":10}`), &Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := te.create("c", fmt.Sprintf(`{"id":"d%d","pk":"p","a":1,"b":2}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	te.clock.Advance(20 * time.Second) // all 200 expired; the window of user spend is empty
	bucket := te.budget(t, "c")
	if bucket == nil {
		t.Fatal("no budget for a provisioned container")
	}

	// Users spend the whole second's budget: nothing is spare, nothing is purged.
	adm, err := te.Admit(ctx, "db", "c")
	if err != nil {
		t.Fatal(err)
	}
	adm.Charge(400)
	if n, err := te.purge(ctx, true); err != nil || n != 0 {
		t.Fatalf("purge with no spare capacity deleted %d (%v), want 0", n, err)
	}
	backlog, _ := te.TTLBacklog(ctx)
	if backlog[0].PurgeDeferred == 0 || backlog[0].PendingDocuments != 200 {
		t.Fatalf("backlog %+v: want the batch deferred and 200 pending", backlog[0])
	}

	// A second later users have spent nothing in the last second: the purge
	// takes at most the spare 400 RU, then stops until the window moves.
	te.clock.Advance(1100 * time.Millisecond)
	n, err := te.purge(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	perDoc := ru.Write{}.Charge() // the least deleting any document costs
	if n == 0 || float64(n)*perDoc > 400 {
		t.Fatalf("one pass with 400 RU spare deleted %d documents; want some, at most %v", n, 400/perDoc)
	}
	if spare := bucket.Spare(te.clock.Now()); spare > 400-float64(n)*perDoc+1 {
		t.Errorf("spare after the purge is %v: the purge's spend was not recorded", spare)
	}
	// Background spend never takes the users' tokens: they are admitted now.
	if _, err := te.Admit(ctx, "db", "c"); err != nil {
		t.Fatalf("a user request after the purge: %v", err)
	}
	// Pass after pass, the backlog drains.
	for i := 0; i < 20 && n < 200; i++ {
		te.clock.Advance(1100 * time.Millisecond)
		m, err := te.purge(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		n += m
	}
	if n != 200 {
		t.Fatalf("purged %d of 200 over 21 seconds of spare capacity", n)
	}
}

// budget returns the bucket governing container coll of database "db".
func (te *testEngine) budget(t *testing.T, coll string) *throttle.Bucket {
	t.Helper()
	b, err := te.BudgetFor(ctx, "db", coll)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
