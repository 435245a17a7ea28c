package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/changefeed"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/ru"
	"github.com/lethe-db/lethe/ttl"
)

// DocRef names one document.
type DocRef struct {
	DB, Coll, ID string
	// PK is the partition key from the request header; nil when the header was absent.
	PK lethe.PartitionKey
}

// Conditions are a request's HTTP preconditions.
type Conditions struct {
	// IfMatch, when set, must equal the document's current _etag ("*" matches any live document).
	IfMatch string
	// IfNoneMatch, on reads, turns a matching _etag into NotModified.
	IfNoneMatch string
}

// scope is one operation's view of a container at a fixed instant.
type scope struct {
	db    *dbRecord
	c     *collRecord
	l     *layout
	rid   [8]byte
	pol   ttl.Policy
	now   int64
	at    time.Time  // the precise instant within now's second, for current-time functions
	lsns  []uint64   // LSNs allocated, for session tokens
	work  ru.Write   // index terms written and removed since the last charge
	usage usageDelta // changes to the container's storage tallies, applied at commit
	// unordered: queries do not read an index in ORDER BY order, after
	// such a read met an object or array (errUnorderable).
	unordered bool
	// afterDefined: the query page resumes after a row whose first ORDER
	// BY key is defined, so every document without that key is behind it
	// (see planOrdered).
	afterDefined bool
	// rangeID is the partition key range of the document a point operation
	// or batch addresses (set when its partition key is known).
	rangeID string
	// The change feed second of the transaction's writes (fixed at its
	// first write), and the order key of its last write.
	feedSecond  int64
	feedSet     bool
	lastFeed    changefeed.Key
	feedCeiling int64 // to persist with the transaction; 0 for none
	// seqClaim is the block of sequence numbers the transaction claimed,
	// on a shared store (nextSeq).
	seqClaim *seqBlock
	// The first second of the container's all-versions log, once read.
	logFrom    int64
	logFromSet bool
}

// writeCharge is the charge of the write just made, of a document of n bytes;
// it starts the count of index terms afresh for the next one (batches).
func (s *scope) writeCharge(n int) float64 {
	w := s.work
	w.Bytes = n
	s.work = ru.Write{}
	return w.Charge()
}

// countTerms counts the index terms (secondary index and unique key entries)
// among keys.
func countTerms(keys [][]byte) int {
	n := 0
	for _, k := range keys {
		if k[0] == pfxIndex || k[0] == pfxUnique {
			n++
		}
	}
	return n
}

func (e *Engine) scope(r kv.Reader, dbID, collID string, now int64) (*scope, error) {
	return e.scopeOf(r, dbID, collID, nil, now)
}

// scopeOf is scope for a transaction that reads the document at doc (nil:
// none, or not first), which stores that read ahead read with the
// container's records (readAhead).
func (e *Engine) scopeOf(r kv.Reader, dbID, collID string, doc *DocRef, now int64) (*scope, error) {
	p, prefetches := r.(kv.Prefetcher)
	if prefetches {
		if err := e.readAhead(p, dbID, collID, doc); err != nil {
			return nil, err
		}
	}
	db, c, l, err := getContainerLayout(r, dbID, collID)
	if err != nil {
		return nil, err
	}
	if prefetches {
		e.sawRecords(dbID, collID, db, c, l)
	}
	return &scope{db: db, c: c, l: l, rid: l.rid, pol: c.policy(), now: now}, nil
}

// live reports whether a stored document is visible at the scope's instant.
func (s *scope) live(rec *docRecord) bool {
	return !ttl.Expired(s.now, rec.ts, rec.own, s.pol, s.c.Watermarks)
}

func (s *scope) selfLink(seq uint64) (rid, self string) {
	rid = docRID(s.rid, seq)
	return rid, "dbs/" + s.db.RID + "/colls/" + s.c.RID + "/docs/" + rid + "/"
}

func (s *scope) resource(rec *docRecord, charge float64) Resource {
	return Resource{Body: rec.json, ETag: rec.etag(), RID: docRID(s.rid, rec.seq), Charge: charge, ContainerRID: s.c.RID, RangeID: s.rangeID}
}

// lookup returns the stored record at suffix, live or not, or nil.
func lookup(r kv.Reader, coll [8]byte, suffix []byte) (*docRecord, error) {
	return lookupKey(r, docKey(coll, suffix))
}

// lookupKey returns the stored record at key, a document key, live or not,
// or nil.
func lookupKey(r kv.Reader, key []byte) (*docRecord, error) {
	v, err := r.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read document: %w", err)
	}
	rec, err := decodeDoc(v)
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// lookupLive returns the live document at suffix, or nil when it is absent or
// expired. An expired document that is still stored is also returned as dead so
// that writes can remove its index entries.
func (s *scope) lookupLive(r kv.Reader, suffix []byte) (live, dead *docRecord, err error) {
	rec, err := lookup(r, s.rid, suffix)
	if err != nil || rec == nil {
		return nil, nil, err
	}
	if s.live(rec) {
		return rec, nil, nil
	}
	return nil, rec, nil
}

// prepared is a document body validated for a write.
type prepared struct {
	obj    *jsonv.Object
	id     string
	pk     lethe.PartitionKey
	suffix []byte
	// prevObj is the version being replaced, parsed, when the caller has
	// parsed it already (a patch): versionKeys then need not parse it again.
	prevObj *jsonv.Object
	// unchecked is set when nothing checked that the document's key is free:
	// it is stored with kv.Creator, which fails the transaction if not.
	unchecked bool
}

// prepare validates a document for a write into the scope's container: the id,
// the ttl (while TTL is on), and the partition key against the header's.
func (s *scope) prepare(o *jsonv.Object, headerPK lethe.PartitionKey) (*prepared, error) {
	idv, ok := o.Get("id")
	id, err := validateDocumentID(idv, ok)
	if err != nil {
		return nil, err
	}
	if s.pol.On {
		if v, ok := o.Get("ttl"); ok {
			if err := ttl.ValidateDocument(jsonv.Marshal(v)); err != nil {
				return nil, lethe.Errorf(lethe.CodeBadRequest, "%s", err.Error())
			}
		}
	}
	pk, err := extractPK(o, s.c.PKPaths)
	if err != nil {
		return nil, err
	}
	if headerPK != nil {
		hpk, err := normalizePK(headerPK, s.c.PKPaths)
		if err != nil {
			return nil, err
		}
		if !hpk.Equal(pk) {
			return nil, pkMismatch()
		}
	}
	s.rangeID = s.l.part.rangeOf(pk)
	return &prepared{obj: o, id: id, pk: pk, suffix: primarySuffix(pk, id)}, nil
}

// refSuffix returns the primary suffix of a referenced document.
func (s *scope) refSuffix(ref DocRef) ([]byte, error) {
	if ref.PK == nil {
		return nil, pkRequired()
	}
	pk, err := normalizePK(ref.PK, s.c.PKPaths)
	if err != nil {
		return nil, err
	}
	s.rangeID = s.l.part.rangeOf(pk)
	if ref.ID == "" {
		return nil, notFound()
	}
	return primarySuffix(pk, ref.ID), nil
}

// write stores p as the document's new version. prev is the version it replaces
// (live or expired) whose entries must go; keepSeq keeps prev's place in
// insertion order (replace, upsert over a live document).
func (s *scope) write(e *Engine, tx kv.Tx, p *prepared, prev *docRecord, keepSeq bool) (*docRecord, error) {
	if prev != nil && prev.ts > s.now {
		return nil, &behindError{second: prev.ts}
	}
	var seq uint64
	if keepSeq && prev != nil {
		seq = prev.seq
	} else {
		var err error
		if seq, err = e.nextSeq(tx, s); err != nil {
			return nil, err
		}
	}
	lsn := e.nextLSN()
	s.lsns = append(s.lsns, lsn)
	rid, self := s.selfLink(seq)
	o := jsonv.Clone(p.obj).(*jsonv.Object) // the fn may run again on conflict
	stampSystem(o, rid, self, etagFor(lsn), s.now, "_attachments", "attachments/")
	var rawTTL []byte
	if v, ok := o.Get("ttl"); ok {
		rawTTL = jsonv.Marshal(v)
	}
	replacing := keepSeq && prev != nil
	rec := &docRecord{ts: s.now, seq: seq, own: ttl.Classify(rawTTL), lsn: lsn, feed: e.feedKey(s, lsn), logOp: changefeed.OpCreate}
	if replacing {
		rec.logOp, rec.logPrev = changefeed.OpReplace, prev.lsn
	}
	rec.logRefers = s.logging() && s.outlivesRecord(rec)
	encoded := rec.encodeWithJSON(o)
	if len(rec.json) > maxDocBytes {
		return nil, lethe.Errorf(lethe.CodeEntityTooLarge, "Request size is too large: the document is %d bytes; the limit is %d.", len(rec.json), maxDocBytes)
	}
	if prev != nil {
		if !replacing {
			// prev expired: its expiry goes into the log as it goes.
			if err := s.logExpiry(tx, p.suffix, prev); err != nil {
				return nil, err
			}
		}
		if err := s.logBody(tx, p.suffix, prev); err != nil {
			return nil, err
		}
	}
	manifest, err := manifestFor(s.l, rec, o)
	if err != nil {
		return nil, err
	}
	if d := e.guard.defined; d != nil {
		d.wrote(s.rid, manifest)
	}
	s.work.TermsWritten += countTerms(manifest)
	fixed := fixedKeys(s.l, rec)
	added := manifest
	if prev != nil {
		keys, err := s.versionKeys(tx, prev, p.prevObj)
		if err != nil {
			return nil, err
		}
		// Charged as if every entry were rewritten, as Cosmos DB charges.
		s.work.TermsRemoved += countTerms(keys)
		s.usage.add(fixedKeys(s.l, prev), len(prev.json), -1)
		var stale [][]byte
		stale, added = keysToRewrite(keys, fixed, manifest)
		for _, k := range stale {
			if err := tx.Delete(k); err != nil {
				return nil, err
			}
		}
	}
	if err := s.claimUniqueKeys(tx, added, p.suffix); err != nil {
		return nil, err
	}
	put := tx.Put
	if p.unchecked {
		put = tx.(kv.Creator).Create
	}
	if err := put(docKey(s.rid, p.suffix), encoded); err != nil {
		return nil, err
	}
	s.usage.add(fixed, len(rec.json), 1)
	holder := manifestHolder(fixed)
	for _, k := range fixed {
		v := encodeOrderValue(p.suffix, len(rec.json), nil)
		if bytes.Equal(k, holder) {
			v = encodeOrderValue(p.suffix, len(rec.json), manifest)
		}
		if err := tx.Put(k, v); err != nil {
			return nil, err
		}
	}
	for _, k := range added {
		if err := tx.Put(k, p.suffix); err != nil {
			return nil, err
		}
	}
	if s.logging() {
		if err := s.logWrite(tx, p.suffix, rec); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// keysToRewrite compares the keys a stored version owns (old: its fixed keys
// and manifest, as ownedKeys returns them) with those of the version that
// replaces it (fixed, and manifest, sorted as manifestFor returns it). stale
// are the old keys to delete: those the new version does not have. added are
// the manifest entries to put: those the old version did not have. An entry
// both versions have already holds the document's suffix, as it would again,
// so it is neither deleted nor written: a replace that changes one property
// rewrites that property's entries, not the document's every entry. The new
// fixed keys are always written, since their values change with each version;
// an old one among them is overwritten, not deleted. old is sorted in place.
func keysToRewrite(old, fixed, manifest [][]byte) (stale, added [][]byte) {
	slices.SortFunc(old, bytes.Compare)
	added = manifest[:0:0]
	j := 0
	for _, k := range old {
		for j < len(manifest) && bytes.Compare(manifest[j], k) < 0 {
			added = append(added, manifest[j])
			j++
		}
		if j < len(manifest) && bytes.Equal(manifest[j], k) {
			j++
			continue
		}
		if !slices.ContainsFunc(fixed, func(f []byte) bool { return bytes.Equal(f, k) }) {
			stale = append(stale, k)
		}
	}
	return stale, append(added, manifest[j:]...)
}

// claimUniqueKeys checks the unique key entries among keys before suffix takes
// them. An entry held by a live document is a conflict; one held by an expired
// document is not (an expired document is absent for unique keys too): that
// document is physically removed here, as the purger would.
func (s *scope) claimUniqueKeys(tx kv.Tx, keys [][]byte, suffix []byte) error {
	for _, k := range keys {
		if k[0] != pfxUnique {
			continue
		}
		holder, err := tx.Get(k)
		if errors.Is(err, kv.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if bytes.Equal(holder, suffix) {
			continue
		}
		holder = append([]byte(nil), holder...)
		rec, err := lookup(tx, s.rid, holder)
		if err != nil {
			return err
		}
		if rec != nil && s.live(rec) {
			return lethe.Errorf(lethe.CodeConflict, "Unique index constraint violation.")
		}
		if rec != nil {
			if err := s.removeExpired(tx, holder, rec); err != nil {
				return err
			}
		} else if err := tx.Delete(k); err != nil { // an orphan entry
			return err
		}
	}
	return nil
}

// remove deletes a stored document and its index entries, and gives its log
// record a copy of its body (logBody).
func (s *scope) remove(tx kv.Tx, suffix []byte, rec *docRecord) error {
	if err := s.logBody(tx, suffix, rec); err != nil {
		return err
	}
	keys, err := s.versionKeys(tx, rec, nil)
	if err != nil {
		return err
	}
	s.work.TermsRemoved += countTerms(keys)
	s.usage.add(fixedKeys(s.l, rec), len(rec.json), -1)
	for _, k := range keys {
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	return tx.Delete(docKey(s.rid, suffix))
}

func nextSeq(tx kv.Tx, coll [8]byte) (uint64, error) {
	return nextCounter(tx, collKey(pfxSeq, coll), 8)
}

// seqBlockSize is how many document sequence numbers an engine claims at a
// time (see Engine.nextSeq).
const seqBlockSize = 1024

// seqBlock is a range [next, end) of a container's sequence numbers claimed
// by this gateway, or by the engines of an exclusive store.
type seqBlock struct{ next, end uint64 }

// seqBlocks holds the block in use of each container, by RID.
type seqBlocks struct {
	mu sync.Mutex
	m  map[[8]byte]*seqBlock
}

func newSeqBlocks() *seqBlocks { return &seqBlocks{m: map[[8]byte]*seqBlock{}} }

// nextSeq gives a sequence number to a document the transaction of scope s
// inserts. On a shared store or an exclusive one it comes from this engine's
// block for the container: gateways on a shared store then do not all write
// the container's counter, and an insert on an exclusive store neither reads
// nor writes it (one key fewer of the fourteen a create writes). A block is
// claimed, when the last is used up, by moving the counter in the
// transaction itself, and becomes the engine's once it has committed (see
// update). Numbers stay unique, and the counter stays at or above every
// number given out, which re-indexing relies on; numbers of a block not used
// up before a restart are skipped. Across gateways, insertion order becomes
// the order of blocks.
func (e *Engine) nextSeq(tx kv.Tx, s *scope) (uint64, error) {
	if e.seqs == nil {
		return nextSeq(tx, s.rid)
	}
	if b := s.seqClaim; b != nil && b.next < b.end {
		b.next++
		return b.next - 1, nil
	}
	e.seqs.mu.Lock()
	if b := e.seqs.m[s.rid]; b != nil && b.next < b.end {
		seq := b.next // read under the lock: other writers take the next ones
		b.next++
		e.seqs.mu.Unlock()
		return seq, nil
	}
	e.seqs.mu.Unlock()
	last, err := lastSeq(tx, s.rid)
	if err != nil {
		return 0, err
	}
	s.seqClaim = &seqBlock{next: last + 2, end: last + 1 + seqBlockSize}
	return last + 1, tx.Put(collKey(pfxSeq, s.rid), binary.BigEndian.AppendUint64(nil, last+seqBlockSize))
}

// installSeqClaim makes the block a committed transaction of scope s
// claimed this gateway's.
func (e *Engine) installSeqClaim(rid [8]byte, b *seqBlock) {
	if b == nil {
		return
	}
	e.seqs.mu.Lock()
	defer e.seqs.mu.Unlock()
	e.seqs.m[rid] = b
}

// lastSeqGiven returns the last sequence number given out in container
// rid, 0 if none. On an exclusive store it is the block in use's last
// (every engine there shares the blocks, and transactions run one at a
// time); elsewhere, and before the first insert since the store opened,
// it is the container's counter, which may lie past numbers claimed and
// never used: a bound, not the exact number.
func (e *Engine) lastSeqGiven(r kv.Reader, rid [8]byte) (uint64, error) {
	if e.lease == nil && e.seqs != nil {
		e.seqs.mu.Lock()
		b := e.seqs.m[rid]
		e.seqs.mu.Unlock()
		if b != nil {
			return b.next - 1, nil
		}
	}
	return lastSeq(r, rid)
}

// lastSeq returns the last sequence number nextSeq gave out in the
// container, 0 if none.
func lastSeq(r kv.Reader, coll [8]byte) (uint64, error) {
	v, err := r.Get(collKey(pfxSeq, coll))
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("read sequence counter: %w", err)
	case len(v) != 8:
		return 0, fmt.Errorf("sequence counter is %d bytes, want 8", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func preconditionFailed() error {
	return lethe.Errorf(lethe.CodePreconditionFailed, "Operation cannot be performed because one of the specified precondition is not met.")
}

func conflict() error {
	return lethe.Errorf(lethe.CodeConflict, "Entity with the specified id already exists in the system.")
}

// liveFor returns the live version a write targets: NotFound when it is absent
// or expired, PreconditionFailed when ifMatch does not match it.
func (s *scope) liveFor(r kv.Reader, suffix []byte, ifMatch string) (*docRecord, error) {
	live, _, err := s.lookupLive(r, suffix)
	if err != nil {
		return nil, err
	}
	if live == nil {
		return nil, notFound()
	}
	if err := checkIfMatch(ifMatch, live); err != nil {
		return nil, err
	}
	return live, nil
}

// checkIfMatch applies If-Match to the live version (nil when there is none).
func checkIfMatch(ifMatch string, live *docRecord) error {
	if ifMatch == "" {
		return nil
	}
	if live == nil {
		return notFound()
	}
	if ifMatch != "*" && ifMatch != live.etag() {
		return preconditionFailed()
	}
	return nil
}

// --- operations inside a transaction, shared by single requests and batches ---

// createTx creates a document in tx. With unchecked, on a store that checks
// a new key where it writes it (kv.Creator), it stores the document without
// looking at its key first, and the transaction fails with kv.ErrExists if
// the key is taken (by a live document or an expired one still stored): the
// caller then runs it again checked, to answer 409 or replace the expired
// one. That saves a round trip on PostgreSQL, where nearly every create's key
// is free.
func (s *scope) createTx(e *Engine, tx kv.Tx, o *jsonv.Object, pk lethe.PartitionKey, unchecked bool) (*docRecord, error) {
	p, err := s.prepare(o, pk)
	if err != nil {
		return nil, err
	}
	if _, ok := tx.(kv.Creator); ok && unchecked {
		p.unchecked = true
		return s.write(e, tx, p, nil, false)
	}
	claimed, err := claimDocKey(tx, docKey(s.rid, p.suffix))
	if err != nil || claimed {
		if err != nil {
			return nil, err
		}
		return s.write(e, tx, p, nil, false)
	}
	live, dead, err := s.lookupLive(tx, p.suffix)
	if err != nil {
		return nil, err
	}
	if live != nil {
		return nil, conflict()
	}
	return s.write(e, tx, p, dead, false)
}

// claimDocKey claims a new document's key on stores that can insert a key
// only if it is absent (kv.Inserter: PostgreSQL), reporting whether the key
// was free; the claim holds a placeholder that the write replaces, or that
// goes with the transaction if it fails. A create that reads its key first
// locks the index page the key would be on, and every other gateway's create
// on that page then conflicts with it (docs/postgres.md section 3); the claim
// leaves no read behind. False (nothing claimed) sends the caller to read the
// key: it is taken, or the store cannot claim.
//
// The claim sees the latest committed state, which may be later than the
// transaction's snapshot: a document deleted meanwhile by another gateway
// counts as absent, as if this create ran after that delete. That order
// stays serializable: a delete request reads the document first, so the
// database sees the claim's insert into the index page that read locked; the
// purger's deletions read and write nothing a create reads: tallies are
// delta rows that no write reads (usage.go).
func claimDocKey(tx kv.Tx, key []byte) (bool, error) {
	ins, ok := tx.(kv.Inserter)
	if !ok {
		return false, nil
	}
	return ins.Insert(key, claimPlaceholder)
}

// claimPlaceholder is the value a claimed document key holds until the write
// replaces it within the same transaction; no transaction ever reads it.
var claimPlaceholder = []byte{0}

func (s *scope) upsertTx(e *Engine, tx kv.Tx, o *jsonv.Object, pk lethe.PartitionKey, ifMatch string) (*docRecord, bool, error) {
	p, err := s.prepare(o, pk)
	if err != nil {
		return nil, false, err
	}
	live, dead, err := s.lookupLive(tx, p.suffix)
	if err != nil {
		return nil, false, err
	}
	if live == nil {
		if ifMatch != "" && ifMatch != "*" {
			return nil, false, preconditionFailed()
		}
		rec, err := s.write(e, tx, p, dead, false)
		return rec, true, err
	}
	if ifMatch != "" && ifMatch != "*" && ifMatch != live.etag() {
		return nil, false, preconditionFailed()
	}
	rec, err := s.write(e, tx, p, live, true)
	return rec, false, err
}

func (s *scope) replaceTx(e *Engine, tx kv.Tx, id string, o *jsonv.Object, pk lethe.PartitionKey, ifMatch string) (*docRecord, error) {
	p, err := s.prepare(o, pk)
	if err != nil {
		return nil, err
	}
	if p.id != id {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The id in the body ('%s') does not match the id of the document being replaced ('%s').", truncate(p.id, 100), truncate(id, 100))
	}
	live, err := s.liveFor(tx, p.suffix, ifMatch)
	if err != nil {
		return nil, err
	}
	return s.write(e, tx, p, live, true)
}

func (s *scope) deleteTx(e *Engine, tx kv.Tx, suffix []byte, ifMatch string) (*docRecord, error) {
	live, err := s.liveFor(tx, suffix, ifMatch)
	if err != nil {
		return nil, err
	}
	if live.ts > s.now {
		return nil, &behindError{second: live.ts}
	}
	if s.logging() {
		if err := s.logDelete(e, tx, suffix, live); err != nil {
			return nil, err
		}
	}
	return live, s.remove(tx, suffix, live)
}

// behindError aborts a transaction whose second is below the _ts of a
// version it replaces or deletes: possible on a shared store, where another
// gateway, whose time ran a little ahead, wrote it. update runs the
// transaction again at that second, so that _ts never goes back for a
// document, nor a change sorts before the one it follows in the feed.
type behindError struct{ second int64 }

func (b *behindError) Error() string {
	return fmt.Sprintf("the document was written at second %d, after this transaction's", b.second)
}

func (s *scope) readTx(r kv.Reader, suffix []byte) (*docRecord, error) {
	live, _, err := s.lookupLive(r, suffix)
	if err != nil {
		return nil, err
	}
	if live == nil {
		return nil, notFound()
	}
	return live, nil
}

// --- public operations ---

// WriteResult is the outcome of a document write.
type WriteResult struct {
	Resource
	// Created is true when the write created the document (201), false when it
	// replaced a live one (200).
	Created bool
}

// update runs fn in a read-write transaction over the container at one instant.
func (e *Engine) update(ctx context.Context, dbID, collID string, fn func(tx kv.Tx, s *scope) error) error {
	return e.updateOf(ctx, dbID, collID, nil, fn)
}

// updateOf is update for a write that reads the document at doc first (nil:
// none), which stores that read ahead read with the container's records.
func (e *Engine) updateOf(ctx context.Context, dbID, collID string, doc *DocRef, fn func(tx kv.Tx, s *scope) error) error {
	for {
		err := e.updateOnce(ctx, dbID, collID, doc, fn)
		var behind *behindError
		switch {
		case errors.As(err, &behind):
			e.raiseSecond(behind.second)
		case !errors.Is(err, errCommitLate):
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// updateOnce is update's one attempt.
func (e *Engine) updateOnce(ctx context.Context, dbID, collID string, doc *DocRef, fn func(tx kv.Tx, s *scope) error) error {
	now, at, err := e.instant(ctx)
	if err != nil {
		return err
	}
	var added, ceiling int64
	var lastFeed changefeed.Key
	var lsnCeiling uint64
	var claim *seqBlock
	var rid [8]byte
	if err := e.ensureLSNs(ctx); err != nil {
		return err
	}
	var w feedWrite
	defer e.endWrite(&w) // after feedDurable: see feedWrite
	err = e.store.Update(ctx, func(tx kv.Tx) error {
		txNow := e.txSecond(now, &w)
		s, err := e.scopeOf(tx, dbID, collID, doc, txNow)
		if err != nil {
			return err
		}
		s.at = at
		if txNow != now {
			s.at = time.Unix(txNow, 0)
		}
		if err := fn(tx, s); err != nil {
			return err
		}
		added, lastFeed, ceiling = s.usage.total.bytes, s.lastFeed, s.feedCeiling
		claim, rid = s.seqClaim, s.rid
		if lsnCeiling, err = e.persistLSN(tx); err != nil {
			return err
		}
		if ceiling != 0 {
			if err := tx.Put(keyFeedMark, appendInt64(nil, ceiling)); err != nil {
				return err
			}
		}
		if err := s.usage.apply(tx, s.rid, e.tallyDelta(s.rid)); err != nil {
			return err
		}
		return e.beforeCommit(txNow)
	})
	if err == nil {
		e.installSeqClaim(rid, claim)
		e.storage.wrote(added)
		e.raiseFeedCeiling(ceiling)
		e.raiseLSNCeiling(lsnCeiling)
		e.feedDurable(lastFeed)
	}
	return err
}

// view runs fn in a read-only snapshot of the container at one instant.
func (e *Engine) view(ctx context.Context, dbID, collID string, fn func(r kv.Reader, s *scope) error) error {
	return e.viewOf(ctx, dbID, collID, nil, fn)
}

// viewOf is view for a read of the document at doc (nil: none), which
// stores that read ahead read with the container's records.
func (e *Engine) viewOf(ctx context.Context, dbID, collID string, doc *DocRef, fn func(r kv.Reader, s *scope) error) error {
	now, err := e.now(ctx)
	if err != nil {
		return err
	}
	return e.store.View(ctx, func(r kv.Reader) error {
		s, err := e.scopeOf(r, dbID, collID, doc, now)
		if err != nil {
			return err
		}
		return fn(r, s)
	})
}

func parseDocBody(body []byte) (*jsonv.Object, error) {
	if len(body) > maxDocBytes {
		return nil, lethe.Errorf(lethe.CodeEntityTooLarge, "Request size is too large: the document is %d bytes; the limit is %d.", len(body), maxDocBytes)
	}
	o, err := jsonv.ParseObject(body)
	if err != nil {
		return nil, badBody(err)
	}
	return o, nil
}

// writeDocument runs one document write in a transaction at one instant and
// shapes its result; create, upsert, replace and patch differ only in op.
// reads says whether op reads the document at ref first, so that stores that
// read ahead read it with the container's records; a create does not: on
// such a store it writes its key unchecked, or claims it (createTx).
func (e *Engine) writeDocument(ctx context.Context, ref DocRef, reads bool, op func(tx kv.Tx, s *scope) (*docRecord, bool, error)) (WriteResult, error) {
	if err := e.admitGrowth(ctx); err != nil {
		return WriteResult{}, err
	}
	var res WriteResult
	var doc *DocRef
	if reads {
		doc = &ref
	}
	err := e.updateOf(ctx, ref.DB, ref.Coll, doc, func(tx kv.Tx, s *scope) error {
		rec, created, err := op(tx, s)
		if err != nil {
			return err
		}
		res = WriteResult{Resource: s.resource(rec, s.writeCharge(len(rec.json))), Created: created}
		return nil
	})
	return res, err
}

// CreateDocument creates a document. A stored but expired document with the same
// id and partition key does not conflict: it is replaced by the new one.
// Returns BadRequest, Conflict, EntityTooLarge or NotFound (container).
func (e *Engine) CreateDocument(ctx context.Context, ref DocRef, body []byte) (WriteResult, error) {
	defer e.begin()()
	o, err := parseDocBody(body)
	if err != nil {
		return WriteResult{}, err
	}
	for unchecked := true; ; unchecked = false {
		res, err := e.writeDocument(ctx, ref, false, func(tx kv.Tx, s *scope) (*docRecord, bool, error) {
			rec, err := s.createTx(e, tx, o, ref.PK, unchecked)
			return rec, true, err
		})
		if !unchecked || !errors.Is(err, kv.ErrExists) {
			return res, err
		}
	}
}

// UpsertDocument creates the document or replaces the live one. An expired
// document counts as absent: the upsert creates a fresh document.
func (e *Engine) UpsertDocument(ctx context.Context, ref DocRef, body []byte, cond Conditions) (WriteResult, error) {
	defer e.begin()()
	o, err := parseDocBody(body)
	if err != nil {
		return WriteResult{}, err
	}
	if id, ok := o.Get("id"); ok {
		ref.ID, _ = id.(string) // the document it replaces, if any, to read ahead
	}
	return e.writeDocument(ctx, ref, true, func(tx kv.Tx, s *scope) (*docRecord, bool, error) {
		return s.upsertTx(e, tx, o, ref.PK, cond.IfMatch)
	})
}

// ReplaceDocument replaces a live document. Returns NotFound when it is absent
// or expired, PreconditionFailed when If-Match does not match.
func (e *Engine) ReplaceDocument(ctx context.Context, ref DocRef, body []byte, cond Conditions) (WriteResult, error) {
	defer e.begin()()
	o, err := parseDocBody(body)
	if err != nil {
		return WriteResult{}, err
	}
	if ref.PK == nil {
		return WriteResult{}, pkRequired()
	}
	return e.writeDocument(ctx, ref, true, func(tx kv.Tx, s *scope) (*docRecord, bool, error) {
		rec, err := s.replaceTx(e, tx, ref.ID, o, ref.PK, cond.IfMatch)
		return rec, false, err
	})
}

// ReadDocument returns a live document. Returns NotFound when it is absent or
// expired, and NotModified when IfNoneMatch equals its _etag.
func (e *Engine) ReadDocument(ctx context.Context, ref DocRef, cond Conditions) (Resource, error) {
	defer e.begin()()
	var res Resource
	read := func(r kv.Reader, s *scope) error {
		suffix, err := s.refSuffix(ref)
		if err != nil {
			return err
		}
		rec, err := s.readTx(r, suffix)
		if err != nil {
			return err
		}
		res = s.resource(rec, ru.Read(len(rec.json))) // kv.Reader.Get returns a copy that outlives the snapshot
		if cond.IfNoneMatch != "" && (cond.IfNoneMatch == "*" || cond.IfNoneMatch == res.ETag) {
			return &lethe.Error{Code: lethe.CodeNotModified, Message: "Not modified."}
		}
		return nil
	}
	if done, err := e.viewFetched(ctx, ref.DB, ref.Coll, ref, read); done {
		return res, err
	}
	err := e.viewOf(ctx, ref.DB, ref.Coll, &ref, read)
	return res, err
}

// DeleteDocument deletes a live document. Returns NotFound when it is absent or
// expired, PreconditionFailed when If-Match does not match.
func (e *Engine) DeleteDocument(ctx context.Context, ref DocRef, cond Conditions) (Resource, error) {
	defer e.begin()()
	var res Resource
	err := e.updateOf(ctx, ref.DB, ref.Coll, &ref, func(tx kv.Tx, s *scope) error {
		suffix, err := s.refSuffix(ref)
		if err != nil {
			return err
		}
		rec, err := s.deleteTx(e, tx, suffix, cond.IfMatch)
		if err != nil {
			return err
		}
		res = s.resource(rec, s.writeCharge(len(rec.json)))
		res.Body = nil
		return nil
	})
	return res, err
}
