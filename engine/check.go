package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
)

// Check verifies the store's structural invariants and returns every violation
// found: each document's insertion-order and expiry entries exist and point back
// at it, and every index entry belongs to the current version of a stored
// document. Tests run it after each test; it reads the whole store.
func (e *Engine) Check(ctx context.Context) error {
	var errs []error
	err := e.store.View(ctx, func(r kv.Reader) error {
		it := r.Scan([]byte{pfxContainer}, []byte{pfxContainer + 1}, false)
		type target struct {
			l        *layout
			building bool
		}
		var colls []target
		for it.Next() {
			var c collRecord
			if err := json.Unmarshal(it.Value(), &c); err != nil {
				errs = append(errs, fmt.Errorf("container record %q: %w", it.Key(), err))
				continue
			}
			colls = append(colls, target{c.layout(), c.IndexBuild != nil})
		}
		if err := it.Close(); err != nil {
			return err
		}
		for _, c := range colls {
			errs = append(errs, checkContainer(r, c.l, c.building)...)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return errors.Join(errs...)
}

// checkContainer checks one container. While a re-index is pending,
// manifests may still follow the previous policy, so only their agreement with
// the stored entries is checked, not with the current policy.
func checkContainer(r kv.Reader, l *layout, building bool) []error {
	coll := l.rid
	var errs []error
	want := map[string][]byte{}         // every key the documents own -> the suffix it must hold
	var usage usageDelta                // the tallies the stored documents call for
	sizes := map[string]int{}           // expiry and order entry -> its document's size
	versions := map[string]*docRecord{} // suffix -> its stored version (header only)
	p := collKey(pfxDoc, coll)
	it := r.Scan(p, kv.PrefixEnd(p), false)
	for it.Next() {
		suffix := append([]byte(nil), it.Key()[len(p):]...)
		rec, err := decodeDoc(it.Value())
		if err != nil {
			errs = append(errs, fmt.Errorf("document %x: %w", suffix, err))
			continue
		}
		o, err := jsonv.ParseStoredObject(rec.json)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %x: stored JSON is invalid: %w", suffix, err))
			continue
		}
		// The manifest must list exactly the entries the body and the policy call for.
		manifest, err := manifestFor(l, &rec, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %x: %w", suffix, err))
			continue
		}
		owned, err := ownedKeys(r, l, &rec)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %x: %w", suffix, err))
			continue
		}
		header := rec
		header.json = nil // the scan's buffer, not ours to keep
		versions[string(suffix)] = &header
		fixed := fixedKeys(l, &rec)
		usage.add(fixed, len(rec.json), 1)
		for _, k := range fixed {
			sizes[string(k)] = len(rec.json)
		}
		if got := owned[len(fixed):]; !building && !equalKeySets(got, manifest) {
			errs = append(errs, fmt.Errorf("document %x: manifest lists %d entries, the body and policy call for %d", suffix, len(got), len(manifest)))
		}
		for _, k := range owned {
			want[string(k)] = suffix
		}
	}
	if err := it.Close(); err != nil {
		return append(errs, err)
	}
	for _, pfx := range []byte{pfxOrder, pfxByTS, pfxByExpiry, pfxUnique, pfxIndex, pfxFeed} {
		p := collKey(pfx, coll)
		it := r.Scan(p, kv.PrefixEnd(p), false)
		for it.Next() {
			k := string(it.Key())
			held := it.Value()
			if pfx == pfxOrder || pfx == pfxByTS || pfx == pfxByExpiry {
				s, size, _, err := decodeOrderValue(held, nil)
				if err != nil {
					errs = append(errs, fmt.Errorf("order entry %q: %w", k, err))
					continue
				}
				if want, ok := sizes[k]; ok && size != want {
					errs = append(errs, fmt.Errorf("entry %q records size %d, its document is %d bytes", k, size, want))
				}
				held = s
			}
			suffix, ok := want[k]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("entry %q belongs to no stored document version", k))
			case !bytes.Equal(suffix, held):
				errs = append(errs, fmt.Errorf("entry %q points at %x, want %x", k, held, suffix))
			}
			delete(want, k)
		}
		if err := it.Close(); err != nil {
			return append(errs, err)
		}
	}
	for k, suffix := range want {
		errs = append(errs, fmt.Errorf("document %x lacks its entry %q", suffix, k))
	}
	errs = append(errs, checkLog(r, coll, versions)...)
	return append(errs, checkTallies(r, coll, usage)...)
}

// checkLog checks the change feed log against the stored versions (by
// suffix): a record takes its body from the document (CurrentIsLive) exactly
// when it is the record of the version stored and that version says so
// (logRefers); and a version whose header says what its record holds
// (logOp: bodyEntry writes the record's copy from it, unread) has that
// record, unless the log's window has passed it.
func checkLog(r kv.Reader, coll [8]byte, versions map[string]*docRecord) []error {
	var errs []error
	from, err := feedLogFrom(r, coll)
	if err != nil {
		return []error{err}
	}
	seen := make(map[*docRecord]bool)
	p := collKey(pfxFeedLog, coll)
	it := r.Scan(p, kv.PrefixEnd(p), false)
	defer it.Close()
	for it.Next() {
		suffix, rec, err := decodeLogValue(it.Value())
		if err != nil {
			errs = append(errs, fmt.Errorf("change feed record %x: %w", it.Key(), err))
			continue
		}
		v := versions[string(suffix)]
		ofStored := v != nil && v.lsn == rec.LSN
		switch {
		case rec.CurrentIsLive && !(ofStored && v.logRefers):
			errs = append(errs, fmt.Errorf("change feed record %x takes the body of version %d of document %x, which is not stored as referred to", it.Key(), rec.LSN, suffix))
		case !rec.CurrentIsLive && ofStored && v.logRefers:
			errs = append(errs, fmt.Errorf("change feed record %x copies version %d of document %x, which says its record refers to it", it.Key(), rec.LSN, suffix))
		case ofStored && v.logOp != 0 && (rec.Op != v.logOp || rec.PreviousLSN != v.logPrev || rec.Second != v.feed.Second):
			errs = append(errs, fmt.Errorf("change feed record %x (op %d, previous %d, second %d) is not what version %d of document %x says (op %d, previous %d, second %d)",
				it.Key(), rec.Op, rec.PreviousLSN, rec.Second, rec.LSN, suffix, v.logOp, v.logPrev, v.feed.Second))
		}
		if ofStored {
			seen[v] = true
		}
	}
	if err := it.Err(); err != nil {
		errs = append(errs, err)
	}
	for suffix, v := range versions {
		if v.logRefers && v.logOp != 0 && v.feed.Second >= from && !seen[v] {
			errs = append(errs, fmt.Errorf("version %d of document %x has no change feed record", v.lsn, suffix))
		}
	}
	return errs
}

// checkTallies compares the stored usage and expiry tallies with what the
// documents call for.
func checkTallies(r kv.Reader, coll [8]byte, want usageDelta) []error {
	var errs []error
	got, err := readTally(r, collKey(pfxUsage, coll))
	if err != nil {
		return []error{fmt.Errorf("usage tally: %w", err)}
	}
	if got != want.total {
		errs = append(errs, fmt.Errorf("usage tally is %+v, the documents make %+v", got, want.total))
	}
	// Expiry tallies, summed over their rows (usage.go).
	p := collKey(pfxExpiryBucket, coll)
	bucketLen := len(p) + 1 + 8
	sums := map[string]tally{}
	var order []string
	it := r.Scan(p, kv.PrefixEnd(p), false)
	defer it.Close()
	for it.Next() {
		k := it.Key()
		if len(k) < bucketLen || !tallySuffix(len(k)-bucketLen) {
			errs = append(errs, fmt.Errorf("expiry tally key %x has a length of %d", k, len(k)))
			continue
		}
		t, err := decodeTally(it.Value())
		if err != nil {
			errs = append(errs, fmt.Errorf("expiry tally %x: %w", k, err))
			continue
		}
		b := string(k[:bucketLen])
		if _, ok := sums[b]; !ok {
			order = append(order, b)
		}
		sum := sums[b]
		sum.add(t)
		sums[b] = sum
	}
	if err := it.Err(); err != nil {
		errs = append(errs, err)
	}
	for _, k := range order {
		if t, w := sums[k], want.buckets[k]; t != w {
			errs = append(errs, fmt.Errorf("expiry tally %x is %+v, the documents make %+v", k, t, w))
		}
		delete(want.buckets, k)
	}
	for k, w := range want.buckets {
		errs = append(errs, fmt.Errorf("expiry tally %x is missing; the documents make %+v", k, w))
	}
	return errs
}

func equalKeySets(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	set := map[string]bool{}
	for _, k := range a {
		set[string(k)] = true
	}
	for _, k := range b {
		if !set[string(k)] {
			return false
		}
	}
	return true
}
