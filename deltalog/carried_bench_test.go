package deltalog

import (
	"testing"

	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
)

// BenchmarkCarriedCheckpoint builds, over and over, the checkpoint (its bytes, not written)
// of a facts table aged MSSQLCDC_BENCH_AGED_DAYS days (default 8) as BenchmarkFactsAged
// ages it (a facts commit every 10th minute, the maintenance every hour): from the kept
// snapshot, copying the remove row groups of a week of tombstones. It times what a
// carried checkpoint costs alone, where BenchmarkFactsAged's commits are too few to
// resolve a part of it. It reports the process CPU per checkpoint (which a shared
// machine's load inflates less than ns/op), the carried groups and the checkpoint's bytes.
// docs/performance.md § The facts side alone, "The aged table's checkpoint".
//
//	go test ./deltalog -run '^$' -bench CarriedCheckpoint -benchtime 2000x -count 3
func BenchmarkCarriedCheckpoint(b *testing.B) {
	aged := envInt(b, "MSSQLCDC_BENCH_AGED_DAYS", 8)
	c := &clock{t: longRunStart}
	tmp := b.TempDir()
	t := newLongRunTable(b, c, 10, nil)
	t.age(b, c, tmp, aged, true)
	snap := snapshotB(b, t.stream)
	base, err := snap.cpTombstones.carryBase()
	if err != nil || base == nil {
		b.Fatal("the aged table's kept snapshot has no checkpoint to carry from")
	}
	cutoff := c.now().Add(-DefaultTombstoneRetention).UnixMilli()
	carried0 := checkpointCounts.carried.Load()
	var size int64
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := benchmetrics.CPUTime()
	for b.Loop() {
		_, n, _, _, err := buildCheckpoint(snap, cutoff)
		if err != nil {
			b.Fatal(err)
		}
		size = n
	}
	b.StopTimer()
	b.ReportMetric(float64((benchmetrics.CPUTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	if checkpointCounts.carried.Load()-carried0 < int64(b.N) {
		b.Fatal("a checkpoint did not carry the remove row groups")
	}
	b.ReportMetric(float64(len(base.groups)), "groups")
	b.ReportMetric(float64(size)/1024, "KB/checkpoint")
}
