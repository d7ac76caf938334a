package deltalog

import (
	"iter"
	"math"
)

// fileSet maps logical files (path, DV id) to their action: a snapshot's live adds or its
// tombstones. Snapshots of successive versions share it: each holds a base map, never
// modified once a derived set shares it, plus an overlay of the keys changed since the base
// (a nil value: deleted). Deriving the next version's set copies the overlay alone, so a
// writer that appends batch after batch, or follows others' commits, pays for what changed,
// not for every live file (a 100k-entry map costs ~25 ms to copy). The overlay is merged
// into a new base once it holds more than about √(base size) keys (minOverlay at least), so
// a lookup checks two maps at most and the merges cost O(√n) per commit, amortized.
//
// A fileSet being built (a snapshot under construction) is owned by one goroutine; after
// that it is read-only.
type fileSet[V any] struct {
	base map[fileKey]*V
	over map[fileKey]*V // nil value: the key is deleted from base
	n    int            // live entries
}

// minOverlay is the overlay size below which a derived set never merges.
const minOverlay = 256

// newFileSet is an empty set sized for n entries.
func newFileSet[V any](n int) fileSet[V] {
	return fileSet[V]{base: make(map[fileKey]*V, n)}
}

// Len is the number of entries.
func (f *fileSet[V]) Len() int { return f.n }

// Get returns the entry of k.
func (f *fileSet[V]) Get(k fileKey) (*V, bool) {
	if v, ok := f.over[k]; ok {
		return v, v != nil
	}
	v, ok := f.base[k]
	return v, ok
}

// Set makes v the entry of k.
func (f *fileSet[V]) Set(k fileKey, v *V) {
	if _, ok := f.Get(k); !ok {
		f.n++
	}
	if f.over == nil {
		f.base[k] = v
		return
	}
	f.over[k] = v
}

// Delete removes k's entry.
func (f *fileSet[V]) Delete(k fileKey) {
	if _, ok := f.Get(k); !ok {
		return
	}
	f.n--
	if f.over == nil {
		delete(f.base, k)
		return
	}
	if _, inBase := f.base[k]; inBase {
		f.over[k] = nil
	} else {
		delete(f.over, k)
	}
}

// All yields every entry, in no order.
func (f *fileSet[V]) All() iter.Seq2[fileKey, *V] {
	return func(yield func(fileKey, *V) bool) {
		for k, v := range f.base {
			if _, changed := f.over[k]; changed {
				continue
			}
			if !yield(k, v) {
				return
			}
		}
		for k, v := range f.over {
			if v != nil && !yield(k, v) {
				return
			}
		}
	}
}

// Keys yields every key, in no order.
func (f *fileSet[V]) Keys() iter.Seq[fileKey] {
	return func(yield func(fileKey) bool) {
		for k := range f.All() {
			if !yield(k) {
				return
			}
		}
	}
}

// derive returns a set equal to f that can be changed without changing f: it shares f's
// base and copies its overlay, or, when the overlay has outgrown its bound, merges both
// into a new base.
func (f *fileSet[V]) derive() fileSet[V] {
	if len(f.over) > max(minOverlay, int(math.Sqrt(float64(len(f.base))))) {
		base := make(map[fileKey]*V, f.n)
		for k, v := range f.All() {
			base[k] = v
		}
		return fileSet[V]{base: base, over: map[fileKey]*V{}, n: f.n}
	}
	over := make(map[fileKey]*V, len(f.over)+8)
	for k, v := range f.over {
		over[k] = v
	}
	return fileSet[V]{base: f.base, over: over, n: f.n}
}
