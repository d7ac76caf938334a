package facts

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
)

// statsRecord is a change record of n rows: _start_lsn rising every 100 rows, operations
// cycling through 1–4, and a commit time rising one microsecond a row with every 50th row
// NULL (a commit without a mapping row).
func statsRecord(n int) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: bronze.ColStartLSN, Type: arrow.BinaryTypes.String},
		{Name: bronze.ColOperation, Type: arrow.PrimitiveTypes.Int32},
		{Name: bronze.ColCommitTS, Type: bronze.CommitTSType, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Reserve(n)
	lsns := b.Field(0).(*array.StringBuilder)
	ops := b.Field(1).(*array.Int32Builder)
	tss := b.Field(2).(*array.TimestampBuilder)
	const t0 = 1_790_000_000_000_000 // 2026-09-21, in microseconds
	for i := range n {
		lsns.Append(fmt.Sprintf("0x%020X", i/100))
		ops.Append(int32(i%4 + 1))
		if i%50 == 49 {
			tss.AppendNull()
		} else {
			tss.Append(arrow.Timestamp(t0 + i))
		}
	}
	return b.NewRecordBatch()
}

// BenchmarkBatchStatsAdd folds one record into fresh stats. allocs/op must not grow with
// the rows; allocs/row reports the allocations per row.
//
//	go test ./core/facts -run '^$' -bench BatchStatsAdd -benchmem
func BenchmarkBatchStatsAdd(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			rec := statsRecord(n)
			defer rec.Release()
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				var s BatchStats
				if err := s.Add(rec); err != nil {
					b.Fatal(err)
				}
				if s.Rows != int64(n) || s.MinCommitTS == nil {
					b.Fatalf("stats = %+v", s)
				}
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(n)/float64(b.N), "allocs/row")
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
