package pebblekv

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lethe-db/lethe/kv"
)

// Opening a store after a crash replays its write-ahead log and flushes it;
// when that flush leaves level 0 due for a compaction, Open returns without
// waiting for it, and the compaction runs afterwards.
func TestOpenDoesNotWaitForCompactions(t *testing.T) {
	mem := vfs.NewCrashableMem()
	// Two overlapping tables in level 0 call for a compaction.
	threshold := func(o *pebble.Options) { o.L0CompactionThreshold = 2 }
	first, err := open(Options{Dir: "/db", Reserve: -1, tweak: func(o *pebble.Options) {
		threshold(o)
		o.DisableAutomaticCompactions = true
	}}, mem)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Close() })
	put := func(round string) {
		for i := range 100 {
			k := fmt.Sprintf("k%03d", i)
			if err := first.Update(t.Context(), func(tx kv.Tx) error { return tx.Put([]byte(k), []byte(round)) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	put("one")
	if err := first.db.Flush(); err != nil {
		t.Fatal(err)
	}
	put("two") // synced to the log, not flushed: a crash leaves it to replay
	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})

	// Each compaction that begins waits until the test releases it, so an
	// Open that waited for one would never return. It waits holding the
	// database's mutex (Pebble calls CompactionBegin under it), so nothing
	// that takes the mutex, a snapshot for one, may run until then.
	began := make(chan struct{})
	releaseCh := make(chan struct{})
	release := sync.OnceFunc(func() { close(releaseCh) })
	var beginOnce sync.Once
	var s *Store
	t.Cleanup(func() {
		release()
		if s != nil {
			_ = s.Close() // waits for the compaction, released now
		}
	})
	opened := make(chan *Store, 1)
	go func() {
		s, err := open(Options{Dir: "/db", Reserve: -1, tweak: func(o *pebble.Options) {
			threshold(o)
			prev := o.EventListener.CompactionBegin
			o.EventListener.CompactionBegin = func(info pebble.CompactionInfo) {
				if prev != nil {
					prev(info)
				}
				beginOnce.Do(func() { close(began) })
				<-releaseCh
			}
		}}, crashed)
		if err != nil {
			t.Error(err)
		}
		opened <- s
	}()
	select {
	case s = <-opened:
	case <-time.After(30 * time.Second):
		t.Fatal("Open did not return: it waits for the compaction its flush started")
	}
	if s == nil {
		return
	}
	select {
	case <-began:
	case <-time.After(30 * time.Second):
		t.Fatal("no compaction began after Open: the gate stayed closed")
	}
	release()
	checkValue(t, s, "k042", "two")
}
