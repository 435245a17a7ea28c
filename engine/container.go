package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/pkrange"
	"github.com/lethe-db/lethe/ru"
	"github.com/lethe-db/lethe/ttl"
)

// collRecord is a container as stored under its C key: the served body plus the
// derived settings every document operation needs.
type collRecord struct {
	RID     string          `json:"rid"`
	DB      string          `json:"db"`
	ID      string          `json:"id"`
	Body    json.RawMessage `json:"body"`
	ETag    string          `json:"etag"`
	PKPaths []string        `json:"pkPaths"`
	// PKKind and PKVersion are the partition key definition's kind ("Hash",
	// "MultiHash") and version (1 or 2), which decide how partition key
	// values hash into ranges.
	PKKind    string `json:"pkKind,omitempty"`
	PKVersion int    `json:"pkVersion,omitempty"`
	// Ranges is the number of partition key ranges, fixed at creation (see
	// rangesAtCreation); 0 in records written before ranges existed: one.
	Ranges       int            `json:"ranges,omitempty"`
	TTLOn        bool           `json:"ttlOn"`
	TTLDefault   int64          `json:"ttlDefault"`
	Watermarks   ttl.Watermarks `json:"watermarks"`
	IndexingMode string         `json:"indexingMode"`
	UniqueKeys   [][]string     `json:"uniqueKeys,omitempty"` // each unique key's paths
	// IncludedPaths and ExcludedPaths are the indexing policy's paths.
	IncludedPaths []string `json:"includedPaths,omitempty"`
	ExcludedPaths []string `json:"excludedPaths,omitempty"`
	// Composites are the paths of each of the indexing policy's composite
	// indexes (see composite.go). Records written before Lethe kept
	// composite indexes have none, whatever their policy says, until the
	// policy is next replaced.
	Composites [][]string `json:"composites,omitempty"`
	// IndexBuild is set while documents written under an earlier indexing
	// policy are being re-indexed: it holds the next sequence number to
	// process. Queries do not use the index meanwhile, so they stay exact.
	IndexBuild *uint64 `json:"indexBuild,omitempty"`
	// IndexBuildEnd is the last sequence number the pending build must
	// process: the container's sequence counter when the policy changed.
	// Documents created after that were indexed under the new policy as
	// they were written, so a build under a steady stream of creates still
	// ends. Nil, in records written before it existed, means the build runs
	// to the last document.
	IndexBuildEnd *uint64 `json:"indexBuildEnd,omitempty"`
	// Throughput is the container's own provisioned throughput; nil: none
	// (its database's shared throughput, if any, governs it).
	Throughput *Throughput `json:"throughput,omitempty"`
	// FeedRetention is how long, in minutes, the all versions and deletes
	// change feed keeps changes (changeFeedPolicy.retentionDuration); 0:
	// the container keeps no log, and that mode is refused.
	FeedRetention int64 `json:"feedRetention,omitempty"`
	// TTLHistory is the TTL history that places the all-versions feed's
	// expiry records within the retained window; nil without a log.
	TTLHistory *ttl.History `json:"ttlHistory,omitempty"`
}

// indexUsable reports whether queries may use the container's index.
func (c *collRecord) indexUsable() bool { return c.IndexBuild == nil && c.IndexingMode != "none" }

// sameIndexing reports whether two records index documents identically.
func sameIndexing(a, b *collRecord) bool {
	return a.IndexingMode == b.IndexingMode && samePaths(a.IncludedPaths, b.IncludedPaths) && samePaths(a.ExcludedPaths, b.ExcludedPaths) &&
		slices.EqualFunc(a.Composites, b.Composites, slices.Equal)
}

func (c *collRecord) rid() [8]byte {
	var out [8]byte
	b, _ := decodeRID(c.RID)
	copy(out[:], b)
	return out
}

func (c *collRecord) policy() ttl.Policy { return ttl.Policy{On: c.TTLOn, Default: c.TTLDefault} }

func (c *collRecord) resource() Resource {
	return Resource{Body: c.Body, ETag: c.ETag, RID: c.RID, Charge: ru.Metadata}
}

// ContainerInfo is what the gateway needs to know about a container beyond its body.
type ContainerInfo struct {
	// RID is the container's _rid, used in x-ms-content-path.
	RID string
	// PartitionKeyPaths are the container's partition key paths.
	PartitionKeyPaths []string
	// Ranges are the container's partition key ranges, which cover the
	// effective partition key space from "" to "FF" without gaps.
	Ranges []pkrange.Range
	// IndexingMode is the indexing policy's mode: consistent, lazy or none.
	IndexingMode string
	// IndexProgress is how far the re-index after an indexing policy change
	// has got, in percent: 100 when none is pending (queries then use the
	// index of the current policy), else 0 to 99: how far the re-index has
	// got through the insertion-order positions it must cover (deleted
	// documents leave gaps, so it is not exactly a share of documents).
	IndexProgress int
}

// getContainer reads a container record and its database's. The records may
// be shared (metaCache): do not modify them; copy first.
func getContainer(r kv.Reader, dbID, collID string) (*dbRecord, *collRecord, error) {
	db, c, _, err := getContainerLayout(r, dbID, collID)
	return db, c, err
}

// getContainerLayout is getContainer that also returns the compiled layout.
func getContainerLayout(r kv.Reader, dbID, collID string) (*dbRecord, *collRecord, *layout, error) {
	snap := snapshotOf(r)
	if e := snap.cached(dbID, collID); e != nil {
		return e.db, e.c, e.l, nil
	}
	db, err := getDatabase(r, dbID)
	if err != nil {
		return nil, nil, nil, err
	}
	key := containerKey(db.rid(), collID)
	v, err := r.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil, nil, notFound()
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read container %q: %w", collID, err)
	}
	rec, l, err := decodeContainer(key, v)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("decode container %q: %w", collID, err)
	}
	snap.remember(dbID, collID, &cachedScope{db: db, c: rec, l: l})
	return db, rec, l, nil
}

// allContainers reads every container record of the store, through the
// decode cache; the records are shared and must not be modified.
func allContainers(ctx context.Context, store kv.Store) ([]*collRecord, error) {
	var out []*collRecord
	err := store.View(ctx, func(r kv.Reader) error {
		it := r.Scan([]byte{pfxContainer}, []byte{pfxContainer + 1}, false)
		defer it.Close()
		for it.Next() {
			c, _, err := decodeContainer(it.Key(), it.Value())
			if err != nil {
				return fmt.Errorf("decode container: %w", err)
			}
			out = append(out, c)
		}
		return it.Err()
	})
	return out, err
}

func listContainerRecords(r kv.Reader, db [4]byte) ([]*collRecord, error) {
	p := containerPrefix(db)
	it := r.Scan(p, kv.PrefixEnd(p), false)
	defer it.Close()
	var out []*collRecord
	for it.Next() {
		var rec collRecord
		if err := json.Unmarshal(it.Value(), &rec); err != nil {
			return nil, fmt.Errorf("decode container: %w", err)
		}
		out = append(out, &rec)
	}
	return out, it.Err()
}

func dropContainerData(tx kv.Tx, coll [8]byte) error {
	for _, pfx := range collPrefixs {
		p := collKey(pfx, coll)
		if err := tx.DeleteRange(p, kv.PrefixEnd(p)); err != nil {
			return err
		}
	}
	return tx.Delete(purgeLeaseKey(coll))
}

// defaultIndexingPolicy is Cosmos DB's default, filled in when a container is
// created without one.
const defaultIndexingPolicy = `{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"_etag\"/?"}]}`

// containerSettings validates a container body and derives its settings. old is
// the existing container on replace, nil on create.
func containerSettings(o *jsonv.Object, old *collRecord) (*collRecord, error) {
	idv, ok := o.Get("id")
	id, err := validateResourceName("collection", idv, ok)
	if err != nil {
		return nil, err
	}
	rec := &collRecord{ID: id}

	// Partition key definition.
	pkv, ok := o.Get("partitionKey")
	if !ok || pkv == nil {
		// The JavaScript SDK omits the definition for containers without a key.
		pk, _ := jsonv.Parse([]byte(`{"paths":["/_partitionKey"],"kind":"Hash"}`))
		o.Set("partitionKey", pk)
		pkv = pk
	}
	pkObj, ok := pkv.(*jsonv.Object)
	if !ok {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The partitionKey definition must be an object.")
	}
	pathsV, _ := pkObj.Get("paths")
	paths, ok := pathsV.([]jsonv.Value)
	if !ok || len(paths) == 0 {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The partition key definition must have at least one path in 'paths'.")
	}
	for _, p := range paths {
		s, ok := p.(string)
		if !ok {
			return nil, lethe.Errorf(lethe.CodeBadRequest, "Partition key paths must be strings.")
		}
		if _, err := splitPath(s); err != nil {
			return nil, err
		}
		rec.PKPaths = append(rec.PKPaths, s)
	}
	kindV, hasKind := pkObj.Get("kind")
	kind, _ := kindV.(string)
	if !hasKind || kindV == nil {
		kind = "Hash"
		if len(paths) > 1 {
			kind = "MultiHash"
		}
		pkObj.Set("kind", kind)
	}
	switch {
	case kind == "Hash" && len(paths) != 1:
		return nil, lethe.Errorf(lethe.CodeBadRequest, "A partition key of kind 'Hash' must have exactly one path; use 'MultiHash' for hierarchical keys.")
	case kind == "MultiHash" && (len(paths) < 1 || len(paths) > 3):
		return nil, lethe.Errorf(lethe.CodeBadRequest, "A hierarchical partition key ('MultiHash') has at most 3 paths.")
	case kind != "Hash" && kind != "MultiHash" && kind != "Range":
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The partition key kind '%v' is invalid; use 'Hash' or 'MultiHash'.", kindV)
	}
	if v, ok := pkObj.Get("version"); !ok || v == nil {
		pkObj.Set("version", jsonv.Number("2"))
	} else if n, ok := v.(jsonv.Number); !ok || (n.Float64() != 1 && n.Float64() != 2) {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The partition key definition version '%s' is invalid; use 1 or 2.", truncate(string(jsonv.Marshal(v)), 50))
	}
	rec.PKKind, rec.PKVersion = pkDefinition(o)
	if old != nil && (!samePaths(old.PKPaths, rec.PKPaths) || old.PKKind != rec.PKKind || old.PKVersion != rec.PKVersion) {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The partition key of a container cannot be changed.")
	}

	// Indexing policy.
	ipv, ok := o.Get("indexingPolicy")
	if !ok || ipv == nil {
		ip, _ := jsonv.Parse([]byte(defaultIndexingPolicy))
		o.Set("indexingPolicy", ip)
		ipv = ip
	}
	ip, ok := ipv.(*jsonv.Object)
	if !ok {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The indexingPolicy must be an object.")
	}
	mode := "consistent"
	if mv, ok := ip.Get("indexingMode"); ok && mv != nil {
		s, _ := mv.(string)
		switch strings.ToLower(s) {
		case "consistent", "lazy", "none":
			mode = strings.ToLower(s)
		default:
			return nil, lethe.Errorf(lethe.CodeBadRequest, "The indexing mode '%v' is invalid; use 'consistent', 'lazy' or 'none'.", mv)
		}
	}
	ip.Set("indexingMode", mode)
	if v, ok := ip.Get("automatic"); !ok || v == nil {
		ip.Set("automatic", mode != "none")
	} else if _, ok := v.(bool); !ok {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The indexing policy's 'automatic' must be true or false.")
	}
	if mode != "none" {
		if v, ok := ip.Get("includedPaths"); !ok || v == nil {
			ip.Set("includedPaths", []jsonv.Value{mustObject(`{"path":"/*"}`)})
		}
		ex, _ := ip.Get("excludedPaths")
		exList, _ := ex.([]jsonv.Value)
		hasEtag := false
		for _, p := range exList {
			if po, ok := p.(*jsonv.Object); ok {
				if s, _ := po.Get("path"); s == `/"_etag"/?` {
					hasEtag = true
				}
			}
		}
		if !hasEtag {
			exList = append(exList, mustObject(`{"path":"/\"_etag\"/?"}`))
		}
		ip.Set("excludedPaths", exList)
	} else {
		for _, k := range []string{"includedPaths", "excludedPaths"} {
			if v, ok := ip.Get(k); !ok || v == nil {
				ip.Set(k, []jsonv.Value{})
			}
		}
	}
	rec.IndexingMode = mode
	_, inc, exc, err := compileIndexPolicy(ip, mode)
	if err != nil {
		return nil, err
	}
	rec.IncludedPaths, rec.ExcludedPaths = inc, exc
	if rec.Composites, err = compileComposites(ip); err != nil {
		return nil, err
	}

	// Time to live.
	var rawTTL json.RawMessage
	if v, ok := o.Get("defaultTtl"); ok {
		rawTTL = jsonv.Marshal(v)
	}
	p, err := ttl.ParsePolicy(rawTTL)
	if err != nil {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "%s", err.Error())
	}
	if p.On && mode == "none" {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "Indexing mode value cannot be 'none' when 'defaultTtl' is specified in the collection")
	}
	rec.TTLOn, rec.TTLDefault = p.On, p.Default

	// Unique keys: set at creation, immutable afterwards.
	uks, err := parseUniqueKeys(o)
	if err != nil {
		return nil, err
	}
	rec.UniqueKeys = uks
	if old != nil && !sameUniqueKeys(old.UniqueKeys, uks) {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The unique key policy of a container cannot be changed.")
	}

	if v, ok := o.Get("conflictResolutionPolicy"); !ok || v == nil {
		o.Set("conflictResolutionPolicy", mustObject(`{"mode":"LastWriterWins","conflictResolutionPath":"/_ts","conflictResolutionProcedure":""}`))
	}
	if v, ok := o.Get("geospatialConfig"); !ok || v == nil {
		o.Set("geospatialConfig", mustObject(`{"type":"Geography"}`))
	}
	return rec, nil
}

func mustObject(s string) *jsonv.Object {
	o, err := jsonv.ParseObject([]byte(s))
	if err != nil {
		panic(err) // programmer error: a constant
	}
	return o
}

func samePaths(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// CreateContainer creates a container in database dbID from its JSON body.
// Returns NotFound if the database does not exist, BadRequest for an invalid
// definition, and Conflict if the container exists.
func (e *Engine) CreateContainer(ctx context.Context, dbID string, body []byte) (Resource, error) {
	return e.CreateContainerWithThroughput(ctx, dbID, body, nil)
}

// CreateContainerWithThroughput is CreateContainer with the container's own
// provisioned throughput (see ParseThroughput; nil: none).
func (e *Engine) CreateContainerWithThroughput(ctx context.Context, dbID string, body []byte, tp *Throughput) (Resource, error) {
	defer e.begin()()
	now, o, err := e.nowAndObject(ctx, body)
	if err != nil {
		return Resource{}, err
	}
	rec, err := containerSettings(o, nil)
	if err != nil {
		return Resource{}, err
	}
	var res Resource
	err = e.store.Update(ctx, func(tx kv.Tx) error {
		db, err := getDatabase(tx, dbID)
		if err != nil {
			return err
		}
		key := containerKey(db.rid(), rec.ID)
		if _, err := tx.Get(key); err == nil {
			return lethe.Errorf(lethe.CodeConflict, "Resource with specified id, name, or unique index already exists.")
		} else if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		n, err := nextCounter(tx, keyCollSeq, 4)
		if err != nil {
			return err
		}
		crid := collRID(db.rid(), uint32(n))
		rec.RID = encodeRID(crid[:])
		rec.DB = dbID
		rec.Watermarks = ttl.Initial
		if rec.Throughput, err = e.stampThroughput(tx, tp, now); err != nil {
			return err
		}
		rec.Ranges = rangesAtCreation(rec)
		if err := e.applyFeedPolicy(tx, o, rec, nil, now); err != nil {
			return err
		}
		res, err = e.putContainer(tx, key, rec, o, db, now)
		return err
	})
	e.wakeAfterCommit(err)
	return res, err
}

// wakeAfterCommit kicks the purger once a container write has committed, so
// that its next pass sees the new TTL or pending re-index. A kick from inside
// the transaction could be taken, and the pass run, before the commit, and
// the work would then wait for the next PurgeInterval tick.
func (e *Engine) wakeAfterCommit(err error) {
	if err == nil {
		e.recordsChanged()
		e.purger.kick()
	}
}

func (e *Engine) putContainer(tx kv.Tx, key []byte, rec *collRecord, o *jsonv.Object, db *dbRecord, now int64) (Resource, error) {
	rec.ETag = etagFor(e.nextLSN())
	// Rare enough to persist a ceiling without raising the one in memory
	// (the transaction may yet roll back).
	if _, err := e.persistLSN(tx); err != nil {
		return Resource{}, err
	}
	self := "dbs/" + db.RID + "/colls/" + rec.RID + "/"
	stampSystem(o, rec.RID, self, rec.ETag, now,
		"_docs", "docs/", "_sprocs", "sprocs/", "_triggers", "triggers/", "_udfs", "udfs/", "_conflicts", "conflicts/")
	rec.Body = jsonv.Marshal(o)
	v, err := json.Marshal(rec)
	if err != nil {
		return Resource{}, err
	}
	if err := tx.Put(key, v); err != nil {
		return Resource{}, err
	}
	return rec.resource(), nil
}

// ReadContainer returns a container. Returns NotFound if it or its database does not exist.
func (e *Engine) ReadContainer(ctx context.Context, dbID, collID string) (Resource, ContainerInfo, error) {
	defer e.begin()()
	var res Resource
	var info ContainerInfo
	err := e.store.View(ctx, func(r kv.Reader) error {
		_, c, l, err := getContainerLayout(r, dbID, collID)
		if err != nil {
			return err
		}
		res = c.resource()
		info = ContainerInfo{RID: c.RID, PartitionKeyPaths: c.PKPaths, Ranges: l.part.ranges, IndexingMode: c.IndexingMode, IndexProgress: 100}
		if c.IndexBuild != nil {
			info.IndexProgress, err = e.indexProgress(r, c)
		}
		return err
	})
	return res, info, err
}

// indexProgress measures a pending re-index of container c: its cursor (the
// next sequence number to re-index) against the last sequence number it must
// cover (the last one allocated when the policy changed; for builds recorded
// before that was kept, the last one allocated now), in percent, never 100
// while the build is pending.
func (e *Engine) indexProgress(r kv.Reader, c *collRecord) (int, error) {
	var last uint64
	if c.IndexBuildEnd != nil {
		last = *c.IndexBuildEnd // documents written since are indexed as they come
	} else {
		var err error
		if last, err = e.lastSeqGiven(r, c.rid()); err != nil {
			return 0, fmt.Errorf("index progress of %q: %w", c.ID, err)
		}
	}
	return int(min(99, *c.IndexBuild*100/(last+1))), nil
}

// ContainerInfo returns what ReadContainer knows of a container beyond its
// body: RID, partition key paths and ranges, indexing mode and progress.
func (e *Engine) ContainerInfo(ctx context.Context, dbID, collID string) (ContainerInfo, error) {
	_, info, err := e.ReadContainer(ctx, dbID, collID)
	return info, err
}

// ListContainers returns a database's containers, ordered by id.
func (e *Engine) ListContainers(ctx context.Context, dbID string) ([]Resource, error) {
	defer e.begin()()
	var out []Resource
	err := e.store.View(ctx, func(r kv.Reader) error {
		db, err := getDatabase(r, dbID)
		if err != nil {
			return err
		}
		recs, err := listContainerRecords(r, db.rid())
		for _, c := range recs {
			out = append(out, c.resource())
		}
		return err
	})
	return out, err
}

// ReplaceContainer replaces a container's definition. The partition key cannot
// change. A change of defaultTtl applies to existing documents at once: the
// closing policy's epoch is folded into the container's watermarks, so no
// document is re-indexed and none that was expired comes back.
// Returns NotFound, BadRequest, or PreconditionFailed when ifMatch does not match.
func (e *Engine) ReplaceContainer(ctx context.Context, dbID, collID string, body []byte, ifMatch string) (Resource, error) {
	defer e.begin()()
	clockNow, o, err := e.nowAndObject(ctx, body)
	if err != nil {
		return Resource{}, err
	}
	var res Resource
	// A TTL policy change places expiries in the all-versions feed at its
	// instant: like a document write, it runs at its transaction's second
	// (txSecond), which no feed read has served yet.
	w := &feedWrite{expiries: true}
	defer e.endWrite(w)
	err = e.store.Update(ctx, func(tx kv.Tx) error {
		now := e.txSecond(clockNow, w)
		db, old, err := getContainer(tx, dbID, collID)
		if err != nil {
			return err
		}
		if ifMatch != "" && ifMatch != "*" && ifMatch != old.ETag {
			return lethe.Errorf(lethe.CodePreconditionFailed, "Operation cannot be performed because one of the specified precondition is not met.")
		}
		o2 := jsonv.Clone(o).(*jsonv.Object) // fn may run again: keep o pristine
		rec, err := containerSettings(o2, old)
		if err != nil {
			return err
		}
		if rec.ID != collID {
			return lethe.Errorf(lethe.CodeBadRequest, "The id in the body ('%s') does not match the container being replaced ('%s').", rec.ID, collID)
		}
		rec.RID, rec.DB = old.RID, old.DB
		rec.Throughput = old.Throughput // offers change it, never a container replace
		rec.Ranges = old.Ranges
		rec.Watermarks = old.Watermarks
		if rec.policy() != old.policy() {
			rec.Watermarks = old.Watermarks.Close(old.policy(), now)
		}
		rec.IndexBuild, rec.IndexBuildEnd = old.IndexBuild, old.IndexBuildEnd
		if !sameIndexing(rec, old) {
			// Re-index every document written so far, from the first.
			last, err := e.lastSeqGiven(tx, old.rid())
			if err != nil {
				return err
			}
			start := uint64(0)
			rec.IndexBuild, rec.IndexBuildEnd = &start, &last
		}
		if err := e.applyFeedPolicy(tx, o2, rec, old, now); err != nil {
			return err
		}
		res, err = e.putContainer(tx, containerKey(db.rid(), collID), rec, o2, db, now)
		return err
	})
	e.wakeAfterCommit(err)
	return res, err
}

// DeleteContainer deletes a container and all its documents.
// Returns NotFound if it does not exist.
func (e *Engine) DeleteContainer(ctx context.Context, dbID, collID string) error {
	defer e.begin()()
	var rid string
	err := e.store.Update(ctx, func(tx kv.Tx) error {
		db, c, err := getContainer(tx, dbID, collID)
		if err != nil {
			return err
		}
		if err := dropContainerData(tx, c.rid()); err != nil {
			return err
		}
		rid = c.RID
		return tx.Delete(containerKey(db.rid(), collID))
	})
	if err == nil {
		e.recordsChanged()
		e.budgets.drop(rid)
	}
	return err
}

// parseUniqueKeys validates uniqueKeyPolicy {"uniqueKeys":[{"paths":[...]}, ...]}
// and fills in an empty policy when absent, as Cosmos DB echoes one.
func parseUniqueKeys(o *jsonv.Object) ([][]string, error) {
	v, ok := o.Get("uniqueKeyPolicy")
	if !ok || v == nil {
		o.Set("uniqueKeyPolicy", mustObject(`{"uniqueKeys":[]}`))
		return nil, nil
	}
	bad := func(why string) error {
		return lethe.Errorf(lethe.CodeBadRequest, "The uniqueKeyPolicy is invalid: %s", why)
	}
	pol, ok := v.(*jsonv.Object)
	if !ok {
		return nil, bad("it must be an object")
	}
	ukv, _ := pol.Get("uniqueKeys")
	if ukv == nil {
		pol.Set("uniqueKeys", []jsonv.Value{})
		return nil, nil
	}
	list, ok := ukv.([]jsonv.Value)
	if !ok {
		return nil, bad("'uniqueKeys' must be an array")
	}
	if len(list) > 10 {
		return nil, bad("a container has at most 10 unique keys")
	}
	var out [][]string
	for _, item := range list {
		uk, ok := item.(*jsonv.Object)
		if !ok {
			return nil, bad("each unique key must be an object with 'paths'")
		}
		pv, _ := uk.Get("paths")
		paths, ok := pv.([]jsonv.Value)
		if !ok || len(paths) == 0 || len(paths) > 16 {
			return nil, bad("each unique key needs 1 to 16 'paths'")
		}
		var ps []string
		for _, p := range paths {
			path, ok := p.(string)
			if !ok {
				return nil, bad("unique key paths must be strings")
			}
			if _, err := splitPath(path); err != nil {
				return nil, bad(fmt.Sprintf("the path '%s' is not a valid path", truncate(path, 100)))
			}
			ps = append(ps, path)
		}
		out = append(out, ps)
	}
	return out, nil
}

func sameUniqueKeys(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !samePaths(a[i], b[i]) {
			return false
		}
	}
	return true
}
