//go:build !unix

package pebblekv

// allocChunk allocates n bytes on the Go heap, where no mmap is available.
func allocChunk(n int) ([]byte, error) { return make([]byte, n), nil }

// freeChunk leaves a chunk to the garbage collector.
func freeChunk([]byte) {}
