package engine

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
)

// sharedStore hides a store's kv.Exclusive, as a store shared between
// processes (PostgreSQL) would not offer it.
type sharedStore struct{ kv.Store }

// TestLeaseOneEngineOnASharedStore: on a store shared between processes one
// engine runs at a time: a second is refused at Open while the first's lease
// is live (once it has seen that lease renewed: a lease that lapses instead
// was a killed engine's), and opens once the first closed (and released it). An engine that
// finds its lease taken by another refuses every request with a 503, and
// leaves the other's lease alone when it closes.
func TestLeaseOneEngineOnASharedStore(t *testing.T) {
	store := sharedStore{newMemStore(t)}
	first, err := Open(ctx, Options{Store: store, DisableBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, Options{Store: store, DisableBackground: true}); !errors.Is(err, errLeaseHeld) {
		t.Fatalf("a second engine on the store: %v, want errLeaseHeld", err)
	}
	first.Close()
	second, err := Open(ctx, Options{Store: store, DisableBackground: true})
	if err != nil {
		t.Fatalf("an engine after the first closed: %v", err)
	}
	defer second.Close()
	if _, err := second.CreateDatabase(ctx, []byte(`{"id":"db"}`)); err != nil {
		t.Fatal(err)
	}

	// Another gateway takes the lease while this one is stalled.
	other, _ := json.Marshal(gatewayLease{Holder: "other", Expires: time.Now().Add(time.Minute).UnixMilli()})
	if err := store.Update(ctx, func(tx kv.Tx) error { return tx.Put(keyGatewayLease, other) }); err != nil {
		t.Fatal(err)
	}
	if err := second.lease.renew(context.Background(), false); err != nil || !second.lease.lost.Load() {
		t.Fatalf("renewal over another's lease: %v, lost %v", err, second.lease.lost.Load())
	}
	if _, err := second.ReadDatabase(ctx, "db"); codeOf(err) != lethe.CodeServiceUnavailable {
		t.Fatalf("a request after the lease was lost: %v, want 503", err)
	}
	second.Close()
	var v []byte
	if err := store.View(ctx, func(r kv.Reader) error { v, err = r.Get(keyGatewayLease); return err }); err != nil || string(v) != string(other) {
		t.Fatalf("the other gateway's lease after this one closed: %s, %v", v, err)
	}
}

// clockStore is a store that keeps its own time, two hours ahead of this
// machine's (kv.Clock), as a database server's clock may be.
type clockStore struct{ kv.Store }

func (clockStore) Now(context.Context) (time.Time, error) { return time.Now().Add(2 * time.Hour), nil }

// TestEngineRunsOnTheStoresTime: without Options.Now, an engine on a store
// that keeps a time (PostgreSQL's) stamps and expires documents by it, not
// by this machine's clock, so that gateways on machines whose clocks differ
// agree.
func TestEngineRunsOnTheStoresTime(t *testing.T) {
	e, err := Open(ctx, Options{Store: clockStore{newMemStore(t)}, DisableBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	now, err := e.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ahead := time.Until(time.Unix(now, 0)); ahead < time.Hour+59*time.Minute || ahead > 2*time.Hour+time.Minute {
		t.Fatalf("the engine's time is %v ahead of this machine's; the store's is 2 h", ahead)
	}
}
