package silver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// benchSize reads a size from the environment (the figure is 10M rows and 1M
// changes: MSSQLCDC_SILVER_BENCH_ROWS=10000000 MSSQLCDC_SILVER_BENCH_CHANGES=1000000); the
// defaults keep a plain -bench run short.
func benchSize(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchBronze appends rows to a bronze table of (id int, customer nvarchar, amount
// decimal(18,2), status varchar) as one commit: row(i) gives the key, operation and LSN of
// row i, with txn(bench, version).
func benchBronze(b *testing.B, tbl *deltalog.Table, version int64, n int, row func(i int) (id int32, op int32, lsn string)) int64 {
	b.Helper()
	ctx := context.Background()
	sc, err := bronze.Schema([]source.Column{
		{Name: "id", DataType: "int"},
		{Name: "customer", DataType: "nvarchar", MaxLength: 20, Nullable: true},
		{Name: "amount", DataType: "decimal", Precision: 18, Scale: 2, Nullable: true},
		{Name: "status", DataType: "varchar", MaxLength: 10, Nullable: true},
	})
	if err != nil {
		b.Fatal(err)
	}
	w := ingest.NewWriter(tbl.Store(), sc, parquetio.WriterOptions{})
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	flush := func() {
		rec := rb.NewRecordBatch()
		defer rec.Release()
		if err := w.Write(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		id, op, lsn := row(i)
		for c, f := range sc.Fields() {
			fb := rb.Field(c)
			switch f.Name {
			case bronze.ColStartLSN:
				fb.(*array.StringBuilder).Append(lsn)
			case bronze.ColSeqval:
				fb.(*array.StringBuilder).Append(lsn)
			case bronze.ColOperation:
				fb.(*array.Int32Builder).Append(op)
			case "id":
				fb.(*array.Int32Builder).Append(id)
			case "customer":
				fb.(*array.StringBuilder).Append(fmt.Sprintf("customer-%d", id%5000))
			case "status":
				fb.(*array.StringBuilder).Append([]string{"new", "paid", "shipped"}[(int(id)+i)%3])
			default:
				fb.AppendNull()
			}
		}
		if rb.Field(0).Len() == 64<<10 {
			flush()
		}
	}
	flush()
	files, err := w.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, a := range files.Adds {
		size += a.Size
	}
	if _, err := ingest.Append(ctx, tbl, nil, ingest.Commit{AppID: "bench", Version: version, Schema: sc, Files: files}); err != nil {
		b.Fatal(err)
	}
	return size
}

func lsnOf(n int) string { return fmt.Sprintf("0x%020X", n) }

// BenchmarkApply applies C changes (70 % updates, 20 % deletes, 10 % inserts of new keys,
// random keys) to a silver table of R rows built from a snapshot, with deletion vectors
// and copy-on-write side by side: wall time, CPU-seconds, bytes of silver files rewritten
// and written against the bytes of the changes (their bronze file), and peak heap.
// docs/silver.md § What it costs holds the figures.
func BenchmarkApply(b *testing.B) {
	rows := benchSize("MSSQLCDC_SILVER_BENCH_ROWS", 200_000)
	changes := benchSize("MSSQLCDC_SILVER_BENCH_CHANGES", rows/10)
	for _, mode := range []string{"deletion-vectors", "copy-on-write"} {
		b.Run(fmt.Sprintf("rows=%d/changes=%d/%s", rows, changes, mode), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				ctx := context.Background()
				lake := testlake.New(b, testlake.Local)
				bt := lake.Table(lake.URL("bronze"))
				st := lake.Table(lake.URL("silver"))
				opts := Options{AppID: "bench", Keys: []string{"id"}, CopyOnWrite: mode == "copy-on-write", MemoryBytes: 1 << 30}
				benchBronze(b, bt, 0, rows, func(i int) (int32, int32, string) { return int32(i), bronze.OpSnapshot, lsnOf(1) })
				if _, err := Apply(ctx, Tables{Bronze: bt, Silver: st}, opts); err != nil {
					b.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(7, uint64(rows)))
				changed := benchBronze(b, bt, 1, changes, func(i int) (int32, int32, string) {
					switch r := rng.IntN(10); {
					case r < 1:
						return int32(rows + i), bronze.OpInsert, lsnOf(2 + i)
					case r < 3:
						return int32(rng.IntN(rows)), bronze.OpDelete, lsnOf(2 + i)
					default:
						return int32(rng.IntN(rows)), bronze.OpUpdateAfter, lsnOf(2 + i)
					}
				})
				var peak atomic.Uint64
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					var ms runtime.MemStats
					for {
						runtime.ReadMemStats(&ms)
						if ms.HeapInuse > peak.Load() {
							peak.Store(ms.HeapInuse)
						}
						select {
						case <-stop:
							return
						case <-time.After(20 * time.Millisecond):
						}
					}
				}()
				runtime.GC()
				cpu0 := benchmetrics.CPUTime()
				t0 := time.Now()
				b.StartTimer()
				res, err := Apply(ctx, Tables{Bronze: bt, Silver: st}, opts)
				b.StopTimer()
				wall := time.Since(t0)
				cpu := benchmetrics.CPUTime() - cpu0
				close(stop)
				wg.Wait()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(wall.Seconds(), "wall-s")
				b.ReportMetric(cpu.Seconds(), "cpu-s")
				b.ReportMetric(float64(changed)/1e6, "changed-MB")
				b.ReportMetric(float64(res.BytesRewritten)/1e6, "rewritten-MB")
				b.ReportMetric(float64(res.BytesWritten)/1e6, "written-MB")
				b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
				b.ReportMetric(float64(res.DeletionVectors), "DVs")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}
