package engine

import "sync"

// recent is a map of what the engine last read of each container from a
// shared store (readahead.go, budget.go), safe for concurrent use and bounded:
// past maxRecent entries it starts over, and what it forgot is read again.
type recent[V any] struct {
	mu sync.RWMutex
	m  map[string]V
}

// maxRecent bounds a recent map.
const maxRecent = 4096

func newRecent[V any]() *recent[V] { return &recent[V]{m: map[string]V{}} }

// get returns key's value, if there is one.
func (r *recent[V]) get(key string) (V, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.m[key]
	return v, ok
}

// put sets key's value.
func (r *recent[V]) put(key string, v V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.m) >= maxRecent {
		clear(r.m)
	}
	r.m[key] = v
}
