//go:build !linux

package pebblekv

import "github.com/cockroachdb/pebble/v2/vfs"

// allocate makes the empty file f size bytes long by writing zeros, so that
// its blocks are allocated.
func allocate(f vfs.File, size int64) error { return writeZeros(f, size) }
