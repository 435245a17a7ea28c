package pebblekv

import (
	"context"
	"testing"

	"github.com/lethe-db/lethe/kv"
)

// snapOf returns the snapshot a View's reader reads from.
func snapOf(t *testing.T, r kv.Reader) any {
	t.Helper()
	return r.(*reader).state.src
}

// TestViewsShareASnapshot checks that Views share one snapshot while nothing
// commits, that a commit lets it go (closed once its last View ends, and
// readable by that View until then), and that the next View takes a new one.
func TestViewsShareASnapshot(t *testing.T) {
	s := openMem(t)
	ctx := context.Background()
	put := func(v string) {
		t.Helper()
		if err := s.Update(ctx, func(tx kv.Tx) error { return tx.Put([]byte("k"), []byte(v)) }); err != nil {
			t.Fatal(err)
		}
	}
	get := func(r kv.Reader) string {
		t.Helper()
		v, err := r.Get([]byte("k"))
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	put("1")
	var first, second any
	var held *sharedSnap
	err := s.View(ctx, func(outer kv.Reader) error {
		first = snapOf(t, outer)
		held = s.shared.Load()
		if err := s.View(ctx, func(inner kv.Reader) error {
			second = snapOf(t, inner)
			return nil
		}); err != nil {
			return err
		}
		if first != second {
			t.Error("two Views with no commit between them took two snapshots")
		}
		put("2") // commits while this View still reads
		if s.shared.Load() != nil {
			t.Error("the shared snapshot is still shared after a commit")
		}
		if n := held.refs.Load(); n != 1 {
			t.Errorf("the let-go snapshot has %d references while one View reads it, want 1", n)
		}
		if v := get(outer); v != "1" {
			t.Errorf("the View read %q after a later commit, want its snapshot's 1", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := held.refs.Load(); n != 0 {
		t.Errorf("the let-go snapshot has %d references after its last View, want 0 (closed)", n)
	}
	if err := s.View(ctx, func(r kv.Reader) error {
		if snapOf(t, r) == first {
			t.Error("a View after a commit reused the snapshot from before it")
		}
		if v := get(r); v != "2" {
			t.Errorf("read %q, want 2", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	last := s.shared.Load()
	if last == nil || last.refs.Load() != 1 {
		t.Fatal("after the Views end the shared snapshot should be kept, with one reference")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := last.refs.Load(); n != 0 || s.shared.Load() != nil {
		t.Errorf("Close left the shared snapshot open (%d references)", n)
	}
}
