package e2e

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestSmokeGoSDK walks the basic life cycle once through the official Go SDK.
func TestSmokeGoSDK(t *testing.T) {
	s := startServer(t, serverOpts{InMemory: true})
	c := s.client(t)
	ctx := context.Background()
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatalf("create database: %v", err)
	}
	db, _ := c.NewDatabase("db")
	ttl := int32(60)
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID: "c", DefaultTimeToLive: &ttl,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
	}, nil); err != nil {
		t.Fatalf("create container: %v", err)
	}
	cont, _ := db.NewContainer("c")
	pk := azcosmos.NewPartitionKeyString("p1")
	item, _ := json.Marshal(map[string]any{"id": "a", "pk": "p1", "n": 1})
	cr, err := cont.CreateItem(ctx, pk, item, nil)
	if err != nil {
		t.Fatalf("create item: %v", err)
	}
	if cr.RequestCharge <= 0 {
		t.Errorf("create charge = %v", cr.RequestCharge)
	}
	rr, err := cont.ReadItem(ctx, pk, "a", nil)
	if err != nil {
		t.Fatalf("read item: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(rr.Value, &got); err != nil || got["n"] != float64(1) || got["_etag"] != string(rr.ETag) {
		t.Errorf("read item = %s (%v)", rr.Value, err)
	}
	props, err := cont.Read(ctx, nil)
	if err != nil || props.ContainerProperties.DefaultTimeToLive == nil || *props.ContainerProperties.DefaultTimeToLive != 60 {
		t.Fatalf("read container: %v", err)
	}
}
