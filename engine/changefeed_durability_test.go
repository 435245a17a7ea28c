package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/kv/pebblekv"
)

// TestChangeFeedServesOnlyDurableWrites: writers create documents while a
// reader follows the change feed. Then the disk stops syncing: commits still
// become visible to readers (before their sync, by design) and wait for it.
// While they wait, the power fails: a crash clone of the filesystem keeps
// only what was synced. Every document the reader was served must be in the
// clone: the feed does not serve a write until its sync has returned. Both
// modes: latest version, and all versions and deletes (whose reader moves
// the clock on a second before each read until the disk stalls, since it
// serves whole seconds; after, the server time no longer moves, since moving
// it waits for a sync).
func TestChangeFeedServesOnlyDurableWrites(t *testing.T) {
	t.Run("latest version", func(t *testing.T) { testServesOnlyDurable(t, false) })
	t.Run("all versions", func(t *testing.T) { testServesOnlyDurable(t, true) })
}

func testServesOnlyDurable(t *testing.T, allVersions bool) {
	mem := vfs.NewCrashableMem()
	var stalled atomic.Pointer[chan struct{}]
	stallSyncs := errorfs.InjectorFunc(func(op errorfs.Op) error {
		sync := op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo
		if ch := stalled.Load(); ch != nil && sync && strings.HasSuffix(op.Path, ".log") {
			<-*ch
		}
		return nil
	})
	store, err := pebblekv.Open(pebblekv.Options{Dir: "/db", FS: errorfs.Wrap(mem, stallSyncs), Reserve: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() }) // after the engine's cleanup
	growMemtable(t, store)
	te := openTestEngine(t, store, Options{DisableBackground: true})
	te.mustDB("db")
	te.mustContainer("c", retain)

	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var created atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for i := 0; runCtx.Err() == nil; i++ {
				body := fmt.Sprintf(`{"id":"w%d-%d","pk":"p"}`, w, i)
				if _, err := te.CreateDocument(runCtx, ref("c", "", "p"), []byte(body)); err != nil {
					return
				}
				created.Add(1)
			}
		})
	}
	var (
		mu        sync.Mutex
		seen      []string
		readCount atomic.Int64
	)
	var advancing atomic.Bool
	advancing.Store(allVersions)
	wg.Go(func() {
		token := ""
		for runCtx.Err() == nil {
			if advancing.Load() {
				te.clock.Advance(time.Second)
			}
			page, err := te.ReadChangeFeed(runCtx, "db", "c", ChangeFeedOptions{Continuation: token, MaxItems: 100, AllVersions: allVersions})
			if err != nil {
				return
			}
			readCount.Add(1)
			mu.Lock()
			for _, d := range page.Docs {
				var doc struct {
					ID      string
					Current struct{ ID string }
				}
				_ = json.Unmarshal(d, &doc)
				seen = append(seen, doc.ID+doc.Current.ID)
			}
			mu.Unlock()
			token = page.ETag
		}
	})
	for created.Load() < 1000 {
		time.Sleep(time.Millisecond)
	}
	if allVersions {
		// The clock stops, and the server time (persisted, synced, as it
		// moves) catches up with it before the disk stalls.
		advancing.Store(false)
		for reads := readCount.Load(); readCount.Load() < reads+2; {
			time.Sleep(time.Millisecond)
		}
	}
	release := make(chan struct{})
	stalled.Store(&release) // the disk stops syncing
	// Wait until commits are visible but unsynced: a reader that served
	// whatever it could see would now serve them.
	visible := func() int {
		n := 0
		_ = te.store.View(ctx, func(r kv.Reader) error {
			p := collKey(pfxDoc, te.mustRID("c"))
			it := r.Scan(p, kv.PrefixEnd(p), false)
			for it.Next() {
				n++
			}
			return it.Close()
		})
		return n
	}
	base := int(created.Load())
	for visible() <= base {
		time.Sleep(time.Millisecond)
	}
	reads := readCount.Load()
	for readCount.Load() < reads+20 { // the reader had its chances
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	served := append([]string(nil), seen...)
	clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}) // the power fails
	mu.Unlock()
	cancel()
	stalled.Store(nil)
	close(release)
	wg.Wait()
	if len(served) < 100 {
		t.Fatalf("the reader was served only %d documents: the test tested little", len(served))
	}

	after, err := pebblekv.Open(pebblekv.Options{Dir: "/db", FS: clone, Reserve: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { after.Close() })
	recovered := openTestEngine(t, after, Options{DisableBackground: true})
	lost := 0
	for _, id := range served {
		if _, err := recovered.ReadDocument(ctx, ref("c", id, "p"), Conditions{}); err != nil {
			lost++
			if lost <= 5 {
				t.Errorf("%s was served by the change feed, and is gone after the power loss: %v", id, lethe.ErrorMessage(err))
			}
		}
	}
	t.Logf("%d documents created, %d served before the power loss, %d of those lost", created.Load(), len(served), lost)
}

// growMemtable brings the store's memtable to its full size, empty. Pebble
// starts with a 256 KiB memtable and doubles it at each rotation up to the
// configured size, and a rotation closes the write-ahead log with a sync
// under the commit lock: one during the test's stall would block every
// commit before it became visible, and the test would wait for ever for
// commits visible but unsynced. 40 MiB of filler rotates the memtable up to
// its full size (32 MiB); a flush then starts an empty one of that size,
// which the test's few megabytes do not fill.
func growMemtable(t *testing.T, store *pebblekv.Store) {
	t.Helper()
	filler := make([]byte, 256<<10)
	for i := range 160 {
		err := store.Update(ctx, func(tx kv.Tx) error { return tx.Put(fmt.Appendf(nil, "zfiller/%03d", i), filler) })
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Update(ctx, func(tx kv.Tx) error { return tx.DeleteRange([]byte("zfiller/"), []byte("zfiller0")) }); err != nil {
		t.Fatal(err)
	}
	if err := store.Settle(ctx); err != nil {
		t.Fatal(err)
	}
}

// mustRID returns the RID of container coll of database "db".
func (te *testEngine) mustRID(coll string) [8]byte {
	te.t.Helper()
	var rid [8]byte
	err := te.store.View(ctx, func(r kv.Reader) error {
		_, c, err := getContainer(r, "db", coll)
		if err == nil {
			rid = c.rid()
		}
		return err
	})
	if err != nil {
		te.t.Fatal(err)
	}
	return rid
}
