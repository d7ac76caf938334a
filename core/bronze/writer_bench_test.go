package bronze_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
)

// BenchmarkWriterVsDuckDB writes the same bronze records with our Parquet writer
// (parquetio.Writer with its default options, to a local store) and with DuckDB's
// COPY ... TO (FORMAT parquet) from an in-memory table (benchmetrics.DuckDBCopy), in one
// run, and reports both per core (docs/performance.md § The writer against DuckDB):
//
//   - table=bench: snapshot rows of dbo.bench(id bigint, v int, s nvarchar(32),
//     amount decimal(18,2)) with the values the snapshot benchmarks load, 5M rows;
//   - table=orders: cdcsim's change rows of the workload's orders table (3M rows loaded
//     in transactions of 10,000), as the stream assembles them.
//
// MB is the Arrow size of the bronze records (parquetio.RecordBytes); ours-MB/cpu-s
// divides by this process's CPU time during the write (every goroutine and the GC),
// duckdb-MB/cpu-s by the CPU time of DuckDB's COPY (every thread of the child). x-duckdb is
// their ratio (≥ 1: ours writes more per core); the file sizes are reported beside. Each
// side writes once to warm up, then they alternate b.N times. -writerbench.scale shrinks the rows for a quick look;
// -writerbench.duckdb-threads sets DuckDB's threads, -writerbench.rowgroup our row group.
//
//	go test ./core/bronze -run '^$' -bench WriterVsDuckDB -benchtime 1x
var (
	writerBenchScale = flag.Float64("writerbench.scale", 1, "fraction of the rows BenchmarkWriterVsDuckDB writes")
	rowGroupMiB      = flag.Int("writerbench.rowgroup", 0, "our writer's row group in MiB in BenchmarkWriterVsDuckDB (0: parquetio's default)")
	duckThreads      = flag.Int("writerbench.duckdb-threads", 0, "DuckDB's threads in BenchmarkWriterVsDuckDB (0: its default, one per core)")
)

func BenchmarkWriterVsDuckDB(b *testing.B) {
	for _, tc := range []struct {
		name  string
		rows  int
		build func(b *testing.B, rows int) (*arrow.Schema, []arrow.RecordBatch)
	}{
		{"table=bench", 5_000_000, benchSnapshotRecords},
		{"table=orders", 3_000_000, ordersChangeRecords},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rows := int(float64(tc.rows) * *writerBenchScale)
			schema, recs := tc.build(b, rows)
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			var arrowBytes int64
			for _, r := range recs {
				arrowBytes += parquetio.RecordBytes(r)
			}
			dir := b.TempDir()
			in := filepath.Join(dir, "input.parquet")
			writeInput(b, in, schema, recs)
			// Both write once to warm up (DuckDB's first COPY in a process costs up to
			// twice the next), then alternate, so that both see the same machine load.
			duck := benchmetrics.StartDuckDB(b, in, *duckThreads)
			duckOut := filepath.Join(dir, "duckdb.parquet")
			duckBytes := duck.Copy(duckOut).Bytes
			oursBytes := writeOurs(b, filepath.Join(dir, "ours"), schema, recs)
			var ours, theirs time.Duration
			for b.Loop() {
				cpu0 := benchmetrics.CPUTime()
				writeOurs(b, filepath.Join(dir, "ours"), schema, recs)
				ours += benchmetrics.CPUTime() - cpu0
				theirs += duck.Copy(duckOut).CPU
			}
			mb := float64(arrowBytes) * float64(b.N) / 1e6
			b.ReportMetric(mb/ours.Seconds(), "ours-MB/cpu-s")
			b.ReportMetric(mb/theirs.Seconds(), "duckdb-MB/cpu-s")
			b.ReportMetric(theirs.Seconds()/ours.Seconds(), "x-duckdb")
			b.ReportMetric(float64(oursBytes)/(1<<20), "ours-file-MiB")
			b.ReportMetric(float64(duckBytes)/(1<<20), "duckdb-file-MiB")
			b.ReportMetric(float64(arrowBytes)/1e6, "arrow-MB")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// writeOurs writes recs with parquetio's defaults into a fresh folder of dir and returns
// the bytes written.
func writeOurs(b *testing.B, dir string, schema *arrow.Schema, recs []arrow.RecordBatch) int64 {
	ctx := context.Background()
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	st, err := localstore.New(dir)
	if err != nil {
		b.Fatal(err)
	}
	w := parquetio.NewWriter(st, schema, parquetio.WriterOptions{TempDir: b.TempDir(), RowGroupBytes: int64(*rowGroupMiB) << 20})
	for _, r := range recs {
		if err := w.Write(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	files, err := w.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, f := range files {
		n += f.Size
	}
	return n
}

// writeInput writes recs as DuckDB's input: plain, uncompressed Parquet.
func writeInput(b *testing.B, path string, schema *arrow.Schema, recs []arrow.RecordBatch) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fw, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(parquet.WithDictionaryDefault(false),
		parquet.WithStoreDecimalAsInteger(true)), pqarrow.DefaultWriterProps())
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range recs {
		if err := fw.WriteBuffered(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		b.Fatal(err)
	}
}

// benchSnapshotRecords are n snapshot rows of dbo.bench as bronze records of 10,000 rows,
// with the values core/snapshot's benchmarks load into cdcsim.
func benchSnapshotRecords(b *testing.B, n int) (*arrow.Schema, []arrow.RecordBatch) {
	cols := []source.Column{
		{Name: "id", DataType: "bigint"}, {Name: "v", DataType: "int", Nullable: true},
		{Name: "s", DataType: "nvarchar", MaxLength: 32, Nullable: true},
		{Name: "amount", DataType: "decimal", Precision: 18, Scale: 2, Nullable: true},
	}
	schema, err := bronze.Schema(cols)
	if err != nil {
		b.Fatal(err)
	}
	table, err := bronze.TableSchema(cols)
	if err != nil {
		b.Fatal(err)
	}
	l, err := lsn.Parse("0x0000002A000001F00003")
	if err != nil {
		b.Fatal(err)
	}
	ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	st := bronze.SnapshotStamp{CaptureInstance: "dbo_bench", LSN: l, CommitTS: &ts, Snapshot: l}
	var recs []arrow.RecordBatch
	for lo := 0; lo < n; lo += source.DefaultBatchRows {
		hi := min(lo+source.DefaultBatchRows, n)
		rb := array.NewRecordBuilder(memory.DefaultAllocator, table)
		for i := lo; i < hi; i++ {
			rb.Field(0).(*array.Int64Builder).Append(int64(i))
			rb.Field(1).(*array.Int32Builder).Append(int32(i % 1000))
			rb.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("row %d of the benchmark", i))
			rb.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i%100000)*100 + int64(i%100)))
		}
		rec := rb.NewRecordBatch()
		rb.Release()
		out, err := bronze.SnapshotRecord(schema, rec, st)
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, out)
	}
	return schema, recs
}

// ordersChangeRecords loads n rows into cdcsim's orders table (transactions of 10,000),
// reads every change row and assembles them as the stream does; the simulator is dropped
// before the records are returned.
func ordersChangeRecords(b *testing.B, n int) (*arrow.Schema, []arrow.RecordBatch) {
	ctx := context.Background()
	db := cdcsim.New(cdcsim.Config{Seed: 1})
	g := workload.New(db, workload.Config{Seed: 1})
	if err := g.Create(workload.Orders()); err != nil {
		b.Fatal(err)
	}
	if err := g.Load("orders", n, 10_000); err != nil {
		b.Fatal(err)
	}
	hi, err := db.MaxLSN(ctx)
	if err != nil {
		b.Fatal(err)
	}
	lo, err := db.MinLSN(ctx, "dbo_orders")
	if err != nil {
		b.Fatal(err)
	}
	cols, err := db.CapturedColumns(ctx, "dbo_orders")
	if err != nil {
		b.Fatal(err)
	}
	schema, err := bronze.Schema(cols)
	if err != nil {
		b.Fatal(err)
	}
	r, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lo, To: hi, Columns: cols})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var recs []arrow.RecordBatch
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return schema, recs
		}
		if err != nil {
			b.Fatal(err)
		}
		out, err := bronze.ChangeRecord(schema, rec, "dbo_orders", 1)
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, out)
	}
}
