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
	want := map[string][]byte{} // every key the documents own -> the suffix it must hold
	p := collKey(pfxDoc, coll)
	it := r.Scan(p, kv.PrefixEnd(p), false)
	for it.Next() {
		suffix := append([]byte(nil), it.Key()[len(p):]...)
		rec, err := decodeDoc(it.Value())
		if err != nil {
			errs = append(errs, fmt.Errorf("document %x: %w", suffix, err))
			continue
		}
		o, err := jsonv.ParseObject(rec.json)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %x: stored JSON is invalid: %w", suffix, err))
			continue
		}
		// The manifest must list exactly the entries the body and the policy call for.
		manifest, err := manifestFor(l, rec.seq, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %x: %w", suffix, err))
			continue
		}
		owned, err := ownedKeys(r, l, &rec)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %x: %w", suffix, err))
			continue
		}
		fixed := fixedKeys(l, &rec)
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
	for _, pfx := range []byte{pfxOrder, pfxByTS, pfxByExpiry, pfxUnique, pfxIndex} {
		p := collKey(pfx, coll)
		it := r.Scan(p, kv.PrefixEnd(p), false)
		for it.Next() {
			k := string(it.Key())
			held := it.Value()
			if pfx == pfxOrder || pfx == pfxByTS || pfx == pfxByExpiry {
				s, _, err := decodeOrderValue(held, nil)
				if err != nil {
					errs = append(errs, fmt.Errorf("order entry %q: %w", k, err))
					continue
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
