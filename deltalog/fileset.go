package deltalog

import (
	"iter"
	"maps"
	"math"
	"slices"
)

// fileSet maps logical files (path, DV id) to their action: a snapshot's live adds or its
// tombstones. It has three layers, each over the one below: sorted, the entries a
// checkpoint gave, as a slice ordered by key (a table's open builds no map of its 100k
// files: hashing them was a third of a warm open); base, a map of the keys changed since
// (a nil value: a key of sorted deleted); over, the keys changed since base (a nil value:
// deleted). Snapshots of successive versions share sorted and base, never modified once a
// derived set shares them. Deriving the next version's set copies the overlay alone, so a
// writer that appends batch after batch, or follows others' commits, pays for what changed,
// not for every live file. The overlay is merged into a new base once it holds more than
// about √n keys (minOverlay at least), and base into a new sorted slice once it holds more
// than a quarter of sorted's, so a lookup checks two maps and a binary search at most and
// the merges cost O(√n) per commit, amortized.
//
// A fileSet being built (a snapshot under construction) is owned by one goroutine; after
// that it is read-only.
type fileSet[V any] struct {
	sorted []fileEntry[V]
	base   map[fileKey]*V // nil value: the key is deleted from sorted
	over   map[fileKey]*V // nil value: the key is deleted from base or sorted
	n      int            // live entries
}

// fileEntry is one entry of a fileSet's sorted layer.
type fileEntry[V any] struct {
	k fileKey
	v *V
}

// minOverlay is the overlay size below which a derived set never merges.
const minOverlay = 256

// newFileSet is an empty set sized for n entries.
func newFileSet[V any](n int) fileSet[V] {
	return fileSet[V]{base: make(map[fileKey]*V, n)}
}

// newFileSetOf is a set of adds (a checkpoint's; of two adds of one key the later wins)
// held as a sorted slice, with room in its map for extra more. Our checkpoints list
// their adds in path order, so sorting is a check; others' are sorted once.
func newFileSetOf(adds []*Add, extra int) fileSet[Add] {
	es := make([]fileEntry[Add], len(adds))
	ordered := true
	for i, a := range adds {
		es[i] = fileEntry[Add]{k: fileKey{path: a.DecodedPath(), dvID: a.DeletionVector.UniqueID()}, v: a}
		if i > 0 && ordered && compareKeys(es[i-1].k, es[i].k) >= 0 {
			ordered = false
		}
	}
	if !ordered {
		slices.SortStableFunc(es, func(a, b fileEntry[Add]) int { return compareKeys(a.k, b.k) })
		// Of equal keys (kept in checkpoint order) the last wins.
		out := es[:0]
		for i, e := range es {
			if i+1 < len(es) && es[i+1].k == e.k {
				continue
			}
			out = append(out, e)
		}
		es = out
	}
	return fileSet[Add]{sorted: es, base: make(map[fileKey]*Add, extra), n: len(es)}
}

// Len is the number of entries.
func (f *fileSet[V]) Len() int { return f.n }

// inSorted returns the entry of k in the sorted layer.
func (f *fileSet[V]) inSorted(k fileKey) (*V, bool) {
	i, ok := slices.BinarySearchFunc(f.sorted, k, func(e fileEntry[V], k fileKey) int { return compareKeys(e.k, k) })
	if !ok {
		return nil, false
	}
	return f.sorted[i].v, true
}

// lower returns the entry of k below the overlay (nil when deleted or absent).
func (f *fileSet[V]) lower(k fileKey) *V {
	if v, ok := f.base[k]; ok {
		return v
	}
	v, _ := f.inSorted(k)
	return v
}

// Get returns the entry of k.
func (f *fileSet[V]) Get(k fileKey) (*V, bool) {
	if v, ok := f.over[k]; ok {
		return v, v != nil
	}
	v := f.lower(k)
	return v, v != nil
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
		if _, ok := f.inSorted(k); ok {
			f.base[k] = nil
		} else {
			delete(f.base, k)
		}
		return
	}
	if f.lower(k) != nil {
		f.over[k] = nil
	} else {
		delete(f.over, k)
	}
}

// All yields every entry: the sorted layer's first, in key order, then the others in no
// order.
func (f *fileSet[V]) All() iter.Seq2[fileKey, *V] {
	return func(yield func(fileKey, *V) bool) {
		for _, e := range f.sorted {
			if _, changed := f.base[e.k]; changed {
				continue
			}
			if _, changed := f.over[e.k]; changed {
				continue
			}
			if !yield(e.k, e.v) {
				return
			}
		}
		for k, v := range f.base {
			if _, changed := f.over[k]; changed || v == nil {
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

// Ordered returns every entry ordered by key: the sorted layer merged with the changed
// keys, sorted (a sort of the few, not of all).
func (f *fileSet[V]) Ordered() []fileEntry[V] {
	var changed []fileEntry[V]
	for k, v := range f.base {
		if _, again := f.over[k]; !again && v != nil {
			changed = append(changed, fileEntry[V]{k, v})
		}
	}
	for k, v := range f.over {
		if v != nil {
			changed = append(changed, fileEntry[V]{k, v})
		}
	}
	byKey := func(a, b fileEntry[V]) int { return compareKeys(a.k, b.k) }
	slices.SortFunc(changed, byKey)
	out := make([]fileEntry[V], 0, f.n)
	j := 0
	for _, e := range f.sorted {
		if _, ch := f.base[e.k]; ch {
			continue
		}
		if _, ch := f.over[e.k]; ch {
			continue
		}
		for j < len(changed) && compareKeys(changed[j].k, e.k) < 0 {
			out = append(out, changed[j])
			j++
		}
		out = append(out, e)
	}
	return append(out, changed[j:]...)
}

// derive returns a set equal to f that can be changed without changing f: it shares f's
// layers and copies its overlay, or, when the overlay has outgrown its bound, merges it
// into a new base (and that, when it has outgrown its own, into a new sorted layer).
func (f *fileSet[V]) derive() fileSet[V] {
	if len(f.over) <= max(minOverlay, int(math.Sqrt(float64(f.n)))) {
		over := make(map[fileKey]*V, len(f.over)+8)
		maps.Copy(over, f.over)
		return fileSet[V]{sorted: f.sorted, base: f.base, over: over, n: f.n}
	}
	if len(f.base)+len(f.over) > len(f.sorted)/4 {
		return fileSet[V]{sorted: f.Ordered(), base: map[fileKey]*V{}, over: map[fileKey]*V{}, n: f.n}
	}
	base := make(map[fileKey]*V, len(f.base)+len(f.over))
	maps.Copy(base, f.base)
	for k, v := range f.over {
		if _, ok := f.inSorted(k); v != nil || ok {
			base[k] = v
		} else {
			delete(base, k)
		}
	}
	return fileSet[V]{sorted: f.sorted, base: base, over: map[fileKey]*V{}, n: f.n}
}
