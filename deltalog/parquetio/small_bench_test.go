package parquetio

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// factsLikeSchema is a schema shaped like core/facts' (30 nullable columns of strings,
// integers, timestamps and doubles; the package cannot import core/facts, which imports
// it).
func factsLikeSchema() *arrow.Schema {
	types := []arrow.DataType{
		arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64,
		arrow.BinaryTypes.String, arrow.BinaryTypes.String,
		&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64,
		&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Float64,
		arrow.PrimitiveTypes.Float64,
	}
	fields := make([]arrow.Field, 30)
	for i := range fields {
		fields[i] = arrow.Field{Name: fmt.Sprintf("f%02d", i), Type: types[i%len(types)], Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// factsLikeRecord is n rows of factsLikeSchema, every tenth column NULL.
func factsLikeRecord(s *arrow.Schema, start, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for i := start; i < start+n; i++ {
		for c, f := range s.Fields() {
			kind := rowPlain
			if c%10 == 9 {
				kind = rowNull
			}
			appendValue(b.Field(c), f, i, kind)
		}
	}
	return b.NewRecordBatch()
}

// BenchmarkSmallFiles writes one small file an op, as a stream batch does (a new Writer
// each file), to a store that discards: a 1,000-row bronze file of the orders-like
// benchColumns (19 columns), and a 1-row facts-like file (30 columns). cpu-µs/file is
// the process's CPU time (user+system, GC included) per file, alloc-KB/file the bytes
// allocated per file:
//
//	go test ./deltalog/parquetio -run '^$' -bench SmallFiles -benchtime 2000x -count 3
func BenchmarkSmallFiles(b *testing.B) {
	bronzeSchema := mustSchema(b, benchColumns)
	facts := factsLikeSchema()
	for _, c := range []struct {
		name   string
		schema *arrow.Schema
		recs   []arrow.RecordBatch
	}{
		{"bronze-1k-rows", bronzeSchema, []arrow.RecordBatch{
			bronzeRecordFrom(memory.DefaultAllocator, bronzeSchema, 0, 1000, false),
			bronzeRecordFrom(memory.DefaultAllocator, bronzeSchema, 1000, 1000, false),
		}},
		{"facts-1-row", facts, []arrow.RecordBatch{factsLikeRecord(facts, 0, 1), factsLikeRecord(facts, 1, 1)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			st := discardStore{io.Discard}
			write := func(i int) {
				w := NewWriter(st, c.schema, WriterOptions{})
				if err := w.Write(ctx, c.recs[i%len(c.recs)]); err != nil {
					b.Fatal(err)
				}
				if _, err := w.Close(ctx); err != nil {
					b.Fatal(err)
				}
			}
			write(0) // warm the process's caches and pools, as a warm invocation
			b.ReportAllocs()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			cpu0 := cpuSeconds()
			b.ResetTimer()
			for i := range b.N {
				write(i)
			}
			b.StopTimer()
			cpu := cpuSeconds() - cpu0
			runtime.ReadMemStats(&m1)
			b.ReportMetric(cpu*1e6/float64(b.N), "cpu-µs/file")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/1024/float64(b.N), "alloc-KB/file")
		})
	}
}

// BenchmarkChooseEncodings is the encoding choice of a 1,000-row bronze file (the first
// step of every file, BenchmarkSmallFiles' bronze-1k-rows). cpu-µs/op is the process's
// CPU time per choice (GC included): on the shared machine ns/op (wall clock) moves with
// the load several-fold, the CPU time far less.
//
//	go test ./deltalog/parquetio -run '^$' -bench ChooseEncodings -count 3
func BenchmarkChooseEncodings(b *testing.B) {
	s := mustSchema(b, benchColumns)
	rec := bronzeRecordFrom(memory.DefaultAllocator, s, 0, 1000, false)
	defer rec.Release()
	b.ReportAllocs()
	cpu0 := cpuSeconds()
	for range b.N {
		chooseEncodings(rec)
	}
	b.ReportMetric((cpuSeconds()-cpu0)*1e6/float64(b.N), "cpu-µs/op")
}
