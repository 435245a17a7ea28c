package pebblekv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/lethe-db/lethe/kv"
)

// TestOwnWritesWithoutIndex walks a transaction through every way it reads
// after writing, on the plain batch and after the batch became indexed: a
// read sees the transaction's own last write of a key, and the database for
// keys it has not written, whichever way the batch is kept.
func TestOwnWritesWithoutIndex(t *testing.T) {
	s := openMem(t)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx kv.Tx) error {
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			if err := tx.Put([]byte(k), []byte("old-"+k)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	get := func(tx kv.Tx, key string) string {
		t.Helper()
		v, err := tx.Get([]byte(key))
		if errors.Is(err, kv.ErrNotFound) {
			return "<absent>"
		}
		if err != nil {
			t.Fatalf("Get(%s): %v", key, err)
		}
		return string(v)
	}
	check := func(tx kv.Tx, stage string, want map[string]string) {
		t.Helper()
		for k, w := range want {
			if got := get(tx, k); got != w {
				t.Errorf("%s: Get(%s) = %q, want %q", stage, k, got, w)
			}
		}
	}
	indexed := func(t kv.Tx) bool { return t.(*tx).batch.Indexed() }

	err := s.Update(ctx, func(tx kv.Tx) error {
		check(tx, "before any write", map[string]string{"a": "old-a", "z": "<absent>"})
		if indexed(tx) {
			t.Error("a transaction that has only read indexed its batch")
		}
		steps := []error{
			tx.Put([]byte("a"), []byte("new-a")),
			tx.Put([]byte("a"), []byte("newer-a")), // the last write wins
			tx.Delete([]byte("b")),
			tx.DeleteSized([]byte("c"), 7),
			tx.Put([]byte("z"), []byte("new-z")),
			tx.Delete([]byte("z")),
			tx.Put([]byte("y"), []byte{}), // empty, not absent
		}
		if err := errors.Join(steps...); err != nil {
			return err
		}
		check(tx, "plain batch", map[string]string{
			"a": "newer-a", "b": "<absent>", "c": "<absent>", "d": "old-d", "z": "<absent>", "y": "",
		})
		if v, err := tx.Get([]byte("a")); err == nil {
			v[0] = 'X' // the caller owns what Get returns
			if got := get(tx, "a"); got != "newer-a" {
				t.Errorf("changing a returned value changed the batch: %q", got)
			}
		}
		if indexed(tx) {
			t.Error("point reads of a small batch indexed it")
		}
		// A scan must see the writes: the batch becomes indexed, and every
		// later read goes through it.
		var keys []string
		it := tx.Scan([]byte("a"), []byte("zz"), false)
		for it.Next() {
			keys = append(keys, string(it.Key()))
		}
		if err := it.Close(); err != nil {
			return err
		}
		if got, want := fmt.Sprint(keys), "[a d e y]"; got != want {
			t.Errorf("scan after writes = %s, want %s", got, want)
		}
		if !indexed(tx) {
			t.Error("a scan after writes did not index the batch")
		}
		if err := tx.Put([]byte("e"), []byte("new-e")); err != nil {
			return err
		}
		check(tx, "indexed batch", map[string]string{"a": "newer-a", "b": "<absent>", "e": "new-e", "d": "old-d"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A range deletion in a plain batch: the next point read indexes it, so
	// that the deletion covers the keys it spans.
	err = s.Update(ctx, func(tx kv.Tx) error {
		if err := tx.Put([]byte("b"), []byte("again-b")); err != nil {
			return err
		}
		if err := tx.DeleteRange([]byte("a"), []byte("e")); err != nil {
			return err
		}
		check(tx, "after a range deletion", map[string]string{"a": "<absent>", "b": "<absent>", "d": "<absent>", "e": "new-e"})
		if !indexed(tx) {
			t.Error("a read after a range deletion did not index the batch")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A batch too large to look through: the read indexes it.
	err = s.Update(ctx, func(tx kv.Tx) error {
		for i := range maxLinearOps + 1 {
			if err := tx.Put(fmt.Appendf(nil, "k%05d", i), []byte("v")); err != nil {
				return err
			}
		}
		check(tx, "large batch", map[string]string{"k00000": "v", "e": "new-e", "k99999": "<absent>"})
		if !indexed(tx) {
			t.Error("a read of a batch of more than maxLinearOps writes did not index it")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Reads between many writes (a transactional batch of many documents):
	// once looking through the writes has cost more than indexing them
	// would have, the batch is indexed; every read is right either way.
	err = s.Update(ctx, func(tx kv.Tx) error {
		for i := range 200 {
			key := fmt.Appendf(nil, "m%03d", i)
			if err := tx.Put(key, []byte("v")); err != nil {
				return err
			}
			if got := get(tx, string(key)); got != "v" {
				t.Fatalf("read back %s = %q", key, got)
			}
			if got := get(tx, "e"); got != "new-e" {
				t.Fatalf("after %d writes, e = %q", i+1, got)
			}
		}
		if !indexed(tx) {
			t.Error("reads between 200 writes never indexed the batch")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Everything above committed as the transactions saw it.
	if err := s.View(ctx, func(r kv.Reader) error {
		for k, want := range map[string]string{"a": "", "e": "new-e", "y": "", "k00000": "v"} {
			v, err := r.Get([]byte(k))
			if want == "" && k != "y" {
				if !errors.Is(err, kv.ErrNotFound) {
					t.Errorf("after commit, %s = %q, %v; want absent", k, v, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(v, []byte(want)) {
				t.Errorf("after commit, %s = %q, %v; want %q", k, v, err, want)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
