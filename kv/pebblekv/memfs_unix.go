//go:build unix

package pebblekv

import (
	"fmt"
	"syscall"
)

// allocChunk maps n bytes of zeroed memory from the operating system, outside
// the Go heap; its pages take memory only once written.
func allocChunk(n int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("pebblekv: map %d bytes for an in-memory table: %w", n, err)
	}
	return b, nil
}

// freeChunk returns a chunk from allocChunk to the operating system.
func freeChunk(b []byte) {
	_ = syscall.Munmap(b) // fails only for a chunk allocChunk did not map
}
