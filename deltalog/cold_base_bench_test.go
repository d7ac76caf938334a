package deltalog

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// decodeRemoveGroups decodes the remove row groups groups of part afresh, each as a cold
// run does: the key fields (keyed), then with all true the rest (allFields). It returns
// how many removes they hold.
func decodeRemoveGroups(part *checkpointPart, groups []*removeRows, all bool) (int, error) {
	n := 0
	for _, g := range groups {
		rr := &removeRows{part: part, rg: g.rg}
		rs, err := rr.keyed()
		if all {
			rs, err = rr.allFields()
		}
		if err != nil {
			return 0, err
		}
		n += len(rs)
	}
	return n, nil
}

// BenchmarkColdTombstoneBase measures what a cold maintenance run's checkpoint could take
// from the footer of the checkpoint it read instead of decoding its remove rows
// (docs/decisions/0014-checkpoint-tombstones.md, follow-up "A carry base from the footer
// alone"): it ages a facts table as BenchmarkFactsAged does (MSSQLCDC_BENCH_AGED_DAYS,
// default 8), then runs maintainErr's sequence from a new Table and logs, for the
// checkpoint that run read, each remove row group's path and deletionTimestamp statistics,
// how many of the keys the carry rule checks fall inside some group's path range, and the
// time to parse the footer and to decode the remove rows with all their leaves, with the
// leaves VACUUM reads (path, deletionTimestamp, deletionVector) and with the path alone.
// It fails when VACUUM's snapshot does not share the checkpoint's tombstones, or a remove
// row group lacks path or deletionTimestamp statistics.
//
// Since tombstones are decoded by what reads them (checkpoint_removes.go): it also logs
// the footers the cold run parsed (the open's, and any its log clean-up read) and the
// remove row groups it decoded in full, and times, with their allocation, the two decodes
// the cold run makes of every group, through Arrow as before (every remove leaf) and from
// the leaves: the key fields (keyed: the carry rule, VACUUM), then the rest (allFields:
// what a merge or Snapshot.Tombstones adds).
func BenchmarkColdTombstoneBase(b *testing.B) {
	aged := envInt(b, "MSSQLCDC_BENCH_AGED_DAYS", 8)
	for range b.N {
		b.StopTimer()
		c := &clock{t: longRunStart}
		tmp := b.TempDir()
		old := newLongRunTable(b, c, 10, nil)
		old.age(b, c, tmp, aged, false)
		// maintainErr's sequence: a cold Table compacts, checkpoints, then VACUUM reads
		// its snapshot again.
		ctx := context.Background()
		parsed0, merged0 := footerParses.Load(), checkpointCounts.merged.Load()
		tbl := old.open()
		if _, err := tbl.Compact(ctx, CompactOptions{}); err != nil {
			b.Fatal(err)
		}
		snap := snapshotB(b, tbl)
		data, err := tbl.Store().GetRange(ctx, CheckpointFileKey(snap.CheckpointVersion()), 0, -1)
		if err != nil {
			b.Fatal(err)
		}
		lt := snap.cpTombstones
		if lt.decoded() {
			b.Fatal("the open decoded the tombstones")
		}
		if err := WriteCheckpoint(ctx, snap); err != nil {
			b.Fatal(err)
		}
		if vs := snapshotB(b, tbl); vs.cpTombstones != lt || !lt.decoded() {
			b.Fatalf("VACUUM's snapshot does not share the checkpoint's decoded tombstones (same %v, decoded %v)", vs.cpTombstones == lt, lt.decoded())
		}
		if _, err := tbl.CleanupLog(ctx, CleanupOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := tbl.Vacuum(ctx, VacuumOptions{}); err != nil {
			b.Fatal(err)
		}
		groups, err := lt.rowGroups()
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("the cold run (open, compaction, checkpoint, log clean-up, VACUUM) parsed %d footers; of the %d remove row groups it read it decoded %d in full (%d merged)",
			footerParses.Load()-parsed0, len(groups), lt.fullyDecoded(), checkpointCounts.merged.Load()-merged0)

		pf, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		md := pf.MetaData()
		pathCol, tsCol := md.Schema.ColumnIndexByName("remove.path"), md.Schema.ColumnIndexByName("remove.deletionTimestamp")
		type span struct{ lo, hi string }
		var ranges []span
		var rows int64
		for rg := range pf.NumRowGroups() {
			r := md.RowGroup(rg)
			pc, err1 := r.ColumnChunk(pathCol)
			tc, err2 := r.ColumnChunk(tsCol)
			if err1 != nil || err2 != nil {
				b.Fatal(err1, err2)
			}
			ps, err1 := pc.Statistics()
			ts, err2 := tc.Statistics()
			if err1 != nil || err2 != nil || ps == nil || ts == nil {
				b.Fatalf("row group %d: no statistics (%v, %v)", rg, err1, err2)
			}
			if ps.NullCount() == r.NumRows() {
				continue // not a group of removes
			}
			p, t := ps.(*metadata.ByteArrayStatistics), ts.(*metadata.Int64Statistics)
			if !p.HasMinMax() || !t.HasMinMax() {
				b.Fatalf("row group %d of removes: path min/max %v, deletionTimestamp min/max %v", rg, p.HasMinMax(), t.HasMinMax())
			}
			rows += r.NumRows()
			ranges = append(ranges, span{string(p.Min()), string(p.Max())})
			b.Logf("remove row group %d: %d rows, deletionTimestamp [%d, %d] (nulls %d), path [%.24q, %.24q]",
				rg, r.NumRows(), t.Min(), t.Max(), t.NullCount(), p.Min(), p.Max())
		}
		keys, inside, hits := 0, 0, 0
		check := func(k fileKey) {
			keys++
			n := 0
			for _, r := range ranges {
				if k.path >= r.lo && k.path <= r.hi {
					n++
				}
			}
			hits += n
			if n > 0 {
				inside++
			}
		}
		for k := range snap.files.All() {
			check(k)
		}
		for k := range snap.tombstones.All() {
			check(k)
		}
		b.Logf("%d remove row groups, %d tombstones; of the %d keys the carry rule checks (live files, removes since), %d fall inside some group's path range (%d group hits)",
			len(ranges), rows, keys, inside, hits)

		const n = 50
		t0 := time.Now()
		for range n {
			f, err := file.NewParquetReader(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		b.Logf("footer parse: %.2f ms", float64(time.Since(t0).Microseconds())/1000/n)
		vacuumLeaves := func(p []string, _ bool) bool {
			return len(p) > 1 && p[0] == "remove" && (p[1] == "path" || p[1] == "deletionTimestamp" || p[1] == "deletionVector")
		}
		pathLeaf := func(p []string, _ bool) bool { return len(p) > 1 && p[0] == "remove" && p[1] == "path" }
		arrow := func(keep leafFilter) func() int {
			return func() int {
				acts, err := decodeCheckpointLeaves(ctx, data, nil, nil, memory.DefaultAllocator, keep)
				if err != nil {
					b.Fatal(err)
				}
				return len(acts)
			}
		}
		part, err := newCheckpointPart(data)
		if err != nil {
			b.Fatal(err)
		}
		leaves := func(full bool) func() int {
			return func() int {
				n, err := decodeRemoveGroups(part, groups, full)
				if err != nil {
					b.Fatal(err)
				}
				return n
			}
		}
		ways := []struct {
			name   string
			decode func() int
		}{
			{"Arrow, every remove leaf (before)", arrow(onlyRemoves)},
			{"Arrow, path, deletionTimestamp, deletionVector", arrow(vacuumLeaves)},
			{"Arrow, path", arrow(pathLeaf)},
			{"leaves, keys (keyed)", leaves(false)},
			{"leaves, keys then the rest (keyed, allFields)", leaves(true)},
		}
		b.StartTimer()
		for i := range 3 * len(ways) { // alternated
			w := ways[i%len(ways)]
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			t0 := time.Now()
			for range n {
				if got := w.decode(); int64(got) != rows {
					b.Fatalf("decode %s: %d removes, want %d", w.name, got, rows)
				}
			}
			el := time.Since(t0)
			runtime.ReadMemStats(&m1)
			b.Logf("decode %s: %.2f ms, %.0f KB, %.0f allocations", w.name, float64(el.Microseconds())/1000/n,
				float64(m1.TotalAlloc-m0.TotalAlloc)/1024/n, float64(m1.Mallocs-m0.Mallocs)/n)
		}
	}
}
