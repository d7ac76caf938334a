package snapshot_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// BenchmarkWave is one backfill wave of a chunked snapshot, from cdcsim to committed bronze
// (its chunk read into Parquet files, the wave's Delta commit, its plans table and
// snapshot_chunk facts rows), at chunk_rows 100k and 1M, on one connection
// (numPartitions 1: a wave of one chunk, so MB/cpu-s is the per-core rate to compare with
// BenchmarkSnapshotThroughput's ranges=1/src=cdcsim). The metrics are the full snapshot's
// (bench_test.go): MB is the Arrow size of the rows read, MB/cpu-s over the process's CPU
// time; peak-live-MB the most live heap above the stored database seen while the wave
// runs, sampled after a forced GC every tenth of the chunk (its CPU figures then include
// those GCs: compare throughput with sample=off). The open, the plan and wave 0 run before
// the timer; the timed wave is wave 1.
//
//	go test ./core/snapshot -run '^$' -bench 'Wave|SnapshotThroughput/rows=1000000/ranges=1/src=cdcsim$' -benchtime 1x
func BenchmarkWave(b *testing.B) {
	const n = 2_100_000
	db := benchTable(b, n)
	readTable(b, db, func(rec arrow.RecordBatch) bool { rec.Release(); return false })
	for _, chunkRows := range []int64{100_000, 1_000_000} {
		for _, sample := range []bool{false, true} {
			b.Run(fmt.Sprintf("chunk_rows=%d/sample=%v", chunkRows, map[bool]string{false: "off", true: "heap"}[sample]), func(b *testing.B) {
				var rows, bytes int64
				var peak uint64
				var m benchmetrics.Meter
				for i := 0; i < b.N; i++ {
					ctx := context.Background()
					lake := testlake.New(b, testlake.Local)
					spec := &config.Spec{AppID: "bench", Bootstrap: true, Snapshot: config.SnapshotChunked,
						Source: config.Source{DSN: "sqlserver://sim@h?database=d", CaptureInstance: "dbo_bench"}}
					lake.Use(spec)
					cr, zero := chunkRows, 0.0
					spec.ChunkRows, spec.MinHeadroomHours, spec.TargetWaveSeconds = &cr, &zero, &zero
					spec.Defaults()
					spec.Options.NumPartitions = 1
					ms := &meteredSource{Source: db}
					d := snapshot.Deps{Spec: spec, Source: ms, Bronze: lake.Table(spec.Bronze), Facts: lake.Table(spec.FactsTable),
						Plans: lake.Table(spec.PlansTable()), Staging: lake.Store(spec.Checkpoint),
						Options: snapshot.Options{Writer: parquetio.WriterOptions{RowGroupBytes: *rowGroupMiB << 20}}}
					if _, err := snapshot.OpenChunked(ctx, d); err != nil {
						b.Fatal(err)
					}
					p := snapshot.ParamsOf(spec)
					p.MaxWaves = 1
					if st, err := snapshot.Backfill(ctx, d, p); err != nil || st.Waves != 1 {
						b.Fatalf("plan and wave 0: %+v %v", st, err)
					}
					ms.rows, ms.bytes = 0, 0
					if sample {
						ms.sampling, ms.every, ms.next = true, chunkRows/10, chunkRows/10
						runtime.GC()
						var mem runtime.MemStats
						runtime.ReadMemStats(&mem)
						ms.base = mem.HeapAlloc
					}
					if i == 0 {
						m = benchmetrics.Start()
					}
					st, err := snapshot.Backfill(ctx, d, p)
					// An integer plan's chunk holds at most chunk_rows, less than a slice (a
					// 16th) fewer.
					if err != nil || st.Waves != 1 || st.Rows > chunkRows || st.Rows < chunkRows*15/16 {
						b.Fatalf("wave 1: %+v %v", st, err)
					}
					rows, bytes = rows+ms.rows, bytes+ms.bytes
					peak = max(peak, ms.peak)
				}
				m.Report(b, rows, bytes)
				if sample {
					b.ReportMetric(float64(peak)/1e6, "peak-live-MB")
				}
			})
		}
	}
}
