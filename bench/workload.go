package bench

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// workload is one of the benchmark's workloads.
type workload struct {
	name      string
	container string // the container it runs in
	populated bool   // needs Options.Docs documents first (the shared "data" container)
	ttl       bool   // its documents carry their own ttl: its container has defaultTtl -1
	write     bool   // every operation is a write: compared to the fsync bound
	sustained bool   // runs with a timeline, purge off against on (sustained.go)
	// consumes says it uses up what an earlier workload made (delete): it
	// has no warmup, which would use up part of it unmeasured.
	consumes bool
	newOp    func(e *env) opFunc
}

// env is what a workload's operations need on one target.
type env struct {
	cc   *azcosmos.ContainerClient
	opts *Options
	keys Keys
	num  *numbering // of this container on this target, across its gateways
}

// The workloads that address existing documents share the "data" container:
// they change documents only in place (replace and upsert keep each
// document's id, partition key and k), so one population serves them all.
var workloads = map[string]workload{
	"create":        {name: "create", container: "create", write: true, newOp: createOp(0)},
	"read":          {name: "read", container: "data", populated: true, newOp: readOp},
	"replace":       {name: "replace", container: "data", populated: true, write: true, newOp: replaceOp},
	"upsert":        {name: "upsert", container: "data", populated: true, write: true, newOp: upsertOp},
	"query-pk":      {name: "query-pk", container: "data", populated: true, newOp: queryPKOp},
	"query-cross":   {name: "query-cross", container: "data", populated: true, newOp: queryCrossOp},
	"query-list":    {name: "query-list", container: "data", populated: true, newOp: queryListOp},
	"mixed":         {name: "mixed", container: "data", populated: true, newOp: mixedOp},
	"patch":         {name: "patch", container: "data", populated: true, write: true, newOp: patchOp},
	"delete":        {name: "delete", container: "create", write: true, consumes: true, newOp: deleteOp},
	"query-order":   {name: "query-order", container: "data", populated: true, newOp: queryOrderOp},
	"query-range":   {name: "query-range", container: "data", populated: true, newOp: queryRangeOp},
	"ttl":           {name: "ttl", container: "ttl", ttl: true, write: true, newOp: createOp(1)},
	"ttl-sustained": {name: "ttl-sustained", container: "ttl-sustained", ttl: true, write: true, sustained: true, newOp: createOp(1)},
}

// indexingPolicy returns the indexing policy of the run's container name:
// when the run includes query-order, the data container has a composite
// index on /pk and /_ts, as a container that serves a partition's newest
// documents would (Cosmos DB's advice for ORDER BY with a filter); the
// default policy (nil) otherwise, so that the other workloads' figures do
// not depend on it.
func (o *Options) indexingPolicy(container string) *azcosmos.IndexingPolicy {
	if container != "data" || !slices.Contains(o.Workloads, "query-order") {
		return nil
	}
	return &azcosmos.IndexingPolicy{
		Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
		IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}},
		ExcludedPaths: []azcosmos.ExcludedPath{{Path: `/"_etag"/?`}},
		CompositeIndexes: [][]azcosmos.CompositeIndex{{
			{Path: "/pk", Order: azcosmos.CompositeIndexAscending},
			{Path: "/_ts", Order: azcosmos.CompositeIndexDescending},
		}},
	}
}

// defaultTTL returns the defaultTtl of wl's container, nil for none: -1
// (time to live on, each document's own ttl applies) for the workloads whose
// documents carry a ttl, Options.ContainerTTL for the others.
func (wl workload) defaultTTL(o *Options) *int32 {
	if wl.ttl {
		on := int32(-1)
		return &on
	}
	return o.ContainerTTL
}

// createOp creates new documents; with ttl set, each carries Options.TTL.
func createOp(ttl int) func(e *env) opFunc {
	return func(e *env) opFunc {
		secs := ttl * int(e.opts.TTL.Seconds())
		return func(ctx context.Context, w *worker) (float64, error) {
			n := int(e.num.created.Add(1))
			body := appendDocument(nil, n, e.opts.Partitions, 0, secs, e.opts.DocSize)
			r, err := e.cc.CreateItem(ctx, azcosmos.NewPartitionKeyString(docPK(n, e.opts.Partitions)), body, nil)
			return float64(r.RequestCharge), err
		}
	}
}

// populateOp creates documents 0, 1, ... Options.Docs-1 of the data container.
func populateOp(e *env) opFunc {
	var next atomic.Int64
	return func(ctx context.Context, w *worker) (float64, error) {
		n := int(next.Add(1) - 1)
		body := appendDocument(nil, n, e.opts.Partitions, 0, 0, e.opts.DocSize)
		r, err := e.cc.CreateItem(ctx, azcosmos.NewPartitionKeyString(docPK(n, e.opts.Partitions)), body, nil)
		return float64(r.RequestCharge), err
	}
}

func readOp(e *env) opFunc {
	return func(ctx context.Context, w *worker) (float64, error) {
		return read(ctx, e, w)
	}
}

func read(ctx context.Context, e *env, w *worker) (float64, error) {
	n := e.keys.Next(w.rng)
	r, err := e.cc.ReadItem(ctx, azcosmos.NewPartitionKeyString(docPK(n, e.opts.Partitions)), docID(n), nil)
	return float64(r.RequestCharge), err
}

func replaceOp(e *env) opFunc {
	return func(ctx context.Context, w *worker) (float64, error) {
		n := e.keys.Next(w.rng)
		w.version++
		body := appendDocument(nil, n, e.opts.Partitions, w.version, 0, e.opts.DocSize)
		r, err := e.cc.ReplaceItem(ctx, azcosmos.NewPartitionKeyString(docPK(n, e.opts.Partitions)), docID(n), body, nil)
		return float64(r.RequestCharge), err
	}
}

// patchOp increments one document's v with a partial update (PATCH), as
// applications keep counters; the document keeps its id, partition key and k.
func patchOp(e *env) opFunc {
	return func(ctx context.Context, w *worker) (float64, error) {
		n := e.keys.Next(w.rng)
		var ops azcosmos.PatchOperations
		ops.AppendIncrement("/v", 1)
		r, err := e.cc.PatchItem(ctx, azcosmos.NewPartitionKeyString(docPK(n, e.opts.Partitions)), docID(n), ops, nil)
		return float64(r.RequestCharge), err
	}
}

// errNoneLeft is what an operation returns when it has nothing left to work
// on: its worker stops, and the operation counts neither as a success nor as
// an error.
var errNoneLeft = errors.New("no documents left")

// deleteOp deletes the documents the create workload made earlier in the run
// on the same target, oldest first, until none is left (errNoneLeft).
func deleteOp(e *env) opFunc {
	return func(ctx context.Context, w *worker) (float64, error) {
		n := int(e.num.deleted.Add(1))
		if n > int(e.num.created.Load()) {
			return 0, errNoneLeft
		}
		r, err := e.cc.DeleteItem(ctx, azcosmos.NewPartitionKeyString(docPK(n, e.opts.Partitions)), docID(n), nil)
		return float64(r.RequestCharge), err
	}
}

func upsertOp(e *env) opFunc {
	return func(ctx context.Context, w *worker) (float64, error) {
		return upsert(ctx, e, w)
	}
}

func upsert(ctx context.Context, e *env, w *worker) (float64, error) {
	n := e.keys.Next(w.rng)
	w.version++
	body := appendDocument(nil, n, e.opts.Partitions, w.version, 0, e.opts.DocSize)
	r, err := e.cc.UpsertItem(ctx, azcosmos.NewPartitionKeyString(docPK(n, e.opts.Partitions)), body, nil)
	return float64(r.RequestCharge), err
}

// queryPageSize is the page size of the query workloads.
const queryPageSize = 10

// queryPKOp reads the first page of 10 of one partition's documents.
func queryPKOp(e *env) opFunc {
	return func(ctx context.Context, w *worker) (float64, error) {
		pk := docPK(e.keys.Next(w.rng), e.opts.Partitions)
		return queryPage(ctx, e, w, "SELECT * FROM c WHERE c.pk = @pk", azcosmos.NewPartitionKeyString(pk), azcosmos.QueryParameter{Name: "@pk", Value: pk})
	}
}

// queryListOp lists one partition: SELECT * FROM c with the partition key in
// the request, the first page of 10, as applications list a user's items.
func queryListOp(e *env) opFunc {
	return func(ctx context.Context, w *worker) (float64, error) {
		pk := docPK(e.keys.Next(w.rng), e.opts.Partitions)
		return queryPage(ctx, e, w, "SELECT * FROM c", azcosmos.NewPartitionKeyString(pk), azcosmos.QueryParameter{})
	}
}

// queryOrderOp reads the newest ten documents of one partition: ORDER BY
// _ts DESC with the partition key in the request, the first page of 10, as
// applications show a user's latest items.
func queryOrderOp(e *env) opFunc {
	return func(ctx context.Context, w *worker) (float64, error) {
		pk := docPK(e.keys.Next(w.rng), e.opts.Partitions)
		return queryPage(ctx, e, w, "SELECT * FROM c ORDER BY c._ts DESC", azcosmos.NewPartitionKeyString(pk), azcosmos.QueryParameter{})
	}
}

// queryCrossOp finds the ten documents sharing a k value, across partitions,
// in the first page of 10. No TOP: across partitions Cosmos DB's gateway
// refuses TOP to a client that runs no query plan, as the Go SDK does not, and
// so does Lethe unless started with --serve-all-cross-partition-queries.
func queryCrossOp(e *env) opFunc {
	return func(ctx context.Context, w *worker) (float64, error) {
		k := docK(e.keys.Next(w.rng))
		return queryPage(ctx, e, w, "SELECT * FROM c WHERE c.k = @k", azcosmos.NewPartitionKey(), azcosmos.QueryParameter{Name: "@k", Value: k})
	}
}

// queryRangeOp reads the first page of 10 of the documents whose k is at
// least a random document's, across partitions: on average half the
// container matches, as in "changed since" or "priced above" queries.
func queryRangeOp(e *env) opFunc {
	return func(ctx context.Context, w *worker) (float64, error) {
		k := docK(e.keys.Next(w.rng))
		return queryPage(ctx, e, w, "SELECT * FROM c WHERE c.k >= @k", azcosmos.NewPartitionKey(), azcosmos.QueryParameter{Name: "@k", Value: k})
	}
}

// queryPage reads the first page of q, with parameter p unless it has no name.
func queryPage(ctx context.Context, e *env, w *worker, q string, pk azcosmos.PartitionKey, p azcosmos.QueryParameter) (float64, error) {
	opts := &azcosmos.QueryOptions{PageSizeHint: queryPageSize}
	if p.Name != "" {
		opts.QueryParameters = []azcosmos.QueryParameter{p}
	}
	pager := e.cc.NewQueryItemsPager(q, pk, opts)
	r, err := pager.NextPage(ctx)
	w.rows += int64(len(r.Items))
	return float64(r.RequestCharge), err
}

// mixedOp is 80% point reads and 20% upserts.
func mixedOp(e *env) opFunc {
	return func(ctx context.Context, w *worker) (float64, error) {
		if w.rng.IntN(5) == 0 {
			return upsert(ctx, e, w)
		}
		return read(ctx, e, w)
	}
}
