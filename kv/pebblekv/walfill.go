package pebblekv

import (
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A synced append that grows a file, or that writes into blocks
// preallocated and never written, makes the file system commit the file's
// metadata with the data (its new size, the blocks now written): on ext4, a
// journal commit with every fdatasync. A synced overwrite of blocks the file
// already holds, within its size, syncs the data alone. On this project's
// machine that is about a third less CPU and time a sync (BENCHMARKS.md,
// thirty-fifth session).
//
// Pebble reuses the logs it no longer needs, so its later logs are already
// written end to end; but a fresh store's logs, the logs after every
// restart (Pebble reuses only the logs of the running process), and reused
// logs shorter than the memtables have since grown are appended to, one
// metadata commit per sync, for the first tens of megabytes a process
// writes: all of a test suite's or a development server's life.
//
// walFillFS keeps every write-ahead log's blocks written ahead of its
// appends, walFillStep at a time: one metadata commit per step instead of
// one per sync. Pebble reads a log's zeroed tail as the end of the log, as
// it reads a preallocated one or a reused log's old records (a zeroed chunk
// with nothing valid after it is the log's clean or torn end).

// walFillStep is how far ahead of its appends a write-ahead log is written
// with zeros. With 1 KB documents a step holds a few hundred creates: one
// sync in some hundreds pays for the metadata and the step's megabyte.
const walFillStep = 1 << 20

// walZeros is the source of the fills' zeros, never written.
var walZeros [256 << 10]byte

// walFillFS wraps the file system under a store on disk: the write-ahead
// logs it creates or reuses are walFillFiles; everything else passes through.
type walFillFS struct{ vfs.FS }

// Unwrap implements vfs.FS.
func (fs walFillFS) Unwrap() vfs.FS { return fs.FS }

// Create implements vfs.FS.
func (fs walFillFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || !isWAL(name) {
		return f, err
	}
	return &walFillFile{File: f}, nil
}

// ReuseForWrite implements vfs.FS: a reused log is written again from its
// start, and its old size is already written.
func (fs walFillFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil || !isWAL(newname) {
		return f, err
	}
	st, err := f.Stat()
	if err != nil {
		return f, nil // unfilled: the log is written as Pebble writes it
	}
	return &walFillFile{File: f, end: st.Size()}, nil
}

// walFillFile is a write-ahead log that Pebble writes in order with Write,
// from its start. Before an append would pass the written end of the file,
// the file is written with zeros up to the step past the append.
type walFillFile struct {
	vfs.File

	mu      sync.Mutex
	pos     int64 // where the next Write goes
	end     int64 // the file's size: every block before it is written
	stopped bool  // a fill failed (no space, say): appends grow the file as they would have
}

// Write implements io.Writer.
func (f *walFillFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := f.pos + int64(len(p)); want > f.end && !f.stopped {
		f.fill((want + walFillStep) / walFillStep * walFillStep)
	}
	n, err := f.File.Write(p)
	f.pos += int64(n)
	f.end = max(f.end, f.pos)
	return n, err
}

// WriteAt implements io.WriterAt. Pebble writes its logs with Write alone;
// a write elsewhere is counted all the same, so that no fill clears it.
func (f *walFillFile) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.File.WriteAt(p, off)
	f.end = max(f.end, off+int64(n))
	return n, err
}

// fill writes zeros from the file's end up to target. The store's space
// guard sits under it, so a fill meets a full disk as the log's appends do
// (it releases the ballast, or waits for space). A fill that fails all the
// same stops there, and for good, and fails no write: the zeros only save
// time, and the append that follows reports whatever is wrong itself.
func (f *walFillFile) fill(target int64) {
	for f.end < target {
		n, err := f.File.WriteAt(walZeros[:min(target-f.end, int64(len(walZeros)))], f.end)
		f.end += int64(n)
		if err != nil {
			f.stopped = true
			return
		}
	}
}
