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
