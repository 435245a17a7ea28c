package pebblekv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/lethe-db/lethe/kv"
)

// TestTableFS checks tableFS as Pebble uses it: an sstable written once
// across chunk boundaries, read back at any offset, removed while a reader
// still has it open, and refused what tableFS does not support; other files
// go to the wrapped file system.
func TestTableFS(t *testing.T) {
	fs := newTableFS()
	if err := fs.MkdirAll("db", 0o755); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 2*tableChunk+tableChunk/2+7)
	for i := range want {
		want[i] = byte(i*7 + i/tableChunk)
	}
	w, err := fs.Create("db/000001.sst", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	for rest, step := want, 1; len(rest) > 0; step = step*3 + 1 { // uneven writes
		n := min(step, len(rest))
		if m, err := w.Write(rest[:n]); m != n || err != nil {
			t.Fatalf("write %d bytes: %d, %v", n, m, err)
		}
		rest = rest[n:]
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := fs.Stat("db/000001.sst"); err != nil || fi.Size() != int64(len(want)) || fi.Name() != "000001.sst" || fi.IsDir() {
		t.Fatalf("stat: %v, %v; want the file 000001.sst of size %d", fi, err, len(want))
	}
	if names, err := fs.List("db"); err != nil || !slices.Contains(names, "000001.sst") {
		t.Fatalf("list: %v, %v", names, err)
	}

	r, err := fs.Open("db/000001.sst")
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int{0, 1, tableChunk - 3, tableChunk, 2*tableChunk - 1, len(want) - 10} {
		got := make([]byte, 10)
		if n, err := r.ReadAt(got, int64(off)); n != 10 || err != nil || !bytes.Equal(got, want[off:off+10]) {
			t.Fatalf("ReadAt %d: %d, %v", off, n, err)
		}
	}
	got := make([]byte, 20)
	if n, err := r.ReadAt(got, int64(len(want)-5)); n != 5 || err != io.EOF || !bytes.Equal(got[:5], want[len(want)-5:]) {
		t.Fatalf("ReadAt across the end: %d, %v; want 5, EOF", n, err)
	}
	if n, err := r.ReadAt(got, int64(len(want))); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt at the end: %d, %v; want 0, EOF", n, err)
	}
	all, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(all, want) {
		t.Fatalf("Read to the end: %d bytes, %v", len(all), err)
	}
	if fi, err := r.Stat(); err != nil || fi.Size() != int64(len(want)) || fi.Name() != "000001.sst" {
		t.Fatalf("stat of the open file: %v, %v", fi, err)
	}
	if _, err := r.Write([]byte("x")); err == nil {
		t.Fatal("wrote to a table opened for reading")
	}
	if _, err := r.ReadAt(got, -1); !errors.Is(err, errNegativeOffset) {
		t.Fatalf("ReadAt -1: %v, want errNegativeOffset", err)
	}

	// Removed while open: the reader still reads, and the memory goes back
	// when it closes.
	tb := fs.tables["db/000001.sst"]
	if err := fs.Remove("db/000001.sst"); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Open("db/000001.sst"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("open after remove: %v, want not exist", err)
	}
	if _, err := fs.Stat("db/000001.sst"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stat after remove: %v, want not exist", err)
	}
	if n, err := r.ReadAt(got[:10], 5); n != 10 || err != nil || !bytes.Equal(got[:10], want[5:15]) {
		t.Fatalf("read of a removed table still open: %d, %v", n, err)
	}
	if tb.freed {
		t.Fatal("freed while a reader had it open")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	_ = r.Close() // a second close must not free anything twice
	if !tb.freed || tb.refs.Load() != 0 {
		t.Fatalf("after the last close: freed %v, refs %d", tb.freed, tb.refs.Load())
	}

	for name, op := range map[string]func() error{
		"rename": func() error { return fs.Rename("db/000002.sst", "db/000003.sst") },
		"link":   func() error { return fs.Link("db/000002.sst", "db/000003.sst") },
		"reuse": func() error {
			_, err := fs.ReuseForWrite("db/000002.sst", "db/000003.sst", vfs.WriteCategoryUnspecified)
			return err
		},
		"open for writing": func() error {
			_, err := fs.OpenReadWrite("db/000002.sst", vfs.WriteCategoryUnspecified)
			return err
		},
	} {
		if err := op(); !errors.Is(err, errTableUnsupported) {
			t.Errorf("%s of a table: %v, want errTableUnsupported", name, err)
		}
	}

	// Other files are the wrapped file system's, contents and all.
	m, err := fs.Create("db/MANIFEST-000001", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Write([]byte("manifest")); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if err := fs.Rename("db/MANIFEST-000001", "db/MANIFEST-000002"); err != nil {
		t.Fatal(err)
	}
	if fi, err := fs.FS.Stat("db/MANIFEST-000002"); err != nil || fi.Size() != 8 {
		t.Fatalf("manifest in the wrapped file system: %v, %v", fi, err)
	}
}

// TestTableFSReplaceAndRelease checks that creating a table over an existing
// one frees the old one's memory, that RemoveAll frees the tables under a
// directory, and that release frees what is left, after
// which reads fail instead of touching freed memory.
func TestTableFSReplaceAndRelease(t *testing.T) {
	fs := newTableFS()
	write := func(name, s string) *table {
		t.Helper()
		f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return fs.tables[name]
	}
	old := write("a.sst", "old")
	fresh := write("a.sst", "new contents")
	if !old.freed || fresh.freed {
		t.Fatalf("after creating over a table: old freed %v, new freed %v", old.freed, fresh.freed)
	}
	r, err := fs.Open("a.sst")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "new contents" {
		t.Fatalf("read %q, %v", got, err)
	}
	if err := fs.MkdirAll("sub", 0o755); err != nil {
		t.Fatal(err)
	}
	sub := write("sub/c.sst", "in a directory")
	if err := fs.RemoveAll("sub"); err != nil {
		t.Fatal(err)
	}
	if !sub.freed || fs.tables["sub/c.sst"] != nil {
		t.Fatal("RemoveAll left a table under the directory")
	}
	other := write("b.blob", strings.Repeat("b", 100))
	fs.release()
	if !fresh.freed || !other.freed {
		t.Fatal("release left a table's memory")
	}
	if _, err := r.ReadAt(make([]byte, 4), 0); !errors.Is(err, errTableFreed) {
		t.Fatalf("read after release: %v, want errTableFreed", err)
	}
	r.Close()
}

// TestInMemoryTablesOutsideHeap checks, with real Pebble, that an in-memory
// store's flushed sstables are held by tableFS and that the wrapped file
// system holds only their empty names; and that reads of the flushed data
// come back whole.
func TestInMemoryTablesOutsideHeap(t *testing.T) {
	s := openMem(t)
	// Values that do not compress, each its own.
	rng := rand.New(rand.NewPCG(1, 2))
	values := make([][]byte, 2000)
	err := s.Update(context.Background(), func(tx kv.Tx) error {
		for j := range values {
			values[j] = make([]byte, 500)
			for i := range values[j] {
				values[j][i] = byte(rng.Uint32())
			}
			if err := tx.Put(fmt.Appendf(nil, "k%06d", j), values[j]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	s.mem.mu.Lock()
	var held int64
	var names []string
	for name, tb := range s.mem.tables {
		held += tb.size()
		names = append(names, name)
	}
	s.mem.mu.Unlock()
	if len(names) == 0 || held < 2000*500 {
		t.Fatalf("tableFS holds %d tables of %d bytes after flushing 1 MB", len(names), held)
	}
	for _, name := range names {
		if fi, err := s.mem.FS.Stat(name); err != nil || fi.Size() != 0 {
			t.Fatalf("%s in the wrapped file system: %v, %v; want an empty file", name, fi, err)
		}
	}
	err = s.View(context.Background(), func(r kv.Reader) error {
		for j := range 2000 {
			v, err := r.Get(fmt.Appendf(nil, "k%06d", j))
			if err != nil {
				return err
			}
			if !bytes.Equal(v, values[j]) {
				return fmt.Errorf("k%06d: %d bytes, not the value written", j, len(v))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
