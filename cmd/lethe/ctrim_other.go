//go:build !(linux && cgo)

package main

// releaseCMemory does nothing where Lethe is built without cgo on Linux:
// only glibc's malloc is known to keep freed memory that malloc_trim returns.
func releaseCMemory() {}
