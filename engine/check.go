package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
		var colls []*layout
		for it.Next() {
			var c collRecord
			if err := json.Unmarshal(it.Value(), &c); err != nil {
				errs = append(errs, fmt.Errorf("container record %q: %w", it.Key(), err))
				continue
			}
			colls = append(colls, c.layout())
		}
		if err := it.Close(); err != nil {
			return err
		}
		for _, coll := range colls {
			errs = append(errs, checkContainer(r, coll)...)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return errors.Join(errs...)
}

func checkContainer(r kv.Reader, l *layout) []error {
	coll := l.rid
	var errs []error
	want := map[string][]byte{} // every secondary key the documents own -> suffix
	p := collKey(pfxDoc, coll)
	it := r.Scan(p, kv.PrefixEnd(p), false)
	for it.Next() {
		suffix := append([]byte(nil), it.Key()[len(p):]...)
		rec, err := decodeDoc(it.Value())
		if err != nil {
			errs = append(errs, fmt.Errorf("document %x: %w", suffix, err))
			continue
		}
		if !json.Valid(rec.json) {
			errs = append(errs, fmt.Errorf("document %x: stored JSON is invalid", suffix))
		}
		keys, err := secondaryKeys(l, &rec)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %x: %w", suffix, err))
			continue
		}
		for _, k := range keys {
			want[string(k)] = suffix
		}
	}
	if err := it.Close(); err != nil {
		return append(errs, err)
	}
	for _, pfx := range []byte{pfxOrder, pfxByTS, pfxByExpiry, pfxUnique} {
		p := collKey(pfx, coll)
		it := r.Scan(p, kv.PrefixEnd(p), false)
		for it.Next() {
			k := string(it.Key())
			suffix, ok := want[k]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("index entry %q belongs to no stored document version", k))
			case !bytes.Equal(suffix, it.Value()):
				errs = append(errs, fmt.Errorf("index entry %q points at %x, want %x", k, it.Value(), suffix))
			}
			delete(want, k)
		}
		if err := it.Close(); err != nil {
			return append(errs, err)
		}
	}
	for k, suffix := range want {
		errs = append(errs, fmt.Errorf("document %x lacks its index entry %q", suffix, k))
	}
	return errs
}
