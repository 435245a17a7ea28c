package pebblekv

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// tableFS is the file system of an InMemory store. Pebble's vfs.NewMem keeps
// every file in a Go byte slice that grows by appending, so an in-memory
// store's sstables were most of the Go heap: the collector let the heap grow
// to twice them before collecting, and each appended copy was garbage.
// Measured after the issue-21 workloads with time to live and the change feed
// on: 90 MB of live sstables behind 227 MB of resident Go heap.
//
// tableFS keeps the sstables' contents outside the Go heap instead, in
// chunks of memory mapped from the operating system (where it has mmap) and
// returned to it when the table is removed and its last reader closes it.
// Every other file (the manifest, the options, markers), and every name,
// directory and lock, stays in the vfs.NewMem it wraps: an sstable has an
// empty file of its name there, so that listing, removal and renaming work as
// they do for other files, while its contents and size live here.
//
// Pebble writes an sstable once, sequentially, syncs and closes it, then only
// reads it; it never renames, links or reuses one. tableFS refuses what it
// does not support for sstables rather than doing it half.
type tableFS struct {
	vfs.FS // vfs.NewMem(): names, directories and all other files

	mu     sync.Mutex
	tables map[string]*table // by name as Pebble gives it
}

func newTableFS() *tableFS {
	return &tableFS{FS: vfs.NewMem(), tables: make(map[string]*table)}
}

// isTable reports whether name is an sstable's (or a blob file's): the files
// whose contents tableFS keeps.
func isTable(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

var errTableUnsupported = errors.New("pebblekv: in-memory tables are written once and never renamed, linked or reused")

// Create creates name empty; an sstable's contents go to a new table.
func (t *tableFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if !isTable(name) {
		return t.FS.Create(name, category)
	}
	f, err := t.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	tb := &table{}
	tb.refs.Store(2) // the name's and the writer's
	t.setTable(name, tb)
	return &tableFile{t: tb, name: name, write: true}, nil
}

// Open opens name for reading.
func (t *tableFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if !isTable(name) {
		return t.FS.Open(name, opts...)
	}
	t.mu.Lock()
	tb := t.tables[name]
	if tb != nil {
		tb.refs.Add(1) // under t.mu, so the name's reference is still held
	}
	t.mu.Unlock()
	if tb == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	return &tableFile{t: tb, name: name}, nil
}

// OpenReadWrite opens a file that is not an sstable for reading and writing.
func (t *tableFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	if isTable(name) {
		return nil, fmt.Errorf("open %s for writing: %w", name, errTableUnsupported)
	}
	return t.FS.OpenReadWrite(name, category, opts...)
}

// Remove removes name; an sstable's memory goes back once no reader has it
// open.
func (t *tableFS) Remove(name string) error {
	if err := t.FS.Remove(name); err != nil {
		return err
	}
	if isTable(name) {
		t.setTable(name, nil)
	}
	return nil
}

// RemoveAll removes name and everything under it.
func (t *tableFS) RemoveAll(name string) error {
	if err := t.FS.RemoveAll(name); err != nil {
		return err
	}
	dir := strings.TrimSuffix(name, "/") + "/"
	t.mu.Lock()
	var gone []*table
	for n, tb := range t.tables {
		if name == "" || name == "." || name == "/" || n == name || strings.HasPrefix(n, dir) {
			gone = append(gone, tb)
			delete(t.tables, n)
		}
	}
	t.mu.Unlock()
	for _, tb := range gone {
		tb.unref()
	}
	return nil
}

// setTable makes tb the table of name, or removes name's table when tb is
// nil, and lets go of the name's reference to the table it had.
func (t *tableFS) setTable(name string, tb *table) {
	t.mu.Lock()
	old := t.tables[name]
	if tb != nil {
		t.tables[name] = tb
	} else {
		delete(t.tables, name)
	}
	t.mu.Unlock()
	if old != nil {
		old.unref()
	}
}

// Rename renames a file that is not an sstable.
func (t *tableFS) Rename(oldname, newname string) error {
	if isTable(oldname) || isTable(newname) {
		return fmt.Errorf("rename %s: %w", oldname, errTableUnsupported)
	}
	return t.FS.Rename(oldname, newname)
}

// Link links a file that is not an sstable.
func (t *tableFS) Link(oldname, newname string) error {
	if isTable(oldname) || isTable(newname) {
		return fmt.Errorf("link %s: %w", oldname, errTableUnsupported)
	}
	return t.FS.Link(oldname, newname)
}

// ReuseForWrite reuses a file that is not an sstable.
func (t *tableFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if isTable(oldname) || isTable(newname) {
		return nil, fmt.Errorf("reuse %s: %w", oldname, errTableUnsupported)
	}
	return t.FS.ReuseForWrite(oldname, newname, category)
}

// Stat describes name, with an sstable's size as tableFS holds it.
func (t *tableFS) Stat(name string) (vfs.FileInfo, error) {
	if !isTable(name) {
		return t.FS.Stat(name)
	}
	t.mu.Lock()
	tb := t.tables[name]
	t.mu.Unlock()
	if tb == nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: os.ErrNotExist}
	}
	return fileInfo{name: name, size: tb.size()}, nil
}

// Unwrap returns nil: the wrapped file system holds no sstable contents, so
// nothing may go around tableFS to it.
func (t *tableFS) Unwrap() vfs.FS { return nil }

// release returns every table's memory, once the store has closed: Pebble
// then holds no file open, and nothing reads the tables again.
func (t *tableFS) release() {
	t.mu.Lock()
	all := t.tables
	t.tables = make(map[string]*table)
	t.mu.Unlock()
	for _, tb := range all {
		tb.free()
	}
}

// tableChunk is how much memory a table takes from the operating system at a
// time. Pages of a chunk that nothing was written to are never touched, so
// they take no memory.
const tableChunk = 1 << 20

// table is an sstable's contents: chunks of tableChunk bytes outside the Go
// heap, and the count of references to them (its name in tableFS, each open
// file). The last reference to go frees the chunks.
type table struct {
	refs atomic.Int32

	mu     sync.RWMutex
	chunks [][]byte
	n      int64
	freed  bool // the chunks went back: reads fail rather than touch them
}

func (tb *table) size() int64 {
	tb.mu.RLock()
	defer tb.mu.RUnlock()
	return tb.n
}

func (tb *table) unref() {
	if tb.refs.Add(-1) == 0 {
		tb.free()
	}
}

func (tb *table) free() {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.freed {
		return
	}
	tb.freed = true
	for _, c := range tb.chunks {
		freeChunk(c)
	}
	tb.chunks, tb.n = nil, 0
}

var (
	errTableFreed     = errors.New("pebblekv: in-memory table used after the store closed")
	errNegativeOffset = errors.New("pebblekv: negative offset in an in-memory table")
)

// writeAt writes p at off, growing the table as needed.
func (tb *table) writeAt(p []byte, off int64) error {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.freed {
		return errTableFreed
	}
	if off < 0 {
		return errNegativeOffset
	}
	end := off + int64(len(p))
	for int64(len(tb.chunks))*tableChunk < end {
		c, err := allocChunk(tableChunk)
		if err != nil {
			return err
		}
		tb.chunks = append(tb.chunks, c)
	}
	for len(p) > 0 {
		c := tb.chunks[off/tableChunk]
		n := copy(c[off%tableChunk:], p)
		p, off = p[n:], off+int64(n)
	}
	tb.n = max(tb.n, end)
	return nil
}

// readAt reads into p from off, as io.ReaderAt does.
func (tb *table) readAt(p []byte, off int64) (int, error) {
	tb.mu.RLock()
	defer tb.mu.RUnlock()
	if tb.freed {
		return 0, errTableFreed
	}
	if off < 0 {
		return 0, errNegativeOffset
	}
	if off >= tb.n {
		return 0, io.EOF
	}
	want := len(p)
	p = p[:min(int64(len(p)), tb.n-off)]
	read := 0
	for len(p) > 0 {
		c := tb.chunks[off/tableChunk]
		n := copy(p, c[off%tableChunk:])
		p, off, read = p[n:], off+int64(n), read+n
	}
	if read < want {
		return read, io.EOF
	}
	return read, nil
}

// tableFile is an open sstable: the writer Create returned, or a reader.
type tableFile struct {
	t     *table
	name  string
	write bool
	pos   int64 // Read's and Write's position

	closeOnce sync.Once
}

func (f *tableFile) Close() error {
	f.closeOnce.Do(f.t.unref)
	return nil
}

func (f *tableFile) Read(p []byte) (int, error) {
	n, err := f.t.readAt(p, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *tableFile) ReadAt(p []byte, off int64) (int, error) { return f.t.readAt(p, off) }

func (f *tableFile) Write(p []byte) (int, error) {
	n, err := f.WriteAt(p, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *tableFile) WriteAt(p []byte, off int64) (int, error) {
	if !f.write {
		return 0, fmt.Errorf("pebblekv: write %s: opened for reading", f.name)
	}
	if err := f.t.writeAt(p, off); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (f *tableFile) Preallocate(offset, length int64) error { return nil }

func (f *tableFile) Stat() (vfs.FileInfo, error) {
	return fileInfo{name: f.name, size: f.t.size()}, nil
}

// Sync, SyncTo and SyncData have nothing to do: the memory is the storage.
func (f *tableFile) Sync() error                       { return nil }
func (f *tableFile) SyncTo(length int64) (bool, error) { return true, nil }
func (f *tableFile) SyncData() error                   { return nil }
func (f *tableFile) Prefetch(offset, length int64) error {
	return nil
}
func (f *tableFile) Fd() uintptr { return vfs.InvalidFd }

// fileInfo describes an sstable, by its name (tableFS.Stat) or open
// (tableFile.Stat, whose name may be gone from the file system meanwhile).
type fileInfo struct {
	name string
	size int64
}

func (i fileInfo) Name() string           { return i.name[strings.LastIndex(i.name, "/")+1:] }
func (i fileInfo) Size() int64            { return i.size }
func (i fileInfo) Mode() fs.FileMode      { return 0o644 }
func (i fileInfo) ModTime() time.Time     { return time.Time{} }
func (i fileInfo) IsDir() bool            { return false }
func (i fileInfo) Sys() any               { return nil }
func (i fileInfo) DeviceID() vfs.DeviceID { return vfs.DeviceID{} }
