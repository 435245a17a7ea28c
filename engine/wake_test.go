package engine

import (
	"testing"
	"time"
)

// TestWakePurger: with a purge interval of an hour, only WakePurger can make
// the background purger delete documents that a clock jump expired.
func TestWakePurger(t *testing.T) {
	te := openTestEngine(t, newMemStore(t), Options{PurgeInterval: time.Hour})
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":1800`)
	te.fill("c", "d", 20, "")
	te.clock.Advance(1800 * time.Second)
	te.WakePurger()
	deadline := time.Now().Add(10 * time.Second)
	for te.PurgeStats().Purged < 20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if p := te.PurgeStats().Purged; p != 20 {
		t.Fatalf("after WakePurger the purger deleted %d of 20 expired documents", p)
	}
	if err := te.Check(ctx); err != nil {
		t.Error(err)
	}
}
