package deltalog

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// A fileSet, however its layers stand (a checkpoint's sorted adds, unsorted and with a
// repeated key; changes in base and overlay; derived sets merging them), holds what a
// plain map given the same changes holds, and a set it was derived from is unchanged.
func TestFileSetMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	key := func(i int) fileKey {
		k := fileKey{path: fmt.Sprintf("f-%04d", i)}
		if i%5 == 0 {
			k.dvID = "dv" // the same path with a DV is another logical file
		}
		return k
	}
	for _, sorted := range []bool{true, false} {
		t.Run(fmt.Sprintf("sorted=%v", sorted), func(t *testing.T) {
			var adds []*Add
			model := map[fileKey]*Add{}
			for i := range 2000 {
				a := &Add{Path: key(i).path, Size: int64(i)}
				if key(i).dvID != "" {
					a.DeletionVector = &DeletionVector{StorageType: "u", PathOrInlineDv: "dv"}
				}
				adds = append(adds, a)
			}
			if !sorted {
				rng.Shuffle(len(adds), func(i, j int) { adds[i], adds[j] = adds[j], adds[i] })
				again := *adds[7]
				again.Size = -1
				adds = append(adds, &again) // the later add of a key wins
			}
			for _, a := range adds {
				model[fileKey{path: a.Path, dvID: a.DeletionVector.UniqueID()}] = a
			}
			f := newFileSetOf(adds, 0)
			check := func(step string, f *fileSet[Add], model map[fileKey]*Add) {
				t.Helper()
				if f.Len() != len(model) {
					t.Fatalf("%s: %d entries, want %d", step, f.Len(), len(model))
				}
				got := map[fileKey]*Add{}
				for k, v := range f.All() {
					if _, dup := got[k]; dup {
						t.Fatalf("%s: %v yielded twice", step, k)
					}
					got[k] = v
				}
				if !maps.Equal(got, model) {
					t.Fatalf("%s: All() differs from the model", step)
				}
				ordered := f.Ordered()
				keys := slices.SortedFunc(maps.Keys(model), compareKeys)
				if len(ordered) != len(keys) {
					t.Fatalf("%s: Ordered() has %d, want %d", step, len(ordered), len(keys))
				}
				for i, e := range ordered {
					if e.k != keys[i] || e.v != model[e.k] {
						t.Fatalf("%s: Ordered()[%d] = %v, want %v", step, i, e.k, keys[i])
					}
				}
				for i := range 2600 {
					v, ok := f.Get(key(i))
					if w, wok := model[key(i)]; ok != wok || v != w {
						t.Fatalf("%s: Get(%v) = %v, %v", step, key(i), v, ok)
					}
				}
			}
			check("open", &f, model)
			// Changes while building (no overlay), then many derived versions.
			change := func(f *fileSet[Add], model map[fileKey]*Add, n int) {
				for range n {
					k := key(rng.IntN(2600))
					if rng.IntN(2) == 0 {
						a := &Add{Path: k.path, Size: rng.Int64()}
						f.Set(k, a)
						model[k] = a
					} else {
						f.Delete(k)
						delete(model, k)
					}
				}
			}
			change(&f, model, 300)
			check("built", &f, model)
			for v := range 40 {
				before, beforeModel := f, maps.Clone(model)
				next := f.derive()
				change(&next, model, rng.IntN(200))
				check(fmt.Sprintf("version %d", v), &next, model)
				check(fmt.Sprintf("version %d's parent", v), &before, beforeModel)
				f = next
			}
		})
	}
}
