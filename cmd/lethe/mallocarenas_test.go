//go:build linux && cgo

package main

import (
	"os"
	"testing"
)

// TestMallocArenaLimit checks that the C constructor, which runs when the
// process is loaded, limited glibc to two malloc arenas, unless the
// environment tunes malloc itself.
func TestMallocArenaLimit(t *testing.T) {
	if os.Getenv("MALLOC_ARENA_MAX") != "" || os.Getenv("GLIBC_TUNABLES") != "" {
		t.Skip("malloc is tuned by the environment: the limit is left to it")
	}
	got, supported := mallocArenaLimit()
	if !supported {
		t.Skip("this C library has no M_ARENA_MAX")
	}
	if got != 2 {
		t.Errorf("malloc arena limit = %d, want 2", got)
	}
}
