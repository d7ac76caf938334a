package deltalog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkLeafDecode times the checkpoint leaf decodes alone, on one checkpoint of
// 10,000 adds and a week of a bronze table's tombstones (11,600): "adds" decodes every
// row group's add leaves as an open does (decodeAdds), "removes-keys" the key fields of
// every row group of removes (removeRows.keyed: the carry rule, VACUUM), "removes-all"
// the keys then the rest (allFields: a merge, Snapshot.Tombstones). Besides ns/op it
// reports cpu-ns/op, the process's CPU time over the loop (getrusage), which a loaded
// machine inflates less than wall time; compare binaries alternately
// (docs/performance.md § One leaf loop for adds and removes).
//
//	go test ./deltalog/ -run '^$' -bench LeafDecode -benchtime 200x -benchmem
func BenchmarkLeafDecode(b *testing.B) {
	dir := b.TempDir()
	if err := writeWideTableWith(dir, 10_000, 11_600); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(CheckpointFileKey(1))))
	if err != nil {
		b.Fatal(err)
	}
	part, err := newCheckpointPart(data)
	if err != nil {
		b.Fatal(err)
	}
	pf, err := part.open(memory.DefaultAllocator)
	if err != nil {
		b.Fatal(err)
	}
	defer pf.Close()
	var addLeaves []int
	for i := 0; i < pf.MetaData().Schema.NumColumns(); i++ {
		if isAddLeaf(pf.MetaData().Schema.Column(i).ColumnPath()) {
			addLeaves = append(addLeaves, i)
		}
	}
	l := &lazyTombstones{}
	l.add(part)
	groups, err := l.rowGroups()
	if err != nil || len(groups) == 0 {
		b.Fatalf("%d row groups of removes, %v", len(groups), err)
	}
	removes := func(all bool) func() (int, error) {
		return func() (int, error) { return decodeRemoveGroups(part, groups, all) }
	}
	for _, c := range []struct {
		name   string
		want   int
		decode func() (int, error)
	}{
		{"adds", 10_000, func() (int, error) {
			n := 0
			for rg := range pf.NumRowGroups() {
				adds, err := decodeAdds(pf, rg, addLeaves)
				if err != nil {
					return 0, err
				}
				for _, a := range adds {
					if a != nil {
						n++
					}
				}
			}
			return n, nil
		}},
		{"removes-keys", 11_600, removes(false)},
		{"removes-all", 11_600, removes(true)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if got, err := c.decode(); err != nil || got != c.want {
					b.Fatalf("%d decoded (%v), want %d", got, err, c.want)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
